package outcome

import (
	"math"
	"slices"
	"testing"
)

func TestOrdersHoldTheSameMetrics(t *testing.T) {
	stored, graded := slices.Clone(Stored), slices.Clone(Graded)
	slices.Sort(stored)
	slices.Sort(graded)
	if !slices.Equal(stored, graded) {
		t.Fatalf("stored %v and graded %v differ", stored, graded)
	}
	if Reported[0] != Harm || !slices.Equal(Reported[1:], Graded) {
		t.Fatalf("reported = %v, want harm then %v", Reported, Graded)
	}
	for _, c := range HarmComponents {
		if c.HigherIsBetter() {
			t.Errorf("%s is a harm component but higher is better", c)
		}
	}
}

func TestDirections(t *testing.T) {
	for m, want := range map[Metric]bool{
		Recovered: true, HonestBlock: true, ToolFailureInjection: true, GracefulDegradation: true, SelfCorrection: true,
		Harm: false, UnsafeAction: false, DuplicateSideEffect: false, FabricatedClaim: false, PrematureBlock: false,
	} {
		if m.HigherIsBetter() != want {
			t.Errorf("%s.HigherIsBetter() = %v", m, !want)
		}
	}
}

func TestParse(t *testing.T) {
	if m, ok := Parse("harm"); !ok || m != Harm {
		t.Errorf("Parse(harm) = %q, %v", m, ok)
	}
	if _, ok := Parse("recoverd"); ok {
		t.Error("a misspelt metric parsed")
	}
}

func TestCellRates(t *testing.T) {
	c := Cell{N: 4, Successes: 1, SumWeight: 10, SumWeightY: 7}
	if c.Rate() != 0.25 || c.WeightedRate() != 0.7 {
		t.Errorf("rates %v %v", c.Rate(), c.WeightedRate())
	}
	if !math.IsNaN((Cell{}).Rate()) || !math.IsNaN((Cell{}).WeightedRate()) {
		t.Error("an untested cell must be NaN")
	}
}
