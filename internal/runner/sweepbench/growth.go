package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"rebound/activities"
	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/redact"
)

// The growth row: whether a sweep's rate holds as it grows. The trials of
// one `rebound run` are cut, in the order they were written, into slices of
// -slice trials; each slice's rate is its trials over the time from the
// previous slice's last write (the sweep's start for the first) to its own
// last write, and its CPU per trial is what the rebound process and its
// children (the Temporal dev server) spent over that time, read from
// /proc samples taken while it ran.
//
// A plan runs its trials in blocks of seeds (core/scenario's SeedBlocks
// order: every case at a block's seeds before the next block); a block is
// as many seeds as a shard holds per arm, 250 with the library's 2,000-trial
// shards and 8 arms. The growth plan's 139 seeds are one block, so its
// slices hold different scenarios, whose costs differ 1.5x on the library
// plan (a files world writes a directory per trial). Each slice's trials
// are also run in process (a sample of one in -growth-sample of them, on
// one goroutine, with the row conversion a worker adds), and a slice is
// reported as its end-to-end rate over that in-process rate of the same
// trials, and as the CPU per trial end to end beyond the in-process time:
// what rebound adds around a trial, whatever the slice holds.
// Flat, when nothing a shard does grows with the sweep.

// cpuSample is the CPU time (user + system) of the rebound process and of
// its descendants at one instant.
type cpuSample struct {
	at            time.Time
	self, descend time.Duration
}

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// procTimes reads the utime + stime, the parent pid and whether the
// process exists, from /proc/PID/stat.
func procTimes(pid int) (cpu time.Duration, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// comm (field 2) is parenthesized and may hold spaces: fields after the
	// last ')' are state (3), ppid (4), ..., utime (14), stime (15).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * clockTick, ppid, true
}

// sampleCPU reads the CPU time of pid and of every live descendant.
func sampleCPU(pid int) (cpuSample, error) {
	s := cpuSample{at: time.Now()}
	self, _, ok := procTimes(pid)
	if !ok {
		return s, fmt.Errorf("no process %d", pid)
	}
	s.self = self
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return s, err
	}
	parent := map[int]int{}
	times := map[int]time.Duration{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		if cpu, pp, ok := procTimes(p); ok {
			parent[p], times[p] = pp, cpu
		}
	}
	for p, cpu := range times {
		for a, hops := parent[p], 0; a > 1 && hops < 64; a, hops = parent[a], hops+1 {
			if a == pid {
				s.descend += cpu
				break
			}
		}
	}
	return s, nil
}

// cpuAt interpolates the samples at t (they are in time order).
func cpuAt(samples []cpuSample, t time.Time) (self, descend time.Duration) {
	if len(samples) == 0 {
		return 0, 0
	}
	i := sort.Search(len(samples), func(i int) bool { return !samples[i].at.Before(t) })
	switch {
	case i == 0:
		return samples[0].self, samples[0].descend
	case i == len(samples):
		last := samples[len(samples)-1]
		return last.self, last.descend
	}
	a, b := samples[i-1], samples[i]
	f := float64(t.Sub(a.at)) / float64(b.at.Sub(a.at))
	lerp := func(x, y time.Duration) time.Duration { return x + time.Duration(f*float64(y-x)) }
	return lerp(a.self, b.self), lerp(a.descend, b.descend)
}

// batch is one write of a sweep: the trials stored with one written_at.
type batch struct {
	at     time.Time
	trials int
}

// slice is one growth slice of a sweep.
type slice struct {
	from, to      int // trials [from, to) in write order
	start, end    time.Time
	self, descend time.Duration // CPU over [start, end]
	// inProcess is the time per trial of the slice's trials (a sample of
	// them) run in process on one goroutine, rows converted; 0 when not
	// measured.
	inProcess time.Duration
}

// share is the slice's end-to-end rate over the in-process rate of its
// trials (0 when not measured).
func (s slice) share() float64 {
	if s.inProcess <= 0 || s.to == s.from {
		return 0
	}
	return s.rate() * s.inProcess.Seconds()
}

// overhead is the slice's CPU per trial end to end beyond its in-process
// time per trial.
func (s slice) overhead() time.Duration { return s.cpuPerTrial() - s.inProcess }

