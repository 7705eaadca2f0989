package bounds

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// EscapedLen is exactly what the stored encoding takes, for every byte
// value, invalid UTF-8 and the separators included.
func TestEscapedLenMatchesEncoding(t *testing.T) {
	cases := []string{"", "plain", "\x00\x01\x1f\"\\\b\f\n\r\t", "<>&", "\u2028\u2029", "\xff\xfe", "é漢🙂", "a\xc3"}
	for b := range 256 {
		cases = append(cases, string([]byte{byte(b)}))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, rng.IntN(64))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		enc, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := EscapedLen(s), len(enc)-2; got != want {
			t.Errorf("EscapedLen(%q) = %d, encoding is %d", s, got, want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     string
		limit int
	}{
		{"ascii", strings.Repeat("a", 10_000), 1000},
		{"nul bytes escape to six", strings.Repeat("\x00", 10_000), 1000},
		{"invalid utf-8", strings.Repeat("\xff", 10_000), 1000},
		{"multibyte", strings.Repeat("漢", 10_000), 1001},
		{"fits", "short", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Cut(tc.s, tc.limit)
			if !utf8.ValidString(got) {
				t.Fatalf("not valid UTF-8: %q", got[:40])
			}
			if n := EscapedLen(got); n > tc.limit {
				t.Fatalf("escaped length %d over %d", n, tc.limit)
			}
			if EscapedLen(Valid(tc.s)) <= tc.limit {
				if got != Valid(tc.s) {
					t.Fatalf("a fitting string was changed: %q", got)
				}
				return
			}
			if !strings.Contains(got, "…[truncated: 10000 bytes, sha256:") && !strings.Contains(got, "…[truncated: 30000 bytes, sha256:") {
				t.Fatalf("no marker: %q", got[max(len(got)-120, 0):])
			}
			if Cut(tc.s, tc.limit) != got {
				t.Fatal("not deterministic")
			}
		})
	}
}

