package redact

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"rebound/internal/redact/redacttest"
)

func TestEveryShapeIsRedacted(t *testing.T) {
	r, err := New(nil, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range redacttest.Shapes(7) {
		secret := redacttest.SecretPart(s)
		for _, ctx := range []string{"%s", "before %s after", "{\"note\": %q}", "line1\n%s\nline3"} {
			in := fmt.Sprintf(ctx, s)
			out := r.String(in)
			if strings.Contains(out, secret) || !strings.Contains(out, Mask) {
				t.Errorf("%q -> %q", in, out)
			}
		}
		// Inside JSON, as a value: the escapes of a PEM block's newlines
		// must not hide it.
		doc := r.JSON(map[string]any{"message": s, "nested": []any{map[string]any{"x": s}}})
		if strings.Contains(doc, secret) || strings.Contains(doc, jsonEscaped(secret)) {
			t.Errorf("JSON kept %q: %s", s, doc)
		}
	}
	for _, harmless := range []string{"order A-4417 for 15000 cents", "the password field is required", "tokens: 1200", "https://example.com/path@v2"} {
		if out := r.String(harmless); out != harmless {
			t.Errorf("harmless text changed: %q -> %q", harmless, out)
		}
	}
}

func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// A key the process knows is removed by value, whatever its shape, in
// plain and JSON-escaped form; counts under secret-sounding names stay.
func TestKnownValuesAndCounts(t *testing.T) {
	key := `opaque/Value+With"Quote` + "\\42"
	r, err := NewWith(Options{Values: []string{key, "short"}, HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"args": "echo " + key, "tokens": 120, "total_tokens": json.Number("9"), "token": "abc", "short": "short", "password": 123456, "api_key": json.Number("42424242")}
	out := r.JSON(in)
	if strings.Contains(out, key) || strings.Contains(out, jsonEscaped(key)) || !strings.Contains(out, `"tokens":120`) || !strings.Contains(out, `"total_tokens":9`) || !strings.Contains(out, `"token":"[REDACTED]"`) || !strings.Contains(out, `"short":"short"`) ||
		!strings.Contains(out, `"password":"[REDACTED]"`) || !strings.Contains(out, `"api_key":"[REDACTED]"`) {
		t.Fatalf("got %s", out)
	}
	if got := r.String("prefix " + jsonEscaped(key)); strings.Contains(got, jsonEscaped(key)) {
		t.Fatalf("escaped form kept: %s", got)
	}
}

func TestSealAndOpen(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	s, err := NewSealer(key, "plan")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSealer([]byte("short"), "plan"); err == nil {
		t.Fatal("a short key was accepted")
	}
	r, _ := New(nil, key)
	doc := `{"name":"p","goal":"use ghp_abcdefghijklmnopqrstuvwxyz0123456789","n":3}`
	stored, err := SealDocument(r, s, doc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, "ghp_abcdefghijklmnopqrstuvwxyz0123456789") || !strings.Contains(stored, `"n":3`) {
		t.Fatalf("stored %s", stored)
	}
	back, err := OpenDocument(s, stored)
	if err != nil || back != doc {
		t.Fatalf("opened %q, %v", back, err)
	}
	other, _ := NewSealer([]byte("another-key-another-key-another-key"), "plan")
	if _, err := OpenDocument(other, stored); err == nil || !strings.Contains(err.Error(), EnvKey) {
		t.Fatalf("another key: %v", err)
	}
	if _, err := OpenDocument(nil, stored); err != ErrNoKey {
		t.Fatalf("no key: %v", err)
	}
	if got, err := OpenDocument(nil, `{"name":"legacy"}`); err != nil || got != `{"name":"legacy"}` {
		t.Fatalf("legacy plan: %q %v", got, err)
	}
	p, _ := NewSealer(key, "temporal-payload")
	if p.KeyID() == s.KeyID() {
		t.Fatal("purposes share a key")
	}
}
