// Package redact removes secrets from anything rebound persists or prints:
// tool arguments, results, claims and answers. It runs before storage, so a
// secret an agent pastes into a tool call never reaches ClickHouse or a log.
// Idempotency keys are replaced by keyed hashes, so two calls that used the
// same key still compare equal without the key itself being stored.
package redact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// DefaultPatterns match the shapes of common API keys and tokens.
var DefaultPatterns = []string{
	`sk-[A-Za-z0-9_\-]{16,}`,                                        // OpenAI-style secret keys
	`(?i)bearer\s+[A-Za-z0-9._~+/\-]{12,}=*`,                        // bearer tokens
	`AKIA[0-9A-Z]{16}`,                                              // AWS access key ids
	`gh[pousr]_[A-Za-z0-9]{30,}`,                                    // GitHub tokens
	`xox[baprs]-[A-Za-z0-9\-]{10,}`,                                 // Slack tokens
	`eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`, // JWTs
	`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`,
}

// sensitiveKeys are argument names whose values are always secret.
var sensitiveKeys = []string{"password", "secret", "api_key", "apikey", "token", "authorization", "credential"}

// Redactor scrubs values before persistence.
type Redactor struct {
	patterns []*regexp.Regexp
	hashKey  []byte
	// HashedKeys are argument names replaced by a keyed hash rather than
	// removed (idempotency keys: equality across retries stays checkable).
	hashedKeys map[string]bool
}

// New builds a redactor from extra patterns (on top of DefaultPatterns) and
// the key of the keyed hash (per sweep, never stored).
func New(extra []string, hashKey []byte) (*Redactor, error) {
	r := &Redactor{hashKey: hashKey, hashedKeys: map[string]bool{"idempotency_key": true, "idempotencykey": true, "operation_id": true}}
	for _, p := range append(append([]string(nil), DefaultPatterns...), extra...) {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact: pattern %q: %w", p, err)
		}
		r.patterns = append(r.patterns, re)
	}
	return r, nil
}

// String replaces every secret-shaped substring with [REDACTED].
func (r *Redactor) String(s string) string {
	for _, re := range r.patterns {
		s = re.ReplaceAllString(s, "[REDACTED]")
	}
	return s
}

// Hash returns the keyed hash that stands in for an idempotency key.
func (r *Redactor) Hash(v string) string {
	m := hmac.New(sha256.New, r.hashKey)
	m.Write([]byte(v))
	return "hmac:" + hex.EncodeToString(m.Sum(nil)[:8])
}

// Value redacts a JSON-compatible value: strings by pattern, secret-named
// keys entirely, idempotency keys by keyed hash. It returns a copy.
func (r *Redactor) Value(v any) any {
	switch x := v.(type) {
	case string:
		return r.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			lk := strings.ToLower(k)
			switch {
			case r.hashedKeys[lk]:
				out[k] = r.Hash(fmt.Sprint(val))
			case isSensitive(lk):
				out[k] = "[REDACTED]"
			default:
				out[k] = r.Value(val)
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

func isSensitive(key string) bool {
	for _, s := range sensitiveKeys {
		if strings.Contains(key, s) {
			return true
		}
	}
	return false
}
