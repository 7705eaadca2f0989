package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"rebound/fileerr"
	"rebound/runner"
	"rebound/scenario"
	"rebound/storage"
	"rebound/telemetry"
	"rebound/trial"
	"rebound/workflows"
)

const workerAbout = `Runs a worker: it polls the task queue of an existing Temporal cluster for
sweep workflows and trial activities, and writes trials to an existing
ClickHouse server. Start as many as you like; they share the work.

REBOUND_REDACTION_KEY is required (at least 32 characters, the same for every
worker and for 'rebound sweep'): it keys the hashes of idempotency keys and
encrypts the stored plan and every Temporal payload. Without it the worker
refuses to start.

Example:
  REBOUND_TEMPORAL_ADDRESS=temporal:7233 \
  REBOUND_CLICKHOUSE_DSN=clickhouse://rebound:secret@clickhouse:9000/rebound \
  REBOUND_REDACTION_KEY=$(cat /run/secrets/rebound-redaction-key) \
  rebound worker`

func workerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("worker", "rebound worker [flags]", workerAbout, stderr)
	var conn connection
	conn.temporalFlags(fs)
	conn.storageFlags(fs)
	concurrency := fs.Int("max-concurrent-shards", 0, "shard activities this worker runs at once (0: two per CPU)")
	stopTimeout := fs.Duration("stop-timeout", runner.DefaultStopTimeout, "on Ctrl-C, how long running shards may finish before they keep what they stored and hand the rest back")
	listen := fs.String("listen", "", "serve /metrics (Prometheus), /healthz and /readyz on ADDR, e.g. :9090 (default off)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if conn.temporalAddress == "" {
		return usagef("worker needs --temporal-address (or REBOUND_TEMPORAL_ADDRESS); for a self-contained run use 'rebound run'")
	}
	key, err := envRedactionKey()
	if err != nil {
		return err
	}
	tel, err := setupTelemetry(ctx, *listen != "", stderr)
	if err != nil {
		return err
	}
	defer shutdownTelemetry(tel, stderr)
	// ready holds the store once the worker polls: /readyz checks both.
	var ready atomic.Pointer[storage.Store]
	if *listen != "" {
		srv, err := telemetry.Serve(*listen, telemetry.Health{Metrics: tel.MetricsHandler(), Ready: func(ctx context.Context) error {
			st := ready.Load()
			if st == nil {
				return errors.New("worker not polling")
			}
			if _, err := (*st).Query(ctx, "SELECT 1"); err != nil {
				return errors.New("store unreachable") // the error may name the DSN
			}
			return nil
		}}.Handler())
		if err != nil {
			return usageError{err}
		}
		defer srv.Close(context.Background())
		fmt.Fprintf(stderr, "serving /metrics, /healthz and /readyz on %s\n", srv.Addr())
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	c, err := conn.dialTemporal(ctx, conn.temporalAddress, key)
	if err != nil {
		return err
	}
	defer c.Close()
	acts, err := newActivities(store, key)
	if err != nil {
		return err
	}
	w, err := runner.NewWorker(c, conn.taskQueue, acts, runner.WorkerOptions{MaxConcurrentShards: *concurrency, StopTimeout: *stopTimeout})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	ready.Store(&store)
	// Every worker of the queue paces its model requests at 1/W of each
	// provider's limits, W being the workers polling the queue.
	go runner.ShareProviderLimits(ctx, c, conn.taskQueue, 15*time.Second)
	fmt.Fprintf(stderr, "worker polling task queue %q on %s (namespace %s), storing to %s; Ctrl-C to stop\n",
		conn.taskQueue, conn.temporalAddress, conn.namespace, storeLabel(conn))
	<-ctx.Done()
	ready.Store(nil)
	fmt.Fprintf(stderr, "worker stopping: running shards get %s to finish, then hand the rest back\n", *stopTimeout)
	// The store (closed by the deferred Close) outlives the last write.
	stopWorker(w, acts, newStatus(stderr))
	return nil
}

func storeLabel(conn connection) string {
	if conn.clickhouseDSN != "" {
		return storage.RedactDSN(conn.clickhouseDSN)
	}
	return "embedded chDB in " + conn.dataDir
}

