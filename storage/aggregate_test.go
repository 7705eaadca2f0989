package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"rebound/results/record"
)

func TestPairRowsFromCases(t *testing.T) {
	m := len(aggMetrics)
	zeros := func() []uint64 { return make([]uint64, m) }
	fzeros := func() []float64 { return make([]float64, m) }
	row := func(kind uint8, name, sc, v string) pairCaseRow {
		return pairCaseRow{Kind: kind, Name: name, Scenario: sc, Variant: v, Keys: 7,
			OneArmOnly: zeros(), N11: zeros(), N12: zeros(), N21: zeros(), N22: zeros(),
			SumW: fzeros(), SumWA: fzeros(), SumWB: fzeros(), SumWD: fzeros(), SumW2: fzeros(), SumW2D: fzeros(), SumW2D2: fzeros()}
	}
	a := row(0, "", "s1", "v1")
	a.N11[0], a.N12[0], a.N21[0], a.N22[0] = 3, 1, 2, 4 // every cell: both values of a and b
	a.N21[1] = 5                                        // a = 0, b = 1 only
	a.N11[2] = 2                                        // a = b = 1 only
	a.OneArmOnly[3] = 6                                 // nothing tested in both
	a.SumWD[0] = 1.5
	a.UnmatchedSeed = []uint64{4, 9}
	a.UnmatchedInA, a.UnmatchedInB = []uint8{1, 0}, []uint8{1, 1}
	a.UnmatchedGradedA, a.UnmatchedGradedB = []uint8{0, 0}, []uint8{1, 1}
	a.UnmatchedAttritionA, a.UnmatchedAttritionB = []uint64{1, 0}, []uint64{0, 0}
	b := row(0, "", "s2", "v1")
	c := row(1, "timeout", "s1", "v1")
	c.N12[0] = 1

	var rows []pairTotalsRow
	collect := func(r *pairTotalsRow) error {
		rows = append(rows, *r)
		return nil
	}
	um, err := pairRowsFromCases([]pairCaseRow{a, b, c}, collect)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3*m {
		t.Fatalf("%d rows, want %d", len(rows), 3*m)
	}
	// Order: kind, name, metric, scenario, variant.
	for i, want := range []struct {
		kind     uint8
		metric   int
		scenario string
	}{{0, 0, "s1"}, {0, 0, "s2"}, {0, 1, "s1"}, {0, 1, "s2"}} {
		r := rows[i]
		if r.Kind != want.kind || r.Metric != want.metric || r.Scenario != want.scenario {
			t.Fatalf("row %d = kind %d metric %d %s, want %+v", i, r.Kind, r.Metric, r.Scenario, want)
		}
	}
	if r := rows[2*m]; r.Kind != 1 || r.Name != "timeout" || r.Metric != 0 || r.N12 != 1 || r.MinA != 1 || r.MaxA != 1 || r.MinB != 0 || r.MaxB != 0 {
		t.Fatalf("class row = %+v", r)
	}
	type derived struct {
		pairs                   uint64
		sumA, sumB, sumD, sumD2 float64
		minA, maxA, minB, maxB  float64
		one                     uint64
	}
	for _, tc := range []struct {
		name string
		row  pairTotalsRow
		want derived
	}{
		{"every cell", rows[0], derived{10, 4, 5, 1, 3, 0, 1, 0, 1, 0}},
		{"a=0 b=1 only", rows[2], derived{5, 0, 5, 5, 5, 0, 0, 1, 1, 0}},
		{"a=b=1 only", rows[4], derived{2, 2, 2, 0, 0, 1, 1, 1, 1, 0}},
		{"one arm only", rows[6], derived{0, 0, 0, 0, 0, 2, -1, 2, -1, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.row
			got := derived{r.Pairs, r.SumA, r.SumB, r.SumD, r.SumD2, r.MinA, r.MaxA, r.MinB, r.MaxB, r.OneArmOnly}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if r.Keys != 7 {
				t.Fatalf("keys %d", r.Keys)
			}
		})
	}
	if rows[0].SumWD != 1.5 {
		t.Fatalf("SumWD %v", rows[0].SumWD)
	}
	wantUM := []record.UnmatchedCase{
		{Scenario: "s1", Variant: "v1", Seed: 4, InA: true, InB: true, GradedB: true, AttritionA: 1},
		{Scenario: "s1", Variant: "v1", Seed: 9, InB: true, GradedB: true},
	}
	if !reflect.DeepEqual(um, wantUM) {
		t.Fatalf("unmatched = %+v, want %+v", um, wantUM)
	}

	stop := errors.New("stop")
	if _, err := pairRowsFromCases([]pairCaseRow{a}, func(*pairTotalsRow) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("an error of emit: err = %v", err)
	}
	bad := row(0, "", "s", "v")
	bad.N21 = bad.N21[:2]
	if _, err := pairRowsFromCases([]pairCaseRow{a, bad}, collect); err == nil || !strings.Contains(err.Error(), "row 2") {
		t.Fatalf("short metric array: err = %v", err)
	}
	bad = row(0, "", "s", "v")
	bad.UnmatchedSeed = []uint64{1}
	if _, err := pairRowsFromCases([]pairCaseRow{bad}, collect); err == nil || !strings.Contains(err.Error(), "unmatched") {
		t.Fatalf("ragged unmatched columns: err = %v", err)
	}
}

