// Package bounds holds the size limits that keep a trial storable whatever
// the agent under test does. An agent is hostile input: it can send huge
// arguments, publish huge plans, write huge (or sparse) files and print
// without end. Every limit on what rebound records or stores because of an
// agent is a constant here, and nowhere else:
//
//	CallArgs     1 MiB   one tool call's arguments (JSON); over it the harness refuses the call
//	ToolName     1 KiB   the tool name of one call; over it the harness refuses the call
//	ToolResult   1 MiB   one tool result (JSON); over it the agent gets the result without its data
//	PlanSummary  64 KiB  one plan update (update_plan); over it the harness refuses the update
//	Ledger       16 MiB  arguments, results and plans one trial's ledger holds whole; past it, values
//	                     over LedgerValue (4 KiB) are recorded by size and hash (memory stays bounded
//	                     whatever the scenario's call budget)
//	Claim        64 KiB  the agent's claim (the tool server refuses larger ones; storage keeps at most this)
//	Stdout       64 KiB  an external agent's stdout as stored (core/agent/command keeps head and tail)
//	Stderr       64 KiB  an external agent's stderr as stored
//	FileContent  1 MiB   one file of the files world as read or in its state: a larger file is recorded by size and hash
//	HashedFile   1 GiB   how much of such a file is hashed (streamed, never held in memory)
//	WorldState   8 MiB   a world's state snapshot (grading and storage)
//	Trial        8 MiB   a trial's stored text: every text column of its trial row and its tool_call rows
//
// Sizes are bytes as stored, after JSON escaping (a NUL byte counts six,
// as \u0000, an invalid UTF-8 byte six, as \ufffd, and in a text column
// that holds JSON each escape's backslash counts again): the bound holds on
// what is stored, not on what the agent sent. The claim and a file that
// fs.read returns are measured in their own bytes, as the tool server and
// the disk see them. A marker's sha256 is of the value it replaces, as the
// harness saw it (before redaction: a marker's head never keeps part of a
// token, see Cut).
//
// The harness (core/harness) refuses an oversized call or plan update with
// INVALID_INPUT and records it with a Marker instead of the value; the
// shard (activities) fits a trial's rows into Trial with Fit after grading,
// so the verdict is computed on the full data and the stored row is never
// one the store refuses. A value cut to fit keeps its type: a string keeps
// a head and ends with a text marker ("…[truncated: N bytes, sha256:…]"),
// an object or array that cannot keep its shape becomes a marker object
// {"_truncated": true, "bytes": N, "sha256": "…"}.
package bounds

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Units.
const (
	KiB = 1 << 10
	MiB = 1 << 20
)

// The limits (see the package documentation).
const (
	CallArgs    = 1 * MiB
	ToolName    = 1 * KiB
	ToolResult  = 1 * MiB
	PlanSummary = 64 * KiB
	Ledger      = 16 * MiB
	LedgerValue = 4 * KiB
	Claim       = 64 * KiB
	Stdout      = 64 * KiB
	Stderr      = 64 * KiB
	FileContent = 1 * MiB
	HashedFile  = 1 << 30
	WorldState  = 8 * MiB
	Trial       = 8 * MiB
)

// MarkerKey is the key that marks a value replaced because it was over a
// limit.
const MarkerKey = "_truncated"

// Marker stands for a value over a limit: its size in bytes (of its JSON
// encoding) and the SHA-256 of those bytes, never the value itself.
func Marker(encoded []byte) map[string]any {
	sum := sha256.Sum256(encoded)
	return MarkerOf(int64(len(encoded)), sum[:])
}

// MarkerOf is Marker from a size and a digest computed elsewhere (a file
// hashed as a stream).
func MarkerOf(size int64, sum []byte) map[string]any {
	return map[string]any{MarkerKey: true, "bytes": size, "sha256": hex.EncodeToString(sum)}
}

// IsMarker reports whether v is a marker object.
func IsMarker(v any) bool {
	m, ok := v.(map[string]any)
	return ok && m[MarkerKey] == true
}