const sweepAbout = `Starts a sweep on an existing Temporal cluster (workers must be running:
'rebound worker'), shows a sweep's progress, or cancels it.

  rebound sweep start [flags] PLAN     start it; --wait follows it to the end
  rebound sweep status [flags] ID      progress, and shards whose attempts fail
                                       (with the last error: disk full, store down...)
  rebound sweep cancel [flags] ID      cancel it; it records the status cancelled

Without --temporal-address, status and cancel work on the embedded stack of
--data-dir (a dev server is started for the occasion; cancel also runs the
sweep's own worker long enough to record the cancellation).

Both need the workers' REBOUND_REDACTION_KEY: the plan and the progress
travel through Temporal encrypted with it. The plan is checked (files,
agents, worlds' initial state, size) before anything is sent.

Example:
  rebound sweep start --temporal-address temporal:7233 examples/plans/quickstart.yaml
  rebound sweep cancel quickstart-20261129-124700-21fe74`

func sweepCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "start" && args[0] != "status" && args[0] != "cancel") {
		fmt.Fprintf(stderr, "Usage: rebound sweep start|status|cancel ...\n\n%s\n", sweepAbout)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return errHelp
		}
		return usagef("sweep needs a subcommand: start, status or cancel")
	}
	sub := args[0]
	fs := newFlags("sweep "+sub, "rebound sweep "+sub+" [flags] ARG", sweepAbout, stderr)
	var conn connection
	conn.temporalFlags(fs)
	conn.storageFlags(fs)
	temporalBin := fs.String("temporal-bin", env("REBOUND_TEMPORAL_BIN", ""), "status, cancel without --temporal-address: Temporal CLI for the embedded dev server")
	wait := fs.Bool("wait", false, "start: follow the sweep until it ends, showing progress")
	output := outputFlag(fs)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	if conn.temporalAddress == "" && sub == "start" {
		return usagef("sweep start needs --temporal-address (or REBOUND_TEMPORAL_ADDRESS); for a self-contained run use 'rebound run'")
	}
	if fs.NArg() != 1 {
		return usagef("sweep %s takes exactly one argument", sub)
	}
	key, err := conn.redactionKey()
	if err != nil {
		return err
	}
	status := newStatus(stderr)
	if conn.temporalAddress == "" {
		status = newStatus(io.Discard)
	}
	address, stopServer, err := startTemporal(ctx, &conn, *temporalBin, status)
	if err != nil {
		return err
	}
	defer stopServer()
	c, err := conn.dialTemporal(ctx, address, key)
	if err != nil {
		return err
	}
	defer c.Close()
	switch sub {
	case "status":
		return sweepStatus(ctx, c, key, fs.Arg(0), *output, stdout)
	case "cancel":
		return sweepCancel(ctx, c, &conn, key, fs.Arg(0), stdout, stderr)
	}
	plan, err := preparePlan(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	sweepID := runner.NewSweepID(plan.Name, time.Now())
	run, err := runner.StartSweep(ctx, c, conn.taskQueue, sweepID, plan)
	if err != nil {
		return err
	}
	if *output == "json" {
		if err := json.NewEncoder(stdout).Encode(map[string]any{"sweep_id": sweepID, "workflow_id": runner.WorkflowID(sweepID), "run_id": run.GetRunID(), "trials": plan.TrialCount()}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s\n", sweepID)
		fmt.Fprintf(stderr, "started sweep %s: %d trials on task queue %q; follow with 'rebound sweep status %s', report with 'rebound report %s'\n", sweepID, plan.TrialCount(), conn.taskQueue, sweepID, sweepID)
	}
	if !*wait {
		return nil
	}
	final, err := followSweep(ctx, c, run, sweepID, time.Second, newStatus(stderr))
	if err != nil {
		return err
	}
	return sweepOutcome(sweepID, final)
}

// sweepStatus prints a sweep's progress (when its workflow answers) and
// the shards Temporal holds for it, with failing attempts and their last
// error.
func sweepStatus(ctx context.Context, c client.Client, key []byte, sweepID, output string, stdout io.Writer) error {
	st, err := runner.DescribeSweep(ctx, c, key, sweepID)
	if err != nil {
		return err
	}
	if !st.Found {
		return failure{fmt.Sprintf("sweep %s is unknown to this Temporal (stored sweeps: 'rebound sweeps')", sweepID)}
	}
	// Progress comes from the workflow: a query while a worker serves it,
	// the result once it completed. A query with no worker would only time
	// out.
	var (
		p    workflows.Progress
		perr error
	)
	switch {
	case st.Running() && st.Pollers > 0:
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		p, perr = runner.Progress(qctx, c, sweepID)
		cancel()
	case st.Status == "completed":
		perr = c.GetWorkflow(ctx, runner.WorkflowID(sweepID), "").Get(ctx, &p)
	case st.Running():
		perr = errors.New("no worker polls its task queue")
	default:
		perr = fmt.Errorf("the workflow ended %s", st.Status)
	}
	if output == "json" {
		out := map[string]any{"sweep_id": sweepID, "workflow": st}
		if perr == nil {
			out["progress"] = p
		} else {
			out["progress_error"] = perr.Error()
		}
		return json.NewEncoder(stdout).Encode(out)
	}
	if perr != nil {
		fmt.Fprintf(stdout, "sweep %s: workflow %s; progress unavailable: %v\n", sweepID, st.Status, perr)
	} else {
		fmt.Fprintf(stdout, "sweep %s: %s, %d/%d trials, %d/%d shards, attrition %d\n", sweepID, p.Status, p.TrialsDone, p.TrialsPlanned, p.ShardsDone, p.ShardsTotal, p.Attrition)
		if p.Stopped != "" {
			fmt.Fprintf(stdout, "stopped: %s\n", p.Stopped)
		}
	}
	if st.Running() {
		fmt.Fprintf(stdout, "task queue %s: %d worker(s) polling", st.TaskQueue, st.Pollers)
		if st.Pollers == 0 {
			fmt.Fprintf(stdout, " (nothing runs its shards: start 'rebound worker --task-queue %s', or on the embedded stack 'rebound run --resume %s')", st.TaskQueue, sweepID)
		}
		fmt.Fprintln(stdout)
	}
	failing := st.Failing()
	if len(failing) == 0 {
		return nil
	}
	fmt.Fprintf(stdout, "%d shard(s) failing:\n", len(failing))
	for _, f := range failing {
		next := ""
		if !f.NextAttemptAt.IsZero() {
			next = fmt.Sprintf(", next attempt in %s", time.Until(f.NextAttemptAt).Round(time.Second))
		}
		fmt.Fprintf(stdout, "  %s %s: attempt %d of %d (%s%s): %s\n", f.Activity, f.ActivityID, f.Attempt, f.MaxAttempts, f.State, next, termSafe(f.LastError, false))
	}
	return nil
}

// sweepCancel cancels a sweep's workflow and waits until it recorded the
// status cancelled. On the embedded stack no worker polls the sweep's own
// queue, so this process runs one until the cancellation is recorded. A
// sweep stored as running whose workflow is gone is marked cancelled in
// storage directly.
func sweepCancel(ctx context.Context, c client.Client, conn *connection, key []byte, sweepID string, stdout, stderr io.Writer) error {
	st, err := runner.DescribeSweep(ctx, c, key, sweepID)
	if err != nil {
		return err
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	if !st.Running() {
		sw, err := store.Sweep(ctx, sweepID)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return usagef("no sweep %q (list them with 'rebound sweeps')", sweepID)
			}
			return err
		}
		if sw.Status != storage.SweepRunning {
			fmt.Fprintf(stdout, "sweep %s already ended %s\n", sweepID, sw.Status)
			return nil
		}
		sw.Status = storage.SweepCancelled
		if err := store.PutSweep(ctx, sw); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "sweep %s: workflow gone (orphaned); recorded cancelled\n", sweepID)
		return nil
	}
	if st.Pollers == 0 {
		// Nothing polls the sweep's queue: run a worker here so the
		// cancellation is processed and recorded.
		acts, err := newActivities(store, key)
		if err != nil {
			return err
		}
		w, err := runner.NewWorker(c, st.TaskQueue, acts, runner.WorkerOptions{})
		if err != nil {
			return err
		}
		if err := w.Start(); err != nil {
			return fmt.Errorf("start worker: %w", err)
		}
		defer stopWorker(w, acts, newStatus(stderr))
	}
	if err := runner.CancelSweep(ctx, c, sweepID); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := runner.WaitClosed(wctx, c, sweepID); err != nil && wctx.Err() != nil {
		return fmt.Errorf("sweep %s: cancel requested, but it did not close within 2 minutes", sweepID)
	}
	fmt.Fprintf(stdout, "sweep %s cancelled\n", sweepID)
	return nil
}