func (s slice) rate() float64 { return rate(s.to-s.from, s.end.Sub(s.start)) }

// cpuPerTrial is the CPU of rebound and its children per trial of the slice.
func (s slice) cpuPerTrial() time.Duration {
	if s.to == s.from {
		return 0
	}
	return (s.self + s.descend) / time.Duration(s.to-s.from)
}

// slices cuts a sweep's batches (in time order), which started at start,
// into slices of size trials; a last slice shorter than half a slice joins
// the one before it. The CPU of each is read from samples.
func slices(start time.Time, batches []batch, size int, samples []cpuSample) []slice {
	var out []slice
	cur := slice{start: start}
	done := 0
	total := 0
	for _, b := range batches {
		total += b.trials
	}
	for _, b := range batches {
		done += b.trials
		if done-cur.from >= size && total-done >= size/2 {
			cur.to, cur.end = done, b.at
			out = append(out, cur)
			cur = slice{from: done, start: b.at}
		}
	}
	if done > cur.from && len(batches) > 0 {
		cur.to, cur.end = done, batches[len(batches)-1].at
		out = append(out, cur)
	}
	for i := range out {
		s0, d0 := cpuAt(samples, out[i].start)
		s1, d1 := cpuAt(samples, out[i].end)
		out[i].self, out[i].descend = s1-s0, d1-d0
	}
	return out
}

// storedBatches reads, through `rebound sql` on the finished run's data
// dir, how many trials were stored at each written_at.
func storedBatches(ctx context.Context, bin, dataDir string) ([]batch, error) {
	const q = `SELECT toUnixTimestamp64Milli(written_at) AS ts, count() AS n FROM rebound.trials FINAL GROUP BY ts ORDER BY ts`
	var res struct {
		Rows [][]json.Number `json:"rows"`
	}
	if err := reboundSQL(ctx, bin, dataDir, q, &res); err != nil {
		return nil, err
	}
	bs := make([]batch, 0, len(res.Rows))
	for _, r := range res.Rows {
		if len(r) != 2 {
			return nil, fmt.Errorf("rebound sql: row %v, want [ts, n]", r)
		}
		ms, err1 := r[0].Int64()
		n, err2 := r[1].Int64()
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("rebound sql: row %v", r)
		}
		bs = append(bs, batch{at: time.UnixMilli(ms), trials: int(n)})
	}
	return bs, nil
}

// storedShardSize reads, through `rebound sql` on the finished run's data
// dir, the shard size its (one) sweep's stored plan says: the size the run
// measured for it, which decides its trial order's blocks of seeds.
func storedShardSize(ctx context.Context, bin, dataDir string) (int, error) {
	const q = `SELECT plan_json FROM rebound.sweeps FINAL`
	var res struct {
		Rows [][]string `json:"rows"`
	}
	if err := reboundSQL(ctx, bin, dataDir, q, &res); err != nil {
		return 0, err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		return 0, fmt.Errorf("rebound sql: %d sweeps stored, want 1", len(res.Rows))
	}
	plan, err := scenario.OpenStoredPlan(res.Rows[0][0], []byte(os.Getenv("REBOUND_REDACTION_KEY")))
	if err != nil {
		return 0, fmt.Errorf("the stored plan: %w", err)
	}
	return plan.ShardSize, nil
}

// reboundSQL runs one read of the finished run's data dir through
// `rebound sql --output json` and decodes its output into res.
func reboundSQL(ctx context.Context, bin, dataDir, q string, res any) error {
	cmd := exec.CommandContext(ctx, bin, "sql", "--data-dir", dataDir, "--output", "json", q)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("rebound sql: %w\n%s", err, tail(stderr.String(), 2000))
	}
	if err := json.Unmarshal(out, res); err != nil {
		return fmt.Errorf("rebound sql output: %w", err)
	}
	return nil
}

