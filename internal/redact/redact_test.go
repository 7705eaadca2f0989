package redact

import (
	"strings"
	"testing"
)

func TestRedactsSecretShapes(t *testing.T) {
	r, err := New([]string{`cus-\d+`}, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{
		"sk-proj-abcdefghijklmnopqrstuvwx",
		"Bearer abcdefghijklmnop.qrstu",
		"AKIAABCDEFGHIJKLMNOP",
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4",
		"cus-1234",
	}
	for _, s := range secrets {
		out := r.String("before " + s + " after")
		if strings.Contains(out, s) || !strings.Contains(out, "[REDACTED]") || !strings.HasPrefix(out, "before ") {
			t.Errorf("%q -> %q", s, out)
		}
	}
	if out := r.String("order A-4417 for 15000 cents"); out != "order A-4417 for 15000 cents" {
		t.Errorf("harmless text changed: %q", out)
	}
}

func TestValueHashesIdempotencyKeysAndDropsSecrets(t *testing.T) {
	r, _ := New(nil, []byte("sweep-key"))
	a := r.Value(map[string]any{"idempotency_key": "refund-case-771", "api_key": "x", "nested": []any{map[string]any{"password": "p"}}}).(map[string]any)
	b := r.Value(map[string]any{"idempotency_key": "refund-case-771"}).(map[string]any)
	c := r.Value(map[string]any{"idempotency_key": "refund-case-772"}).(map[string]any)
	if a["idempotency_key"] != b["idempotency_key"] || a["idempotency_key"] == c["idempotency_key"] {
		t.Fatalf("keyed hashes do not preserve equality: %v %v %v", a, b, c)
	}
	if strings.Contains(a["idempotency_key"].(string), "771") || a["api_key"] != "[REDACTED]" {
		t.Fatalf("not redacted: %v", a)
	}
	if a["nested"].([]any)[0].(map[string]any)["password"] != "[REDACTED]" {
		t.Fatalf("nested secret kept: %v", a)
	}
	other, _ := New(nil, []byte("other-key"))
	if other.Value(map[string]any{"idempotency_key": "refund-case-771"}).(map[string]any)["idempotency_key"] == a["idempotency_key"] {
		t.Fatal("hash does not depend on the key")
	}
}