const reportAbout = `Prints the report of a stored sweep. The first line is each arm's harm
index: the consequence-weighted rate of unsafe_action OR duplicate_side_effect
OR fabricated_claim. Then per arm and metric, the rate with its 95% Wilson
interval (widened for correlated seeds) and n, the number of trials where the
metric was tested (NOT TESTED trials are excluded, never counted as zero),
and the consequence-weighted rates.

Example:
  rebound report quickstart-20261129-120000-a1b2c3
  rebound report --output json --clickhouse-dsn clickhouse://host:9000/rebound ID`

func reportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("report", "rebound report [flags] SWEEP_ID", reportAbout, stderr)
	var conn connection
	conn.storageFlags(fs)
	output := outputFlag(fs)
	if err := parseOneArg(fs, args, output, "report takes exactly one SWEEP_ID (list them with 'rebound sweeps')"); err != nil {
		return err
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	return printReport(ctx, store, fs.Arg(0), *output, stdout)
}

const sweepsAbout = `Lists stored sweeps, newest first, with what their workflows are doing.

A sweep stored as running is checked against Temporal (--temporal-address;
without one, the embedded dev server of --data-dir is started for the
occasion): running with N workers, running with no worker polling its queue
(an embedded 'rebound run' was killed: resume with 'rebound run --resume ID'),
or orphaned (its workflow is gone: 'rebound sweep cancel ID' records it).
--running lists only those.

Example:
  rebound sweeps
  rebound sweeps --running --output json`

func sweepsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sweeps", "rebound sweeps [flags]", sweepsAbout, stderr)
	var conn connection
	conn.temporalFlags(fs)
	conn.storageFlags(fs)
	temporalBin := fs.String("temporal-bin", env("REBOUND_TEMPORAL_BIN", ""), "Temporal CLI for the embedded dev server")
	limit := fs.Int("limit", 20, "how many sweeps to list")
	onlyRunning := fs.Bool("running", false, "list only sweeps stored as running (running, stalled or orphaned)")
	output := outputFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	n := *limit
	if *onlyRunning {
		n = 0
	}
	all, err := store.Sweeps(ctx, n)
	if err != nil {
		return err
	}
	var sweeps []storage.Sweep
	for _, s := range all {
		if !*onlyRunning || s.Status == storage.SweepRunning {
			sweeps = append(sweeps, s)
		}
	}
	states := map[string]string{}
	anyRunning := false
	for _, s := range sweeps {
		anyRunning = anyRunning || s.Status == storage.SweepRunning
	}
	if anyRunning {
		key, err := conn.redactionKey()
		if err != nil {
			return err
		}
		address, stopServer, err := startTemporal(ctx, &conn, *temporalBin, newStatus(io.Discard))
		if err != nil {
			return err
		}
		defer stopServer()
		c, err := conn.dialTemporal(ctx, address, key)
		if err != nil {
			return err
		}
		defer c.Close()
		for _, s := range sweeps {
			if s.Status != storage.SweepRunning {
				continue
			}
			st, err := runner.DescribeSweep(ctx, c, key, s.SweepID)
			switch {
			case err != nil:
				states[s.SweepID] = "unknown: " + err.Error()
			case !st.Found:
				states[s.SweepID] = "orphaned: its workflow is unknown to Temporal"
			case !st.Running():
				states[s.SweepID] = "orphaned: its workflow is " + st.Status
			case st.Pollers == 0:
				states[s.SweepID] = "stalled: no worker polls task queue " + st.TaskQueue
			default:
				states[s.SweepID] = fmt.Sprintf("running: %d worker(s)", st.Pollers)
			}
			if f := st.Failing(); len(f) > 0 {
				states[s.SweepID] += fmt.Sprintf("; %d shard(s) failing, last error: %s", len(f), f[0].LastError)
			}
		}
	}
	if *output == "json" {
		type row struct {
			SweepID, Name, Status string
			State                 string `json:",omitempty"`
			TrialsPlanned         uint64
			CreatedAt             time.Time
		}
		rows := make([]row, len(sweeps))
		for i, s := range sweeps {
			rows[i] = row{s.SweepID, s.Name, s.Status, states[s.SweepID], s.TrialsPlanned, s.CreatedAt}
		}
		return json.NewEncoder(stdout).Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SWEEP\tPLAN\tSTATUS\tTRIALS\tSTARTED\tWORKFLOW")
	for _, s := range sweeps {
		// Cells are made safe before tabwriter measures them.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", termSafe(s.SweepID, false), termSafe(s.Name, false), termSafe(s.Status, false), s.TrialsPlanned, s.CreatedAt.Local().Format("2006-01-02 15:04"), termSafe(states[s.SweepID], false))
	}
	return tw.Flush()
}

