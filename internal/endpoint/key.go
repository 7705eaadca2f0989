package endpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"
)

// Key is an API key read from the environment. It is never logged, stored,
// recorded or put in an error: Redact removes it from text bound for any
// of those.
type Key string

// APIKey reads the key from the environment variable named env ("" for a
// server that needs none: the empty Key). The error names the variable,
// never a value; callers wrap it in their configuration error.
func APIKey(env string) (Key, error) {
	if env == "" {
		return "", nil
	}
	v, ok := os.LookupEnv(env)
	if !ok || strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("environment variable %s (api_key_env) is unset or empty", env)
	}
	return Key(strings.TrimSpace(v)), nil
}

// Redacted replaces the key in text.
const Redacted = "[REDACTED]"

// Redact removes the key from s.
func (k Key) Redact(s string) string {
	if k == "" {
		return s
	}
	return strings.ReplaceAll(s, string(k), Redacted)
}

// RedactBytes removes the key from b (b itself when it holds none).
func (k Key) RedactBytes(b []byte) []byte {
	if k == "" || !bytes.Contains(b, []byte(k)) {
		return b
	}
	return bytes.ReplaceAll(b, []byte(k), []byte(Redacted))
}

// String never prints the key.
func (k Key) String() string   { return Redacted }
func (k Key) GoString() string { return Redacted }

// HashPrompt identifies a prompt (an arm's system prompt, the judge's
// rubric) by its text: the first 16 hex digits of its SHA-256. Trials and
// judgements record it, so a revision is identified by content, whatever
// its name.
func HashPrompt(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:8])
}

// Sleep waits d or until ctx is done, and then returns ctx.Err(). It is the
// seam every wait of the client layer goes through (backoff, Retry-After,
// the rate limiter): tests pass one that records d and returns at once.
type Sleep func(ctx context.Context, d time.Duration) error

// RealSleep waits d of wall-clock time.
func RealSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
