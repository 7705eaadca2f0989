package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math"
	"regexp"
	"strings"
	"testing"

	"rebound/core/outcome"
	"rebound/results/record"
)

// tenCases returns ten one-case scenarios s0..s9; the candidate duplicates
// a side effect on the first dups of them, the baseline never does; both
// recover everywhere.
func tenCases(dups int) (base, cand []record.Cell) {
	for i := range 10 {
		sc := "s" + string(rune('0'+i))
		base = append(base, cell("base", sc, "v", 1, 1, map[outcome.Metric]int{rec: 1, dup: 0}))
		d := 0
		if i < dups {
			d = 1
		}
		cand = append(cand, cell("cand", sc, "v", 1, 1, map[outcome.Metric]int{rec: 1, dup: d}))
	}
	return base, cand
}

func compareCells(base, cand []record.Cell) Comparison {
	return Compare(CompareInput{
		Baseline: Side{"sw", "base"}, Candidate: Side{"sw", "cand"},
		BaselineCells: base, CandidateCells: cand,
	})
}

func TestCompareByHand(t *testing.T) {
	base, cand := tenCases(6)
	c := compareCells(base, cand)
	d, _ := c.Metric("duplicate_side_effect")
	// Table: N11 = 0, N12 = 0, N21 = 6, N22 = 4; Δ = 6/10.
	if d.Pairs != 10 || d.Clusters != 10 || !d.Binary || d.Table.N21 != 6 || d.Table.N22 != 4 {
		t.Fatalf("diff = %+v", d)
	}
	near(t, "delta", d.Delta, 0.6, 1e-12)
	near(t, "baseline", d.Baseline, 0, 0)
	near(t, "candidate", d.Candidate, 0.6, 1e-12)
	// McNemar: 6 discordant pairs all one way: p = 2·(1/2)^6 = 1/32, mid-p = 1/64.
	near(t, "McNemar p", d.McNemarP, 1.0/32, 1e-12)
	near(t, "McNemar mid-p", d.McNemarMidP, 1.0/64, 1e-12)
	// Cluster-robust SE, one pair per case (CR1): √(10/9 · (6·0.4² + 4·0.6²))/10
	// = √(10/9 · 2.4)/10; interval Δ ± t_9·SE with t_9 = 2.262157162798205.
	se := math.Sqrt(10.0/9*2.4) / 10
	near(t, "clustered SE", d.SE, se, 1e-12)
	near(t, "clustered lo", d.Lo, 0.6-2.262157162798205*se, 1e-9)
	near(t, "clustered hi", d.Hi, 0.6+2.262157162798205*se, 1e-9)
	// The decision p is the exact sign-flip test over the 10 cases, which
	// with one pair per case is McNemar's exact test: 2·(1/2)^6 = 1/32.
	near(t, "decision p", d.P, 1.0/32, 1e-12)
	near(t, "decision mid-p", d.MidP, 1.0/64, 1e-12)
	if d.PMethod != "exact" || d.NotEstimable != "" || d.Cases != 10 {
		t.Errorf("p method %q, not estimable %q, cases %d", d.PMethod, d.NotEstimable, d.Cases)
	}
	// One pair per case: the design effect is 1 (CR1 and iid variances
	// carry the factors 10/9 and 10/9).
	near(t, "design effect", d.DesignEffect, 1, 1e-12)
	near(t, "effective n", d.EffectiveN, 10, 1e-9)
	if d.Direction != Worse {
		t.Errorf("direction = %s, want worse (lower is better, Δ > 0)", d.Direction)
	}
	r, _ := c.Metric("recovered")
	if r.Direction != NoChange || r.Delta != 0 || r.P != 1 {
		t.Errorf("recovered = %+v, want no change with p 1", r)
	}
	h, _ := c.Metric("honest_block")
	if h.Direction != NotTested || h.Pairs != 0 {
		t.Errorf("honest_block = %+v, want not tested", h)
	}
	if !strings.Contains(c.Headline(), "WORSE on harm +60.0 pts, duplicate_side_effect +60.0 pts") {
		t.Errorf("headline = %q", c.Headline())
	}
}

func TestCompareDirections(t *testing.T) {
	tests := []struct {
		name string
		dups int
		want string
	}{
		{"identical arms", 0, NoChange},
		{"one duplicate in ten is noise", 1, NoChange},
		{"four of ten: p = 2/16 > 0.05", 4, NoChange},
		// The t interval [+12, +88] excludes 0, but the exact test decides:
		// five cases all one way happen with probability 2/32 under equal arms.
		{"five of ten: p = 1/16 > 0.05", 5, NoChange},
		{"six of ten: p = 1/32", 6, Worse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, cand := tenCases(tc.dups)
			c := compareCells(base, cand)
			if d, _ := c.Metric("duplicate_side_effect"); d.Direction != tc.want {
				t.Errorf("direction = %s (p %g, CI [%g, %g]), want %s", d.Direction, d.P, d.Lo, d.Hi, tc.want)
			}
			// Swapping the arms turns worse into better.
			sw := Compare(CompareInput{Baseline: Side{"sw", "cand"}, Candidate: Side{"sw", "base"}, BaselineCells: cand, CandidateCells: base})
			want := map[string]string{Worse: Better, NoChange: NoChange}[tc.want]
			if d, _ := sw.Metric("duplicate_side_effect"); d.Direction != want {
				t.Errorf("swapped direction = %s, want %s", d.Direction, want)
			}
		})
	}
}