const lintAbout = `Checks scenario and plan files: YAML syntax, unknown fields, duplicate keys,
types, and meaning (tools offered and in the world's catalog, claim fields
declared, fault triggers, generated variants, metamorphic pairs). Every
problem of a file is reported in one pass, with file:line:column and the
field; notes (a default that applies) are printed but are not problems. A
file with a top-level 'arms' key is checked as a plan (with every scenario
it names). Only regular files are read, scenario files up to 4 MiB and plan
files up to 1 MiB. --output json prints one object with every file's
problems and notes.

Example:
  rebound scenario lint examples/scenarios/*.yaml examples/plans/quickstart.yaml
  rebound scenario lint --output json my-scenario.yaml`

const scenarioAbout = `Works with scenario and plan files.

  rebound scenario lint PATH...              check scenario and plan files
  rebound scenario variants [flags] FILE...  list every variant, hand-written and
                                             generated from tool metadata
  rebound scenario import [-o OUT] FILE      convert a recovery-test.yaml scenario
                                             (aiwg-evals format) to a rebound scenario

Run 'rebound scenario SUBCOMMAND -h' for a subcommand's flags.`

func scenarioCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "lint":
			return scenarioLint(ctx, args[1:], stdout, stderr)
		case "variants":
			return scenarioVariants(args[1:], stdout, stderr)
		case "import":
			return scenarioImport(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "Usage: rebound scenario lint|variants|import ...\n\n%s\n", scenarioAbout)
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		return errHelp
	}
	if len(args) > 0 {
		return usagef("unknown scenario subcommand %q: use lint, variants or import", args[0])
	}
	return usagef("scenario needs a subcommand: lint, variants or import")
}