// growthLine prints a sweep's slices: rate and CPU per trial of each,
// against the in-process cost of the same trials when measured, and the
// last slice as a share of the first.
func growthLine(ss []slice) string {
	var parts []string
	for _, s := range ss {
		p := fmt.Sprintf("%s: %.0f trials/s, %.2f ms CPU per trial (rebound %.2f, dev server %.2f)",
			trialRange(s.from, s.to), s.rate(), ms(s.cpuPerTrial()), ms(perTrial(s.self, s.to-s.from)), ms(perTrial(s.descend, s.to-s.from)))
		if s.inProcess > 0 {
			p += fmt.Sprintf(", in process %.0f trials/s = %.0f%% of it end to end, %.2f ms CPU per trial beyond it",
				1/s.inProcess.Seconds(), 100*s.share(), ms(s.overhead()))
		}
		parts = append(parts, p)
	}
	line := strings.Join(parts, ";\n  ")
	if len(ss) >= 2 && ss[0].rate() > 0 {
		first, last := ss[0], ss[len(ss)-1]
		line += fmt.Sprintf(";\n  last slice at %.0f%% of the first's rate", 100*last.rate()/first.rate())
		if first.share() > 0 && last.share() > 0 {
			line += fmt.Sprintf(", %.0f%% of it against the in-process rate of each one's trials", 100*last.share()/first.share())
		}
		// The rates move with whatever else runs on the machine; the CPU
		// per trial much less. A sweep with the cores to itself runs the
		// last slice at first/last of the first's rate.
		if f, l := first.cpuPerTrial(), last.cpuPerTrial(); f > 0 && l > 0 {
			line += fmt.Sprintf("; CPU per trial of the last slice at %.0f%% of the first's (with the cores to itself, %.0f%% of the rate)", 100*float64(l)/float64(f), 100*float64(f)/float64(l))
		}
	}
	return line
}

// sliceCosts runs one in every trials of each slice of the plan at
// planPath in process (one goroutine, rows converted as a worker converts
// them) and sets the slices' inProcess. Slices count trials in the order
// they were written, which is the plan's order up to the shards in flight.
// The sample is drawn at random (a fixed seed per slice), not every
// every-th trial: a stride that shares a factor with the arms or with one
// seed's trials would measure some arms or cases only.
//
// shardSize is the size the run gave its shards (storedShardSize): the
// plan's order cuts its seeds into blocks of that many trials per arm, so
// the sample numbers trials as the run did.
func sliceCosts(ctx context.Context, planPath string, shardSize int, ss []slice, every int) error {
	plan, err := scenario.LoadPlan(planPath, world.Catalog)
	if err != nil {
		return err
	}
	plan.ShardSize = shardSize
	agents := map[string]agent.Agent{}
	for _, arm := range plan.Arms {
		ag, err := agent.NewScripted(arm.Agent)
		if err != nil {
			return fmt.Errorf("arm %s: %w", arm.Name, err)
		}
		agents[arm.Name] = ag
	}
	red, err := redact.New(nil, []byte(os.Getenv("REBOUND_REDACTION_KEY")))
	if err != nil {
		return err
	}
	rr := activities.NewRowRedactor(red)
	n := plan.TrialCount()
	for k := range ss {
		sample := sampleIndices(ss[k].from, min(ss[k].to, n), every, uint64(k))
		if len(sample) == 0 {
			continue
		}
		start := time.Now()
		for _, i := range sample {
			key, err := plan.Trial(i)
			if err != nil {
				return err
			}
			spec := trial.Spec{SweepID: "growth", Scenario: key.Scenario, Variant: key.Variant, Arm: key.Arm, Seed: key.Seed}
			r, err := trial.Run(ctx, spec, agents[key.Arm.Name])
			if err != nil {
				return fmt.Errorf("trial %d: %w", i, err)
			}
			rr.Rows(r)
		}
		ss[k].inProcess = time.Since(start) / time.Duration(len(sample))
	}
	return nil
}

// sampleIndices draws one in every of the trial numbers [from, to) at
// random (with replacement; seed fixes the draw): ceil((to-from)/every)
// of them.
func sampleIndices(from, to, every int, seed uint64) []int {
	if to <= from {
		return nil
	}
	every = max(every, 1)
	rng := rand.New(rand.NewPCG(seed, 35))
	out := make([]int, (to-from+every-1)/every)
	for j := range out {
		out[j] = from + rng.IntN(to-from)
	}
	return out
}

func trialRange(from, to int) string {
	return fmt.Sprintf("trials %dk-%dk", from/1000, (to+500)/1000)
}

func perTrial(d time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
