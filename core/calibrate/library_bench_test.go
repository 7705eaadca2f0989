package calibrate

import (
	"context"
	"path/filepath"
	"testing"

	"rebound/core/agent"
	"rebound/core/grade"
	"rebound/core/scenario"
	"rebound/core/world"
)

// libraryFiles are the files examples/plans/library.yaml names: every
// example scenario and the imported seed-004 scenario.
var libraryFiles = []string{"../../examples/scenarios/*.yaml", "../../examples/import/*.rebound.yaml"}

func loadLibrary(b *testing.B) []*scenario.Scenario {
	b.Helper()
	var out []*scenario.Scenario
	for _, g := range libraryFiles {
		files, err := filepath.Glob(g)
		if err != nil || len(files) == 0 {
			b.Fatalf("no scenarios match %s: %v", g, err)
		}
		for _, f := range files {
			s, err := scenario.LoadScenario(f, world.Catalog) // generated variants expand here
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, s)
		}
	}
	return out
}

// BenchmarkLibrary runs every scripted reference agent on every variant
// (hand-written and generated) of the example library, seed 1, graded by
// every check: one op is one full calibration run of the library.
//
//	go test -bench Library -run '^$' ./calibrate/
func BenchmarkLibrary(b *testing.B) {
	scenarios := loadLibrary(b)
	agents := agent.ScriptedNames()
	hand, generated := 0, 0
	for _, s := range scenarios {
		for _, v := range s.Variants {
			if v.Generated != nil {
				generated++
			} else {
				hand++
			}
		}
	}
	trials := (hand + generated) * len(agents)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		m, err := Run(ctx, scenarios, agents, grade.Checks)
		if err != nil {
			b.Fatal(err)
		}
		if len(m.Cells) != trials {
			b.Fatalf("%d cells, want %d", len(m.Cells), trials)
		}
	}
	b.ReportMetric(float64(len(scenarios)), "scenarios")
	b.ReportMetric(float64(hand), "hand_variants")
	b.ReportMetric(float64(generated), "gen_variants")
	b.ReportMetric(float64(trials), "trials")
	if b.Elapsed() > 0 && b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(trials), "us/trial")
	}
}
