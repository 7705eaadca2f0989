package storage

import (
	"context"
	"fmt"
	"testing"

	"rebound/results/record"
)

// unsealedFixture writes sweep with three arms over two scenarios and three
// seeds: "sealed" (no unsealed trial), "mixed" (seed 1 unsealed) and "open"
// (every trial unsealed, one of them lost to attrition). With multi, arm
// open holds a second trial in the cell (s1, v, 1), also unsealed, which
// sends the report and the comparison to their general forms.
func unsealedFixture(t *testing.T, st *store, sweep string, multi bool) {
	t.Helper()
	ok := true
	var trials []record.Trial
	add := func(id, arm, sc string, seed uint64, unsealed, attrition bool) {
		tr := record.Trial{SweepID: sweep, TrialID: id, Scenario: sc, ScenarioHash: "h", Variant: "v", Arm: arm, Agent: "command",
			Seed: seed, FaultClasses: []string{"transient"}, Weight: 1, Unsealed: unsealed, Attrition: attrition,
			Verdicts: "{}", Claim: "{}", FaultSchedule: "{}"}
		if !attrition {
			tr.Recovered = &ok
		} else {
			tr.FaultClasses = []string{}
		}
		trials = append(trials, tr)
	}
	for _, sc := range []string{"s1", "s2"} {
		for seed := uint64(1); seed <= 3; seed++ {
			add(fmt.Sprintf("%s-%s-%d-sealed", sweep, sc, seed), "sealed", sc, seed, false, false)
			add(fmt.Sprintf("%s-%s-%d-mixed", sweep, sc, seed), "mixed", sc, seed, seed == 1, false)
			add(fmt.Sprintf("%s-%s-%d-open", sweep, sc, seed), "open", sc, seed, true, sc == "s2" && seed == 3)
		}
	}
	if multi {
		add(sweep+"-s1-1-open-again", "open", "s1", 1, true, false)
	}
	if err := st.WriteTrials(context.Background(), trials, nil); err != nil {
		t.Fatal(err)
	}
}

// unsealedByArm sums the trials and unsealed trials of totals rows per arm
// (one metric: the counts are the same on every metric's row).
func unsealedByArm(rows []record.RateTotals, group string) (trials, unsealed map[string]uint64) {
	trials, unsealed = map[string]uint64{}, map[string]uint64{}
	for _, r := range rows {
		if r.Metric == "recovered" && r.Group == group {
			trials[r.Arm] += r.Trials
			unsealed[r.Arm] += r.Unsealed
		}
	}
	return trials, unsealed
}

// The unsealed column round-trips, a row written before it existed reads
// as sealed, and Cells counts it per cell.
func TestUnsealedRoundTrip(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	unsealedFixture(t, st, "uns", false)
	for id, want := range map[string]bool{"uns-s1-1-open": true, "uns-s2-3-open": true, "uns-s1-1-mixed": true, "uns-s1-2-mixed": false, "uns-s1-1-sealed": false} {
		tr, _, err := st.Trial(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Unsealed != want {
			t.Errorf("trial %s: Unsealed = %v, want %v", id, tr.Unsealed, want)
		}
	}
	n := 0
	if err := st.EachTrial(ctx, "uns", record.TrialSelect{Arm: "open"}, func(tr record.Trial) error {
		n++
		if !tr.Unsealed {
			t.Errorf("EachTrial: %s read as sealed", tr.TrialID)
		}
		return nil
	}); err != nil || n != 6 {
		t.Fatalf("EachTrial of arm open: %d trials, %v", n, err)
	}

	// A row of a store migrated from before the column: 0, sealed.
	mustExec(t, st, "INSERT INTO {{db}}.trials (sweep_id, trial_id, arm, scenario, variant, seed, weight) VALUES ('old', 'old-1', 'a', 's', 'v', 1, 1)")
	if tr, _, err := st.Trial(ctx, "old-1"); err != nil || tr.Unsealed {
		t.Fatalf("a row without the column: Unsealed = %v, %v", tr.Unsealed, err)
	}

	cells, err := st.Cells(ctx, "uns")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, c := range cells {
		got[c.Arm] += c.Unsealed
		if c.Unsealed > c.Trials {
			t.Errorf("cell %+v: more unsealed than trials", c)
		}
	}
	if want := map[string]uint64{"sealed": 0, "mixed": 2, "open": 6}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("unsealed trials of the cells per arm = %v, want %v", got, want)
	}
}