// A shrunk document is valid JSON under the limit, keeps its shape (an
// object stays an object, a string a string) and keeps its small members
// whole; a big member is cut, a member that cannot keep its shape becomes a
// marker object.
func TestShrinkJSONKeepsShapeAndSmallMembers(t *testing.T) {
	big := strings.Repeat("\x00", 1<<20)
	doc, _ := json.Marshal(map[string]any{
		"small": "keep me", "n": 42, "flag": true,
		"ledger": map[string]any{"attempts": []any{
			map[string]any{"index": 1, "args": map[string]any{"content": big}},
			map[string]any{"index": 2, "args": map[string]any{"content": "tiny"}},
		}},
		"summary": strings.Repeat("\xff", 1<<20),
	})
	for _, limit := range []int{64 * KiB, 4 * KiB} {
		out := ShrinkJSON(string(doc), limit)
		if n := EscapedLen(out); n > limit {
			t.Fatalf("limit %d: %d bytes", limit, n)
		}
		var v struct {
			Small   string `json:"small"`
			N       int    `json:"n"`
			Flag    bool   `json:"flag"`
			Summary string `json:"summary"`
			Ledger  struct {
				Attempts []struct {
					Index int
					Args  map[string]any
				}
			} `json:"ledger"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("limit %d: not the same shape: %v\n%s", limit, err, out[:200])
		}
		if v.Small != "keep me" || v.N != 42 || !v.Flag || len(v.Ledger.Attempts) != 2 || v.Ledger.Attempts[1].Args["content"] != "tiny" {
			t.Fatalf("limit %d: small members lost: %+v", limit, v)
		}
		if !strings.Contains(v.Summary, "…[truncated: 3145728 bytes") { // U+FFFD is 3 bytes
			t.Fatalf("limit %d: summary %q", limit, v.Summary[:min(len(v.Summary), 80)])
		}
		if ShrinkJSON(string(doc), limit) != out {
			t.Fatal("not deterministic")
		}
	}
	// Too many members to keep: the container becomes a marker.
	var many []any
	for i := range 1000 {
		many = append(many, strings.Repeat("x", 100+i%7))
	}
	out := Shrink(map[string]any{"many": many}, 1000)
	if m := out.(map[string]any); !IsMarker(m["many"]) {
		t.Fatalf("many = %v", m["many"])
	}
	if n := SizeOf(out); n > 1000 {
		t.Fatalf("%d bytes", n)
	}
	// Not JSON: cut as text.
	if out := ShrinkJSON("not json "+strings.Repeat("y ", 5000), 500); EscapedLen(out) > 500 || !strings.HasPrefix(out, "not json y y") {
		t.Fatalf("text: %q", out)
	}
}

// A cut never keeps the first part of a token: a secret cut before
// redaction cannot be stored half.
func TestCutEndsBeforeAToken(t *testing.T) {
	s := strings.Repeat("word ", 20) + "sk-0123456789abcdefghijklmnop" + strings.Repeat(" tail", 1000)
	for limit := 100; limit < 300; limit++ {
		out := Cut(s, limit)
		head, _, _ := strings.Cut(out, "…[truncated")
		if strings.Contains(head, "sk-") && !strings.Contains(head, "sk-0123456789abcdefghijklmnop ") {
			t.Fatalf("limit %d keeps part of the key: %q", limit, head)
		}
		if !strings.HasSuffix(head, " ") && head != "" {
			t.Fatalf("limit %d: head %q ends inside a word", limit, head)
		}
		if EscapedLen(out) > limit {
			t.Fatalf("limit %d: %d bytes", limit, EscapedLen(out))
		}
	}
}

func TestCeiling(t *testing.T) {
	for _, tc := range []struct {
		sizes    []int
		limit, c int
		ok       bool
	}{
		{[]int{10, 20, 30}, 100, 30, true},
		{[]int{10, 20, 30}, 50, 20, true},
		{[]int{10, 100, 1000}, 300, 190, true},
		{[]int{5, 5}, 4, 2, true},
		{nil, 10, 0, true},
		{[]int{1}, -1, 0, false},
	} {
		c, ok := Ceiling(tc.sizes, tc.limit)
		if c != tc.c || ok != tc.ok {
			t.Errorf("Ceiling(%v, %d) = %d, %v; want %d, %v", tc.sizes, tc.limit, c, ok, tc.c, tc.ok)
		}
	}
}

// Fit cuts the largest columns to a common ceiling, keeps the small and
// fixed ones, makes every column valid UTF-8, and says what it cut.
func TestFit(t *testing.T) {
	id := "trial-\xff"
	small := `{"ok":true}`
	bigJSON, _ := json.Marshal(map[string]any{"data": strings.Repeat("\x00", 2<<20), "n": 1})
	bigText := strings.Repeat("a\xfe", 3<<20)
	jsonCol, textCol := string(bigJSON), bigText
	cols := []Column{
		{Name: "trial_id", Text: &id, Fixed: true},
		{Name: "small", Text: &small, JSON: true},
		{Name: "evidence", Text: &jsonCol, JSON: true},
		{Name: "answer", Text: &textCol},
	}
	tr := Fit(cols, 1*MiB)
	if tr == nil || tr.Stored > 1*MiB || tr.Bytes <= 1*MiB || strings.Join(tr.Columns, ",") != "evidence,answer" {
		t.Fatalf("truncation %+v", tr)
	}
	total := 0
	for _, c := range cols {
		if !utf8.ValidString(*c.Text) {
			t.Fatalf("%s not valid UTF-8", c.Name)
		}
		total += EscapedLen(*c.Text)
	}
	if total != tr.Stored || id != "trial-\uFFFD" || small != `{"ok":true}` {
		t.Fatalf("total %d, stored %d, id %q, small %q", total, tr.Stored, id, small)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(jsonCol), &ev); err != nil || ev["n"] != float64(1) {
		t.Fatalf("evidence not JSON of its shape: %v %v", err, ev["n"])
	}
	// Under the limit: nothing changes but validity.
	a, b := "x", "\xff"
	if tr := Fit([]Column{{Name: "a", Text: &a}, {Name: "b", Text: &b}}, 100); tr != nil || b != "\uFFFD" {
		t.Fatalf("tr %+v, b %q", tr, b)
	}
}
