package redact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The matcher reports exactly the occurrences a naive search finds, with
// and without case folding, on random patterns and texts over a small
// alphabet (many overlaps and shared suffixes).
func TestACMatchesNaiveSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abAB-_.x"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := 0; round < 300; round++ {
		fold := round%2 == 1
		var patterns []string
		for n := 1 + rng.IntN(12); n > 0; n-- {
			p := word(1 + rng.IntN(5))
			if fold {
				p = strings.ToLower(p)
			}
			if !slices.Contains(patterns, p) {
				patterns = append(patterns, p)
			}
		}
		text := word(rng.IntN(60))
		m := newAC(patterns, fold)
		type hit struct {
			end int
			p   int32
		}
		var got, want []hit
		m.scan(text, func(end int, p int32) bool { got = append(got, hit{end, p}); return true })
		hay := text
		if fold {
			hay = strings.ToLower(text)
		}
		for end := 1; end <= len(hay); end++ {
			for id, p := range patterns {
				if strings.HasSuffix(hay[:end], p) {
					want = append(want, hit{end, int32(id)})
				}
			}
		}
		sortHits := func(h []hit) {
			slices.SortFunc(h, func(a, b hit) int {
				if a.end != b.end {
					return a.end - b.end
				}
				return int(a.p - b.p)
			})
		}
		sortHits(got)
		sortHits(want)
		if !slices.Equal(got, want) {
			t.Fatalf("patterns %q fold %v in %q:\n got %v\nwant %v", patterns, fold, text, got, want)
		}
		if m.any(text) != (len(want) > 0) {
			t.Fatalf("any(%q) = %v with %d matches", text, m.any(text), len(want))
		}
	}
}
