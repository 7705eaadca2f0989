package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want error // nil, ErrSyntax, ErrTrailing, or a *DuplicateKeyError (any key)
		key  string
	}{
		{raw: `{"a":1,"b":[1,{"a":2}]}`},
		{raw: `[1,2,3]`},
		{raw: `"x"`},
		{raw: `{"a":1,"a":1}`, key: "a"},
		{raw: `{"x":{"b":true,"b":false}}`, key: "b"},
		{raw: `[{"k":1},{"k":2,"k":3}]`, key: "k"},
		{raw: `{"a\u0062":1,"ab":2}`, key: "ab"}, // the same key, escaped once
		{raw: `{"a":1} {"b":2}`, want: ErrTrailing},
		{raw: `{"a":1} x`, want: ErrTrailing},
		{raw: `{"a":}`, want: ErrSyntax},
		{raw: `{"a":1`, want: ErrSyntax},
		{raw: ``, want: ErrSyntax},
		{raw: strings.Repeat("[", maxDepth+5) + strings.Repeat("]", maxDepth+5), want: ErrSyntax},
	} {
		err := Check([]byte(tt.raw))
		var dup *DuplicateKeyError
		switch {
		case tt.key != "":
			if !errors.As(err, &dup) || dup.Key != tt.key {
				t.Errorf("Check(%.40q) = %v, want key %q twice", tt.raw, err, tt.key)
			}
		case err != tt.want:
			t.Errorf("Check(%.40q) = %v, want %v", tt.raw, err, tt.want)
		}
	}
}

// Check against an oracle that knows: random nested JSON built key by key,
// with a repeated key planted in some objects, at any depth.
func TestCheckGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var gen func(depth int, planted *bool) string
	gen = func(depth int, planted *bool) string {
		switch k := rng.IntN(6); {
		case depth > 3 || k < 2:
			return []string{`1`, `"x"`, `true`, `null`, `-2.5e3`, `"a\"b"`}[rng.IntN(6)]
		case k < 4:
			items := make([]string, rng.IntN(4))
			for i := range items {
				items[i] = gen(depth+1, planted)
			}
			return "[" + strings.Join(items, ",") + "]"
		default:
			n := rng.IntN(5)
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("k%d", i)
			}
			if n > 1 && rng.IntN(8) == 0 {
				keys[n-1] = keys[rng.IntN(n-1)]
				*planted = true
			}
			parts := make([]string, n)
			for i, key := range keys {
				parts[i] = fmt.Sprintf("%q:%s", key, gen(depth+1, planted))
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
	}
	seen := map[bool]int{}
	for range 20000 {
		planted := false
		doc := gen(0, &planted)
		if !json.Valid([]byte(doc)) {
			t.Fatalf("generator made invalid JSON %s", doc)
		}
		var dup *DuplicateKeyError
		err := Check([]byte(doc))
		if got := errors.As(err, &dup); got != planted || (!planted && err != nil) {
			t.Fatalf("Check(%s) = %v, want a duplicate: %v", doc, err, planted)
		}
		seen[planted]++
	}
	if seen[false] == 0 || seen[true] < 500 {
		t.Fatalf("generator coverage %v: too few documents of one kind", seen)
	}
}

// FuzzCheck: Check accepts exactly the valid JSON values (encoding/json is
// the oracle for validity), never panics, and a value it accepts decodes.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `[1,[2,{"b":{}}]]`, `1 2`, `{`, `"\ud800"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := Check([]byte(s))
		valid := json.Valid([]byte(s))
		var dup *DuplicateKeyError
		switch {
		case err == nil && !valid:
			t.Fatalf("accepted invalid JSON %q", s)
		case valid && err != nil && !errors.As(err, &dup) && !strings.Contains(s, strings.Repeat("[", maxDepth)) && !strings.Contains(s, strings.Repeat("{", 100)):
			t.Fatalf("refused valid JSON %q: %v", s, err)
		}
	})
}