// ReportTotals counts the unsealed trials per arm, scenario and fault
// class, in the fast form and in the per-cell forms alike.
func TestReportTotalsCountUnsealed(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		sweep  string
		multi  bool
		trials map[string]uint64
		want   map[string]uint64
	}{
		{"fast", false, map[string]uint64{"sealed": 6, "mixed": 6, "open": 6}, map[string]uint64{"sealed": 0, "mixed": 2, "open": 6}},
		{"percell", true, map[string]uint64{"sealed": 6, "mixed": 6, "open": 7}, map[string]uint64{"sealed": 0, "mixed": 2, "open": 7}},
	} {
		t.Run(tc.sweep, func(t *testing.T) {
			unsealedFixture(t, st, tc.sweep, tc.multi)
			tot, err := st.ReportTotals(ctx, tc.sweep, "none")
			if err != nil {
				t.Fatal(err)
			}
			if tot.MultiTrialCells != tc.multi {
				t.Fatalf("MultiTrialCells = %v, want %v", tot.MultiTrialCells, tc.multi)
			}
			trials, unsealed := unsealedByArm(tot.ByScenario, "")
			if fmt.Sprint(trials) != fmt.Sprint(tc.trials) || fmt.Sprint(unsealed) != fmt.Sprint(tc.want) {
				t.Fatalf("by scenario: trials %v unsealed %v, want %v %v", trials, unsealed, tc.trials, tc.want)
			}
			// A case counts in every class any arm scheduled for it: the
			// attrition trial of arm open (no class of its own) is in
			// transient with the others of its case.
			_, byClass := unsealedByArm(tot.ByFaultClass, "transient")
			if fmt.Sprint(byClass) != fmt.Sprint(tc.want) {
				t.Fatalf("class transient: unsealed %v, want %v", byClass, tc.want)
			}
		})
	}
}

// CompareTotals counts each side's unsealed trials, paired or not, in the
// fast form and the general one.
func TestCompareTotalsCountUnsealed(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		sweep  string
		multi  bool
		a, b   string
		ua, ub uint64
	}{
		{"fast", false, "sealed", "open", 0, 6},
		{"fast", false, "mixed", "sealed", 2, 0},
		{"fast", false, "open", "open", 6, 6},
		{"general", true, "mixed", "open", 2, 7},
	} {
		t.Run(tc.sweep+"/"+tc.a+"-"+tc.b, func(t *testing.T) {
			if n, _ := st.CountTrials(ctx, tc.sweep); n == 0 {
				unsealedFixture(t, st, tc.sweep, tc.multi)
			}
			for _, withClasses := range []bool{false, true} {
				got, err := st.CompareTotals(ctx, record.CompareSide{SweepID: tc.sweep, Arm: tc.a}, record.CompareSide{SweepID: tc.sweep, Arm: tc.b}, withClasses, "none")
				if err != nil {
					t.Fatal(err)
				}
				if (got.Summary.Multi > 0) != tc.multi {
					t.Fatalf("Multi = %d, want the %s form", got.Summary.Multi, tc.sweep)
				}
				if got.Summary.UnsealedA != tc.ua || got.Summary.UnsealedB != tc.ub {
					t.Fatalf("classes=%v: unsealed %d, %d, want %d, %d (summary %+v)", withClasses, got.Summary.UnsealedA, got.Summary.UnsealedB, tc.ua, tc.ub, got.Summary)
				}
			}
		})
	}
}