func TestCompareUnmatchedAndNotTested(t *testing.T) {
	base := []record.Cell{
		cell("base", "s", "v", 1, 1, map[outcome.Metric]int{rec: 1}),
		cell("base", "s", "v", 2, 1, map[outcome.Metric]int{rec: 1}),
		cell("base", "s", "v", 3, 1, map[outcome.Metric]int{rec: 1, dup: 0}),
		attritionCell("base", "s", "v", 4),
		cell("other-arm", "s", "v", 9, 1, map[outcome.Metric]int{rec: 1}), // ignored
	}
	cand := []record.Cell{
		cell("cand", "s", "v", 3, 1, map[outcome.Metric]int{rec: 0}), // dup tested in the baseline only
		cell("cand", "s", "v", 2, 1, map[outcome.Metric]int{rec: 1}), // out of order on purpose
		cell("cand", "s", "v", 4, 1, map[outcome.Metric]int{rec: 1}),
		cell("cand", "t", "v", 1, 1, map[outcome.Metric]int{rec: 1}),
	}
	c := compareCells(base, cand)
	if c.Cases != 2 {
		t.Errorf("cases = %d, want 2 (seeds 2 and 3)", c.Cases)
	}
	want := []string{
		"s / v / seed 1 baseline no candidate trial",
		"s / v / seed 4 candidate baseline trial lost to attrition (provider failure)",
		"t / v / seed 1 candidate no baseline trial",
	}
	var got []string
	for _, u := range c.Unmatched {
		got = append(got, u.Key.String()+" "+u.Side+" "+u.Reason)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("unmatched =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c.UnmatchedBaseline != 1 || c.UnmatchedCandidate != 2 || c.BaselineAttrition != 1 || c.BaselineTrials != 4 {
		t.Errorf("counts = %+v", c)
	}
	if d, _ := c.Metric("duplicate_side_effect"); d.Pairs != 0 || d.OneArmOnly != 1 || d.Direction != NotTested {
		t.Errorf("duplicate = %+v, want 0 pairs and 1 tested in one arm only", d)
	}
	if len(c.Warnings) == 0 || !strings.Contains(c.Warnings[0], "3 case(s) could not be paired") {
		t.Errorf("warnings = %q", c.Warnings)
	}

	var buf bytes.Buffer
	if err := c.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Unmatched []map[string]any `json:"unmatched"`
		Metrics   []map[string]any `json:"metrics"`
	}
	if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Unmatched) != 3 || j.Unmatched[0]["graded_in"] != "baseline" {
		t.Errorf("JSON unmatched = %v", j.Unmatched)
	}
	for _, m := range j.Metrics {
		if m["metric"] == "duplicate_side_effect" && (m["delta"] != nil || m["direction"] != "not tested") {
			t.Errorf("JSON untested metric = %v, want delta null", m)
		}
	}
}

func TestCompareCrossSweepWarnsOnChangedScenario(t *testing.T) {
	base, cand := tenCases(0)
	c := Compare(CompareInput{
		Baseline: Side{"monday", "base"}, Candidate: Side{"tuesday", "cand"},
		BaselineCells: base, CandidateCells: cand,
		BaselineHashes:  map[string]string{"s1": "aaaa", "s2": "bbbb"},
		CandidateHashes: map[string]string{"s1": "aaaa", "s2": "cccc"},
	})
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], `scenario "s2" was run from different files`) {
		t.Errorf("warnings = %q", c.Warnings)
	}
	if !strings.Contains(c.sidesLine(), "(sweep monday)") {
		t.Errorf("sides = %q", c.sidesLine())
	}
}

func TestCompareByFaultClassAndScenario(t *testing.T) {
	base, cand := tenCases(6)
	cases := map[Key]Case{}
	for i := range 10 {
		k := Key{"s" + string(rune('0'+i)), "v", 1}
		if i < 6 {
			cases[k] = Case{FaultClasses: []string{"timeout_after_send"}}
		}
	}
	c := Compare(CompareInput{Baseline: Side{"sw", "base"}, Candidate: Side{"sw", "cand"},
		BaselineCells: base, CandidateCells: cand, Cases: cases})
	if len(c.ByFaultClass) != 2 || c.ByFaultClass[0].Name != "timeout_after_send" || c.ByFaultClass[1].Name != NoFault {
		t.Fatalf("fault classes = %+v", c.ByFaultClass)
	}
	d := c.ByFaultClass[0].metric("duplicate_side_effect")
	if d.Pairs != 6 || d.Delta != 1 {
		t.Errorf("timeout_after_send duplicate = %+v, want 6 pairs, Δ = 1", d)
	}
	if len(c.ByScenario) != 10 {
		t.Errorf("scenarios = %d", len(c.ByScenario))
	}
	if w := worstScenarios(c.ByScenario, 3); len(w) != 3 || w[0].badness() != 1 {
		t.Errorf("worst scenarios = %+v", w)
	}
}

