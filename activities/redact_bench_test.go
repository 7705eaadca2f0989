package activities

import (
	"context"
	"path/filepath"
	"testing"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/redact"
)

// benchTrials runs every example scenario's first variant once with the
// careful and naive agents: the rows a worker converts (and redacts) for
// ordinary trials, where nothing is secret.
func benchTrials(b *testing.B) []*trial.Result {
	b.Helper()
	files, err := filepath.Glob("../examples/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		b.Fatalf("example scenarios: %v %v", files, err)
	}
	var out []*trial.Result
	for _, f := range files {
		sc, err := scenario.LoadScenario(f, world.Catalog)
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range []string{"careful", "naive_retrier"} {
			ag, err := agent.NewScripted(name)
			if err != nil {
				b.Fatal(err)
			}
			spec := trial.Spec{SweepID: "bench", Scenario: sc, Variant: sc.Variants[0], Arm: scenario.Arm{Name: name, Agent: name}, Seed: 1}
			r, err := trial.Run(context.Background(), spec, ag)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, r)
		}
	}
	return out
}

// BenchmarkRowsRedaction is the redaction a worker adds per trial: Rows
// over the example scenarios' trials with one redactor per sweep (its memo
// warm after the first trials, as on a worker), reported per trial.
func BenchmarkRowsRedaction(b *testing.B) {
	results := benchTrials(b)
	red, err := redact.NewWith(redact.Options{Values: []string{"opaque-provider-key-Qx7Lm2Vr9Tz4Wb8N"}, HashKey: []byte("bench-key")})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Rows(results[i%len(results)], red)
	}
}

// BenchmarkRowsRedactionCold is the same with a new redactor per trial
// (no memo, and the cost of building one: a shard builds one per run).
func BenchmarkRowsRedactionCold(b *testing.B) {
	results := benchTrials(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		red, err := redact.NewWith(redact.Options{Values: []string{"opaque-provider-key-Qx7Lm2Vr9Tz4Wb8N"}, HashKey: []byte("bench-key")})
		if err != nil {
			b.Fatal(err)
		}
		Rows(results[i%len(results)], red)
	}
}
