package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"rebound/internal/redact/redacttest"
)

// corpusRNG is a random source whose seed the test logs, so a failure can
// be replayed (REBOUND_REDACT_SEED is not needed: the seed is in the log).
func corpusRNG(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("corpus seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed>>7))
}

// Every shape of the corpus, with random bodies, in text (alone, between
// words, on one line with the others, inside JSON) and as a JSON value
// under an ordinary key: no secret survives, and the text before and after
// each one does.
func TestCorpusIsRedacted(t *testing.T) {
	rng := corpusRNG(t)
	known := redacttest.NewKnown(rng)
	r, err := NewWith(Options{Values: known.Values(), HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	corpus := redacttest.Corpus(rng, known)
	if len(corpus) < 60 {
		t.Fatalf("corpus of %d shapes", len(corpus))
	}
	var line []string
	for i, p := range corpus {
		for j, piece := range p.Pieces {
			line = append(line, fmt.Sprintf("m%02d.%da %s m%02d.%db", i, j, piece, i, j))
		}
	}
	oneLine := r.String(strings.Join(line, " ; "))
	for i, p := range corpus {
		for j, piece := range p.Pieces {
			for _, ctx := range []string{"%s", "before %s after", "line1\n%s\nline3"} {
				in := fmt.Sprintf(ctx, piece)
				out := r.String(in)
				checkRedacted(t, p, in, out)
			}
			doc := r.JSON(map[string]any{"note": piece, "nested": []any{map[string]any{"sku": piece}}})
			checkRedacted(t, p, piece, doc)
			a, b := fmt.Sprintf("m%02d.%da ", i, j), fmt.Sprintf(" m%02d.%db", i, j)
			if j == 0 {
				a += p.Before
			}
			if j == len(p.Pieces)-1 {
				b = p.After + b
			}
			if !strings.Contains(oneLine, a) || !strings.Contains(oneLine, b) {
				t.Errorf("%s: the text around it was redacted too: want %q and %q in the line", p.Shape, a, b)
			}
		}
		for _, s := range p.Secrets {
			if strings.Contains(oneLine, s) {
				t.Errorf("%s: %q kept in a line of secrets", p.Shape, s)
			}
		}
	}
	if t.Failed() {
		t.Logf("line: %s", oneLine)
	}
}

func checkRedacted(t *testing.T, p redacttest.Planted, in, out string) {
	t.Helper()
	for _, s := range p.Secrets {
		if strings.Contains(out, s) || strings.Contains(out, jsonEscaped(s)) {
			t.Errorf("%s: %q kept: %q -> %q", p.Shape, s, in, out)
			return
		}
	}
	if p.Before != "" && !strings.Contains(out, p.Before) && !strings.Contains(out, jsonEscaped(p.Before)) {
		t.Errorf("%s: %q lost: %q -> %q", p.Shape, p.Before, in, out)
	}
}

// What the product stores that is not secret stays: identifiers, hashes,
// counts, prose that names a key without one, URLs without credentials.
func TestOrdinaryTextSurvives(t *testing.T) {
	r, err := NewWith(Options{Values: []string{"opaque-provider-key-Qx7Lm2Vr9Tz4Wb8N"}, HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"order A-4417 for 15000 cents", "the password field is required", "tokens: 1200", "https://example.com/path@v2",
		"trial 5f0e9d8c7b6a594837261504 of sweep library-20261130-191942-a1b2c3",
		"args_key: 4f9c2a7e1b3d5f60", "idempotency_key: hmac:9a8b7c6d5e4f3a2b", "key=4f9c2a7e1b3d5f60a1b2c3d4",
		"request 3fa85f64-5717-4562-b3fc-2c963f66afa6 done", "…[truncated: 9000 bytes, sha256:" + strings.Repeat("ab12", 16) + "]",
		"scenario_hash=" + strings.Repeat("0f1e", 16), "retry with the same idempotency key; the key is the invoice id",
		"GET https://api.example.com/v1/items?page=2&per_page=50&sort=created_at", "inventory.lookup", "TIMEOUT",
		"Authorization header missing", "cache_key: inv-100-2026-11-30", "sort_key=created_at_desc",
		"session_id=checkout-flow-eu-west-2025", "token_name=CustomerRefundRequested", "see https://docs.example.com/guide?section=getting-started-with-retries",
	} {
		if out := r.String(s); out != s {
			t.Errorf("harmless text changed: %q -> %q", s, out)
		}
	}
	doc := map[string]any{"args_key": "4f9c2a7e1b3d5f60", "trial_id": "5f0e9d8c7b6a594837261504", "request_hash": strings.Repeat("ab12", 16),
		"history_key": "refund-timeout/careful", "idempotency_key_param": "idempotency_key", "uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6"}
	b, _ := json.Marshal(doc)
	if out := r.JSONText(string(b)); out != string(b) {
		t.Errorf("identifiers changed:\n%s\n%s", b, out)
	}
}

// The Authorization header's credentials go, never the rest of the line.
func TestAuthorizationEndsAtTheSecret(t *testing.T) {
	r, _ := New(nil, []byte("k"))
	for in, want := range map[string]string{
		"Authorization: Token abc123def456 sent to {host} with {path}":                                      "Authorization: Token [REDACTED] sent to {host} with {path}",
		"authorization=Bearer abcdefghijklmnop.qrstu; next":                                                 "authorization=Bearer [REDACTED]; next",
		`{"Authorization": "Basic dXNlcjpwYXNzd29yZA==", "Accept": "text/plain"}`:                           `{"Authorization": "Basic [REDACTED]", "Accept": "text/plain"}`,
		"Authorization: x9Yk2mQ7pL4vR8wN then the body":                                                     "Authorization: [REDACTED] then the body",
		`Authorization: Digest username="bob", realm="api", response="6629fae49393a05397450978507c4ef1" ok`: `Authorization: Digest [REDACTED] ok`,
	} {
		if got := r.String(in); got != want {
			t.Errorf("%q\n got %q\nwant %q", in, got, want)
		}
	}
}

// A known value is removed in every form: whole, escaped, encoded, inside
// a longer base64 string at each alignment, and cut in pieces of 8 bytes
// or more across fields.
func TestKnownValueForms(t *testing.T) {
	v := "Zq8Lm2Vr9Tz4Wb8NxP3kR7yH"
	r, _ := NewWith(Options{Values: []string{v}, HashKey: []byte("k")})
	for align := 0; align < 3; align++ {
		for _, tail := range []int{0, 1, 2, 5} {
			blob := append(append(make([]byte, align), v...), make([]byte, tail)...)
			for i := range blob[:align] {
				blob[i] = byte(0xf0 + i)
			}
			for _, enc := range []string{stdB64(blob), urlB64(blob), strings.TrimRight(stdB64(blob), "=")} {
				if out := r.String("x " + enc + " y"); out != "x [REDACTED] y" {
					t.Errorf("align %d tail %d: %q -> %q", align, tail, enc, out)
				}
			}
		}
	}
	args := r.Value(map[string]any{"a": v[:8], "b": v[8:16], "c": "pre" + v[16:] + "post", "d": "ok"}).(map[string]any)
	if args["a"] != Mask || args["b"] != Mask || args["c"] != "pre"+Mask+"post" || args["d"] != "ok" {
		t.Errorf("split value kept: %v", args)
	}
	if out := r.String(v[:7] + " and " + v[20:]); out != v[:7]+" and "+v[20:] {
		t.Errorf("fragments shorter than 8 bytes are ordinary text: %q", out)
	}
}

func stdB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
func urlB64(b []byte) string { return base64.URLEncoding.EncodeToString(b) }

// A JSON value is judged with its key: a high-entropy value under a
// secret-like name goes, gitleaks' rules that need the provider's name
// before the secret see it, and rebound's identifiers under weak names
// stay.
func TestValuesUnderKeyNames(t *testing.T) {
	r, _ := New(nil, []byte("k"))
	rng := corpusRNG(t)
	sig, tok := redacttest.Alnum(rng, 43), redacttest.Alnum(rng, 32)
	ada := strings.ToLower(redacttest.Alnum(rng, 32))
	in := map[string]any{
		"signature": sig, "X-Amz-Signature": strings.Repeat("0a1b2c3d", 8), "session_cookie": tok, "adafruit_io": ada,
		"args_key": "4f9c2a7e1b3d5f60", "session": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "cache_key": "inv-100-2026-11-30",
		"sku": "KB-104", "note": "signature checked",
	}
	out := r.Value(in).(map[string]any)
	for _, k := range []string{"signature", "X-Amz-Signature", "session_cookie", "adafruit_io"} {
		if out[k] != Mask {
			t.Errorf("%s: %v kept", k, out[k])
		}
	}
	for _, k := range []string{"args_key", "session", "cache_key", "sku", "note"} {
		if out[k] != in[k] {
			t.Errorf("%s: %v -> %v", k, in[k], out[k])
		}
	}
}
