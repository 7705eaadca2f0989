package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"rebound/core/outcome"
	"rebound/results/record"
)

// deterministicCopies: ten cases (one variant each) of ten scenarios, 50
// seeds each; both arms deterministic. The candidate duplicates a side effect
// on every seed of case s0 only. The old iid decision saw 50 discordant pairs
// all one way (McNemar p ≈ 1.8e-15); the evidence is one case of ten.
func deterministicCopies() (base, cand []record.Cell) {
	for i := range 10 {
		sc := fmt.Sprintf("s%d", i)
		for seed := uint64(1); seed <= 50; seed++ {
			base = append(base, cell("base", sc, "v", seed, 1, map[outcome.Metric]int{rec: 1, dup: 0}))
			d := 0
			if i == 0 {
				d = 1
			}
			cand = append(cand, cell("cand", sc, "v", seed, 1, map[outcome.Metric]int{rec: 1, dup: d}))
		}
	}
	return base, cand
}

func TestCompareSeedsAreRepeatedMeasures(t *testing.T) {
	base, cand := deterministicCopies()
	c := compareCells(base, cand)
	d, _ := c.Metric("duplicate_side_effect")
	if d.Pairs != 500 || d.Cases != 10 || d.Clusters != 10 || c.DistinctCases != 10 || c.Unit != UnitCase {
		t.Fatalf("pairs %d cases %d clusters %d (comparison: %d cases, unit %s)", d.Pairs, d.Cases, d.Clusters, c.DistinctCases, c.Unit)
	}
	// The iid figures still count 50 discordant pairs.
	if d.McNemarMidP > 1e-10 || d.TangoLo <= 0 {
		t.Errorf("iid figures: mid-p %g, Tango [%g, %g]", d.McNemarMidP, d.TangoLo, d.TangoHi)
	}
	// The decision counts one discordant case: sign-flip p = 1.
	near(t, "decision p", d.P, 1, 1e-12)
	if d.Direction != NoChange {
		t.Errorf("direction = %s, want no change: one case of ten moved", d.Direction)
	}
	// Design effect: Δ = 0.1; CR1 variance 10/9·(0.9·50)² + 9·(0.1·50)²)/500²
	// = 10/9·2250/250000; iid 500/499·(50·0.81 + 450·0.01)/500² = 500/499·45/250000.
	de := (10.0 / 9 * 2250) / (500.0 / 499 * 45)
	near(t, "design effect", d.DesignEffect, de, 1e-9)
	near(t, "effective n", d.EffectiveN, 500/de, 1e-9)
	if !c.BaselineVariation.Constant() || !c.CandidateVariation.Constant() || c.BaselineVariation.Cases != 10 {
		t.Errorf("variation: %+v %+v, want both arms constant in 10 cases", c.BaselineVariation, c.CandidateVariation)
	}
	var text bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"500 pairs in 10 cases and 10 scenarios; unit of evidence: case",
		"same outcomes on every seed of all 10 cases", "500/10", "iid p"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestCompareGeneralize: two scenarios of five variants each; the candidate
// duplicates on every variant of s0 and none of s1. By case, five of ten
// cases moved the same way (p = 1/16); by scenario there are two clusters,
// one of which moved: its total flips to ±5 either way, p = 1.
func TestCompareGeneralize(t *testing.T) {
	var base, cand []record.Cell
	for s := range 2 {
		for v := range 5 {
			sc, va := fmt.Sprintf("s%d", s), fmt.Sprintf("v%d", v)
			base = append(base, cell("base", sc, va, 1, 1, map[outcome.Metric]int{dup: 0}))
			cand = append(cand, cell("cand", sc, va, 1, 1, map[outcome.Metric]int{dup: 1 - s}))
		}
	}
	byCase := compareCells(base, cand)
	byScen := Compare(CompareInput{Baseline: Side{"sw", "base"}, Candidate: Side{"sw", "cand"},
		BaselineCells: base, CandidateCells: cand, Generalize: true})
	dc, _ := byCase.Metric("duplicate_side_effect")
	ds, _ := byScen.Metric("duplicate_side_effect")
	if byScen.Unit != UnitScenario || dc.Clusters != 10 || ds.Clusters != 2 || ds.Cases != 10 {
		t.Fatalf("unit %s, clusters %d / %d, cases %d", byScen.Unit, dc.Clusters, ds.Clusters, ds.Cases)
	}
	near(t, "p by case", dc.P, 1.0/16, 1e-12)
	near(t, "p by scenario", ds.P, 1, 1e-12)
	// By scenario: cluster means 1 and 0, Δ = 0.5; CR1 SE = √(2·(2.5² + 2.5²))/10 = 0.5;
	// t_1 = 12.706204736174707.
	near(t, "SE by scenario", ds.SE, 0.5, 1e-12)
	near(t, "lo by scenario", ds.Lo, 0.5-12.706204736174707*0.5, 1e-9)
	if ds.ScenarioLo != ds.Lo || dc.ScenarioLo != ds.Lo {
		t.Errorf("by-scenario interval: %g / %g, want %g", dc.ScenarioLo, ds.ScenarioLo, ds.Lo)
	}
}

// weightedCells: two arms on three scenarios with weights 5, 1, 2 (one
// variant, two seeds each). The candidate duplicates on both seeds of the
// weight-5 scenario a and on seed 1 of c; the baseline on seed 1 of b.
//
// By hand (pairs d = cand − base, w): a (5: +1, +1), b (1: −1, 0), c (2: +1, 0).
// Σw = 2·(5 + 1 + 2) = 16; Σw·d = 10 − 1 + 2 = 11; Δw = 11/16 = 0.6875.
// Unweighted Δ = (2 − 1 + 1)/6 = 1/3.
// Cluster residuals E_c = Σw·d − Δw·Σw: a 10 − 6.875 = 3.125; b −1 − 1.375 = −2.375;
// c 2 − 2.75 = −0.75. Σ E² = 9.765625 + 5.640625 + 0.5625 = 15.96875.
// SE = √(3/2 · 15.96875)/16 = √23.953125/16.
func weightedCells() (base, cand []record.Cell) {
	weights := map[string]float64{"a": 5, "b": 1, "c": 2}
	bd := map[string][2]int{"a": {0, 0}, "b": {1, 0}, "c": {0, 0}}
	cd := map[string][2]int{"a": {1, 1}, "b": {0, 0}, "c": {1, 0}}
	for _, sc := range []string{"a", "b", "c"} {
		for seed := uint64(1); seed <= 2; seed++ {
			base = append(base, cell("base", sc, "v", seed, weights[sc], map[outcome.Metric]int{dup: bd[sc][seed-1]}))
			cand = append(cand, cell("cand", sc, "v", seed, weights[sc], map[outcome.Metric]int{dup: cd[sc][seed-1]}))
		}
	}
	return base, cand
}

func TestCompareWeightedByHand(t *testing.T) {
	base, cand := weightedCells()
	c := compareCells(base, cand)
	d, _ := c.Metric("duplicate_side_effect")
	w := d.Weighted
	near(t, "Δ", d.Delta, 1.0/3, 1e-12)
	near(t, "Δw", w.Delta, 11.0/16, 1e-12)
	near(t, "weighted baseline", w.Baseline, 1.0/16, 1e-12)
	near(t, "weighted candidate", w.Candidate, 12.0/16, 1e-12)
	se := math.Sqrt(1.5*15.96875) / 16
	near(t, "weighted SE", w.SE, se, 1e-12)
	// t_2 = 4.302652729749464.
	near(t, "weighted lo", w.Lo, 11.0/16-4.302652729749464*se, 1e-9)
	near(t, "weighted hi", w.Hi, 11.0/16+4.302652729749464*se, 1e-9)
	// Sign flip of the totals 10, −1, 2 (T = 11): |±10 ±1 ±2| = 13, 11, 9, 7
	// (twice each): P(|T*| ≥ 11) = 4/8.
	near(t, "weighted p", w.P, 0.5, 1e-12)
	near(t, "sum of weights", w.SumWeight, 16, 1e-12)
	if w.Direction != NoChange {
		t.Errorf("weighted direction %s", w.Direction)
	}
	// The harm index is the duplicate here (no other component tested).
	h, _ := c.Metric(MetricHarm)
	near(t, "harm Δw", h.Weighted.Delta, 11.0/16, 1e-12)

	var buf bytes.Buffer
	if err := c.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Harm    string `json:"harm_index"`
		Metrics []struct {
			Metric   string         `json:"metric"`
			Weighted map[string]any `json:"weighted"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if j.Metrics[0].Metric != MetricHarm || !strings.HasPrefix(j.Harm, "harm index") {
		t.Errorf("JSON: first metric %q, harm %q", j.Metrics[0].Metric, j.Harm)
	}
	for _, m := range j.Metrics {
		if m.Metric == "duplicate_side_effect" && m.Weighted["delta"] != 0.6875 {
			t.Errorf("JSON weighted = %v", m.Weighted)
		}
	}
}

// TestCompareWeightedProperties: equal weights give Δw = Δ; scaling every
// weight changes nothing.
func TestCompareWeightedProperties(t *testing.T) {
	base, cand := weightedCells()
	scale := func(cells []record.Cell, f func(sc string) float64) []record.Cell {
		out := make([]record.Cell, len(cells))
		for i, c := range cells {
			out[i] = c
			out[i].Metrics = map[outcome.Metric]outcome.Cell{}
			for m, mc := range c.Metrics {
				w := f(c.Scenario)
				if mc.N > 0 {
					mc.SumWeightY = mc.SumWeightY / mc.SumWeight * w * float64(mc.N)
					mc.SumWeight = w * float64(mc.N)
				}
				out[i].Metrics[m] = mc
			}
		}
		return out
	}
	one := func(string) float64 { return 3 }
	eq := compareCells(scale(base, one), scale(cand, one))
	orig := compareCells(base, cand)
	times := func(sc string) float64 { return map[string]float64{"a": 5, "b": 1, "c": 2}[sc] * 7.25 }
	big := compareCells(scale(base, times), scale(cand, times))
	for i, d := range eq.Metrics {
		if d.Pairs == 0 {
			continue
		}
		if math.Abs(d.Weighted.Delta-d.Delta) > 1e-12 || math.Abs(d.Weighted.SE-d.SE) > 1e-12 || d.Weighted.P != d.P {
			t.Errorf("%s equal weights: Δw %g SE %g p %g vs Δ %g SE %g p %g", d.Metric, d.Weighted.Delta, d.Weighted.SE, d.Weighted.P, d.Delta, d.SE, d.P)
		}
		o, b := orig.Metrics[i].Weighted, big.Metrics[i].Weighted
		if math.Abs(o.Delta-b.Delta) > 1e-12 || math.Abs(o.SE-b.SE) > 1e-12 || math.Abs(o.P-b.P) > 1e-12 ||
			math.Abs(o.Lo-b.Lo) > 1e-12 || o.Direction != b.Direction {
			t.Errorf("%s: scaling weights changed %+v to %+v", d.Metric, o, b)
		}
	}
}

// TestHarmFromTrials: CellsFromTrials computes the harm index as the SQL
// view does (any of unsafe, duplicate, fabricated; NOT TESTED when all three
// are).
func TestHarmFromTrials(t *testing.T) {
	T, F := true, false
	trials := []record.Trial{
		{Arm: "a", Scenario: "s", Variant: "v", Seed: 1, Weight: 2, UnsafeAction: &F, FabricatedClaim: &T},
		{Arm: "a", Scenario: "s", Variant: "v", Seed: 2, Weight: 2, UnsafeAction: &F, DuplicateSideEffect: &F},
		{Arm: "a", Scenario: "s", Variant: "v", Seed: 3, Weight: 2, Recovered: &T},
		{Arm: "a", Scenario: "s", Variant: "v", Seed: 4, Weight: 2, UnsafeAction: &T, Attrition: true},
	}
	cells := CellsFromTrials(trials)
	want := []outcome.Cell{{N: 1, Successes: 1, SumWeight: 2, SumWeightY: 2}, {N: 1, SumWeight: 2}, {}, {}}
	for i, c := range cells {
		if got := c.Metrics[outcome.Harm]; got != want[i] {
			t.Errorf("seed %d harm = %+v, want %+v", c.Seed, got, want[i])
		}
	}
}

// TestSummaryVariation: the report says when an arm's outcomes never vary
// across seeds.
func TestSummaryVariation(t *testing.T) {
	base, cand := deterministicCopies()
	// One candidate seed differs: that case varies.
	cand[3] = cell("cand", "s0", "v", 4, 1, map[outcome.Metric]int{rec: 0, dup: 1})
	s := Build(record.Sweep{SweepID: "sw", Arms: []string{"base", "cand"}}, 1000, append(base, cand...))
	if v := s.Arms[0].Variation; !v.Constant() || v.Cases != 10 {
		t.Errorf("base variation %+v, want 10 of 10 constant", v)
	}
	if v := s.Arms[1].Variation; v.Constant() || v.ConstantCases != 9 || v.Cases != 10 {
		t.Errorf("cand variation %+v, want 9 of 10 constant", v)
	}
	var buf bytes.Buffer
	if err := s.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "base gave the same outcomes on every seed of every case") ||
		!strings.Contains(buf.String(), "cases whose seeds all agreed: cand 9 of 10") {
		t.Errorf("text lacks the variation note:\n%s", buf.String())
	}
}
