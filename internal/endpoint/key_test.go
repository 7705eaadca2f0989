package endpoint

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestAPIKey(t *testing.T) {
	t.Setenv("REBOUND_ENDPOINT_TEST_KEY", "  sk-secret-123  ")
	t.Setenv("REBOUND_ENDPOINT_TEST_BLANK", " ")
	if k, err := APIKey("REBOUND_ENDPOINT_TEST_KEY"); err != nil || k != "sk-secret-123" {
		t.Fatalf("key %q, %v", string(k), err)
	}
	if k, err := APIKey(""); err != nil || k != "" {
		t.Fatalf("no variable: key %q, %v", string(k), err)
	}
	for _, env := range []string{"REBOUND_ENDPOINT_TEST_BLANK", "REBOUND_ENDPOINT_TEST_UNSET"} {
		_, err := APIKey(env)
		if err == nil || err.Error() != "environment variable "+env+" (api_key_env) is unset or empty" {
			t.Errorf("%s: err = %v", env, err)
		}
	}
	k := Key("sk-secret-123")
	if got := k.Redact("a sk-secret-123 b"); got != "a [REDACTED] b" {
		t.Errorf("Redact = %q", got)
	}
	if got := string(k.RedactBytes([]byte("sk-secret-123"))); got != Redacted {
		t.Errorf("RedactBytes = %q", got)
	}
	if s := fmt.Sprintf("%v %+v %#v %s", k, k, k, k); strings.Contains(s, "secret") {
		t.Errorf("a Key printed itself: %s", s)
	}
}

// HashPrompt is SHA-256's first 8 bytes in hex: the value stored with every
// trial and judgement, so it must never change.
func TestHashPrompt(t *testing.T) {
	for in, want := range map[string]string{
		"":    "e3b0c44298fc1c14",
		"abc": "ba7816bf8f01cfea",
	} {
		if got := HashPrompt(in); got != want || len(got) != 16 {
			t.Errorf("HashPrompt(%q) = %q, want %q", in, got, want)
		}
	}
	if HashPrompt("p") == HashPrompt("p ") {
		t.Error("two prompts, one hash")
	}
}

func TestBackoff(t *testing.T) {
	judge := RetryPolicy{MaxRetries: 2, Base: time.Second, Multiplier: 4, MaxWait: 2 * time.Minute}
	if a, b := judge.Backoff(0), judge.Backoff(1); a != time.Second || b != 4*time.Second {
		t.Errorf("judge waits %v, %v; want 1s, 4s", a, b)
	}
	arm := RetryPolicy{MaxRetries: 6, Base: time.Second, MaxWait: 8 * time.Second, Jitter: true}
	for i, cap := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		for range 50 {
			if d := arm.Backoff(i); d < cap/2 || d > cap {
				t.Fatalf("attempt %d: %v, want in [%v, %v]", i, d, cap/2, cap)
			}
		}
	}
	f := &Failure{Transient: true, Msg: "m: HTTP 503"}
	if _, err := judge.Wait(2, f); err == nil || err.Error() != "m: HTTP 503 (still failing after 3 attempts)" {
		t.Errorf("retries spent: %v", err)
	}
	if _, err := judge.Wait(0, &Failure{Msg: "m: HTTP 400"}); err == nil || !isConfig(err) {
		t.Errorf("configuration error retried: %v", err)
	}
}

func isConfig(err error) bool { f, ok := err.(*Failure); return ok && !f.Transient && f.Is(ErrConfig) }
