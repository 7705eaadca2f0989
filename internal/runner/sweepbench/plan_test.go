package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScalePlan(t *testing.T) {
	tests := []struct {
		plan       string
		trials     int
		wantSeeds  int
		wantTrials int
	}{
		// library: 1,736 trials per seed; 35 seeds = 60,760.
		{"../../../examples/plans/library.yaml", 60720, 35, 60760},
		{"../../../examples/plans/library.yaml", 60761, 36, 62496},
		{"../../../examples/plans/library.yaml", 1, 1, 1736},
	}
	for _, tt := range tests {
		got, err := ScalePlan(tt.plan, tt.trials, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if got.Seeds != tt.wantSeeds || got.Trials != tt.wantTrials {
			t.Errorf("%s to %d trials: %d seeds, %d trials; want %d, %d", tt.plan, tt.trials, got.Seeds, got.Trials, tt.wantSeeds, tt.wantTrials)
		}
	}
}

func TestScalePlanRefusesSeedLists(t *testing.T) {
	abs, err := filepath.Abs("../../../examples/scenarios/inventory-timeout-once.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.yaml")
	os.WriteFile(src, []byte("name: p\nscenarios: ["+abs+"]\narms: [{name: c, agent: careful}]\nseeds: [1, 2]\n"), 0o644)
	if _, err := ScalePlan(src, 100, t.TempDir()); err == nil {
		t.Fatal("a seed list was scaled")
	}
}

func TestQuarters(t *testing.T) {
	mbs := func(v ...int64) []int64 {
		for i := range v {
			v[i] <<= 20
		}
		return v
	}
	if got := quarters(mbs(1, 5, 2, 2, 3, 9, 4, 4)); got != "5 MB, 2 MB, 9 MB, 4 MB" {
		t.Errorf("quarters = %q", got)
	}
	if got := quarters(mbs(1)); got != "too short to sample" {
		t.Errorf("quarters of one sample = %q", got)
	}
}

func TestVmRSSOfThisProcess(t *testing.T) {
	v, err := vmRSS(os.Getpid())
	if err != nil || v < 1<<20 {
		t.Fatalf("vmRSS = %d, %v", v, err)
	}
}

func TestScaleScenario(t *testing.T) {
	got, err := ScaleScenario("../../../examples/plans/library.yaml", "../../../examples/scenarios/refund-timeout-after-send.yaml", 240000, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// One scenario, one variant, the library's eight arms: 8 trials a seed.
	if got.Seeds != 30000 || got.Trials != 240000 || filepath.Base(got.Path) != "library-one.yaml" {
		t.Fatalf("got %+v, want 30000 seeds, 240000 trials in library-one.yaml", got)
	}
	raw, err := os.ReadFile(got.Path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "*.yaml") || !strings.Contains(string(raw), "refund-timeout-after-send.yaml") {
		t.Fatalf("the copy keeps the plan's scenarios:\n%s", raw)
	}
}
