// Package redact removes secrets from anything rebound persists or prints:
// tool arguments, results, claims, answers, fault schedules, the stored plan
// and the judge's input. It runs before storage, so a secret an agent pastes
// into a tool call never reaches ClickHouse or a log.
//
// Secrets are found by gitleaks' default rules (the maintained list of the
// shapes of providers' keys and tokens, used as a library: see rules.go), by
// rebound's own rules (ownRules: shapes gitleaks leaves to context, key =
// value forms, credentials in URLs and headers, prose, and high-entropy
// values where a secret is expected), by value (the secrets the process
// knows, in every form and fragment: known.go), and inside encoded text
// (decode.go). Only each secret is replaced, never the text around it.
//
// Idempotency keys are replaced by keyed hashes, so two calls that used the
// same key still compare equal without the key itself being stored.
package redact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"sync"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// sensitiveKeys are argument names whose string values are always secret.
var sensitiveKeys = []string{"password", "passwd", "secret", "api_key", "apikey", "token", "authorization", "credential", "private_key"}

// minValue is the shortest known secret value redacted by value: shorter
// ones would match ordinary text. It is also the shortest fragment of a
// known value that is removed.
const minValue = 8

// maxDecodeDepth is how many times encoded text (base64, hex, percent and
// unicode escapes) is decoded and searched again.
const maxDecodeDepth = 2

// Redactor scrubs values before persistence. It finds secrets three ways:
// gitleaks' default rules (the maintained shapes of the providers' keys and
// tokens) and rebound's own (ownRules: bare tokens, connection strings,
// credentials in URLs, key = value forms, prose, high-entropy values in
// secret-like places), each behind a keyword prefilter; the values the
// process knows, in every form (known); and both again inside encoded text
// (decode). Only each secret is replaced; the text around it stays.
type Redactor struct {
	// memo remembers what short strings redact to: a worker redacts the
	// same tool names, argument keys, identifiers and answers for every
	// trial of a scenario. pairs does the same for a string under a key.
	memo, pairs *memo
	rules       *ruleSet // shared by every redactor of the process
	extra       []rule   // Options.Patterns
	known       *known
	hashKey     []byte
	// hashedKeys are argument names replaced by a keyed hash rather than
	// removed (idempotency keys: equality across retries stays checkable).
	hashedKeys map[string]bool
}

// Options configure a Redactor.
type Options struct {
	// Patterns are extra regular expressions, on top of the default rules.
	// A pattern with a subexpression named "secret" has only that part
	// replaced; otherwise the whole match is.
	Patterns []string
	// Values are secrets the process knows (API keys read from the
	// environment): each is removed wherever it appears, in every form and
	// fragment (see known). Values shorter than 8 bytes are ignored.
	Values []string
	// HashKey keys the hash that replaces idempotency keys.
	HashKey []byte
}

// New builds a redactor from extra patterns (on top of the default rules)
// and the key of the keyed hash.
func New(extra []string, hashKey []byte) (*Redactor, error) {
	return NewWith(Options{Patterns: extra, HashKey: hashKey})
}

var (
	defaultOnce  sync.Once
	defaultRules *ruleSet
	defaultErr   error
)

// rulesOf returns the default rules, compiled once per process.
func rulesOf() (*ruleSet, error) {
	defaultOnce.Do(func() {
		rs := &ruleSet{}
		gl, err := loadGitleaks()
		if err != nil {
			defaultErr = err
			return
		}
		rs.rules = append(rs.rules, gl...)
		if err := compileOwn(rs, ownRules, nil); err != nil {
			defaultErr = err
			return
		}
		rs.build()
		defaultRules = rs
	})
	return defaultRules, defaultErr
}

// NewWith builds a redactor from options.
func NewWith(o Options) (*Redactor, error) {
	rs, err := rulesOf()
	if err != nil {
		return nil, err
	}
	r := &Redactor{memo: newMemo(), pairs: newMemo(), rules: rs, hashKey: o.HashKey,
		hashedKeys: map[string]bool{"idempotency_key": true, "idempotencykey": true, "operation_id": true}}
	extra := &ruleSet{}
	if err := compileOwn(extra, nil, o.Patterns); err != nil {
		return nil, err
	}
	r.extra = extra.rules
	r.known = newKnown(o.Values)
	return r, nil
}

// String replaces every secret in s with [REDACTED].
func (r *Redactor) String(s string) string {
	if r.memo == nil || len(s) > memoMaxLen {
		return r.redact(s)
	}
	if out, ok := r.memo.get(s); ok {
		return out
	}
	out := r.redact(s)
	r.memo.put(s, out)
	return out
}

