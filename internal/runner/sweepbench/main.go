// Command sweepbench measures sweeps at scale (make bench-sweep; README,
// "Benchmarks of sweeps"). For each plan it is given, scaled to about
// -trials trials by raising its seeds (nothing else of the plan changes: the
// shipped plans run as users run them), it reports:
//
//   - end to end: `rebound run` on the embedded stack (its own Temporal dev
//     server and chDB), wall time, the sweep's own time as rebound prints
//     it, trials/s, the CPU per trial of the rebound process and of the
//     dev server it started, and the peak RSS of the rebound process
//     (worker and embedded ClickHouse; the Temporal dev server is a
//     separate process);
//   - the in-process ceiling of the same trials: trial.Run in a loop, no
//     Temporal, no ClickHouse, on one goroutine and on one per CPU, with the
//     row conversion (redaction) a worker adds;
//   - the embedded insert rate: the rows of the first -insert-trials of
//     those trials written to a fresh chDB store in batches as a shard does;
//   - the growth row: the last plan once more at -growth trials end to end,
//     cut into slices of -slice trials in the order they were stored, with
//     each slice's rate and CPU per trial (growth.go): flat when nothing
//     a shard does grows with the sweep; then the same with the plan's
//     arms on one scenario (-growth-scenario), whose slices hold the same
//     trials.
//
// It is a program, not a timed test: the numbers depend on the machine.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"rebound/activities"
	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/redact"
	"rebound/results/record"
	"rebound/storage"
)

