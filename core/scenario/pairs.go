package scenario

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Checking declared pairs against trials (issue 28, class 7): a pair holds
// for an arm on a seed when both of its variants ran on that seed and every
// expected outcome came true on both sides. rebound scenario check runs the
// pairs with reference agents; a run's report reads them from the stored
// trials. Both feed CheckPairs.

// PairTrial is one trial's outcomes, as a pair check reads them.
type PairTrial struct {
	Variant string
	Arm     string
	Seed    uint64
	// Outcomes maps a metric to its outcome (nil: not tested).
	Outcomes map[string]*bool
}

// PairResult is one declared pair for one arm.
type PairResult struct {
	Scenario string   `json:"scenario"`
	Pair     int      `json:"pair"` // index in the scenario's metamorphic list
	Property Property `json:"property"`
	Base     string   `json:"base"`
	Flipped  string   `json:"flipped"`
	Arm      string   `json:"arm"`
	// Seeds is how many seeds ran both variants; Failed on how many of
	// them an expected change did not happen. Unpaired counts seeds that
	// ran one variant only (never checked).
	Seeds    int `json:"seeds"`
	Failed   int `json:"failed"`
	Unpaired int `json:"unpaired"`
	// Violations are the expectations that did not hold, each with its
	// seed.
	Violations []Violation `json:"violations"`
}

// Held reports whether the pair was checked and held on every seed.
func (r PairResult) Held() bool { return r.Seeds > 0 && r.Failed == 0 }

// String says it in one line.
func (r PairResult) String() string {
	head := fmt.Sprintf("%s metamorphic[%d] (%s), arm %s: %s -> %s", r.Scenario, r.Pair, r.Property, r.Arm, r.Base, r.Flipped)
	switch {
	case r.Seeds == 0:
		return head + ": not checked (no seed ran both variants)"
	case r.Failed == 0:
		return fmt.Sprintf("%s: held on %d seed(s)", head, r.Seeds)
	}
	return fmt.Sprintf("%s: did not hold on %d of %d seed(s)", head, r.Failed, r.Seeds)
}

// CheckPairs checks every declared pair of s, per arm, against trials (of
// any scenario: only s's pair variants are read). Arms are those of the
// trials, sorted; an arm that ran neither variant of a pair gets no result
// for it.
func (s *Scenario) CheckPairs(trials []PairTrial) []PairResult {
	// arm -> seed -> variant -> outcomes
	byArm := map[string]map[uint64]map[string]map[string]*bool{}
	for _, t := range trials {
		seeds := byArm[t.Arm]
		if seeds == nil {
			seeds = map[uint64]map[string]map[string]*bool{}
			byArm[t.Arm] = seeds
		}
		if seeds[t.Seed] == nil {
			seeds[t.Seed] = map[string]map[string]*bool{}
		}
		seeds[t.Seed][t.Variant] = t.Outcomes
	}
	var out []PairResult
	for i, p := range s.Metamorphic {
		for _, arm := range slices.Sorted(maps.Keys(byArm)) {
			r := PairResult{Scenario: s.Name, Pair: i, Property: p.Property, Base: p.Base, Flipped: p.Flipped, Arm: arm, Violations: []Violation{}}
			seeds := byArm[arm]
			keys := slices.Collect(maps.Keys(seeds))
			sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
			ran := false
			for _, seed := range keys {
				_, hasBase := seeds[seed][p.Base]
				_, hasFlipped := seeds[seed][p.Flipped]
				switch {
				case hasBase && hasFlipped:
				case hasBase || hasFlipped:
					r.Unpaired++
					ran = true
					continue
				default:
					continue
				}
				ran = true
				r.Seeds++
				vs := s.checkPair(i, p, seeds[seed])
				if len(vs) > 0 {
					r.Failed++
				}
				for _, v := range vs {
					v.Arm, v.Seed = arm, seed
					r.Violations = append(r.Violations, v)
				}
			}
			if ran {
				out = append(out, r)
			}
		}
	}
	return out
}