// redact is String without the memo.
func (r *Redactor) redact(s string) string {
	return mask(s, r.find(s, nil, 0))
}

// span is a part of a string to replace.
type span struct{ start, end int }

// find appends the spans of s that hold a secret.
func (r *Redactor) find(s string, spans []span, depth int) []span {
	if s == "" {
		return spans
	}
	add := func(a, b int) {
		if a < b {
			spans = append(spans, span{a, b})
		}
	}
	r.known.find(s, add)
	r.rules.find(s, add)
	for i := range r.extra {
		r.extra[i].find(s, add)
	}
	if depth < maxDecodeDepth {
		spans = r.findDecoded(s, spans, depth)
	}
	return spans
}

// mask replaces the spans of s (in any order, overlapping or not) with
// Mask, one Mask per run of touching spans.
func mask(s string, spans []span) string {
	if len(spans) == 0 {
		return s
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start <= end; i++ {
			end = max(end, spans[i].end)
		}
		if start < last {
			start = last
		}
		b.WriteString(s[last:start])
		b.WriteString(Mask)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// find runs the rules whose keywords s contains (and those without
// keywords) and reports each secret they find.
func (rs *ruleSet) find(s string, add func(a, b int)) {
	var small [8]uint64
	run := small[:]
	if n := (len(rs.rules) + 63) / 64; n > len(small) {
		run = make([]uint64, n)
	}
	var hitsBuf [16]hit
	hits := hitsBuf[:0]
	rs.keywords.scan(s, func(end int, w int32) bool {
		for _, i := range rs.byWord[w] {
			run[i/64] |= 1 << (i % 64)
		}
		if rs.windowed[w] {
			hits = append(hits, hit{word: w, start: end - rs.keywords.lens[w], end: end})
		}
		return true
	})
	for _, i := range rs.always {
		run[i/64] |= 1 << (i % 64)
	}
	for wi, word := range run {
		for word != 0 {
			bit := bits.TrailingZeros64(word)
			word &^= 1 << bit
			r := &rs.rules[wi*64+bit]
			if r.window == nil {
				r.find(s, add)
				continue
			}
			r.findNear(s, hits, rs.words, add)
		}
	}
}

// hit is one occurrence of a keyword.
type hit struct {
	word       int32
	start, end int
}

// findNear runs a rule whose matches begin at one of its keywords on the
// text from each occurrence on, anchored there: the rules that need a key
// name and a separator after it (most text that names a key never assigns
// one) and the rules whose expression begins with their keyword. The slow
// expressions never scan text that cannot hold their match.
func (r *rule) findNear(s string, hits []hit, words []string, add func(a, b int)) {
	w := r.window
	covered := 0 // end of the last match
	for _, h := range hits {
		if h.start < covered || !w.starts(words[h.word]) {
			continue
		}
		if w.sep > 0 && !strings.ContainsAny(s[h.end:min(h.end+w.sep, len(s))], w.seps) {
			continue
		}
		if w.boundary && h.start > 0 && isWordByte(s[h.start-1]) {
			continue
		}
		end := min(h.start+w.after, len(s))
		m := r.at.FindStringSubmatchIndex(s[h.start:end])
		if m != nil && m[1] == end-h.start && end < len(s) {
			// The match ran to the window's end: the secret may go on.
			end = len(s)
			m = r.at.FindStringSubmatchIndex(s[h.start:end])
		}
		if m == nil {
			continue
		}
		for i := range m {
			if m[i] >= 0 {
				m[i] += h.start
			}
		}
		if r.report(s, m, add) {
			covered = m[1]
		}
	}
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// find reports the secrets one rule finds in s.
func (r *rule) find(s string, add func(a, b int)) {
	if r.pre != nil && !r.pre(s) {
		return
	}
	for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
		r.report(s, m, add)
	}
}

// report decides one match (submatch indices in s) and reports its secret.
func (r *rule) report(s string, m []int, add func(a, b int)) bool {
	a, b := m[0], m[1]
	switch {
	case r.secret > 0:
		a, b = m[2*r.secret], m[2*r.secret+1]
	case r.secret < 0:
		for g := 1; 2*g < len(m); g++ {
			if m[2*g] >= 0 && m[2*g] < m[2*g+1] {
				a, b = m[2*g], m[2*g+1]
				break
			}
		}
	}
	if r.extend != nil {
		a, b = r.extend(s, m)
	}
	if a < 0 || a >= b {
		return false
	}
	secret := s[a:b]
	if r.check != nil && !r.check(s, m) {
		return false
	}
	if r.entropy > 0 && shannon(secret) <= r.entropy {
		return false
	}
	if r.generic && productID(secret) {
		if _, strong := secretName(s[m[0]:a]); !strong {
			return false
		}
	}
	if len(r.allow) > 0 && r.allowed(secret, s[m[0]:m[1]], lineOf(s, m[0], m[1])) {
		return false
	}
	add(a, b)
	return true
}

// lineOf is the line of s holding [a, b).
func lineOf(s string, a, b int) string {
	start := strings.LastIndexByte(s[:a], '\n') + 1
	end := strings.IndexByte(s[b:], '\n')
	if end < 0 {
		return s[start:]
	}
	return s[start : b+end]
}

// Hash returns the keyed hash that stands in for an idempotency key.
func (r *Redactor) Hash(v string) string {
	m := hmac.New(sha256.New, r.hashKey)
	m.Write([]byte(v))
	return "hmac:" + hex.EncodeToString(m.Sum(nil)[:8])
}

// Value redacts a JSON-compatible value: strings by value and pattern,
// string values of secret-named keys entirely, idempotency keys by keyed
// hash. Map keys are redacted like strings. It returns a copy.
func (r *Redactor) Value(v any) any {
	switch x := v.(type) {
	case string:
		return r.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			lk := strings.ToLower(k)
			rk := r.String(k)
			switch {
			case r.hashedKeys[lk]:
				out[rk] = r.Hash(fmt.Sprint(val))
			case isSensitive(lk) && !harmless(lk, val):
				out[rk] = Mask
			default:
				if sv, ok := val.(string); ok {
					out[rk] = r.under(k, sv)
				} else {
					out[rk] = r.Value(val)
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = r.Value(val)
		}
		return out
	}
	return v
}

// under redacts v, the string value of key k: a high-entropy value under a
// secret-like name is removed whole, and the rules that need a key name
// before a secret (gitleaks' "stripe ... = sk_...", "key": "...") see the
// pair as "k: v".
func (r *Redactor) under(k, v string) string {
	if v == "" {
		return v
	}
	if secret, strong := secretName(k); secret && tokenLike(v) && (strong || !productID(v)) {
		return Mask
	}
	if !r.rules.named.any(k) {
		return r.String(v)
	}
	memoKey := k + "\x00" + v
	if len(memoKey) <= memoMaxLen {
		if out, ok := r.pairs.get(memoKey); ok {
			return out
		}
	}
	text := k + ": " + v
	off := len(k) + 2
	var spans []span
	for _, sp := range r.find(text, nil, 0) {
		if sp.end <= off {
			continue
		}
		spans = append(spans, span{max(sp.start, off) - off, sp.end - off})
	}
	out := mask(v, spans)
	if len(memoKey) <= memoMaxLen {
		r.pairs.put(memoKey, out)
	}
	return out
}

// JSON returns v as redacted JSON: encoded, decoded into plain values,
// redacted with Value (so every string, key and idempotency key is seen as
// a value, not as JSON text), and encoded again.
func (r *Redactor) JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `{"error":"unserializable"}`
	}
	return r.JSONText(string(b))
}

// JSONText redacts a JSON document given as text (a claim, a stored plan);
// text that is not JSON is redacted as a string.
func (r *Redactor) JSONText(s string) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return r.String(s)
	}
	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // stored for people: keep <, > and & readable
	if err := enc.Encode(r.Value(v)); err != nil {
		return r.String(s)
	}
	return strings.TrimSuffix(out.String(), "\n")
}

