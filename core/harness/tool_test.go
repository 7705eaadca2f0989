package harness

import "testing"

func TestLanded(t *testing.T) {
	for _, tt := range []struct {
		data map[string]any
		want bool
	}{
		{map[string]any{ReconcileStatus: ReconcileCompleted}, true},
		{map[string]any{ReconcileStatus: ReconcileCaptured, "charge_id": "ch_1"}, true},
		{map[string]any{ReconcileStatus: ReconcileNotFound}, false},
		{map[string]any{ReconcileStatus: "pending"}, false},
		{map[string]any{"state": ReconcileCompleted}, false}, // the word in another field says nothing
		{nil, false},
	} {
		if got := Landed(tt.data); got != tt.want {
			t.Errorf("Landed(%v) = %v, want %v", tt.data, got, tt.want)
		}
	}
}