func main() {
	var (
		bin          = flag.String("rebound", ".cache/bin/rebound", "the rebound binary to run end to end")
		trials       = flag.Int("trials", 60720, "trials per plan: the plan's seeds are raised to reach at least this many")
		insertTrials = flag.Int("insert-trials", 10000, "trials whose rows the insert benchmark writes")
		batch        = flag.Int("batch", 2000, "trials per insert in the insert benchmark (a scripted shard's batch, activities' flushRows)")
		work         = flag.String("work", "", "scratch directory (default: a new temporary one, removed at the end)")
		skipE2E      = flag.Bool("skip-e2e", false, "skip the end-to-end runs")
		cpuProfile   = flag.String("cpuprofile", "", "write a CPU profile of this process (the in-process and insert parts) to this file")
		growth       = flag.Int("growth", 240000, "the growth row: one more end-to-end run of the last plan at this many trials, its rate and CPU per trial per -slice trials (0: none)")
		slice        = flag.Int("slice", 60000, "trials per slice of the growth row")
		growthSample = flag.Int("growth-sample", 10, "the growth row runs every Nth trial of each slice in process, to weigh its scenarios")
		growthOne    = flag.String("growth-scenario", "examples/scenarios/refund-timeout-after-send.yaml", "the growth row also runs the last plan's arms on this one scenario at -growth trials, so that every slice holds the same trials (empty: not)")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: sweepbench [flags] PLAN...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sweepbench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "sweepbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(context.Background(), os.Stdout, options{
		bin: *bin, trials: *trials, insertTrials: *insertTrials, batch: *batch, work: *work, skipE2E: *skipE2E, plans: flag.Args(),
		growth: *growth, slice: max(*slice, 1), growthSample: max(*growthSample, 1), growthOne: *growthOne,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "sweepbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

type options struct {
	bin          string
	trials       int
	insertTrials int
	batch        int
	work         string
	skipE2E      bool
	plans        []string
	growth       int // trials of the growth run (0: none)
	slice        int
	growthSample int
	growthOne    string // the scenario of the second growth run ("": none)
}

func run(ctx context.Context, out io.Writer, o options) error {
	if len(os.Getenv("REBOUND_REDACTION_KEY")) < 32 {
		return fmt.Errorf("set REBOUND_REDACTION_KEY (at least 32 characters): the worker of rebound run needs it")
	}
	work := o.work
	if work == "" {
		d, err := os.MkdirTemp("", "rebound-sweepbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	fmt.Fprintf(out, "machine: %d CPUs, GOMAXPROCS %d, %s/%s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	for i, src := range o.plans {
		dir := filepath.Join(work, fmt.Sprintf("plan%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		scaled, err := ScalePlan(src, o.trials, dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\n== %s: %d seeds, %d trials (%s)\n", src, scaled.Seeds, scaled.Trials, scaled.Path)
		var e e2e
		if !o.skipE2E {
			if e, err = endToEnd(ctx, o.bin, scaled.Path, filepath.Join(dir, "data"), o.slice); err != nil {
				return fmt.Errorf("%s end to end: %w", src, err)
			}
			printE2E(out, e, scaled.Trials)
		}
		c, err := ceiling(ctx, scaled.Path, o.insertTrials)
		if err != nil {
			return fmt.Errorf("%s in process: %w", src, err)
		}
		fmt.Fprintf(out, "in-process ceiling (trial.Run, no Temporal, no ClickHouse): %.0f trials/s on 1 goroutine; %.0f trials/s on %d goroutines with row conversion, %.3f ms CPU per trial; %.1f tool calls per trial\n",
			rate(c.trials, c.serial), rate(c.trials, c.parallel), runtime.GOMAXPROCS(0), ms(perTrial(c.parallelCPU, c.trials)), float64(c.calls)/float64(c.trials))
		if !o.skipE2E {
			printShare(out, e, c, scaled.Trials)
		}
		ins, err := insertRate(ctx, c.rows, c.callRows, o.batch, filepath.Join(dir, "insert"))
		if err != nil {
			return fmt.Errorf("%s insert: %w", src, err)
		}
		fmt.Fprintf(out, "embedded insert (chDB, %d trials per insert): %d trials with %d tool-call rows in %.2fs = %.0f tool-call rows/s (%.0f trials/s); merged after %.2fs, %.3f ms CPU per trial with the merges\n",
			o.batch, len(c.rows), ins.callRows, ins.elapsed.Seconds(), rate(ins.callRows, ins.elapsed), rate(len(c.rows), ins.elapsed),
			ins.merged.Seconds(), ms(perTrial(ins.cpu, len(c.rows))))
	}
	if o.growth > 0 && !o.skipE2E {
		src := o.plans[len(o.plans)-1]
		if err := growthRow(ctx, out, o, src, "", filepath.Join(work, "growth")); err != nil {
			return err
		}
		if o.growthOne != "" {
			if err := growthRow(ctx, out, o, src, o.growthOne, filepath.Join(work, "growth-one")); err != nil {
				return err
			}
		}
	}
	return nil
}

// growthRow runs the plan at src (or its arms on the one scenario only) at
// o.growth trials end to end and prints its slices.
func growthRow(ctx context.Context, out io.Writer, o options, src, only, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var (
		scaled Scaled
		err    error
		what   = src
	)
	if only == "" {
		scaled, err = ScalePlan(src, o.growth, dir)
	} else {
		scaled, err = ScaleScenario(src, only, o.growth, dir)
		what = fmt.Sprintf("%s's arms on %s alone", src, only)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== growth: %s, %d seeds, %d trials (%s)\n", what, scaled.Seeds, scaled.Trials, scaled.Path)
	e, err := endToEnd(ctx, o.bin, scaled.Path, filepath.Join(dir, "data"), o.slice)
	if err != nil {
		return fmt.Errorf("%s growth: %w", what, err)
	}
	printE2E(out, e, scaled.Trials)
	shardSize, err := storedShardSize(ctx, o.bin, filepath.Join(dir, "data"))
	if err != nil {
		return fmt.Errorf("%s growth: %w", what, err)
	}
	if err := sliceCosts(ctx, scaled.Path, shardSize, e.slices, o.growthSample); err != nil {
		return fmt.Errorf("%s growth, in process: %w", what, err)
	}
	fmt.Fprintf(out, "growth, per %d trials in the order they were stored (in process: every %dth trial of the slice):\n  %s\n", o.slice, o.growthSample, growthLine(e.slices))
	// The data dir of a large run is large: gone as soon as it is read.
	return os.RemoveAll(filepath.Join(dir, "data"))
}

// printE2E prints an end-to-end run: rates, CPU per trial, RSS.
func printE2E(out io.Writer, e e2e, trials int) {
	fmt.Fprintf(out, "end to end (rebound run, embedded stack): sweep %.1fs = %.0f trials/s; whole command %.1fs = %.0f trials/s; peak RSS %s\n",
		e.sweep.Seconds(), rate(trials, e.sweep), e.wall.Seconds(), rate(trials, e.wall), mb(e.maxRSS))
	if len(e.whole) == 1 {
		w := e.whole[0]
		fmt.Fprintf(out, "CPU per trial over the sweep (its start to its last write): %.2f ms (rebound %.2f, dev server %.2f)\n",
			ms(w.cpuPerTrial()), ms(perTrial(w.self, w.to-w.from)), ms(perTrial(w.descend, w.to-w.from)))
	}
	fmt.Fprintf(out, "rebound run RSS, largest sample per quarter of the run: %s\n", quarters(e.rss))
}

// printShare prints the sweep end to end as a share of the in-process
// ceiling with rows: by rate (what the goal names; both rates move
// with whatever else runs on the machine, at different moments) and by
// CPU per trial (the ceiling's over the sweep's, rebound and its dev
// server: what the share would be with the cores to itself, which moves
// far less with the load).
func printShare(out io.Writer, e e2e, c inProcess, trials int) {
	byRate := rate(trials, e.sweep) / rate(c.trials, c.parallel)
	line := fmt.Sprintf("end to end as a share of the ceiling with rows: %.0f%% by rate", 100*byRate)
	if len(e.whole) == 1 && c.parallelCPU > 0 {
		line += fmt.Sprintf(", %.0f%% by CPU per trial (%.3f ms in process, %.3f ms end to end)",
			100*float64(perTrial(c.parallelCPU, c.trials))/float64(e.whole[0].cpuPerTrial()),
			ms(perTrial(c.parallelCPU, c.trials)), ms(e.whole[0].cpuPerTrial()))
	}
	fmt.Fprintln(out, line)
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func mb(bytes int64) string { return fmt.Sprintf("%.0f MB", float64(bytes)/(1<<20)) }

// e2e is one `rebound run`.
type e2e struct {
	wall, sweep time.Duration
	maxRSS      int64 // bytes
	// rss is the process's resident set sampled every rssEvery: flat after
	// the start when nothing grows with the trials run.
	rss []int64
	// whole is the sweep as one slice (from its start to its last write,
	// with the CPU of rebound and the dev server over that time); slices
	// cuts it every -slice trials (the growth row).
	whole, slices []slice
}

const rssEvery = 500 * time.Millisecond

// vmRSS reads a process's resident set size (bytes) from /proc.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// quarters summarizes RSS samples: the largest sample of each quarter of
// the run.
func quarters(samples []int64) string {
	if len(samples) < 4 {
		return "too short to sample"
	}
	var parts []string
	for q := range 4 {
		part := samples[q*len(samples)/4 : (q+1)*len(samples)/4]
		m := int64(0)
		for _, v := range part {
			m = max(m, v)
		}
		parts = append(parts, mb(m))
	}
	return strings.Join(parts, ", ")
}

// sweepDone is rebound run's last progress line.
var sweepDone = regexp.MustCompile(`sweep \S+ completed: (\d+) trials in ([0-9.]+)s`)

// sweepStarted is rebound run's line when the sweep's workflow started.
var sweepStarted = regexp.MustCompile(`sweep \S+ started`)

func endToEnd(ctx context.Context, bin, plan, dataDir string, slice int) (e2e, error) {
	cmd := exec.CommandContext(ctx, bin, "run", "--data-dir", dataDir, "--output", "json", plan)
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		return e2e{}, err
	}
	cmd.Stdout = io.Discard
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return e2e{}, err
	}
	var (
		stderr  bytes.Buffer
		started time.Time
		read    = make(chan struct{})
	)
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderrPipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if started.IsZero() && sweepStarted.Match(sc.Bytes()) {
				started = time.Now()
			}
			stderr.Write(sc.Bytes())
			stderr.WriteByte('\n')
		}
	}()
	var (
		samples []int64
		cpu     []cpuSample
	)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(rssEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if v, err := vmRSS(cmd.Process.Pid); err == nil {
					samples = append(samples, v)
				}
				if c, err := sampleCPU(cmd.Process.Pid); err == nil {
					cpu = append(cpu, c)
				}
			}
		}
	}()
	<-read // stderr closes when the process exits
	err = cmd.Wait()
	wall := time.Since(start)
	close(done)
	<-sampled
	if err != nil {
		return e2e{}, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, tail(stderr.String(), 2000))
	}
	m := sweepDone.FindStringSubmatch(stderr.String())
	if m == nil {
		return e2e{}, fmt.Errorf("rebound run printed no completed sweep:\n%s", tail(stderr.String(), 2000))
	}
	secs, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return e2e{}, err
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	res := e2e{wall: wall, sweep: time.Duration(secs * float64(time.Second)), maxRSS: rss, rss: samples}
	if started.IsZero() {
		return res, fmt.Errorf("rebound run printed no started sweep")
	}
	batches, err := storedBatches(ctx, bin, dataDir)
	if err != nil {
		return res, err
	}
	res.whole = slices(started, batches, math.MaxInt, cpu)
	res.slices = slices(started, batches, slice, cpu)
	return res, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// inProcess is the ceiling measurement; rows and callRows are the rows of
// the first trials, kept for the insert benchmark.
type inProcess struct {
	trials, calls    int
	serial, parallel time.Duration
	parallelCPU      time.Duration // this process's CPU over the parallel run
	rows             []record.Trial
	callRows         []record.ToolCall
}

func ceiling(ctx context.Context, planPath string, keep int) (inProcess, error) {
	plan, err := scenario.LoadPlan(planPath, world.Catalog)
	if err != nil {
		return inProcess{}, err
	}
	n := plan.TrialCount()
	agents := map[string]agent.Agent{}
	for _, arm := range plan.Arms {
		ag, err := agent.NewScripted(arm.Agent)
		if err != nil {
			return inProcess{}, fmt.Errorf("arm %s: the in-process ceiling runs scripted agents only: %w", arm.Name, err)
		}
		agents[arm.Name] = ag
	}
	spec := func(i int) (trial.Spec, error) {
		k, err := plan.Trial(i)
		return trial.Spec{SweepID: "bench", Scenario: k.Scenario, Variant: k.Variant, Arm: k.Arm, Seed: k.Seed}, err
	}
	res := inProcess{trials: n}
	start := time.Now()
	for i := range n {
		s, err := spec(i)
		if err != nil {
			return res, err
		}
		r, err := trial.Run(ctx, s, agents[s.Arm.Name])
		if err != nil {
			return res, fmt.Errorf("trial %d: %w", i, err)
		}
		res.calls += len(r.Ledger.Attempts)
	}
	res.serial = time.Since(start)

	red, err := redact.New(nil, []byte(os.Getenv("REBOUND_REDACTION_KEY")))
	if err != nil {
		return res, err
	}
	rr := activities.NewRowRedactor(red) // one per sweep, as a worker keeps it
	workers := runtime.GOMAXPROCS(0)
	keep = min(keep, n)
	res.rows = make([]record.Trial, keep)
	kept := make([][]record.ToolCall, keep)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	start, cpu0 := time.Now(), processCPU()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				s, err := spec(i)
				var r *trial.Result
				if err == nil {
					r, err = trial.Run(ctx, s, agents[s.Arm.Name])
				}
				if err != nil {
					mu.Lock()
					firstErr = fmt.Errorf("trial %d: %w", i, err)
					mu.Unlock()
					return
				}
				row, calls := rr.Rows(r)
				if i < keep {
					res.rows[i], kept[i] = row, calls
				}
			}
		}()
	}
	wg.Wait()
	res.parallel, res.parallelCPU = time.Since(start), processCPU()-cpu0
	if firstErr != nil {
		return res, firstErr
	}
	for _, c := range kept {
		res.callRows = append(res.callRows, c...)
	}
	return res, nil
}

