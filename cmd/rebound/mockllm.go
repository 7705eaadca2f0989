package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"rebound/core/agent"
	"rebound/core/agent/llm/mockllm"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/fileerr"
)

const mockLLMAbout = `Serves a local OpenAI-compatible chat-completions API whose "model" plays a
reference policy (careful, fabricator, naive_retrier, ...) through real tool
calls: given the conversation so far, it answers with the tool call the
policy would make next, then with the policy's claim (through submit_claim
when the request offers it, as JSON when the request asks for a
json_schema response format, else as text). No key, no network: try an LLM
arm, the OpenAI Agents SDK example or your own pipeline against it, locally
or in CI.

It recognises a conversation by its scenario's goal, so give it the plan
(or scenario files) your agent runs. Any model name and any key are
accepted. Optional injected failures: a share of requests answered 429 with
Retry-After, a share answered 500 or 503, and latency on every answer.
Every answer reports usage (tokens estimated as bytes / 4); GET /stats sums
them, and the totals are printed when the server stops (Ctrl-C).

Routes: POST /v1/chat/completions, GET /v1/models, GET /stats.

Examples:
  rebound mock-llm examples/plans/agents-sdk.yaml
  rebound mock-llm --policy fabricator --listen 127.0.0.1:0 examples/scenarios/*.yaml
  rebound mock-llm --rate-limited 0.2 --retry-after 2s --server-errors 0.05 --latency 100ms examples/plans/llm-mock.yaml`

func newMockLLMCmd() *cobra.Command {
	var (
		opts   mockllm.Options
		listen string
	)
	cmd := &cobra.Command{
		Use:   "mock-llm [flags] PLAN|SCENARIO...",
		Short: "serve a local OpenAI-compatible model that plays a reference policy (no key needed)",
		Long:  mockLLMAbout,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scs, err := mockScenarios(cmd.Context(), args)
			if err != nil {
				return err
			}
			opts.Scenarios = scs
			srv, err := mockllm.New(opts)
			if err != nil {
				return usageError{err}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return usagef("mock-llm: --listen %s: %v", listen, err)
			}
			return serveMock(cmd, srv, ln)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Policy, "policy", "careful", "the reference policy the model plays: "+fmt.Sprint(agent.ScriptedNames()))
	fs.StringVar(&listen, "listen", "127.0.0.1:8089", "the address to listen on (port 0: any free port)")
	fs.Float64Var(&opts.RateLimited, "rate-limited", 0, "share of requests answered 429 with Retry-After (0..1)")
	fs.Float64Var(&opts.ServerErrors, "server-errors", 0, "share of requests answered 500 or 503 (0..1)")
	durationFlag(fs, &opts.RetryAfter, "retry-after", time.Second, 0, time.Hour, "the Retry-After of an injected 429")
	durationFlag(fs, &opts.Latency, "latency", 0, 0, 10*time.Minute, "hold every answer back this long")
	fs.Uint64Var(&opts.Seed, "seed", 1, "seed of the injected failures' draws")
	return cmd
}

// mockScenarios loads the scenarios of the plans and scenario files given.
func mockScenarios(ctx context.Context, paths []string) ([]*scenario.Scenario, error) {
	var out []*scenario.Scenario
	for _, p := range paths {
		data, err := fileerr.ReadRegular(p, scenario.MaxScenarioBytes, "plan or scenario file")
		if err != nil {
			return nil, usageError{err}
		}
		if scenario.KindOf(data) == scenario.KindPlan {
			plan, err := loadPlan(ctx, p, scenario.LoadOptions{Catalog: world.Catalog})
			if err != nil {
				return nil, usageError{err}
			}
			out = append(out, plan.Scenarios...)
			continue
		}
		sc, err := scenario.LoadScenario(p, world.Catalog)
		if err != nil {
			return nil, usageError{err}
		}
		out = append(out, sc)
	}
	return out, nil
}

// serveMock serves until the command's context ends, then prints the
// totals.
func serveMock(cmd *cobra.Command, srv *mockllm.Server, ln net.Listener) error {
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(cmd.ErrOrStderr(), "mock-llm: serving on http://%s/v1 (Ctrl-C stops)\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	var err error
	select {
	case err = <-done:
	case <-cmd.Context().Done():
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-done
	}
	b, _ := json.Marshal(srv.Stats())
	fmt.Fprintf(cmd.ErrOrStderr(), "mock-llm: %s\n", b)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
