package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"rebound/activities"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/results/record"
	"rebound/storage"
	"rebound/workflows"
)

// The aggregated route (ClickHouse sums, BuildFromTotals, CompareFromTotals)
// against the per-case route (Cells, BuildWith, Compare) on real sweeps of
// the example plans stored in the embedded engine: every number of the JSON
// documents agrees to 1e-12, every string and flag exactly.

var integrationKey = []byte("report-aggregate-integration-test-key-0123456789")

func openIntegrationStore(t *testing.T) storage.Store {
	t.Helper()
	lib := devstacktest.ChDBLib(t) // skips in -short, fails when required and missing
	st, err := storage.Open(context.Background(), storage.Config{DataDir: t.TempDir(), LibPath: lib, Database: "report_aggregate"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

// runPlan stores a sweep of the plan file with the given seeds, running
// every trial in process the way a worker does.
func runPlan(t *testing.T, st storage.Store, sweepID, path string, seeds []uint64) {
	t.Helper()
	plan, err := scenario.LoadPlan(path, world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	plan.Seeds = seeds
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := &activities.Activities{Store: st, RedactionKey: integrationKey}
	n := plan.TrialCount()
	if err := a.RegisterSweep(ctx, workflows.RegisterSweepInput{SweepID: sweepID, PlanJSON: string(b), Trials: n}); err != nil {
		t.Fatal(err)
	}
	const shard = 500
	for from := 0; from < n; from += shard {
		res, err := a.RunShard(ctx, workflows.ShardInput{SweepID: sweepID, Shard: from / shard, From: from, To: min(from+shard, n)})
		if err != nil {
			t.Fatalf("shard %d: %v", from/shard, err)
		}
		if res.Trials != min(from+shard, n)-from {
			t.Fatalf("shard %d ran %d trials", from/shard, res.Trials)
		}
	}
}

func TestAggregatedReportsEqualPerCase(t *testing.T) {
	st := openIntegrationStore(t)
	ctx := context.Background()
	runPlan(t, st, "quick5", "../../examples/plans/quickstart.yaml", []uint64{1, 2, 3, 4, 5})
	runPlan(t, st, "quick3", "../../examples/plans/quickstart.yaml", []uint64{2, 3, 4})
	runPlan(t, st, "library", "../../examples/plans/library.yaml", []uint64{1, 2})
	copyWithDuplicates(t, st, "quick5", "dups")
	copyWithAttrition(t, st, "quick5", "attr")

	for _, id := range []string{"quick5", "quick3", "library", "dups", "attr"} {
		t.Run("report/"+id, func(t *testing.T) {
			sw, err := st.Sweep(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := st.CountTrials(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			cells, err := st.Cells(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			faults, err := st.CaseFaults(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			// Two matrix axes over the arms, so that the pooled breakdowns
			// are checked too.
			axes := map[string]map[string]string{}
			for i, arm := range sw.Arms {
				axes[arm] = map[string]string{"model": fmt.Sprintf("m%d", i%2), "prompt": fmt.Sprintf("p%d", i%3)}
			}
			want := BuildWith(sw, stored, cells, Options{Cases: CasesFromFaults(faults), Axes: axes})
			tot, err := st.ReportTotals(ctx, id, NoFault)
			if err != nil {
				t.Fatal(err)
			}
			if tot.MultiTrialCells != (id == "dups") {
				t.Fatalf("MultiTrialCells = %v: the test must cover both forms of the queries", tot.MultiTrialCells)
			}
			got := BuildFromTotals(sw, stored, tot, TotalsOptions{FaultClasses: true, Axes: axes})
			if len(want.ByFaultClass) < 2 || len(want.ByScenario) < 4 || len(want.ByAxis) != 2 {
				t.Fatalf("the sweep exercises too little: %d fault classes, %d scenarios, %d axes",
					len(want.ByFaultClass), len(want.ByScenario), len(want.ByAxis))
			}
			sameJSON(t, want.WriteJSON, got.WriteJSON)
		})
	}

	type cmp struct {
		name       string
		base, cand Side
		generalize bool
		bootstrap  int
		noClasses  bool // without the breakdown by fault class
	}
	cases := []cmp{
		{"quick5 careful vs naive", Side{"quick5", "careful"}, Side{"quick5", "naive-retrier"}, false, 200, false},
		{"quick5 naive vs fabricator generalize", Side{"quick5", "naive-retrier"}, Side{"quick5", "fabricator"}, true, 200, false},
		{"quick5 same arm", Side{"quick5", "careful"}, Side{"quick5", "careful"}, false, 0, false},
		{"cross sweep unmatched", Side{"quick5", "careful"}, Side{"quick3", "fabricator"}, false, 100, false},
		{"cross sweep unmatched reversed", Side{"quick3", "naive-retrier"}, Side{"quick5", "naive-retrier"}, true, 0, false},
		{"missing arm", Side{"quick5", "careful"}, Side{"quick5", "no-such-arm"}, false, 0, false},
		{"cells of several trials", Side{"dups", "careful"}, Side{"dups", "fabricator"}, false, 100, false},
		{"no fault classes", Side{"quick5", "fabricator"}, Side{"quick5", "careful"}, false, 0, true},
		{"cells of several trials against one", Side{"quick5", "naive-retrier"}, Side{"dups", "naive-retrier"}, true, 0, false},
		{"library careful vs blind", Side{"library", "careful"}, Side{"library", "blind-resubmitter"}, false, 100, false},
		{"library quitter vs corrupt generalize", Side{"library", "quitter"}, Side{"library", "corrupt-data-truster"}, true, 0, false},
		{"fault classes of one side only", Side{"attr", "careful"}, Side{"attr", "naive-retrier"}, false, 100, false},
		{"fault classes of one side only generalize", Side{"attr", "naive-retrier"}, Side{"attr", "fabricator"}, true, 0, false},
	}
	for _, c := range cases {
		t.Run("compare/"+c.name, func(t *testing.T) {
			baseCells, err := st.Cells(ctx, c.base.SweepID)
			if err != nil {
				t.Fatal(err)
			}
			candCells, err := st.Cells(ctx, c.cand.SweepID)
			if err != nil {
				t.Fatal(err)
			}
			baseTrials, err := st.Trials(ctx, c.base.SweepID)
			if err != nil {
				t.Fatal(err)
			}
			candTrials, err := st.Trials(ctx, c.cand.SweepID)
			if err != nil {
				t.Fatal(err)
			}
			bt, ct := armTrials(baseTrials, c.base.Arm), armTrials(candTrials, c.cand.Arm)
			in := CompareInput{Baseline: c.base, Candidate: c.cand, BaselineCells: baseCells, CandidateCells: candCells,
				Cases: CasesFromTrials(bt, ct), BootstrapReps: c.bootstrap, BootstrapSeed: 1, Generalize: c.generalize}
			if c.base.SweepID != c.cand.SweepID {
				in.BaselineHashes, in.CandidateHashes = ScenarioHashes(bt), ScenarioHashes(ct)
			}
			if c.noClasses {
				in.Cases = nil
			}
			want := Compare(in)
			tot, err := st.CompareTotals(ctx, record.CompareSide{SweepID: c.base.SweepID, Arm: c.base.Arm},
				record.CompareSide{SweepID: c.cand.SweepID, Arm: c.cand.Arm}, !c.noClasses, NoFault)
			if err != nil {
				t.Fatal(err)
			}
			got := CompareFromTotals(CompareTotalsInput{Baseline: c.base, Candidate: c.cand, Totals: tot, FaultClasses: !c.noClasses,
				BootstrapReps: c.bootstrap, BootstrapSeed: 1, Generalize: c.generalize})
			if strings.HasPrefix(c.name, "cells of several") && !slices.ContainsFunc(got.Warnings, func(w string) bool { return strings.Contains(w, "more than one trial") }) {
				t.Fatalf("no warning about cells of several trials: %q", got.Warnings)
			}
			sameJSON(t, want.WriteJSON, got.WriteJSON)
		})
	}
}

// copyWithDuplicates stores sweep from's trials as sweep to, with a second
// trial (other id, outcomes flipped, sometimes lost to attrition) in every
// third cell: cells of several trials, which a sweep does not produce but
// the aggregation must handle.
func copyWithDuplicates(t *testing.T, st storage.Store, from, to string) {
	t.Helper()
	ctx := context.Background()
	sw, err := st.Sweep(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	trials, err := st.Trials(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	sw.SweepID = to
	if err := st.PutSweep(ctx, sw); err != nil {
		t.Fatal(err)
	}
	var out []record.Trial
	for i, tr := range trials {
		tr.SweepID = to
		out = append(out, tr)
		if i%3 != 0 {
			continue
		}
		dup := tr
		dup.TrialID += "-dup"
		flip := func(p *bool) *bool {
			if p == nil {
				return nil
			}
			v := !*p
			return &v
		}
		dup.Recovered, dup.UnsafeAction, dup.FabricatedClaim = flip(tr.Recovered), flip(tr.UnsafeAction), flip(tr.FabricatedClaim)
		if i%9 == 0 {
			dup.Attrition = true
		}
		out = append(out, dup)
	}
	if err := st.WriteTrials(ctx, out, nil); err != nil {
		t.Fatal(err)
	}
}

// copyWithAttrition stores sweep from's trials as sweep to with every
// fourth trial of the naive-retrier arm lost to attrition the way a worker
// records it (no outcomes, no fault classes): one trial per cell, but the
// fault classes of a case then differ between arms, and a case counts in
// the classes of any arm.
func copyWithAttrition(t *testing.T, st storage.Store, from, to string) {
	t.Helper()
	ctx := context.Background()
	sw, err := st.Sweep(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	trials, err := st.Trials(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	sw.SweepID = to
	if err := st.PutSweep(ctx, sw); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for i := range trials {
		tr := &trials[i]
		tr.SweepID = to
		if tr.Arm != "naive-retrier" || i%4 != 0 || len(tr.FaultClasses) == 0 {
			continue
		}
		tr.Attrition, tr.FaultClasses = true, []string{}
		tr.SetOutcomes(func(outcome.Metric) *bool { return nil })
		lost++
	}
	if lost == 0 {
		t.Fatal("no trial lost to attrition: the test exercises nothing")
	}
	if err := st.WriteTrials(ctx, trials, nil); err != nil {
		t.Fatal(err)
	}
}

func armTrials(trials []record.Trial, arm string) []record.Trial {
	var out []record.Trial
	for _, t := range trials {
		if t.Arm == arm {
			out = append(out, t)
		}
	}
	return out
}

// sameJSON writes both documents and compares them value by value: numbers
// to 1e-12 (relative to their magnitude when above 1), everything else
// exactly.
func sameJSON(t *testing.T, want, got func(w io.Writer) error) {
	t.Helper()
	var wb, gb bytes.Buffer
	if err := want(&wb); err != nil {
		t.Fatal(err)
	}
	if err := got(&gb); err != nil {
		t.Fatal(err)
	}
	var wv, gv any
	for _, x := range []struct {
		b *bytes.Buffer
		v *any
	}{{&wb, &wv}, {&gb, &gv}} {
		dec := json.NewDecoder(bytes.NewReader(x.b.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(x.v); err != nil {
			t.Fatal(err)
		}
	}
	var diffs []string
	compareJSON("$", wv, gv, &diffs)
	if len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = append(diffs[:20], fmt.Sprintf("... and %d more", len(diffs)-20))
		}
		for _, d := range diffs {
			t.Error(d)
		}
	}
	if testing.Verbose() {
		t.Logf("%d bytes of JSON agree", wb.Len())
	}
}

// brief prints a JSON value for a message, cut to a readable length.
func brief(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

func compareJSON(path string, want, got any, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: want an object, got %s", path, brief(got)))
			return
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			compareJSON(path+"."+k, wv, gv, diffs)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: unexpected", path, k))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %d elements, got %s", path, len(w), brief(got)))
			return
		}
		for i := range w {
			compareJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], diffs)
		}
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", path, w, brief(got)))
			return
		}
		wf, err1 := w.Float64()
		gf, err2 := g.Float64()
		if err1 != nil || err2 != nil || math.Abs(wf-gf) > 1e-12*math.Max(1, math.Max(math.Abs(wf), math.Abs(gf))) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", path, w, g))
		}
	default:
		if want != got {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", path, brief(want), brief(got)))
		}
	}
}