// harmless reports a secret-named key's value that cannot be a secret: a
// flag, nothing, or a token count ("tokens": 120, "max_tokens": 1024).
// A numeric password or API key is still masked.
func harmless(key string, v any) bool {
	switch v.(type) {
	case bool, nil:
		return true
	case float64, float32, int, int64, int32, uint64, uint32, json.Number:
		return strings.Contains(key, "token")
	}
	return false
}

func isSensitive(key string) bool {
	for _, s := range sensitiveKeys {
		if strings.Contains(key, s) {
			return true
		}
	}
	return false
}

// memo is a bounded map from a string to its redaction, safe for the
// concurrent shards of a worker. Redaction is a pure function of the string
// (the patterns and values are fixed when the Redactor is built), so a
// remembered answer is always the one String would compute. When full it
// starts over: a worker's working set is a few scenarios' strings.
type memo struct {
	mu sync.Mutex
	m  map[string]string
}

const (
	memoMax    = 1 << 15 // strings remembered before the memo starts over
	memoMaxLen = 512     // longer strings (documents, recordings) are not remembered
)

func newMemo() *memo { return &memo{m: make(map[string]string)} }

func (c *memo) get(s string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, ok := c.m[s]
	return out, ok
}

func (c *memo) put(s, out string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= memoMax {
		c.m = make(map[string]string, memoMax)
	}
	c.m[s] = out
}
