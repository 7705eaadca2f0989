package storage

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"rebound/results/record"
)

// Spend against an oracle written in Go over generated sweeps: trials stored
// or not, each step sent one to three times (a reissue after a lost
// answer), answered or not, some without max_tokens, and every row written
// twice as a retried activity would. Exact is the stored trials' recorded
// spend plus the answers of unstored trials at their sends' prices;
// estimated is every unanswered send at its bound.
func TestSpendMatchesOracle(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	var reissuedAnswered, unstoredAnswered, lostUnbounded int // the cases the seeds must cover
	for seed := uint64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 29))
		sweep := fmt.Sprintf("spend-%d", seed)
		var want record.Spend
		var trials []record.Trial
		in, out := float64(r.IntN(5)+1), float64(r.IntN(20)+1)
		for i := range 2 + r.IntN(6) {
			id := fmt.Sprintf("%s-t%02d", sweep, i)
			stored := r.IntN(3) > 0
			var tokens uint64
			for step := 1; step <= 1+r.IntN(5); step++ {
				sends := 1 + r.IntN(3)
				answered := r.IntN(4) > 0
				prompt, maxTok := uint64(500+r.IntN(3000)), uint64(r.IntN(3)*128)
				completion := maxTok
				if maxTok == 0 {
					completion = 4096
				}
				for s := range sends {
					req := record.ModelRequest{SweepID: sweep, TrialID: id, Step: uint32(step), SendID: fmt.Sprintf("s%d", s),
						Kind: "turn", RequestHash: "h", PromptTokensBound: prompt, MaxTokens: maxTok, CompletionTokensBound: completion,
						InputUSDPerMTok: in, OutputUSDPerMTok: out, ActivityAttempt: 1}
					for range 2 { // a retried write of the same send
						if err := st.PutModelRequest(ctx, req); err != nil {
							t.Fatal(err)
						}
					}
				}
				want.RequestsSent += uint64(sends)
				lost := uint64(sends)
				if answered {
					lost--
					if sends > 1 {
						reissuedAnswered++
					}
					if !stored {
						unstoredAnswered++
					}
					pt, ct := uint64(100+r.IntN(400)), uint64(10+r.IntN(100))
					for range 2 {
						if err := st.PutModelCall(ctx, record.ModelCall{SweepID: sweep, TrialID: id, Step: uint32(step), Kind: "turn",
							RequestHash: "h", Response: "{}", PromptTokens: pt, CompletionTokens: ct, ActivityAttempt: 1}); err != nil {
							t.Fatal(err)
						}
					}
					tokens += pt + ct
					if !stored {
						want.ExactTokens += pt + ct
						want.ExactUSD += (float64(pt)*in + float64(ct)*out) / 1e6
					}
				}
				want.RequestsLost += lost
				want.EstimatedTokens += lost * (prompt + completion)
				want.EstimatedUSD += float64(lost) * (float64(prompt)*in + float64(completion)*out) / 1e6
				if maxTok == 0 {
					want.RequestsLostWithoutMaxTokens += lost
					lostUnbounded += int(lost)
				}
			}
			if stored {
				// What the trial recorded: its answers, and a reported cost
				// that need not be the prices' (a command arm's).
				cost := float64(r.IntN(1000)) / 1e4
				trials = append(trials, record.Trial{SweepID: sweep, TrialID: id, Scenario: "sc", ScenarioHash: "h", Variant: "v1",
					Arm: "model", Agent: "llm:m:p@h", Seed: uint64(i), Tokens: tokens, CostUSD: cost, Weight: 1, ActivityAttempt: 1})
				want.ExactTokens += tokens
				want.ExactUSD += cost
			}
		}
		for range 2 {
			if err := st.WriteTrials(ctx, trials, nil); err != nil {
				t.Fatal(err)
			}
		}
		got, err := st.Spend(ctx, sweep)
		if err != nil {
			t.Fatal(err)
		}
		if got.ExactTokens != want.ExactTokens || got.EstimatedTokens != want.EstimatedTokens || got.RequestsSent != want.RequestsSent ||
			got.RequestsLost != want.RequestsLost || got.RequestsLostWithoutMaxTokens != want.RequestsLostWithoutMaxTokens ||
			math.Abs(got.ExactUSD-want.ExactUSD) > 1e-9 || math.Abs(got.EstimatedUSD-want.EstimatedUSD) > 1e-9 {
			t.Errorf("seed %d: Spend =\n%+v\nwant\n%+v", seed, got, want)
		}
	}

	if reissuedAnswered == 0 || unstoredAnswered == 0 || lostUnbounded == 0 {
		t.Fatalf("the generated sweeps miss a case: %d reissued and answered, %d answers of unstored trials, %d lost without max_tokens",
			reissuedAnswered, unstoredAnswered, lostUnbounded)
	}

	// A sweep without journaled requests (scripted arms, or stored before
	// the journal) is its trials' recorded spend.
	trials, _ := makeTrials("spend-scripted", 4, 0)
	for i := range trials {
		trials[i].Tokens, trials[i].CostUSD = 10, 0.25
	}
	if err := st.WriteTrials(ctx, trials, nil); err != nil {
		t.Fatal(err)
	}
	got, err := st.Spend(ctx, "spend-scripted")
	if err != nil || got != (record.Spend{ExactTokens: 40, ExactUSD: 1}) {
		t.Errorf("scripted sweep: %+v, %v", got, err)
	}
	if got, err := st.Spend(ctx, "no-such-sweep"); err != nil || got != (record.Spend{}) {
		t.Errorf("unknown sweep: %+v, %v", got, err)
	}
}
