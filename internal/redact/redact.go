// Package redact removes secrets from anything rebound persists or prints:
// tool arguments, results, claims, answers, fault schedules, the stored plan
// and the judge's input. It runs before storage, so a secret an agent pastes
// into a tool call never reaches ClickHouse or a log. Idempotency keys are
// replaced by keyed hashes, so two calls that used the same key still
// compare equal without the key itself being stored. Values the process
// knows to be secret (an API key read from the environment) are removed
// wherever they appear, whatever their shape.
package redact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// DefaultPatterns match the shapes of common credentials. A pattern with a
// subexpression named "secret" has only that part replaced (the key name or
// URL around it stays readable); otherwise the whole match is.
var DefaultPatterns = []string{
	// Private keys (PEM, OpenSSH, PGP), whole blocks; then a block cut
	// short, from its header to the end.
	`-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----`,
	`-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----[\s\S]*`,
	`sk-[A-Za-z0-9_\-]{16,}`,                                                  // OpenAI-style secret keys
	`\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}`,                                  // Stripe secret and restricted keys
	`(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{12,}=*`,                                // bearer tokens
	`(?i)\bbasic\s+[A-Za-z0-9+/]{8,}={0,2}`,                                   // HTTP basic credentials
	`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])[A-Z0-9]{16}\b`, // AWS key ids
	`gh[pousr]_[A-Za-z0-9]{30,}`,                                              // GitHub tokens
	`github_pat_[A-Za-z0-9_]{22,}`,                                            // GitHub fine-grained tokens
	`glpat-[A-Za-z0-9_\-]{20,}`,                                               // GitLab personal access tokens
	`AIza[0-9A-Za-z_\-]{35}`,                                                  // Google API keys
	`\bhf_[A-Za-z0-9]{30,}`,                                                   // Hugging Face tokens
	`\bnpm_[A-Za-z0-9]{36}`,                                                   // npm tokens
	`xox[baprs]-[A-Za-z0-9\-]{10,}`,                                           // Slack tokens
	`eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`,           // JWTs
	// Credentials in URLs: postgres://user:password@host, https://u:p@host.
	`\b[A-Za-z][A-Za-z0-9+.\-]*://(?P<secret>[^\s:/@"'\\]+:[^\s/@"'\\]+)@`,
	// key = value forms: aws_secret_access_key=..., "password": "...",
	// authorization: ..., api_key: ...
	`(?i)\b(?:aws_secret_access_key|aws_session_token|secret_access_key|password|passwd|passphrase|pwd|client_secret|api[_-]?key|access[_-]?token|auth[_-]?token|secret[_-]?key|x-api-key)\b(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?(?P<secret>[^\s"',;}\\]{4,})`,
	// An Authorization header: everything after the scheme's colon, to the
	// end of the header (Token, Digest, custom schemes).
	`(?i)\bauthorization\b(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?(?P<secret>[^"'\r\n\\]+)`,
	// Prose: "the password is hunter2", "passphrase was ...".
	`(?i)\b(?:password|passwd|passphrase)\s+(?:is|was)\s*:?\s+(?:\\?["'])?(?P<secret>[^\s"',;}\\]{3,})`,
}

// sensitiveKeys are argument names whose string values are always secret.
var sensitiveKeys = []string{"password", "passwd", "secret", "api_key", "apikey", "token", "authorization", "credential", "private_key"}

// minValue is the shortest known secret value redacted by value: shorter
// ones would match ordinary text.
const minValue = 8

// Redactor scrubs values before persistence.
type Redactor struct {
	// memo remembers what short strings redact to: a worker redacts the
	// same tool names, argument keys, identifiers and answers for every
	// trial of a scenario, and each string costs one pass per pattern.
	memo     *memo
	patterns []pattern
	values   []string // exact secret values, longest first
	hashKey  []byte
	// hashedKeys are argument names replaced by a keyed hash rather than
	// removed (idempotency keys: equality across retries stays checkable).
	hashedKeys map[string]bool
}

type pattern struct {
	re     *regexp.Regexp
	secret int // index of the "secret" subexpression, 0 for the whole match
}

// Options configure a Redactor.
type Options struct {
	// Patterns are extra regular expressions, on top of DefaultPatterns.
	Patterns []string
	// Values are secrets the process knows (API keys read from the
	// environment): each is removed wherever it appears, JSON-escaped
	// forms included. Values shorter than 8 bytes are ignored.
	Values []string
	// HashKey keys the hash that replaces idempotency keys.
	HashKey []byte
}

// New builds a redactor from extra patterns (on top of DefaultPatterns) and
// the key of the keyed hash.
func New(extra []string, hashKey []byte) (*Redactor, error) {
	return NewWith(Options{Patterns: extra, HashKey: hashKey})
}

// NewWith builds a redactor from options.
func NewWith(o Options) (*Redactor, error) {
	r := &Redactor{memo: newMemo(), hashKey: o.HashKey, hashedKeys: map[string]bool{"idempotency_key": true, "idempotencykey": true, "operation_id": true}}
	for _, p := range append(append([]string(nil), DefaultPatterns...), o.Patterns...) {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact: pattern %q: %w", p, err)
		}
		r.patterns = append(r.patterns, pattern{re: re, secret: re.SubexpIndex("secret")})
	}
	seen := map[string]bool{}
	for _, v := range o.Values {
		if len(v) < minValue {
			continue
		}
		forms := []string{v}
		if b, err := json.Marshal(v); err == nil {
			forms = append(forms, string(b[1:len(b)-1]))
		}
		for _, f := range forms {
			if !seen[f] {
				seen[f] = true
				r.values = append(r.values, f)
			}
		}
	}
	sort.Slice(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
	return r, nil
}

// String replaces every secret in s with [REDACTED]: known values first,
// then every pattern.
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

// redact is String without the memo: known values first, then every
// pattern.
func (r *Redactor) redact(s string) string {
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, Mask)
	}
	for _, p := range r.patterns {
		s = p.replace(s)
	}
	return s
}

func (p pattern) replace(s string) string {
	if p.secret <= 0 {
		// ReplaceAllLiteralString copies s even when nothing matches.
		if !p.re.MatchString(s) {
			return s
		}
		return p.re.ReplaceAllLiteralString(s, Mask)
	}
	idx := p.re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		start, end := m[2*p.secret], m[2*p.secret+1]
		if start < 0 {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Mask)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
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
				out[rk] = r.Value(val)
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
