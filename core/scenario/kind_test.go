package scenario

import (
	"os"
	"testing"
)

func TestKindOf(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name, data, want string
	}{
		{"example plan", read("../../examples/plans/quickstart.yaml"), KindPlan},
		{"example scenario", read("../../examples/scenarios/charge-502-twice.yaml"), KindScenario},
		{"matrix plan", "name: p\nmatrix: {models: [a]}\n", KindPlan},
		{"goal only", "goal: g\n", KindScenario},
		{"declared world", read("../../examples/scenarios/worlds/payments.yaml"), KindWorld},
		{"state without tools", "name: w\nstate: {}\n", ""},
		{"neither", "name: x\nseeds: 3\n", ""},
		{"a list", "- world\n- goal\n", ""},
		{"not yaml", "{[", ""},
		{"empty", "", ""},
	} {
		if got := KindOf([]byte(tc.data)); got != tc.want {
			t.Errorf("%s: KindOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}