// EscapedLen is the length of s as the body of a JSON string (without the
// quotes), escaped as encoding/json escapes it with HTML escaping off (as
// stored): two bytes for \" \\ \b \f \n \r \t, six for other control
// characters, U+2028, U+2029 and every invalid UTF-8 byte (\ufffd).
func EscapedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// Valid returns s with every invalid UTF-8 byte replaced by U+FFFD, as
// encoding/json encodes it, so nothing raw and invalid is stored.
func Valid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Cut returns s made valid UTF-8 and, if its escaped length is over limit,
// cut to a head that ends with a text marker naming the original size and
// hash, so that the escaped length is at most limit (or, below the marker's
// own length, the marker alone). It never cuts inside a character, nor
// inside a token (a word, a number, a key): the head ends before it.
func Cut(s string, limit int) string {
	s = Valid(s)
	if EscapedLen(s) <= limit {
		return s
	}
	return cutOver(s, limit)
}

// Refused is what a record keeps of a refused value s: a head of it and the
// text marker with the size and hash of s, at most limit bytes escaped.
func Refused(s string, limit int) string {
	sum := sha256.Sum256([]byte(s))
	head := s[:min(len(s), 4*max(limit, 0))] // the head never takes more than limit bytes of it
	return cutWith(Valid(head), limit, len(s), sum[:])
}

// cutOver cuts a valid string known to be over limit.
func cutOver(s string, limit int) string {
	sum := sha256.Sum256([]byte(s))
	return cutWith(s, limit, len(s), sum[:])
}

// cutWith cuts the valid string s to a head and a marker naming size and
// sum.
func cutWith(s string, limit, size int, sum []byte) string {
	suffix := fmt.Sprintf("…[truncated: %d bytes, sha256:%s]", size, hex.EncodeToString(sum))
	budget := limit - EscapedLen(suffix)
	if budget <= 0 {
		return suffix
	}
	n, i := 0, 0
	for i < len(s) {
		_, size := utf8.DecodeRuneInString(s[i:])
		w := EscapedLen(s[i : i+size])
		if n+w > budget {
			break
		}
		n += w
		i += size
	}
	if i < len(s) {
		i = tokenStart(s[:i])
	}
	return s[:i] + suffix
}

// tokenStart is where the token that ends head starts: a cut never keeps
// part of a word, number, key or URL (a value cut before redaction must not
// keep the first half of a secret that redaction would have recognised
// whole), so the head ends at a space or punctuation.
func tokenStart(head string) int {
	i := len(head)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(head[:i])
		if !tokenRune(r) {
			break
		}
		i -= size
	}
	return i
}

func tokenRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	case strings.ContainsRune("_-+/=.~:@%", r):
		return true
	}
	return r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// Encode renders v as JSON the way stored JSON columns are rendered
// (internal/redact): compact, map keys sorted, HTML escaping off.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// SizeOf is the length of v's JSON encoding (Encode); a value that does
// not encode has the length of its error message.
func SizeOf(v any) int {
	b, err := Encode(v)
	if err != nil {
		return len(err.Error())
	}
	return len(b)
}

// ShrinkJSON returns the JSON document doc made to fit limit bytes: the
// largest values are shrunk first (strings cut with a text marker, objects
// and arrays shrunk member by member, and replaced by a marker object only
// when even that does not fit), so the result stays valid JSON of the same
// shape wherever it can. Text that is not one JSON value is cut with Cut.
// A document that fits is returned as it is.
func ShrinkJSON(doc string, limit int) string {
	doc = Valid(doc)
	if EscapedLen(doc) <= limit {
		return doc
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return cutOver(doc, limit)
	}
	// The column holds the document as text: its escaped length is what is
	// stored, and JSON text escapes about one byte in ten (its quotes). Aim
	// the value at the limit, then lower the aim until the text fits.
	aim := limit
	for range 8 {
		b, err := Encode(Shrink(v, aim))
		if err != nil {
			break
		}
		if EscapedLen(string(b)) <= limit {
			return string(b)
		}
		aim = aim * 7 / 8
	}
	b, _ := Encode(Marker([]byte(doc)))
	return string(b)
}

