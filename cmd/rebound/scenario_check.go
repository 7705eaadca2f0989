package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/results/report"
)

const checkAbout = `Checks the metamorphic pairs scenario files declare (metamorphic:): it
runs both variants of every pair with each reference agent named by --agent
(default careful) on each of --seeds seeds, in this process, and compares
the verdicts with the declared change (expect: metric: {from, to}). A pair
holds for an agent on a seed when every expected outcome came true on both
sides. It prints one line per pair and agent, and under a pair that did not
hold, each expectation that failed with its seed, side and variant.
Exit 1 when a pair did not hold; 2 on a bad file, an unknown agent, or when
no file declares a pair. A run's report checks the same pairs against its
stored trials, for every arm (see docs/scenarios.md).

Example:
  rebound scenario check examples/scenarios/*.yaml
  rebound scenario check my-scenario.yaml --agent careful --agent blind_resubmitter --seeds 5
  rebound scenario check my-scenario.yaml --output json`

func newScenarioCheckCmd() *cobra.Command {
	var (
		output string
		agents []string
		seeds  int
	)
	cmd := &cobra.Command{
		Use:   "check [flags] FILE...",
		Short: "run the metamorphic pairs scenario files declare and report those that did not hold",
		Long:  checkAbout,
		Args:  minArgs(1, "scenario check needs at least one scenario file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return checkPairs(cmd.Context(), args, agents, seeds, output, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringArrayVar(&agents, "agent", []string{"careful"}, "a reference agent to run the pairs with (repeat for several)")
	intFlag(cmd.Flags(), &seeds, "seeds", 3, 1, 1000, "seeds per variant (1, 2, ...)")
	outputFlag(cmd.Flags(), &output)
	return cmd
}

// pairCheck is scenario check's JSON.
type pairCheck struct {
	Files  int                   `json:"files"`
	Pairs  int                   `json:"pairs"`
	Trials int                   `json:"trials"`
	Failed int                   `json:"failed"`
	Agents []string              `json:"agents"`
	Seeds  []uint64              `json:"seeds"`
	Result []scenario.PairResult `json:"results"`
}

func checkPairs(ctx context.Context, paths, agents []string, n int, output string, stdout io.Writer) error {
	for _, a := range agents {
		if _, err := agent.NewScripted(a); err != nil {
			return usagef("--agent %q: %v", a, err)
		}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	res := pairCheck{Files: len(paths), Agents: agents, Seeds: seeds, Result: []scenario.PairResult{}}
	for _, path := range paths {
		if err := expectKind(path, scenario.KindScenario, "scenario check"); err != nil {
			return err
		}
		s, err := scenario.LoadScenario(path, world.Catalog)
		if err != nil {
			return usageError{err}
		}
		res.Pairs += len(s.Metamorphic)
		rs, trials, err := trial.CheckPairs(ctx, s, agents, seeds)
		res.Trials += trials
		if err != nil {
			return err
		}
		res.Result = append(res.Result, rs...)
	}
	if res.Pairs == 0 {
		return usagef("none of the %d file(s) declares a metamorphic pair: nothing to check (see docs/scenarios.md)", len(paths))
	}
	for _, r := range res.Result {
		if !r.Held() {
			res.Failed++
		}
	}
	if output == "json" {
		if err := writeJSON(stdout, res, true); err != nil {
			return err
		}
	} else if err := report.WritePairs(stdout, res.Result); err != nil {
		return err
	}
	if res.Failed > 0 {
		return failure{fmt.Sprintf("%d of %d pair check(s) did not hold", res.Failed, len(res.Result))}
	}
	if output != "json" {
		fmt.Fprintf(stdout, "%d pair check(s) held (%d trials)\n", len(res.Result), res.Trials)
	}
	return nil
}
