package runner

import (
	"context"
	"testing"
)

// Without a worker, or once the workflow ended other than completed, there
// is no progress to read, and no call is made to find out (a nil client
// would panic).
func TestCurrentProgressWithoutAWorker(t *testing.T) {
	for _, tc := range []struct {
		st   SweepState
		want string
	}{
		{SweepState{SweepID: "s", Found: true, Status: "running", Pollers: 0}, "no worker polls its task queue"},
		{SweepState{SweepID: "s"}, "the workflow is unknown to Temporal"},
		{SweepState{SweepID: "s", Found: true, Status: "terminated"}, "the workflow ended terminated"},
	} {
		if _, err := CurrentProgress(context.Background(), nil, tc.st); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: err = %v, want %q", tc.st, err, tc.want)
		}
	}
}
