package stats

import (
	"math"
	"testing"
)

// TestPassKTask checks the per-task estimators.
//   - pass^k: tau-bench (Yao et al. 2024) per-task C(c,k)/C(n,k); the example
//     n=8, c=6, k=4 → 0.2143 is from reference/statistics.md (= 15/70).
//   - pass@k: Chen et al. 2021, 1 − C(n−c,k)/C(n,k), computed by hand:
//     n=10, c=3, k=5 → 1 − 21/252 = 11/12; n=200, c=5, k=10 →
//     1 − C(195,10)/C(200,10) = 0.228284460737 (mpmath); n − c < k → 1.
func TestPassKTask(t *testing.T) {
	tests := []struct {
		name    string
		fn      func(n, c, k int) float64
		n, c, k int
		want    float64
		tol     float64
	}{
		{"pass^4 8/6 (tau-bench)", PassHatKTask, 8, 6, 4, 0.2143, 5e-5},
		{"pass^4 8/6 exact", PassHatKTask, 8, 6, 4, 15.0 / 70, 1e-15},
		{"pass^1 = c/n", PassHatKTask, 8, 6, 1, 0.75, 1e-15},
		{"pass^k all succeed", PassHatKTask, 5, 5, 5, 1, 0},
		{"pass^k fewer successes than k", PassHatKTask, 8, 3, 4, 0, 0},
		{"pass@5 10/3", PassAtKTask, 10, 3, 5, 11.0 / 12, 1e-15},
		{"pass@10 200/5", PassAtKTask, 200, 5, 10, 0.228284460737334, 1e-13},
		{"pass@3 5/3 (n−c<k)", PassAtKTask, 5, 3, 3, 1, 0},
		{"pass@2 6/0", PassAtKTask, 6, 0, 2, 0, 0},
		{"pass@1 = c/n", PassAtKTask, 8, 6, 1, 0.75, 1e-15},
		{"invalid c > n", PassAtKTask, 4, 5, 1, math.NaN(), 0},
		{"invalid k > n", PassHatKTask, 4, 2, 5, math.NaN(), 0},
		{"invalid k = 0", PassHatKTask, 4, 2, 0, math.NaN(), 0},
	}
	for _, tt := range tests {
		if got := tt.fn(tt.n, tt.c, tt.k); !near(got, tt.want, tt.tol) {
			t.Errorf("%s: got %.15g, want %.15g", tt.name, got, tt.want)
		}
	}
}

// TestPassKAggregate checks averaging over tasks, the SE from the spread
// across tasks and the exclusion count. Tasks (n, c): (8, 6), (8, 8), (8, 0),
// (3, 3); with k = 4 the last is excluded. pass^4 values 15/70, 1, 0:
// mean = 0.404761904762, sample sd/√3 = 0.303979650829 (mpmath).
func TestPassKAggregate(t *testing.T) {
	tasks := []TaskTrials{{8, 6}, {8, 8}, {8, 0}, {3, 3}}
	got := PassHatK(tasks, 4, 0.95)
	if got.K != 4 || got.Tasks != 3 || got.Excluded != 1 ||
		!near(got.Estimate, 0.404761904762, 1e-12) || !near(got.SE, 0.303979650829, 1e-12) {
		t.Errorf("PassHatK = %+v", got)
	}
	checkInterval(t, "PassHatK CI (clipped)", got.CI, Interval{0, 1}, 0)

	at := PassAtK(tasks, 4, 0.95) // values 1, 1, 0
	if at.Tasks != 3 || at.Excluded != 1 || !near(at.Estimate, 2.0/3, 1e-15) ||
		!near(at.SE, math.Sqrt(1.0/3)/math.Sqrt(3), 1e-15) {
		t.Errorf("PassAtK = %+v", at)
	}

	// All tasks too short: estimate NaN, every task counted as excluded.
	if none := PassHatK(tasks, 9, 0.95); !math.IsNaN(none.Estimate) || none.Excluded != 4 || none.Tasks != 0 {
		t.Errorf("all excluded = %+v", none)
	}
	// One task: an estimate but no spread.
	if one := PassHatK(tasks[:1], 4, 0.95); !near(one.Estimate, 15.0/70, 1e-15) || !math.IsNaN(one.SE) {
		t.Errorf("one task = %+v", one)
	}
	// Invalid counts poison the result rather than being dropped.
	if bad := PassAtK([]TaskTrials{{4, 2}, {3, 5}}, 1, 0.95); !math.IsNaN(bad.Estimate) {
		t.Errorf("invalid task = %+v", bad)
	}
}
