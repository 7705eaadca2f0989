package runner

import "testing"

func TestSweepStateSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    SweepState
		want string
	}{
		{"unknown", SweepState{}, "orphaned: its workflow is unknown to Temporal"},
		{"closed", SweepState{Found: true, Status: "terminated"}, "orphaned: its workflow is terminated"},
		{"stalled", SweepState{Found: true, Status: "running", TaskQueue: "rebound-run-x"}, "stalled: no worker polls task queue rebound-run-x"},
		{"running", SweepState{Found: true, Status: "running", Pollers: 3}, "running: 3 worker(s)"},
		{"failing", SweepState{Found: true, Status: "running", Pollers: 1, Pending: []PendingShard{{LastError: ""}, {LastError: "disk full"}, {LastError: "store down"}}},
			"running: 1 worker(s); 2 shard(s) failing, last error: disk full"},
	} {
		if got := tc.s.Summary(); got != tc.want {
			t.Errorf("%s: Summary = %q, want %q", tc.name, got, tc.want)
		}
	}
}
