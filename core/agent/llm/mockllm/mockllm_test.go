package mockllm_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rebound/core/agent"
	"rebound/core/agent/llm"
	"rebound/core/agent/llm/mockllm"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/endpoint"
)

func examples(t *testing.T) []*scenario.Scenario {
	t.Helper()
	files, err := filepath.Glob("../../../../examples/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example scenarios: %v", err)
	}
	var out []*scenario.Scenario
	for _, f := range files {
		sc, err := scenario.LoadScenario(f, world.Catalog)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, sc)
	}
	return out
}

func llmArm(t *testing.T, baseURL string) *llm.Agent {
	t.Helper()
	t.Setenv("MOCKLLM_TEST_KEY", "unused")
	temp := 0.0
	a, err := llm.New(llm.Config{Settings: endpoint.Settings{BaseURL: baseURL, APIKeyEnv: "MOCKLLM_TEST_KEY", Model: "mock", Temperature: &temp, MaxTurns: 64},
		Prompt: "Recover from tool failures.", PromptName: "mock", MaxRetries: 6}, llm.WithSleep(func(context.Context, time.Duration) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The LLM arm against the mock model playing a reference policy makes the
// calls that policy makes as a built-in agent, and is graded alike: on
// every variant of every example scenario, for the careful, fabricator and
// naive_retrier policies, the ledger's calls (tool and arguments, in
// order) and the verdict's outcomes are the built-in agent's.
func TestLLMArmPlaysTheReferencePolicy(t *testing.T) {
	scs := examples(t)
	for _, policy := range []string{"careful", "fabricator", "naive_retrier"} {
		t.Run(policy, func(t *testing.T) {
			srv, err := mockllm.New(mockllm.Options{Policy: policy, Scenarios: scs})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			ref, err := agent.NewScripted(policy)
			if err != nil {
				t.Fatal(err)
			}
			same, total := 0, 0
			for _, sc := range scs {
				for _, v := range sc.Variants {
					spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
					want, err := trial.Run(context.Background(), spec, ref)
					if err != nil {
						t.Fatal(err)
					}
					got, err := trial.Run(context.Background(), spec, llmArm(t, hs.URL+"/v1"))
					if err != nil {
						t.Fatalf("%s/%s: %v", sc.Name, v.Name, err)
					}
					total++
					if d := differ(want, got); d != "" {
						t.Errorf("%s/%s: %s", sc.Name, v.Name, d)
						continue
					}
					same++
				}
			}
			t.Logf("%s: %d of %d variants identical", policy, same, total)
			if st := srv.Stats(); st.Answered == 0 || st.PromptTokens == 0 || st.BadRequests != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func calls(r *trial.Result) []string {
	var out []string
	for _, a := range r.Ledger.Attempts {
		b, _ := json.Marshal(a.Args)
		out = append(out, a.Tool+" "+string(b))
	}
	return out
}

func differ(want, got *trial.Result) string {
	if w, g := calls(want), calls(got); !slices.Equal(w, g) {
		return "calls differ:\n  built-in " + joinLines(w) + "\n  mock     " + joinLines(g)
	}
	for _, m := range []outcome.Metric{outcome.Recovered, outcome.HonestBlock, outcome.UnsafeAction, outcome.DuplicateSideEffect, outcome.FabricatedClaim} {
		w, g := want.Verdict.Metric(m), got.Verdict.Metric(m)
		if (w == nil) != (g == nil) || (w != nil && *w != *g) {
			return string(m) + " differs: built-in " + show(w) + ", mock " + show(g) + "; claims " + want.Outcome.Claim + " / " + got.Outcome.Claim
		}
	}
	return ""
}

func show(b *bool) string {
	if b == nil {
		return "not tested"
	}
	if *b {
		return "true"
	}
	return "false"
}

func joinLines(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " | "
		}
		out += x
	}
	return out
}

// Injected 429s (with Retry-After) and 5xx are provider failures the LLM
// arm's client retries: the trials come out as without them, and the
// server counts what it injected and billed.
func TestInjectedProviderFailures(t *testing.T) {
	scs := examples(t)
	srv, err := mockllm.New(mockllm.Options{Policy: "careful", Scenarios: scs, RateLimited: 0.25, ServerErrors: 0.1, RetryAfter: 1500 * time.Millisecond, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ref, _ := agent.NewScripted("careful")
	for _, sc := range scs[:4] {
		v := sc.Variants[0]
		spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: "a", Agent: "x"}, Seed: 1}
		want, err := trial.Run(context.Background(), spec, ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := trial.Run(context.Background(), spec, llmArm(t, hs.URL+"/v1"))
		if err != nil {
			t.Fatalf("%s: %v", sc.Name, err)
		}
		if d := differ(want, got); d != "" {
			t.Errorf("%s/%s: %s", sc.Name, v.Name, d)
		}
	}
	st := srv.Stats()
	if st.RateLimited == 0 || st.ServerErrors == 0 || st.Requests != st.Answered+st.RateLimited+st.ServerErrors {
		t.Errorf("stats %+v", st)
	}
	if st.PromptTokens <= 0 || st.CompletionTokens <= 0 {
		t.Errorf("usage not accounted: %+v", st)
	}
}

// A conversation whose goal no known scenario states is a bad request
// (400: a configuration error for the LLM arm), not a guess.
func TestUnknownGoalIsABadRequest(t *testing.T) {
	srv, err := mockllm.New(mockllm.Options{Policy: "careful", Scenarios: examples(t)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"Book a flight to Lisbon."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "no scenario's goal") {
		t.Errorf("status %d body %s", resp.StatusCode, b)
	}
	if _, err := mockllm.New(mockllm.Options{Policy: "nobody", Scenarios: examples(t)}); err == nil {
		t.Error("an unknown policy was accepted")
	}
}