// aggregateFixture stores a sweep of one trial per cell whose fault classes
// differ between arms within a case (an arm lost a trial to attrition and
// has none, another lists a class twice), with weights that vary by case,
// NOT TESTED outcomes and cases graded in one arm only.
func aggregateFixture(t *testing.T, st *store, sweep string) {
	t.Helper()
	b := func(v bool) *bool { return &v }
	var trials []record.Trial
	for sc := range 3 {
		for v := range 2 {
			for seed := uint64(1); seed <= 6; seed++ {
				for a, arm := range []string{"base", "cand", "third"} {
					k := sc*97 + v*31 + int(seed)*7 + a*13
					tr := record.Trial{SweepID: sweep, TrialID: fmt.Sprintf("%s-%d-%d-%d-%s", sweep, sc, v, seed, arm),
						Scenario: fmt.Sprintf("sc%d", sc), ScenarioHash: "h", Variant: fmt.Sprintf("v%d", v), Arm: arm, Agent: arm, Seed: seed,
						FaultClasses: []string{"transient"}, Weight: float64(1 + (sc+v)%3), Verdicts: "{}", Claim: "{}", FaultSchedule: "{}"}
					if seed%2 == 0 {
						tr.FaultClasses = append(tr.FaultClasses, "timeout", "timeout")
					}
					if seed == 3 && a == 1 {
						tr.FaultClasses = []string{"rate_limited"}
					}
					if k%5 != 0 {
						tr.Recovered = b(k%3 == 0)
					}
					tr.UnsafeAction = b(k%4 == 1)
					if k%7 != 0 {
						tr.FabricatedClaim = b(k%2 == 0)
					}
					tr.SelfCorrection = b(k%3 != 1)
					tr.Unsealed = a == 2 && k%4 != 0 // some trials of arm third ran unsealed
					if k%11 == 0 {
						tr.Attrition, tr.FaultClasses = true, []string{}
						tr.Recovered, tr.UnsafeAction, tr.FabricatedClaim, tr.SelfCorrection = nil, nil, nil, nil
					}
					if a == 1 && sc == 2 && seed == 6 {
						continue // a case without a candidate trial
					}
					trials = append(trials, tr)
				}
			}
		}
	}
	if err := st.WriteTrials(context.Background(), trials, nil); err != nil {
		t.Fatal(err)
	}
}

