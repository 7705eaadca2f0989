package sweepstatus

import "testing"

func TestValid(t *testing.T) {
	for _, s := range All {
		if !Valid(s) {
			t.Errorf("%q is listed but not valid", s)
		}
	}
	for _, s := range []string{"", "Running", "canceled", "done"} {
		if Valid(s) {
			t.Errorf("%q accepted", s)
		}
	}
}
