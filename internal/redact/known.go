package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
)

// known finds the secret values a process knows (Options.Values) in any
// form they can reach storage in:
//
//   - whole, JSON-escaped, hex-encoded and percent-encoded;
//   - in base64 (standard or URL alphabet, with or without padding), alone
//     or inside a longer base64 string at any of the three byte alignments:
//     the characters that only the value determines are found, and the
//     whole run of base64 around them is removed;
//   - in pieces: every fragment of at least minValue bytes of a value (or of
//     its JSON-escaped form) is removed wherever it appears, so a value cut
//     in two or more pieces of at least minValue bytes across arguments or
//     fields never survives.
type known struct {
	ac    *acMatcher
	kinds []knownKind // per pattern
}

type knownKind uint8

const (
	knownLiteral knownKind = iota // remove the match
	knownBase64                   // remove the run of base64 around the match
)

func newKnown(values []string) *known {
	seen := map[string]bool{}
	k := &known{}
	var patterns []string
	add := func(p string, kind knownKind) {
		if len(p) < minValue || seen[p] {
			return
		}
		seen[p] = true
		patterns = append(patterns, p)
		k.kinds = append(k.kinds, kind)
	}
	for _, v := range values {
		if len(v) < minValue {
			continue
		}
		forms := []string{v}
		if b, err := json.Marshal(v); err == nil {
			forms = append(forms, string(b[1:len(b)-1]))
		}
		for _, f := range forms {
			// Every fragment of minValue bytes: a fragment of any length
			// is the union of the windows it contains.
			for i := 0; i+minValue <= len(f); i++ {
				add(f[i:i+minValue], knownLiteral)
			}
		}
		add(hex.EncodeToString([]byte(v)), knownLiteral)
		add(url.QueryEscape(v), knownLiteral)
		add(url.PathEscape(v), knownLiteral)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			for align := 0; align < 3; align++ {
				b := enc.EncodeToString(append(make([]byte, align), v...))
				from, to := (8*align+5)/6, 8*(align+len(v))/6
				add(b[from:to], knownBase64)
			}
		}
	}
	if len(patterns) == 0 {
		return nil
	}
	k.ac = newAC(patterns, false)
	return k
}

// find reports the spans of s that hold a known value in any of its forms.
func (k *known) find(s string, add func(start, end int)) {
	if k == nil {
		return
	}
	k.ac.scan(s, func(end int, p int32) bool {
		start := end - k.ac.lens[p]
		if k.kinds[p] == knownBase64 {
			for start > 0 && base64Any(s[start-1]) {
				start--
			}
			for end < len(s) && (base64Any(s[end]) || s[end] == '=') {
				end++
			}
		}
		add(start, end)
		return true
	})
}

// base64Any reports a character of either base64 alphabet.
func base64Any(c byte) bool { return b64Char(c) || c == '-' || c == '_' }
