package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"rebound/core/scenario"
	"rebound/core/world"
)

func TestSlices(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// 10 batches of 100 trials, one per second; CPU grows 1 s per second
	// in rebound and 0.5 s in the dev server.
	var batches []batch
	for i := 1; i <= 10; i++ {
		batches = append(batches, batch{at: at(float64(i)), trials: 100})
	}
	var samples []cpuSample
	for i := 0; i <= 22; i++ {
		s := float64(i) / 2
		samples = append(samples, cpuSample{at: at(s), self: time.Duration(s * float64(time.Second)), descend: time.Duration(s / 2 * float64(time.Second))})
	}
	ss := slices(t0, batches, 300, samples)
	// 300, 300, then 400: a last 100 would be under half a slice.
	want := [][2]int{{0, 300}, {300, 600}, {600, 1000}}
	if len(ss) != len(want) {
		t.Fatalf("%d slices, want %d: %+v", len(ss), len(want), ss)
	}
	for i, s := range ss {
		if s.from != want[i][0] || s.to != want[i][1] {
			t.Errorf("slice %d = [%d, %d), want %v", i, s.from, s.to, want[i])
		}
		if r := s.rate(); r < 99.9 || r > 100.1 {
			t.Errorf("slice %d: rate %.2f, want 100/s", i, r)
		}
		if c := s.cpuPerTrial(); c != 15*time.Millisecond {
			t.Errorf("slice %d: CPU per trial %v, want 15ms (10 rebound + 5 dev server)", i, c)
		}
	}
	whole := slices(t0, batches, int(^uint(0)>>1), samples)
	if len(whole) != 1 || whole[0].to != 1000 || whole[0].end != at(10) {
		t.Fatalf("whole sweep: %+v", whole)
	}
	for i := range ss {
		ss[i].inProcess = 5 * time.Millisecond // 200 trials/s in process
	}
	for i, s := range ss {
		if sh := s.share(); sh < 0.499 || sh > 0.501 {
			t.Errorf("slice %d: share %.3f, want 0.5 (100/s end to end, 200/s in process)", i, sh)
		}
		if o := s.overhead(); o != 10*time.Millisecond {
			t.Errorf("slice %d: overhead %v, want 10ms", i, o)
		}
	}
	line := growthLine(ss)
	for _, want := range []string{"trials 0k-0k: 100 trials/s", "in process 200 trials/s = 50% of it end to end", "last slice at 100% of the first's rate, 100% of it against", "CPU per trial of the last slice at 100% of the first's (with the cores to itself, 100% of the rate)"} {
		if !strings.Contains(line, want) {
			t.Errorf("growth line lacks %q:\n%s", want, line)
		}
	}
}

func TestSampleCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	s, err := sampleCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until /proc says this process spent 30 ms more (at most 5 s).
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		s2, err := sampleCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if s2.self >= s.self+30*time.Millisecond {
			return
		}
	}
	t.Fatal("sampleCPU: this process's CPU time did not grow over 5 s of spinning")
}

// A slice's in-process sample covers every arm and every case position of
// a seed, where a stride of every-th trial sharing a factor with them
// would not (10 over 8 arms reaches only the even arms).
func TestSampleIndicesSpreadOverArmsAndCases(t *testing.T) {
	const arms, perSeed = 8, 5520 // the library plan: 690 cases x 8 arms
	from, to := 60000, 120000
	got := sampleIndices(from, to, 10, 1)
	if len(got) != 6000 {
		t.Fatalf("%d samples of %d trials at one in 10, want 6000", len(got), to-from)
	}
	armSeen, caseSeen := map[int]int{}, map[int]bool{}
	for _, i := range got {
		if i < from || i >= to {
			t.Fatalf("trial %d outside the slice [%d, %d)", i, from, to)
		}
		armSeen[i%arms]++
		caseSeen[i%perSeed/arms] = true
	}
	for a := range arms {
		if n := armSeen[a]; n < 6000/arms/2 {
			t.Errorf("arm %d sampled %d times of 6000", a, n)
		}
	}
	if len(caseSeen) < perSeed/arms*9/10 {
		t.Errorf("%d of %d cases sampled", len(caseSeen), perSeed/arms)
	}
	if sampleIndices(5, 5, 10, 1) != nil || len(sampleIndices(0, 3, 10, 1)) != 1 {
		t.Error("an empty or short slice is sampled wrongly")
	}
}

// Each slice's sample runs in process, in the plan's order of trials.
func TestSliceCostsMeasuresEachSlice(t *testing.T) {
	const path = "../../../examples/plans/quickstart.yaml"
	plan, err := scenario.LoadPlan(path, world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	n := plan.TrialCount()
	ss := []slice{{from: 0, to: n / 2}, {from: n / 2, to: n}, {from: n, to: n}}
	if err := sliceCosts(context.Background(), path, 2000, ss, 10); err != nil {
		t.Fatal(err)
	}
	if ss[0].inProcess <= 0 || ss[1].inProcess <= 0 || ss[2].inProcess != 0 {
		t.Fatalf("in-process time per trial of the slices: %v, %v, %v", ss[0].inProcess, ss[1].inProcess, ss[2].inProcess)
	}
}
