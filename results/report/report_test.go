package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"rebound/core/outcome"
	"rebound/results/record"
)

// cell builds a one-trial cell; outcomes maps metric to 0/1, absent metrics
// are NOT TESTED.
func cell(arm, scenario, variant string, seed uint64, weight float64, outcomes map[outcome.Metric]int) record.Cell {
	c := record.Cell{Arm: arm, Scenario: scenario, Variant: variant, Seed: seed, Trials: 1, Metrics: map[outcome.Metric]outcome.Cell{}}
	for _, m := range outcome.Stored {
		y, ok := outcomes[m]
		if !ok {
			c.Metrics[m] = outcome.Cell{}
			continue
		}
		c.Metrics[m] = outcome.Cell{N: 1, Successes: uint64(y), SumWeight: weight, SumWeightY: weight * float64(y)}
	}
	// The harm index as storage computes it: tested when any component is,
	// true when any tested component is.
	harm, tested := 0, false
	for _, m := range HarmComponents {
		if y, ok := outcomes[outcome.Metric(m)]; ok {
			tested = true
			harm = max(harm, y)
		}
	}
	if tested {
		c.Metrics[outcome.Harm] = outcome.Cell{N: 1, Successes: uint64(harm), SumWeight: weight, SumWeightY: weight * float64(harm)}
	}
	return c
}

func attritionCell(arm, scenario, variant string, seed uint64) record.Cell {
	c := cell(arm, scenario, variant, seed, 1, nil)
	c.Attrition = 1
	return c
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(want) {
		if !math.IsNaN(got) {
			t.Errorf("%s = %v, want NaN", what, got)
		}
		return
	}
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.6f, want %.6f (±%g)", what, got, want, tol)
	}
}

const rec, dup = outcome.Recovered, outcome.DuplicateSideEffect

// twoScenarios: arm "a" recovers on all 5 seeds of s1 (weight 2) and on
// none of s2 (weight 1); one more s2 trial is lost to attrition.
func twoScenarios() []record.Cell {
	var cells []record.Cell
	for seed := uint64(1); seed <= 5; seed++ {
		cells = append(cells, cell("a", "s1", "v", seed, 2, map[outcome.Metric]int{rec: 1, dup: 0}))
	}
	for seed := uint64(1); seed <= 5; seed++ {
		cells = append(cells, cell("a", "s2", "v", seed, 1, map[outcome.Metric]int{rec: 0}))
	}
	return append(cells, attritionCell("a", "s2", "v", 6))
}

func TestBuildRatesByHand(t *testing.T) {
	s := Build(record.Sweep{SweepID: "sw", Name: "n", Status: "completed", TrialsPlanned: 11, Arms: []string{"a"}}, 11, twoScenarios())
	c, ok := s.Metric("a", "recovered")
	if !ok {
		t.Fatal("no cell for a/recovered")
	}
	// 5 of 10: Wilson 95% = [0.2366, 0.7634] (R: binom.confint(5, 10, method = "wilson")).
	if c.Successes != 5 || c.N != 10 {
		t.Fatalf("recovered = %d/%d, want 5/10", c.Successes, c.N)
	}
	near(t, "rate", c.Rate, 0.5, 1e-12)
	near(t, "wilson lo", c.Lo, 0.236593, 1e-6)
	near(t, "wilson hi", c.Hi, 0.763407, 1e-6)
	// Clustered by scenario: residual sums +2.5 and −2.5, Var = 12.5/10² →
	// SE = 0.353553; design effect 0.125/(0.25/10) = 5; the clustered
	// interval is Wilson on 1 success in an effective 2 trials.
	if c.Clusters != 2 {
		t.Errorf("clusters = %d, want 2", c.Clusters)
	}
	near(t, "clustered SE", c.SE, 0.353553, 1e-6)
	near(t, "design effect", c.DesignEffect, 5, 1e-9)
	near(t, "clustered lo", c.ClusteredLo, 0.094531, 1e-6)
	near(t, "clustered hi", c.ClusteredHi, 0.905469, 1e-6)
	// Weighted: Σw·y/Σw = (5·2)/(5·2 + 5·1) = 2/3.
	near(t, "weighted", c.Weighted, 2.0/3, 1e-12)

	// duplicate_side_effect tested only in s1: 0 of 5. The other metrics
	// were never tested: NaN, shown as "not tested", null in JSON.
	d, _ := s.Metric("a", "duplicate_side_effect")
	if d.N != 5 || d.Successes != 0 || d.Rate != 0 {
		t.Errorf("duplicate = %+v", d)
	}
	// One scenario, every trial agreeing: no SE (not estimable, never 0);
	// the design effect is unknown, so the weighted interval is the Wilson
	// floor on the worst case, one effective cluster (not Kish's n = 5):
	// 0 of 1, [0, z²/(1 + z²)] = [0, 0.793451]; the unweighted clustered
	// interval is the same Wilson 0 of 1.
	if d.NotEstimable != "one cluster: no between-cluster variation to estimate" || !math.IsNaN(d.SE) ||
		d.WeightedNotEstimable == "" || !math.IsNaN(d.WeightedSE) || !d.WeightedFloored {
		t.Errorf("duplicate: not estimable %q SE %g, weighted %q SE %g floored %v", d.NotEstimable, d.SE, d.WeightedNotEstimable, d.WeightedSE, d.WeightedFloored)
	}
	near(t, "duplicate weighted lo", d.WeightedLo, 0, 1e-12)
	near(t, "duplicate weighted hi", d.WeightedHi, 3.841458820694124/(1+3.841458820694124), 1e-12)
	near(t, "duplicate clustered hi", d.ClusteredHi, 3.841458820694124/(1+3.841458820694124), 1e-12)
	// recovered: the linearization interval 2/3 ± 1.96·√(2·(10/3)²)/15 =
	// [0.0507, 1] is wider than the Wilson floor (Kish n 225/25 = 9 over
	// design effect 5: 1.2 of 1.8, [0.148, 0.958]): shown as is.
	if c.WeightedFloored || c.NotEstimable != "" {
		t.Errorf("recovered: floored %v, not estimable %q", c.WeightedFloored, c.NotEstimable)
	}
	near(t, "recovered weighted lo", c.WeightedLo, 2.0/3-1.959963984540054*math.Sqrt(2*100.0/9)/15, 1e-9)
	near(t, "recovered weighted hi", c.WeightedHi, 1, 1e-12)
	nt, _ := s.Metric("a", "honest_block")
	if nt.Tested() || !math.IsNaN(nt.Rate) || nt.String() != "not tested" {
		t.Errorf("honest_block = %+v (%s), want not tested", nt, nt)
	}

	a := s.Arms[0]
	if a.Trials != 11 || a.Attrition != 1 || a.Scenarios != 2 {
		t.Errorf("arm = trials %d attrition %d scenarios %d, want 11, 1, 2", a.Trials, a.Attrition, a.Scenarios)
	}
	near(t, "attrition rate", a.AttritionRate(), 1.0/11, 1e-12)

	if len(s.ByScenario) != 2 || s.ByScenario[0].Name != "s1" {
		t.Fatalf("by scenario = %+v", s.ByScenario)
	}
	s2 := s.ByScenario[1].Arm("a", "recovered")
	if s2.N != 5 || s2.Successes != 0 || s2.Hi < 0.43 || s2.Hi > 0.44 { // Wilson(0, 5) = [0, 0.4345]
		t.Errorf("s2 recovered = %+v", s2)
	}
	if len(s.ByFaultClass) != 0 {
		t.Errorf("fault classes without cases: %+v", s.ByFaultClass)
	}
}