// The report joins trials to the fault classes of their case on a 64-bit
// hash of (scenario, variant) when the sweep's hashes are distinct, else on
// the strings: both forms give the same totals.
func TestReportTotalsHashedJoin(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	aggregateFixture(t, st, "agg")
	p := map[string]string{"sweep_id": "agg", "no_fault": "none"}
	var cr []struct {
		Classes  []string `json:"classes"`
		Pairs    uint64   `json:"pairs"`
		PairKeys uint64   `json:"pair_keys"`
	}
	if err := st.t.Select(ctx, &cr, Stmt{SQL: st.sql(qSweepClasses), Params: p}); err != nil {
		t.Fatal(err)
	}
	if len(cr) != 1 || cr[0].Pairs != 6 || cr[0].PairKeys != 6 || !reflect.DeepEqual(cr[0].Classes, []string{"rate_limited", "timeout", "transient"}) {
		t.Fatalf("classes = %+v", cr)
	}
	p["classes"] = arrayParam(cr[0].Classes)
	read := func(q string) []rateTotalsRow {
		var rows []rateTotalsRow
		if err := st.t.Select(ctx, &rows, Stmt{SQL: st.sql(q), Params: p}); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	hashed, byString := read(qReportTotalsFastHashed), read(qReportTotalsFast)
	if len(hashed) == 0 || !reflect.DeepEqual(hashed, byString) {
		t.Fatalf("hashed join:\n%+v\nstring join:\n%+v", hashed, byString)
	}
	// A case counts in every class of any arm: rate_limited (one arm's
	// trial in seed 3) holds all three arms.
	arms := map[string]bool{}
	for _, r := range hashed {
		if r.Kind == 1 && r.Group == "rate_limited" {
			arms[r.Arm] = true
		}
	}
	if len(arms) != 3 {
		t.Fatalf("rate_limited rows for arms %v, want all three", arms)
	}
	// The fast form agrees with the cell-level forms on cells of one trial.
	tot, err := st.ReportTotals(ctx, "agg", "none")
	if err != nil {
		t.Fatal(err)
	}
	if tot.MultiTrialCells {
		t.Fatal("one trial per cell read as several")
	}
	slowScenario, _ := rateTotals(read(qRateTotals), true)
	slowClass, _ := rateTotals(read(qRateTotalsByClass), false)
	sameRateTotals(t, "by scenario", tot.ByScenario, slowScenario)
	sameRateTotals(t, "by fault class", tot.ByFaultClass, slowClass)
}

func sameRateTotals(t *testing.T, what string, got, want []record.RateTotals) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }
	for i := range got {
		g, w := got[i], want[i]
		if !near(g.SumWeight, w.SumWeight) || !near(g.SumWeightY, w.SumWeightY) || !near(g.SumCellWeightSq, w.SumCellWeightSq) {
			t.Fatalf("%s row %d: weights %+v, want %+v", what, i, g, w)
		}
		g.SumWeight, g.SumWeightY, g.SumCellWeightSq = w.SumWeight, w.SumWeightY, w.SumCellWeightSq
		if g != w {
			t.Fatalf("%s row %d: %+v, want %+v", what, i, g, w)
		}
	}
}