func scenarioLint(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("scenario lint", "rebound scenario lint [--output json] PATH...", lintAbout, stderr)
	output := outputFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("scenario lint needs at least one file")
	}
	type problem struct {
		File    string `json:"file"`
		Line    int    `json:"line,omitempty"`
		Column  int    `json:"column,omitempty"`
		Field   string `json:"field,omitempty"`
		Message string `json:"message"`
	}
	type fileResult struct {
		Path     string    `json:"path"`
		Kind     string    `json:"kind"` // scenario or plan
		OK       bool      `json:"ok"`
		Problems []problem `json:"problems"`
		Notes    []problem `json:"notes"`
		// Warnings do not fail lint: a variant whose declared
		// recoverability the realized schedule contradicts for some seeds.
		Warnings []problem `json:"warnings"`
	}
	toProblem := func(e scenario.FieldError) problem {
		return problem{File: e.File, Line: e.Line, Column: e.Col, Field: e.Field, Message: e.Msg}
	}
	var results []fileResult
	problems := 0
	for _, path := range fs.Args() {
		res := fileResult{Path: path, Kind: "scenario", Problems: []problem{}, Notes: []problem{}, Warnings: []problem{}}
		var notes []scenario.FieldError
		var warnings []string
		opts := scenario.LoadOptions{Context: ctx, Note: func(e scenario.FieldError) { notes = append(notes, e) }}
		var err error
		if isPlan(path) {
			res.Kind = "plan"
			_, err = loadPlan(ctx, path, opts)
		} else {
			var sc *scenario.Scenario
			if sc, err = loadScenario(ctx, path, opts); err == nil {
				err = checkBaseline(ctx, path, sc)
			}
			if err == nil {
				warnings, err = recoverabilityWarnings(ctx, path, sc)
			}
		}
		if errors.Is(err, context.Canceled) {
			return err
		}
		var list scenario.Errors
		switch {
		case err == nil:
		case errors.As(err, &list):
			for _, e := range list {
				res.Problems = append(res.Problems, toProblem(e))
			}
		default:
			res.Problems = append(res.Problems, problem{File: path, Message: err.Error()})
		}
		for _, n := range notes {
			res.Notes = append(res.Notes, toProblem(n))
		}
		for _, w := range warnings {
			res.Warnings = append(res.Warnings, problem{File: path, Message: w})
		}
		res.OK = len(res.Problems) == 0
		problems += len(res.Problems)
		results = append(results, res)
		if *output == "json" {
			continue
		}
		if err == nil {
			fmt.Fprintf(stdout, "ok    %s\n", path)
		} else if len(list) > 0 {
			for _, e := range list {
				fmt.Fprintln(stdout, e.Error())
			}
		} else {
			fmt.Fprintf(stdout, "%s: %v\n", path, err)
		}
		for _, n := range notes {
			fmt.Fprintf(stdout, "note: %s\n", n.Error())
		}
		for _, w := range warnings {
			fmt.Fprintf(stdout, "warn  %s: %s\n", path, w)
		}
	}
	if *output == "json" {
		if err := json.NewEncoder(stdout).Encode(struct {
			Files    []fileResult `json:"files"`
			Problems int          `json:"problems"`
		}{results, problems}); err != nil {
			return err
		}
	}
	if problems > 0 {
		return failure{fmt.Sprintf("%d problem(s) found", problems)}
	}
	return nil
}

// checkBaseline fails a scenario whose reference plan does not reach the
// goal without any fault: every verdict on it would be meaningless.
func checkBaseline(ctx context.Context, path string, sc *scenario.Scenario) error {
	why, err := trial.Baseline(ctx, sc)
	if err != nil || why == "" {
		return err
	}
	return fmt.Errorf("plan: the reference plan does not reach the goal even without faults: %s", why)
}

// lintSeeds are the seeds lint probes a seed-dependent variant on.
const lintSeeds = 50

// recoverabilityWarnings warns about variants whose declared
// recoverability the realized schedule contradicts for some seeds (a
// warning: verdicts use the realized value per trial).
func recoverabilityWarnings(ctx context.Context, path string, sc *scenario.Scenario) ([]string, error) {
	seeds := make([]uint64, lintSeeds)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	ms, err := trial.DeclaredMismatches(ctx, sc, seeds)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		what := "no authorized path exists within the budgets and retry limit"
		if !m.Declared {
			what = "an authorized path exists"
		}
		if m.Probed == 1 {
			out = append(out, fmt.Sprintf("variant %s: declared recoverable: %t, but %s (verdicts use the realized value)", m.Variant, m.Declared, what))
			continue
		}
		out = append(out, fmt.Sprintf("variant %s: declared recoverable: %t, but for %d of seeds 1..%d %s (verdicts use the realized value per trial); e.g. seed %d",
			m.Variant, m.Declared, len(m.Seeds), m.Probed, what, m.Seeds[0]))
	}
	return out, nil
}

// isPlan tells plans from scenarios by their top-level keys.
func isPlan(path string) bool {
	data, err := fileerr.ReadRegular(path, scenario.MaxScenarioBytes, "scenario or plan file")
	if err != nil {
		return false // loading it as a scenario reports why
	}
	return scenario.LooksLikePlan(data)
}
