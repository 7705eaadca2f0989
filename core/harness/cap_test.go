package harness

import "testing"

func TestCallLimitDefaultsAndClamps(t *testing.T) {
	for _, tc := range []struct{ budget, want int }{
		{0, DefaultToolCalls}, {-1, DefaultToolCalls}, {7, 7}, {MaxToolCalls + 1, MaxToolCalls},
	} {
		d, _ := newTestDispatcher(t, []Fault{{Class: Transient, Tool: "t.read", Always: true}}, Budget{ToolCalls: tc.budget})
		if got := d.CallLimit(); got != tc.want {
			t.Errorf("budget %d: limit %d, want %d", tc.budget, got, tc.want)
		}
		for range tc.want + MaxRefusedCalls + 50 {
			d.Call("t.read", nil)
		}
		l := d.Ledger()
		if l.Sent() != tc.want || len(l.Attempts) != tc.want+MaxRefusedCalls || !d.IsHalted() {
			t.Errorf("budget %d: sent %d, recorded %d, halted %v", tc.budget, l.Sent(), len(l.Attempts), d.IsHalted())
		}
	}
}