type inserted struct {
	callRows int
	elapsed  time.Duration
	// cpu is this process's CPU time from the first insert until the
	// engine merged every part the inserts made (merges run in the
	// background, in this process); merged is that moment.
	cpu    time.Duration
	merged time.Duration
}

// insertRate writes the rows to a fresh embedded store, batch trials (and
// their tool calls) per insert.
func insertRate(ctx context.Context, rows []record.Trial, calls []record.ToolCall, batch int, dir string) (inserted, error) {
	st, err := storage.Open(ctx, storage.Config{DataDir: dir})
	if err != nil {
		return inserted{}, err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return inserted{}, err
	}
	byTrial := map[string][]record.ToolCall{}
	for _, c := range calls {
		byTrial[c.TrialID] = append(byTrial[c.TrialID], c)
	}
	batch = max(batch, 1)
	start, cpu0 := time.Now(), processCPU()
	for i := 0; i < len(rows); i += batch {
		part := rows[i:min(i+batch, len(rows))]
		var pc []record.ToolCall
		for _, t := range part {
			pc = append(pc, byTrial[t.TrialID]...)
		}
		if err := st.WriteTrials(ctx, part, pc); err != nil {
			return inserted{}, err
		}
	}
	elapsed := time.Since(start)
	if err := mergesDone(ctx, st); err != nil {
		return inserted{}, err
	}
	merged, cpu := time.Since(start), processCPU()-cpu0
	stored, err := st.CountTrials(ctx, "bench")
	if err != nil {
		return inserted{}, err
	}
	if stored != uint64(len(rows)) {
		return inserted{}, fmt.Errorf("stored %d trials, wrote %d", stored, len(rows))
	}
	return inserted{callRows: len(calls), elapsed: elapsed, cpu: cpu, merged: merged}, nil
}

// mergesDone waits until the embedded engine runs no merge, three polls in
// a row.
func mergesDone(ctx context.Context, st storage.Store) error {
	for quiet := 0; quiet < 3; {
		tab, err := st.Query(ctx, "SELECT count() AS n FROM system.merges")
		if err != nil {
			return err
		}
		if len(tab.Rows) == 1 && len(tab.Rows[0]) == 1 && fmt.Sprint(tab.Rows[0][0]) == "0" {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// processCPU is this process's user + system time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
