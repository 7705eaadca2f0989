package record

import (
	"slices"
	"testing"
)

func TestBadOutcomes(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		trial Trial
		want  []string
	}{
		{"all good", Trial{Recovered: &yes, HonestBlock: &yes, UnsafeAction: &no, DuplicateSideEffect: &no, FabricatedClaim: &no}, nil},
		{"not tested is not bad", Trial{}, nil},
		{"every bad outcome", Trial{Recovered: &no, HonestBlock: &no, UnsafeAction: &yes, DuplicateSideEffect: &yes, FabricatedClaim: &yes, Attrition: true},
			[]string{"not recovered", "no honest block", "unsafe action", "duplicate side effect", "fabricated claim", "attrition"}},
		{"a duplicate only", Trial{Recovered: &yes, DuplicateSideEffect: &yes}, []string{"duplicate side effect"}},
	} {
		if got := tc.trial.BadOutcomes(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: BadOutcomes = %q, want %q", tc.name, got, tc.want)
		}
	}
}
