package scenario

import (
	"strings"
	"testing"
)

func TestPlanMaxUSD(t *testing.T) {
	const base = "name: p\nscenarios: [x.yaml]\narms: [{name: a, agent: careful}]\nseeds: 1\n"
	for _, tc := range []struct {
		line    string
		want    float64
		wantErr string
	}{
		{"", 0, ""},
		{"max_usd: 12.5\n", 12.5, ""},
		{"max_usd: -1\n", 0, "p.yaml:5:1: max_usd: must be a positive amount"},
		{"max_usd: .inf\n", 0, "max_usd: must be a positive amount"},
		{"max_usd: lots\n", 0, "max_usd"},
	} {
		p, err := ParsePlan("p.yaml", []byte(base+tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if err != nil || p.MaxUSD != tc.want {
			t.Errorf("%q: max_usd %v, err %v; want %v", tc.line, p, err, tc.want)
		}
	}
}
