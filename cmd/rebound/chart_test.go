package main

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"rebound/internal/logging"
)

// The chart's values.schema.json takes what rebound worker takes, and no
// more: a value the worker would refuse (pods crash-looping) is refused
// when the chart renders. Its bounds are read from the worker's flags.
func TestChartSchemaMirrorsWorkerFlags(t *testing.T) {
	b, err := os.ReadFile("../../helm/rebound/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Worker struct {
				Properties map[string]struct {
					Minimum *int     `json:"minimum"`
					Maximum *int     `json:"maximum"`
					Enum    []string `json:"enum"`
				} `json:"properties"`
			} `json:"worker"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	w := schema.Properties.Worker.Properties
	flags := newWorkerCmd().Flags()
	shards, ok := flags.Lookup("max-concurrent-shards").Value.(boundedInt)
	if !ok {
		t.Fatal("--max-concurrent-shards is not a bounded int")
	}
	if p := w["maxConcurrentShards"]; p.Minimum == nil || p.Maximum == nil || *p.Minimum != shards.min || *p.Maximum != shards.max {
		t.Errorf("worker.maxConcurrentShards in the schema: %v..%v, the worker takes %d..%d", p.Minimum, p.Maximum, shards.min, shards.max)
	}
	for value, want := range map[string][]string{"logFormat": logging.Formats, "logLevel": logging.Levels} {
		if got := w[value].Enum; !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("worker.%s in the schema: %v, the worker takes %v", value, got, want)
		}
	}
	for _, f := range []string{"log-format", "log-level"} {
		if flags.Lookup(f) == nil {
			t.Errorf("rebound worker has no --%s for the chart to pass", f)
		}
	}
}