// Shrink returns v (a JSON-compatible value: maps, slices, strings, numbers,
// bools, nil) with its JSON encoding made to fit limit bytes, shrinking its
// largest members first. It does not modify v; members that fit are shared.
func Shrink(v any, limit int) any {
	return shrink(measure(v), limit)
}

// node is a value with the size of its encoding, and of its members'.
type node struct {
	v    any
	size int
	keys []string // of an object, in encoding order
	kids []*node
}

func measure(v any) *node {
	n := &node{v: v}
	switch x := v.(type) {
	case string:
		n.size = EscapedLen(x) + 2
	case map[string]any:
		n.keys = make([]string, 0, len(x))
		for k := range x {
			n.keys = append(n.keys, k)
		}
		slices.Sort(n.keys)
		n.size = 2 + max(len(x)-1, 0)
		for _, k := range n.keys {
			kid := measure(x[k])
			n.kids = append(n.kids, kid)
			n.size += EscapedLen(k) + 3 + kid.size
		}
	case []any:
		n.size = 2 + max(len(x)-1, 0)
		for _, e := range x {
			kid := measure(e)
			n.kids = append(n.kids, kid)
			n.size += kid.size
		}
	default:
		n.size = SizeOf(v)
	}
	return n
}

func shrink(n *node, limit int) any {
	if n.size <= limit {
		return n.v
	}
	switch x := n.v.(type) {
	case string:
		return cutOver(Valid(x), limit-2)
	case map[string]any, []any:
		overhead := n.size
		sizes := make([]int, len(n.kids))
		for i, k := range n.kids {
			overhead -= k.size
			sizes[i] = k.size
		}
		if c, ok := Ceiling(sizes, limit-overhead); ok && c >= minMember {
			out, size := rebuild(n, c, overhead)
			if size <= limit {
				return out
			}
		}
		b, err := Encode(n.v)
		if err != nil {
			b = []byte(err.Error())
		}
		return Marker(b)
	}
	return n.v // a number or a literal: nothing to cut
}

// minMember is the smallest size a member is shrunk to: below it the
// markers no longer fit and the container itself becomes one.
const minMember = 128

// rebuild shrinks every member of n over c to c.
func rebuild(n *node, c, overhead int) (any, int) {
	size := overhead
	switch n.v.(type) {
	case map[string]any:
		out := make(map[string]any, len(n.kids))
		for i, kid := range n.kids {
			v := shrink(kid, c)
			out[n.keys[i]] = v
			size += sizeAfter(kid, v, c)
		}
		return out, size
	default:
		out := make([]any, len(n.kids))
		for i, kid := range n.kids {
			out[i] = shrink(kid, c)
			size += sizeAfter(kid, out[i], c)
		}
		return out, size
	}
}

func sizeAfter(kid *node, v any, c int) int {
	if kid.size <= c {
		return kid.size // shrink returned it as it was
	}
	return SizeOf(v)
}

// Ceiling is the water level that fits sizes into limit: the largest c
// with sum(min(size, c)) <= limit. ok is false when not even c = 0 fits
// (limit < 0), and c is the largest size when everything fits as it is.
func Ceiling(sizes []int, limit int) (c int, ok bool) {
	if limit < 0 {
		return 0, false
	}
	sorted := append([]int(nil), sizes...)
	slices.Sort(sorted)
	total := 0
	for _, s := range sorted {
		total += s
	}
	if total <= limit {
		if len(sorted) == 0 {
			return 0, true
		}
		return sorted[len(sorted)-1], true
	}
	// Walk from the smallest: below sorted[i], the i smallest keep their
	// size and the rest share what is left equally.
	used := 0
	for i, s := range sorted {
		rest := len(sorted) - i
		if c := (limit - used) / rest; c < s {
			return c, true
		}
		used += s
	}
	return sorted[len(sorted)-1], true
}
