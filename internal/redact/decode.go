package redact

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
)

// findDecoded finds secrets inside the encoded parts of s: a run of base64
// (either alphabet, padded or not) or of hex digits that decodes to text,
// a word with percent escapes, a word with \u escapes. Each decoded part is
// searched like any string (and decoded again, up to maxDecodeDepth); a
// secret found inside removes its occurrences in s when it appears there
// as it is, the whole encoded part otherwise.
func (r *Redactor) findDecoded(s string, spans []span, depth int) []span {
	eachEncoded(s, func(start, end int, decoded string) {
		found := r.find(decoded, nil, depth+1)
		if len(found) == 0 {
			return
		}
		part := s[start:end]
		whole := false
		for _, sp := range found {
			secret := decoded[sp.start:sp.end]
			if !strings.Contains(part, secret) {
				// Percent-escaped as it is in s?
				if q := url.QueryEscape(secret); strings.Contains(part, q) {
					secret = q
				} else if q := url.PathEscape(secret); strings.Contains(part, q) {
					secret = q
				} else {
					whole = true
					break
				}
			}
			for i := 0; ; {
				j := strings.Index(part[i:], secret)
				if j < 0 {
					break
				}
				spans = append(spans, span{start + i + j, start + i + j + len(secret)})
				i += j + len(secret)
			}
		}
		if whole {
			spans = append(spans, span{start, end})
		}
	})
	return spans
}

// minEncoded is the shortest run of base64 decoded (gitleaks' decoder's
// bound).
const minEncoded = 16

// eachEncoded calls fn for each encoded part of s that decodes to
// printable text.
func eachEncoded(s string, fn func(start, end int, decoded string)) {
	// Runs of base64 and hex.
	for i := 0; i < len(s); {
		if !base64Any(s[i]) {
			i++
			continue
		}
		j, likely := i, false
		for j < len(s) && base64Any(s[j]) {
			c := s[j]
			if '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_' {
				likely = true
			}
			j++
		}
		end := j
		for end < len(s) && end-j < 2 && s[end] == '=' {
			end++
		}
		if j-i >= minEncoded && likely {
			if d, ok := decodeRun(s[i:j]); ok {
				fn(i, end, d)
			}
		}
		i = end
	}
	// Words with percent or \u escapes.
	if strings.IndexByte(s, '%') < 0 && !strings.Contains(s, `\u`) && !strings.Contains(s, `\U`) {
		return
	}
	for i := 0; i < len(s); {
		if isSpace(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
		word := s[i:j]
		if d, ok := unescapeWord(word); ok && d != word {
			fn(i, j, d)
		}
		i = j
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\''
}

// decodeRun decodes a run of base64 or hex characters to printable text.
func decodeRun(run string) (string, bool) {
	if len(run)%2 == 0 && len(run) >= 32 && isHex(run) {
		if b, err := hex.DecodeString(run); err == nil && printable(b) {
			return string(b), true
		}
	}
	enc := base64.RawStdEncoding
	if strings.ContainsAny(run, "-_") {
		if strings.ContainsAny(run, "+/") {
			return "", false
		}
		enc = base64.RawURLEncoding
	}
	b, err := enc.DecodeString(run)
	if err != nil || !printable(b) {
		return "", false
	}
	return string(b), true
}

// unescapeWord decodes the percent and \u escapes of a word.
func unescapeWord(w string) (string, bool) {
	out := w
	if strings.IndexByte(out, '%') >= 0 {
		d, err := url.PathUnescape(out)
		if err != nil {
			return "", false
		}
		out = d
	}
	if strings.Contains(out, `\u`) || strings.Contains(out, `\U`) {
		var b strings.Builder
		for i := 0; i < len(out); i++ {
			if out[i] == '\\' && i+6 <= len(out) && (out[i+1] == 'u' || out[i+1] == 'U') && isHex(out[i+2:i+6]) {
				n, _ := strconv.ParseUint(out[i+2:i+6], 16, 32)
				b.WriteRune(rune(n))
				i += 5
				continue
			}
			b.WriteByte(out[i])
		}
		out = b.String()
	}
	return out, printable([]byte(out))
}

// printable reports text: printable ASCII, tabs and newlines.
func printable(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !(c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' || c == '\r') {
			return false
		}
	}
	return true
}