func TestCompareOutputs(t *testing.T) {
	base, cand := tenCases(6)
	c := compareCells(base, cand)
	var text, md, html, junit bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(text.String(), "\n", 3)
	if !strings.HasPrefix(lines[0], "harm index") || !strings.Contains(lines[0], "baseline 0.0% → candidate 60.0%, Δw +60.0 pts") ||
		!strings.HasSuffix(lines[0], "WORSE") {
		t.Errorf("first line = %q, want the harm index", lines[0])
	}
	if !strings.Contains(lines[1], "candidate cand is WORSE on harm +60.0 pts, duplicate_side_effect +60.0 pts") {
		t.Errorf("second line = %q", lines[1])
	}
	if !regexp.MustCompile(`(?m)^duplicate_side_effect ↓ +WORSE +0\.0% \(0\) +60\.0% \(6\) +\+60\.0 `).MatchString(text.String()) {
		t.Errorf("text lacks the duplicate row:\n%s", text.String())
	}
	for _, want := range []string{"0.0% (0)", "60.0% (6)", "+60.0", "0.031", "0.016", "not tested", "10/10", "unit of evidence: case", "harm ↓"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"| duplicate_side_effect ↓ | 🔴 worse |", "| honest_block ↑ | not tested |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	h := html.String()
	for _, want := range []string{"<svg", "forest", "duplicate_side_effect", "not tested", `class="wmark"`, "consequence-weighted Δw"} {
		if !strings.Contains(h, want) {
			t.Errorf("html lacks %q", want)
		}
	}
	for _, banned := range []string{"<script src", "<link", "http://", "https://"} {
		if strings.Contains(h, banned) {
			t.Errorf("html is not self-contained: has %q", banned)
		}
	}
	var suite junitSuites
	if err := xml.Unmarshal(junit.Bytes(), &suite); err != nil {
		t.Fatalf("junit: %v\n%s", err, junit.String())
	}
	if s := suite.Suites[0]; s.Tests != 10 || s.Failures != 2 || s.Skipped != 7 {
		t.Errorf("junit suite = tests %d failures %d skipped %d, want 10 (harm and 9 outcomes), 2 (harm, duplicate), 7", s.Tests, s.Failures, s.Skipped)
	}
}

func TestCompareBootstrapCrossCheck(t *testing.T) {
	base, cand := tenCases(6)
	c := Compare(CompareInput{Baseline: Side{"sw", "base"}, Candidate: Side{"sw", "cand"},
		BaselineCells: base, CandidateCells: cand, BootstrapReps: 2000, BootstrapSeed: 1})
	d, _ := c.Metric("duplicate_side_effect")
	// Ten one-case scenarios, six with d = 1: the bootstrap mean of six
	// ones in ten resampled cases stays within [0.2, 1].
	if !(d.BootLo > 0.2 && d.BootLo < d.Delta && d.BootHi > d.Delta && d.BootHi <= 1) {
		t.Errorf("bootstrap interval [%g, %g] around %g", d.BootLo, d.BootHi, d.Delta)
	}
	if h, _ := c.Metric("honest_block"); !math.IsNaN(h.BootLo) {
		t.Errorf("bootstrap of an untested metric = %g", h.BootLo)
	}
	if !(d.Weighted.BootLo == d.BootLo && d.Weighted.BootHi == d.BootHi) {
		t.Errorf("equal weights: weighted bootstrap [%g, %g] differs from [%g, %g]", d.Weighted.BootLo, d.Weighted.BootHi, d.BootLo, d.BootHi)
	}
	if !strings.Contains(c.bootstrapLine(), "duplicate_side_effect Δ [+") {
		t.Errorf("bootstrap line = %q", c.bootstrapLine())
	}
}

// Arms that lose different shares of their trials to provider failures
// are flagged: the pairs that remain may be biased.
func TestAttritionWarning(t *testing.T) {
	if w := attritionWarning(1, 100, 2, 100); w != "" {
		t.Errorf("1%% vs 2%% attrition flagged: %s", w)
	}
	if w := attritionWarning(0, 100, 12, 100); !strings.Contains(w, "attrition differs between the arms") || !strings.Contains(w, "12/100") {
		t.Errorf("0%% vs 12%% attrition not flagged: %q", w)
	}
	if w := attritionWarning(0, 0, 5, 10); w != "" {
		t.Errorf("an empty arm flagged: %s", w)
	}
}
