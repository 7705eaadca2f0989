package llm

import (
	"context"
	"testing"

	"rebound/core/agent/llm/llmtest"
)

// benchScript is a 4-turn conversation (3 tool turns, a final answer) plus
// the claim turn: 5 requests, 3 tool calls through the harness, 1 wait.
func benchScript() []llmtest.Reply {
	s := chargeScript()
	return []llmtest.Reply{s[1], s[2], s[3], s[4], s[5]}
}

// BenchmarkLoop is the per-trial overhead of the agent loop over HTTP with
// the model's latency excluded: a local server answers instantly. It
// includes the loopback HTTP round trips, go-openai's encoding and the
// in-process server's own work.
func BenchmarkLoop(b *testing.B) {
	srv := llmtest.New(b)
	b.Setenv(testKeyEnv, "sk-bench")
	a, _ := newAgent(b, srv, nil)
	b.ReportAllocs()
	for b.Loop() {
		srv.Push(benchScript()...)
		srv.Reset()
		env, _ := newEnv(b, badGatewayOnFirstCharge)
		out, err := a.Run(context.Background(), env, testTask)
		if err != nil || out.Claim != goodClaim {
			b.Fatalf("%v %q", err, out.Claim)
		}
	}
}

// BenchmarkLoopReplay is the agent's own CPU per trial: the same
// conversation answered from a recording, without HTTP.
func BenchmarkLoopReplay(b *testing.B) {
	srv := llmtest.New(b)
	b.Setenv(testKeyEnv, "sk-bench")
	live, _ := newAgent(b, srv, nil)
	srv.Push(benchScript()...)
	env, _ := newEnv(b, badGatewayOnFirstCharge)
	if _, err := live.Run(context.Background(), env, testTask); err != nil {
		b.Fatal(err)
	}
	a, err := New(live.Config(), WithReplay(live.Recording()))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		env, _ := newEnv(b, badGatewayOnFirstCharge)
		out, err := a.Run(context.Background(), env, testTask)
		if err != nil || out.Claim != goodClaim {
			b.Fatalf("%v %q", err, out.Claim)
		}
	}
}