func TestBuildJSONAndText(t *testing.T) {
	s := Build(record.Sweep{SweepID: "sw", Name: "n", Status: "completed", Arms: []string{"a"}}, 11, twoScenarios())
	var buf bytes.Buffer
	if err := s.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Arms []struct {
			Attrition int                       `json:"attrition"`
			Metrics   map[string]map[string]any `json:"metrics"`
		} `json:"arms"`
		ByScenario []any `json:"by_scenario"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	hb := got.Arms[0].Metrics["honest_block"]
	if hb["rate"] != nil || hb["ci_lo"] != nil || hb["n"] != 0.0 {
		t.Errorf("not tested honest_block in JSON = %v, want null rate and n 0", hb)
	}
	if got.Arms[0].Metrics["recovered"]["rate"] != 0.5 || got.Arms[0].Attrition != 1 || len(got.ByScenario) != 2 {
		t.Errorf("JSON = %s", buf.String())
	}

	buf.Reset()
	if err := s.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{
		"recovered ↑", "50.0% [9-91] n=10", "honest_block ↑", "not tested", "11 (1)",
		"consequence-weighted", "66.7%", "by scenario", "rec 5/5", "rec 0/5",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

func TestBuildFaultClasses(t *testing.T) {
	cells := []record.Cell{
		cell("a", "s1", "v", 1, 1, map[outcome.Metric]int{rec: 1}),
		cell("a", "s1", "v", 2, 1, map[outcome.Metric]int{rec: 0}),
		cell("a", "s2", "v", 1, 1, map[outcome.Metric]int{rec: 1}),
		cell("b", "s1", "v", 1, 1, map[outcome.Metric]int{rec: 0}),
	}
	cases := map[Key]Case{
		{"s1", "v", 1}: {FaultClasses: []string{"timeout_after_send", "transient"}},
		{"s1", "v", 2}: {FaultClasses: []string{"transient"}},
	}
	s := BuildWith(record.Sweep{Arms: []string{"a", "b"}}, 4, cells, Options{Cases: cases})
	var names []string
	for _, g := range s.ByFaultClass {
		names = append(names, g.Name)
	}
	if strings.Join(names, ",") != "timeout_after_send,transient,none" {
		t.Fatalf("fault classes = %v", names)
	}
	tests := []struct {
		class, arm string
		k, n       int
	}{
		{"timeout_after_send", "a", 1, 1},
		{"transient", "a", 1, 2}, // both s1 cases
		{"none", "a", 1, 1},      // s2 had no fault
		{"transient", "b", 0, 1},
	}
	for _, tc := range tests {
		for _, g := range s.ByFaultClass {
			if g.Name != tc.class {
				continue
			}
			c := g.Arm(tc.arm, "recovered")
			if c.Successes != tc.k || c.N != tc.n {
				t.Errorf("%s/%s recovered = %d/%d, want %d/%d", tc.class, tc.arm, c.Successes, c.N, tc.k, tc.n)
			}
		}
	}
}

func TestCellsFromTrialsMatchesSQLContract(t *testing.T) {
	yes, no := true, false
	trials := []record.Trial{
		{Arm: "b", Scenario: "s", Variant: "v", Seed: 1, Weight: 3, Recovered: &yes},
		{Arm: "a", Scenario: "s", Variant: "v", Seed: 2, Weight: 3, Recovered: &no, DuplicateSideEffect: &yes},
		{Arm: "a", Scenario: "s", Variant: "v", Seed: 1, Weight: 3, Attrition: true, Recovered: &yes},
	}
	cells := CellsFromTrials(trials)
	if len(cells) != 3 || cells[0].Arm != "a" || cells[0].Seed != 1 || cells[2].Arm != "b" {
		t.Fatalf("order = %+v", cells)
	}
	if c := cells[0]; c.Attrition != 1 || c.Metrics[rec].N != 0 {
		t.Errorf("attrition trial graded: %+v", c)
	}
	if m := cells[1].Metrics[dup]; m.N != 1 || m.Successes != 1 || m.SumWeight != 3 || m.SumWeightY != 3 {
		t.Errorf("duplicate cell = %+v", m)
	}
	if m := cells[1].Metrics[outcome.HonestBlock]; m.N != 0 {
		t.Errorf("untested metric counted: %+v", m)
	}
}

func TestCasesFromFaults(t *testing.T) {
	cases := CasesFromFaults([]record.CaseFaults{{Scenario: "s", Variant: "v", Seed: 2, FaultClasses: []string{"slow", "stale"}}})
	if c := cases[Key{"s", "v", 2}]; len(c.FaultClasses) != 2 || c.FaultClasses[1] != "stale" {
		t.Fatalf("cases = %+v", cases)
	}
}

// A matrix plan's report pools the arms that share each axis value.
func TestBuildByAxis(t *testing.T) {
	rec := outcome.Metric("recovered")
	var cells []record.Cell
	// Four arms: model a/b x prompt v1/v2; a recovers on 3 of 4 scenarios,
	// b on 1 of 4, whatever the prompt.
	for _, arm := range []string{"a/v1", "a/v2", "b/v1", "b/v2"} {
		for i, sc := range []string{"s1", "s2", "s3", "s4"} {
			y := 0
			if (arm[0] == 'a' && i < 3) || (arm[0] == 'b' && i == 0) {
				y = 1
			}
			cells = append(cells, cell(arm, sc, "v", 1, 1, map[outcome.Metric]int{rec: y}))
		}
	}
	axes := map[string]map[string]string{
		"a/v1": {"model": "a", "prompt": "v1"}, "a/v2": {"model": "a", "prompt": "v2"},
		"b/v1": {"model": "b", "prompt": "v1"}, "b/v2": {"model": "b", "prompt": "v2"},
	}
	plan := `{"arms":[{"name":"a/v1","axes":{"model":"a","prompt":"v1"}},{"name":"a/v2","axes":{"model":"a","prompt":"v2"}},{"name":"b/v1","axes":{"model":"b","prompt":"v1"}},{"name":"b/v2","axes":{"model":"b","prompt":"v2"}},{"name":"careful"}]}`
	if got := AxesFromPlan(plan); len(got) != 4 || got["b/v2"]["prompt"] != "v2" {
		t.Fatalf("AxesFromPlan = %v", got)
	}
	s := BuildWith(record.Sweep{SweepID: "x", Arms: []string{"a/v1", "a/v2", "b/v1", "b/v2"}}, 16, cells, Options{Axes: axes})
	if len(s.ByAxis) != 2 || s.ByAxis[0].Axis != "model" || s.ByAxis[1].Axis != "prompt" {
		t.Fatalf("axes = %+v", s.ByAxis)
	}
	want := map[string][2]int{"model=a": {6, 8}, "model=b": {2, 8}, "prompt=v1": {4, 8}, "prompt=v2": {4, 8}}
	for _, b := range s.ByAxis {
		for _, g := range b.Groups {
			c := g.Arm(PooledArm, "recovered")
			if w := want[b.Axis+"="+g.Name]; c.Successes != w[0] || c.N != w[1] {
				t.Errorf("%s=%s: %d/%d, want %d/%d", b.Axis, g.Name, c.Successes, c.N, w[0], w[1])
			}
		}
	}
	var text bytes.Buffer
	if err := s.WriteText(&text); err != nil || !strings.Contains(text.String(), "by model (the matrix arms that share each value, pooled)") {
		t.Fatalf("text (%v):\n%s", err, text.String())
	}
	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"by_axis"`) {
		t.Fatalf("json (%v):\n%s", err, js.String())
	}
}