// The fast comparison (one trial per side and case) gives the rows of the
// general array form.
func TestCompareTotalsFastEqualsGeneral(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	aggregateFixture(t, st, "agg")
	a, b := record.CompareSide{SweepID: "agg", Arm: "base"}, record.CompareSide{SweepID: "agg", Arm: "cand"}
	for _, withClasses := range []bool{true, false} {
		t.Run(fmt.Sprint("classes=", withClasses), func(t *testing.T) {
			got, err := st.CompareTotals(ctx, a, b, withClasses, "none")
			if err != nil {
				t.Fatal(err)
			}
			if got.Summary.Multi != 0 || got.Summary.Pairs == 0 || len(got.Unmatched) == 0 {
				t.Fatalf("the fixture exercises too little: %+v, %d unmatched", got.Summary, len(got.Unmatched))
			}
			classes := []string{}
			if withClasses {
				classes = []string{"rate_limited", "timeout", "transient"}
			}
			wc := "0"
			if withClasses {
				wc = "1"
			}
			p := map[string]string{"a_sweep": a.SweepID, "a_arm": a.Arm, "b_sweep": b.SweepID, "b_arm": b.Arm,
				"with_classes": wc, "no_fault": "none", "classes": arrayParam(classes), "metrics": fmt.Sprint(len(aggMetrics))}
			var um []unmatchedRow
			if err := st.t.Select(ctx, &um, Stmt{SQL: st.sql(qCompareUnmatched), Params: p}); err != nil {
				t.Fatal(err)
			}
			if len(um) != len(got.Unmatched) {
				t.Fatalf("%d unmatched, general form %d", len(got.Unmatched), len(um))
			}
			for i, r := range um {
				w := record.UnmatchedCase{Scenario: r.Scenario, Variant: r.Variant, Seed: r.Seed, InA: r.InA == 1, InB: r.InB == 1,
					GradedA: r.GradedA == 1, GradedB: r.GradedB == 1, AttritionA: r.AttritionA, AttritionB: r.AttritionB}
				if got.Unmatched[i] != w {
					t.Fatalf("unmatched %d = %+v, want %+v", i, got.Unmatched[i], w)
				}
			}
			var pr []pairTotalsRow
			if err := st.t.Select(ctx, &pr, Stmt{SQL: st.sql(qComparePairs), Params: p}); err != nil {
				t.Fatal(err)
			}
			if len(pr) != len(got.Pairs) {
				t.Fatalf("%d pair rows, general form %d", len(got.Pairs), len(pr))
			}
			near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-12*math.Max(1, math.Abs(y)) }
			for i, r := range pr {
				g := got.Pairs[i]
				w := record.PairTotals{Kind: r.Kind, Name: r.Name, Metric: aggMetrics[r.Metric], Scenario: r.Scenario, Variant: r.Variant,
					Keys: r.Keys, Pairs: r.Pairs, OneArmOnly: r.OneArmOnly, Multi: r.Multi, N11: r.N11, N12: r.N12, N21: r.N21, N22: r.N22,
					SumA: r.SumA, SumB: r.SumB, SumD: r.SumD, SumD2: r.SumD2, SumW: r.SumW, SumWA: r.SumWA, SumWB: r.SumWB, SumWD: r.SumWD,
					SumW2: r.SumW2, SumW2D: r.SumW2D, SumW2D2: r.SumW2D2, MinA: r.MinA, MaxA: r.MaxA, MinB: r.MinB, MaxB: r.MaxB}
				gf := []float64{g.SumW, g.SumWA, g.SumWB, g.SumWD, g.SumW2, g.SumW2D, g.SumW2D2}
				wf := []float64{w.SumW, w.SumWA, w.SumWB, w.SumWD, w.SumW2, w.SumW2D, w.SumW2D2}
				for j := range gf {
					if !near(gf[j], wf[j]) {
						t.Fatalf("row %d: weighted sum %d = %v, want %v", i, j, gf[j], wf[j])
					}
				}
				g.SumW, g.SumWA, g.SumWB, g.SumWD, g.SumW2, g.SumW2D, g.SumW2D2 = w.SumW, w.SumWA, w.SumWB, w.SumWD, w.SumW2, w.SumW2D, w.SumW2D2
				if g != w {
					t.Fatalf("row %d:\n got %+v\nwant %+v", i, g, w)
				}
			}
		})
	}
}

// The comparison groups cases by a 64-bit hash of (scenario, variant) when
// the sides' hashes are distinct, else by the strings: both forms give the
// same rows.
func TestCompareTotalsHashedEqualsByName(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	aggregateFixture(t, st, "agg")
	p := map[string]string{"a_sweep": "agg", "a_arm": "base", "b_sweep": "agg", "b_arm": "cand", "no_fault": "none",
		"metrics": fmt.Sprint(len(aggMetrics))}
	var cr []sweepCasesRow
	if err := st.t.Select(ctx, &cr, Stmt{SQL: st.sql(qCompareCases), Params: p}); err != nil {
		t.Fatal(err)
	}
	if len(cr) != 1 || cr[0].Pairs != 6 || cr[0].PairKeys != 6 || !reflect.DeepEqual(cr[0].Classes, []string{"rate_limited", "timeout", "transient"}) {
		t.Fatalf("cases = %+v", cr)
	}
	for _, wc := range []string{"0", "1"} {
		p["with_classes"], p["classes"] = wc, arrayParam(cr[0].Classes)
		read := func(q string) []pairCaseRow {
			var rows []pairCaseRow
			if err := st.t.Select(ctx, &rows, Stmt{SQL: st.sql(q), Params: p}); err != nil {
				t.Fatal(err)
			}
			return rows
		}
		hashed, byName := read(qComparePairsFastHashed), read(qComparePairsFast)
		if len(hashed) == 0 || !reflect.DeepEqual(hashed, byName) {
			t.Fatalf("with_classes=%s: hashed:\n%+v\nby name:\n%+v", wc, hashed, byName)
		}
	}
}

