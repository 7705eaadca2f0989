package command_test

import (
	"context"
	"testing"
	"time"

	"rebound/core/agent/command"
	"rebound/core/trial"
)

// BenchmarkCommandArm runs one command-arm trial per iteration (the helper
// agent recovering a charge after two 502s: three calls, a claim), sealed
// and unsealed, so the sealing overhead reads as a ratio of one run:
//
//	go test -run '^$' -bench CommandArm -benchtime 200x ./core/agent/command/
func BenchmarkCommandArm(b *testing.B) {
	for _, c := range []struct {
		name     string
		unsealed bool
	}{{"unsealed", true}, {"sealed", false}} {
		b.Run(c.name, func(b *testing.B) {
			if !c.unsealed {
				needSandbox(b)
			}
			spec := chargeSpec(b)
			a, err := command.New(command.Config{Command: []string{agentBinary, "rebound-helper", "charge"}, Timeout: time.Minute, Unsealed: c.unsealed})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := trial.Run(context.Background(), spec, a)
				if err != nil {
					b.Fatal(err)
				}
				if r := res.Verdict.Recovered; r == nil || !*r {
					b.Fatalf("trial %d not recovered: %+v", i, res.Verdict)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "trials/s")
		})
	}
}
