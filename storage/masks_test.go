package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"rebound/core/outcome"
	"rebound/results/record"
)

// The outcome masks as the current metrics define them (aggMetrics order):
// bit i of tmask says metric i was tested (not NULL, no attrition), of
// smask that it succeeded.
var tmaskSQL, smaskSQL = func() (string, string) {
	if len(metricYs) > 32 {
		panic("storage: more than 32 metrics do not fit the outcome bit masks")
	}
	t := perMetric(" + ", func(i int, y string) string {
		return fmt.Sprintf("bitShiftLeft(toUInt32(isNotNull(%s) AND attrition = 0), %d)", y, i)
	})
	s := perMetric(" + ", func(i int, y string) string {
		return fmt.Sprintf("bitShiftLeft(toUInt32(ifNull(%s, 0) = 1 AND attrition = 0), %d)", y, i)
	})
	return t, s
}()

// TestStoredMasksMatchTheMetrics: the masks migration 14 stores are the
// ones the current metrics define. When outcome.Stored changes, this fails:
// add a migration that modifies tmask and smask to the new expressions
// (ALTER TABLE ... MODIFY COLUMN ... MATERIALIZED, then MATERIALIZE COLUMN)
// and point this test at it.
func TestStoredMasksMatchTheMetrics(t *testing.T) {
	if tmaskV14 != tmaskSQL {
		t.Errorf("migration 14's tmask is not the current metrics' mask:\n got %s\nwant %s", tmaskV14, tmaskSQL)
	}
	if smaskV14 != smaskSQL {
		t.Errorf("migration 14's smask is not the current metrics' mask:\n got %s\nwant %s", smaskV14, smaskSQL)
	}
	if got := materializedColumns(t)["trials"]; strings.Join(got, ",") != "tmask,smask" {
		t.Errorf("trials' MATERIALIZED columns = %v, want tmask, smask", got)
	}
}

// maskOracle computes a trial's masks in Go from its outcome fields: bit i
// for metric i of aggMetrics; harm is tested when any of its components
// is, and true when any component is.
func maskOracle(tr record.Trial) (tmask, smask uint32) {
	if tr.Attrition {
		return 0, 0
	}
	for i, m := range aggMetrics {
		var y *bool
		if m == outcome.Harm {
			for _, c := range outcome.HarmComponents {
				if v := tr.Outcome(c); v != nil {
					y = bp(*v || (y != nil && *y))
				}
			}
		} else {
			y = tr.Outcome(m)
		}
		if y != nil {
			tmask |= 1 << i
			if *y {
				smask |= 1 << i
			}
		}
	}
	return tmask, smask
}

// maskTrials generates n trials whose outcomes are each NULL, false or
// true at random, some of them attrition.
func maskTrials(sweep string, n int, rng *rand.Rand) []record.Trial {
	out := make([]record.Trial, n)
	for i := range out {
		tr := record.Trial{SweepID: sweep, TrialID: fmt.Sprintf("%s-%d", sweep, i), Scenario: "sc", Variant: "v",
			Arm: "a", Seed: uint64(i), FaultClasses: []string{}, Weight: 1, Attrition: rng.IntN(8) == 0}
		tr.SetOutcomes(func(outcome.Metric) *bool {
			switch rng.IntN(3) {
			case 0:
				return nil
			case 1:
				return bp(false)
			}
			return bp(true)
		})
		out[i] = tr
	}
	return out
}

// checkStoredMasks reads the stored masks of the sweep's trials and
// compares them with the oracle's.
func checkStoredMasks(t *testing.T, st *store, trials []record.Trial) {
	t.Helper()
	var rows []struct {
		TrialID string `ch:"trial_id" json:"trial_id"`
		TMask   uint32 `ch:"tmask" json:"tmask"`
		SMask   uint32 `ch:"smask" json:"smask"`
	}
	q := Stmt{SQL: st.sql("SELECT trial_id, tmask, smask FROM {{db}}.trials FINAL WHERE sweep_id = {s:String}"),
		Params: map[string]string{"s": trials[0].SweepID}}
	if err := st.t.Select(context.Background(), &rows, q); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(trials) {
		t.Fatalf("read %d trials, wrote %d", len(rows), len(trials))
	}
	byID := map[string]record.Trial{}
	for _, tr := range trials {
		byID[tr.TrialID] = tr
	}
	for _, r := range rows {
		wt, ws := maskOracle(byID[r.TrialID])
		if r.TMask != wt || r.SMask != ws {
			t.Errorf("trial %s: stored tmask %010b smask %010b, want %010b %010b", r.TrialID, r.TMask, r.SMask, wt, ws)
		}
	}
}

// TestStoredMasksAreTheOutcomes: the masks the engine materializes on
// insert are those the Go oracle computes from the outcomes, for trials
// written after migration 14 and for trials written before it (whose
// parts the migration materializes).
func TestStoredMasksAreTheOutcomes(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	t.Run("written after", func(t *testing.T) {
		st := openTestStore(t)
		trials := maskTrials("after", 500, rng)
		if err := st.WriteTrials(context.Background(), trials, nil); err != nil {
			t.Fatal(err)
		}
		checkStoredMasks(t, st, trials)
	})
	t.Run("written before", func(t *testing.T) {
		st := openTestStoreAt(t, 13)
		trials := maskTrials("before", 500, rng)
		if err := st.WriteTrials(context.Background(), trials, nil); err != nil {
			t.Fatal(err)
		}
		if err := st.migrateTo(context.Background(), 14); err != nil {
			t.Fatal(err)
		}
		checkStoredMasks(t, st, trials)
		waitMutations(t, st)
		checkStoredMasks(t, st, trials)
	})
}