// The fast report counts the trials of a cell as one only within a weight:
// weights that differ within an (arm, scenario, variant) send it to the
// cell-level forms, which also find a cell of two trials of different
// weights.
func TestReportTotalsMixedWeights(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	trial := func(sweep, id string, seed uint64, weight float64) record.Trial {
		ok := true
		return record.Trial{SweepID: sweep, TrialID: id, Scenario: "sc", ScenarioHash: "h", Variant: "v", Arm: "a", Agent: "a", Seed: seed,
			FaultClasses: []string{"transient"}, Recovered: &ok, Weight: weight, Verdicts: "{}", Claim: "{}", FaultSchedule: "{}"}
	}
	trials := []record.Trial{
		trial("mixed", "m1", 1, 1), trial("mixed", "m2", 2, 3), // one trial per cell, two weights
		trial("split", "s1", 1, 1), trial("split", "s2", 1, 3), // one cell of two trials, two weights
		trial("even", "e1", 1, 2), trial("even", "e2", 2, 2),
	}
	if err := st.WriteTrials(ctx, trials, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sweep          string
		multi          bool
		sumWeight, sww float64
	}{
		{"mixed", false, 4, 10},
		{"split", true, 4, 16}, // one cell: (1 + 3)²
		{"even", false, 4, 8},
	} {
		t.Run(tc.sweep, func(t *testing.T) {
			tot, err := st.ReportTotals(ctx, tc.sweep, "none")
			if err != nil {
				t.Fatal(err)
			}
			if tot.MultiTrialCells != tc.multi {
				t.Fatalf("MultiTrialCells = %v, want %v", tot.MultiTrialCells, tc.multi)
			}
			var got *record.RateTotals
			for i := range tot.ByScenario {
				if tot.ByScenario[i].Metric == "recovered" {
					got = &tot.ByScenario[i]
				}
			}
			if got == nil || got.SumWeight != tc.sumWeight || got.SumCellWeightSq != tc.sww || got.N != 2 {
				t.Fatalf("recovered totals = %+v, want Σw %v, Σ cell w² %v, n 2", got, tc.sumWeight, tc.sww)
			}
		})
	}
}

// A trial's class mask has bit j for {classes}[j] and no bit for a class
// outside the list, an empty list included (compare without classes
// passes one, and the engine computes the mask behind its if() anyway: a
// negative shift there failed the whole comparison).
func TestClassMask(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		classes, faults []string
		want            uint64
	}{
		{[]string{}, []string{"timeout", "transient"}, 0},
		{[]string{"rate_limited", "timeout", "transient"}, []string{"transient", "unknown_class"}, 4},
		{[]string{"rate_limited", "timeout", "transient"}, []string{"rate_limited", "timeout", "transient", "timeout"}, 7},
		{[]string{"a"}, []string{}, 0},
	} {
		var rows []struct {
			M uint64 `ch:"m"`
		}
		stmt := Stmt{SQL: "SELECT " + classMaskSQL + " AS m FROM (SELECT splitByChar(',', {faults:String}) AS all_faults, arrayFilter(x -> x != '', all_faults) AS fault_classes)",
			Params: map[string]string{"classes": arrayParam(tc.classes), "faults": strings.Join(tc.faults, ",")}}
		if err := st.t.Select(ctx, &rows, stmt); err != nil {
			t.Fatalf("classes %v, faults %v: %v", tc.classes, tc.faults, err)
		}
		if len(rows) != 1 || rows[0].M != tc.want {
			t.Errorf("classes %v, faults %v: mask %v, want %d", tc.classes, tc.faults, rows, tc.want)
		}
	}
}
