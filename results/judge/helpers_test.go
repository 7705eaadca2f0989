package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"rebound/core/agent"
	"rebound/core/agent/llm/llmtest"
	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/redact"
	"rebound/results/artifact"
)

// fakeSleep records the waits and returns at once.
type fakeSleep = llmtest.Sleeps

// outputJSON is a valid judge answer for the five scores (in Dimensions
// order): the mean as the aggregate, the recommendation the thresholds give.
func outputJSON(scores ...int) string {
	m := map[string]any{}
	sum := 0
	for i, d := range Dimensions {
		m[string(d)] = map[string]any{"score": scores[i], "justification": fmt.Sprintf("%s scored %d: see calls 1-3.", d, scores[i])}
		sum += scores[i]
	}
	m["aggregate_score"] = float64(sum) / 5
	m["failure_mode_summary"] = "none"
	if sum < 20 {
		m["failure_mode_summary"] = "retried without waiting"
	}
	m["recommendation"] = RecommendationFor(sum)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func loadScenario(t testing.TB, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.LoadScenario("../../examples/scenarios/"+name+".yaml", world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func catalogOf(t testing.TB, sc *scenario.Scenario) []harness.Tool {
	t.Helper()
	w, err := world.New(sc.World, sc.Initial)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := w.(io.Closer); ok {
		defer c.Close()
	}
	return w.Tools()
}

// realInput runs a real trial of a scripted agent on an example scenario
// and builds the judge's input from its failure artifact, the way the
// activities will.
func realInput(t testing.TB, scenarioName, variant, agentName string) (Input, *trial.Result) {
	t.Helper()
	return realInputSeed(t, scenarioName, variant, agentName, 1)
}

func realInputSeed(t testing.TB, scenarioName, variant, agentName string, seed uint64) (Input, *trial.Result) {
	t.Helper()
	sc := loadScenario(t, scenarioName)
	v, ok := sc.Variant(variant)
	if !ok {
		t.Fatalf("no variant %s in %s", variant, scenarioName)
	}
	ag, err := agent.NewScripted(agentName)
	if err != nil {
		t.Fatal(err)
	}
	res, err := trial.Run(context.Background(), trial.Spec{SweepID: "judge-test", Scenario: sc, Variant: v,
		Arm: scenario.Arm{Name: agentName, Agent: agentName}, Seed: seed}, ag)
	if err != nil {
		t.Fatal(err)
	}
	red, err := redact.New(nil, []byte("judge-test-key"))
	if err != nil {
		t.Fatal(err)
	}
	a := artifact.FromResult(res, sc, red)
	return NewInput(sc, v, catalogOf(t, sc), TraceFromArtifact(a)), res
}
