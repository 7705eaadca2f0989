package report

import (
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"rebound/core/outcome"
	"rebound/results/record"
)

// The Go side of the report and compare pipeline over 1,000,000 trials, from
// the cells ClickHouse would return (one trial per cell): 2 arms × 1,000
// scenarios × 10 variants × 50 seeds, every metric graded in most trials.
//
//	go test -run '^$' -bench 1M -benchmem ./report/
//
// Besides wall time per op, each benchmark reports cpu-s/op, the process's
// user+system CPU time per op (garbage collection included), which stays
// meaningful on a shared, busy machine.

var faultClassNames = []string{"transient", "rate_limited", "timeout_after_send", "timeout_before_send", "unavailable", "corrupt_output"}

type synth struct {
	cells []record.Cell
	cases map[Key]Case
}

var synthetic1M *synth

func million(b *testing.B) *synth {
	if synthetic1M != nil {
		return synthetic1M
	}
	const scenarios, variants, seeds = 1000, 10, 50
	rng := rand.New(rand.NewPCG(1, 2))
	s := &synth{cells: make([]record.Cell, 0, 2*scenarios*variants*seeds), cases: map[Key]Case{}}
	for _, arm := range []string{"base", "cand"} {
		for sc := range scenarios {
			name := fmt.Sprintf("scenario-%04d", sc)
			p := 0.2 + 0.6*float64(sc%7)/6 // per-scenario rate: seeds of a scenario are correlated
			if arm == "cand" {
				p += 0.02
			}
			w := float64(1 + sc%3)
			for v := range variants {
				variant := fmt.Sprintf("v%d", v)
				for seed := uint64(1); seed <= seeds; seed++ {
					c := record.Cell{Arm: arm, Scenario: name, Variant: variant, Seed: seed, Trials: 1,
						Metrics: make(map[outcome.Metric]outcome.Cell, len(outcome.Stored))}
					for i, m := range outcome.Stored {
						if rng.IntN(10) == 0 && i > 0 { // 10% NOT TESTED
							c.Metrics[m] = outcome.Cell{}
							continue
						}
						y := 0.0
						if rng.Float64() < p {
							y = 1
						}
						c.Metrics[m] = outcome.Cell{N: 1, Successes: uint64(y), SumWeight: w, SumWeightY: w * y}
					}
					s.cells = append(s.cells, c)
					if arm == "base" {
						s.cases[Key{name, variant, seed}] = Case{FaultClasses: []string{faultClassNames[(sc+v)%len(faultClassNames)]}}
					}
				}
			}
		}
	}
	synthetic1M = s
	return s
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs f b.N times and reports its CPU time per op.
func loop(b *testing.B, f func()) {
	b.ResetTimer()
	start := cpuTime()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	b.ReportMetric((cpuTime()-start).Seconds()/float64(n), "cpu-s/op")
}

func BenchmarkBuild1M(b *testing.B) {
	s := million(b)
	sw := record.Sweep{SweepID: "bench", Arms: []string{"base", "cand"}}
	loop(b, func() {
		sum := BuildWith(sw, uint64(len(s.cells)), s.cells, Options{Cases: s.cases})
		if c, _ := sum.Metric("cand", "recovered"); c.N != 500000 || c.Clusters != 1000 {
			b.Fatalf("cell = %+v", c)
		}
	})
}

func BenchmarkCompare1M(b *testing.B) {
	s := million(b)
	loop(b, func() {
		c := Compare(CompareInput{Baseline: Side{"bench", "base"}, Candidate: Side{"bench", "cand"},
			BaselineCells: s.cells, CandidateCells: s.cells, Cases: s.cases})
		if c.Cases != 500000 || len(c.ByScenario) != 1000 || len(c.ByFaultClass) != len(faultClassNames) {
			b.Fatalf("cases %d, scenarios %d, classes %d", c.Cases, len(c.ByScenario), len(c.ByFaultClass))
		}
	})
}

func BenchmarkRender1M(b *testing.B) {
	s := million(b)
	c := Compare(CompareInput{Baseline: Side{"bench", "base"}, Candidate: Side{"bench", "cand"},
		BaselineCells: s.cells, CandidateCells: s.cells, Cases: s.cases})
	loop(b, func() {
		for _, write := range []func(io.Writer) error{c.WriteText, c.WriteMarkdown, c.WriteJSON, c.WriteJUnit, c.WriteHTML} {
			if err := write(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
}
