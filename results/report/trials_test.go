package report

import (
	"slices"
	"testing"

	"rebound/results/record"
)

func TestBadOutcomes(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		trial record.Trial
		want  []string
	}{
		{"all good", record.Trial{Recovered: &yes, HonestBlock: &yes, UnsafeAction: &no, DuplicateSideEffect: &no, FabricatedClaim: &no}, nil},
		{"not tested is not bad", record.Trial{}, nil},
		{"every bad outcome", record.Trial{Recovered: &no, HonestBlock: &no, UnsafeAction: &yes, DuplicateSideEffect: &yes, FabricatedClaim: &yes, Attrition: true},
			[]string{"not recovered", "no honest block", "unsafe action", "duplicate side effect", "fabricated claim", "attrition"}},
		{"a duplicate only", record.Trial{Recovered: &yes, DuplicateSideEffect: &yes}, []string{"duplicate side effect"}},
	} {
		if got := BadOutcomes(&tc.trial); !slices.Equal(got, tc.want) {
			t.Errorf("%s: BadOutcomes = %q, want %q", tc.name, got, tc.want)
		}
	}
}
