package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"rebound/report"
	"rebound/runner"
	"rebound/storage"
)

const compareAbout = `Compares two arms on exactly the same cases. Trials are paired on
(scenario, variant, seed). The first line is the harm index: the
consequence-weighted rate of unsafe_action OR duplicate_side_effect OR
fabricated_claim in both arms and its paired difference.

For every metric it reports the baseline and candidate rates, the difference
candidate − baseline in percentage points, and whether the candidate is
better, worse or unchanged. Evidence is counted once: a case (scenario,
variant) is the unit, its seeds are repeated measures. The interval is
cluster-robust (Student's t on cases − 1 df) and the p-value is an exact
sign-flip test over cases; worse means p ≤ 0.05 and the interval excludes 0,
in the metric's bad direction. --generalize counts scenarios instead of cases:
would the result hold on new scenarios like these? Beside them: the
consequence-weighted difference Δw = Σw·(y_cand − y_base)/Σw, the number of
clusters and the effective sample size, and the iid Tango interval and
McNemar mid-p, which count every seed as independent (for reference). Cases
that cannot be paired (missing in one arm, or lost to attrition) are counted
and listed, never dropped silently. NOT TESTED outcomes are excluded.

Both arms usually come from one sweep. To compare against another sweep of
the same plan (last night's baseline), name it with --baseline-sweep.

Formats (--output, or --save FILE with the format taken from the extension):
  text      the terminal table (.txt)
  markdown  a pull-request comment (.md)
  json      everything, NaN as null (.json)
  junit     JUnit XML, one test case per metric, worse = failure (.xml)
  html      a self-contained page with charts, no external assets (.html)

Examples:
  rebound compare --baseline gpt-4o --candidate gpt-4o-new SWEEP_ID
  rebound compare --generalize --baseline gpt-4o --candidate gpt-4o-new SWEEP_ID
  rebound compare --baseline prod --baseline-sweep nightly-0611 --candidate prod NIGHTLY_0612
  rebound compare --baseline a --candidate b --save report.html --save comment.md SWEEP_ID`

// compareFlags are the flags compare and gate share.
type compareFlags struct {
	conn          connection
	baseline      string
	candidate     string
	baselineSweep string
	output        string
	saves         multiFlag
	faultClasses  bool
	bootstrap     int
	generalize    bool
}

// previousSweep is the --baseline-sweep value that names the run before.
const previousSweep = "previous"

// previousRun resolves --baseline-sweep previous: the last completed run of
// the same schedule before sw (a scheduled run), or the last completed sweep
// of the same plan before it.
func previousRun(ctx context.Context, store storage.Store, sw storage.Sweep) (string, error) {
	all, err := store.Sweeps(ctx, 0) // newest first
	if err != nil {
		return "", err
	}
	schedule, scheduled := runner.ScheduleOf(sw.SweepID)
	for _, s := range all {
		if s.SweepID == sw.SweepID || s.Status != storage.SweepCompleted || !s.CreatedAt.Before(sw.CreatedAt) {
			continue
		}
		if scheduled {
			if strings.HasPrefix(s.SweepID, runner.ScheduledSweepPrefix(schedule)) {
				return s.SweepID, nil
			}
		} else if s.Name == sw.Name {
			return s.SweepID, nil
		}
	}
	what := fmt.Sprintf("plan %q", sw.Name)
	if scheduled {
		what = fmt.Sprintf("schedule %q", schedule)
	}
	return "", usagef("--baseline-sweep previous: no completed run of %s before %s", what, sw.SweepID)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

var formats = []string{"text", "markdown", "json", "junit", "html"}

func (f *compareFlags) register(fs *flag.FlagSet) {
	f.conn.storageFlags(fs)
	fs.StringVar(&f.baseline, "baseline", "", "the baseline arm (required)")
	fs.StringVar(&f.candidate, "candidate", "", "the candidate arm (required)")
	fs.StringVar(&f.baselineSweep, "baseline-sweep", "", "read the baseline arm from this sweep instead of SWEEP_ID (same plan, another run); 'previous' is the last completed run of the same schedule (or plan) before SWEEP_ID")
	fs.StringVar(&f.output, "output", "text", "format on stdout: "+strings.Join(formats, ", "))
	fs.Var(&f.saves, "save", "also write the report to FILE, format from its extension (.txt .md .json .xml .html); repeatable")
	fs.BoolVar(&f.faultClasses, "fault-classes", true, "break the comparison down by fault class (computed in SQL; off: skip the breakdown)")
	fs.IntVar(&f.bootstrap, "bootstrap", 0, "add a seeded cluster-bootstrap interval with this many replicates (0: off)")
	fs.BoolVar(&f.generalize, "generalize", false, "count scenarios, not cases, as the unit of evidence: would the result hold on new scenarios like these?")
}

// check validates the flags and returns the candidate sweep ID.
func (f *compareFlags) check(fs *flag.FlagSet, cmd string) (string, error) {
	if fs.NArg() != 1 {
		return "", usagef("%s takes exactly one SWEEP_ID (list them with 'rebound sweeps'); got %d arguments", cmd, fs.NArg())
	}
	if f.baseline == "" || f.candidate == "" {
		return "", usagef("%s needs --baseline ARM and --candidate ARM", cmd)
	}
	if !slices.Contains(formats, f.output) {
		return "", usagef("--output must be one of %s, got %q", strings.Join(formats, ", "), f.output)
	}
	for _, path := range f.saves {
		if _, err := formatOf(path); err != nil {
			return "", err
		}
	}
	if f.bootstrap < 0 {
		return "", usagef("--bootstrap must be ≥ 0")
	}
	sweepID := fs.Arg(0)
	if f.baselineSweep == "" {
		f.baselineSweep = sweepID
	}
	if f.baselineSweep == sweepID && f.baseline == f.candidate {
		return "", usagef("--baseline and --candidate are the same arm %q of the same sweep; name two arms, or another sweep with --baseline-sweep", f.baseline)
	}
	return sweepID, nil
}

func formatOf(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".txt", ".text":
		return "text", nil
	case ".md", ".markdown":
		return "markdown", nil
	case ".json":
		return "json", nil
	case ".xml":
		return "junit", nil
	case ".html", ".htm":
		return "html", nil
	}
	return "", usagef("--save %s: cannot tell the format from the extension (use .txt, .md, .json, .xml or .html)", path)
}

func writeComparison(c *report.Comparison, format string, w io.Writer) error {
	switch format {
	case "markdown":
		return c.WriteMarkdown(w)
	case "json":
		return c.WriteJSON(w)
	case "junit":
		return c.WriteJUnit(w)
	case "html":
		return c.WriteHTML(w)
	}
	return c.WriteText(w)
}

// emit writes the comparison to stdout and to every --save file.
func (f *compareFlags) emit(c *report.Comparison, stdout, stderr io.Writer) error {
	if err := writeComparison(c, f.output, stdout); err != nil {
		return err
	}
	for _, path := range f.saves {
		format, _ := formatOf(path)
		file, err := os.Create(path)
		if err != nil {
			return err
		}
		err = writeComparison(c, format, file)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Fprintf(stderr, "wrote %s (%s)\n", path, format)
	}
	return nil
}

// loadComparison reads both sides from storage and compares them. Errors
// about the invocation (unknown sweep or arm) are usage errors.
func (f *compareFlags) loadComparison(ctx context.Context, store storage.Store, sweepID string, conf float64) (report.Comparison, error) {
	sweep := func(id string) (storage.Sweep, error) {
		sw, err := store.Sweep(ctx, id)
		if errors.Is(err, storage.ErrNotFound) {
			return sw, usagef("no sweep %q in storage (list them with 'rebound sweeps')", id)
		}
		return sw, err
	}
	cand, err := sweep(sweepID)
	if err != nil {
		return report.Comparison{}, err
	}
	if f.baselineSweep == previousSweep {
		prev, err := previousRun(ctx, store, cand)
		if err != nil {
			return report.Comparison{}, err
		}
		f.baselineSweep = prev
	}
	base := cand
	if f.baselineSweep != sweepID {
		if base, err = sweep(f.baselineSweep); err != nil {
			return report.Comparison{}, err
		}
	}
	// ClickHouse computes the sufficient statistics; the fault classes of a
	// case are the union over both sides' trials.
	totals, err := store.CompareTotals(ctx, storage.CompareSide{SweepID: f.baselineSweep, Arm: f.baseline},
		storage.CompareSide{SweepID: sweepID, Arm: f.candidate}, f.faultClasses, report.NoFault)
	if err != nil {
		return report.Comparison{}, err
	}
	if err := armExists(base, totals.Summary.KeysA > 0, f.baseline, "--baseline"); err != nil {
		return report.Comparison{}, err
	}
	if err := armExists(cand, totals.Summary.KeysB > 0, f.candidate, "--candidate"); err != nil {
		return report.Comparison{}, err
	}
	return report.CompareFromTotals(report.CompareTotalsInput{
		Baseline:  report.Side{SweepID: f.baselineSweep, Arm: f.baseline},
		Candidate: report.Side{SweepID: sweepID, Arm: f.candidate},
		Totals:    totals, FaultClasses: f.faultClasses,
		Confidence: conf, BootstrapReps: f.bootstrap, BootstrapSeed: 1, Generalize: f.generalize,
	}), nil
}

func armExists(sw storage.Sweep, hasTrials bool, arm, flagName string) error {
	if hasTrials || slices.Contains(sw.Arms, arm) {
		return nil
	}
	return usagef("%s %q: sweep %s has no such arm (arms: %s)", flagName, arm, sw.SweepID, strings.Join(sw.Arms, ", "))
}

func compareCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare", "rebound compare --baseline ARM --candidate ARM [flags] SWEEP_ID", compareAbout, stderr)
	var f compareFlags
	f.register(fs)
	confidence := fs.Float64("confidence", report.Confidence, "level of every interval, and 1 − the significance level of better/worse")
	if err := parse(fs, args); err != nil {
		return err
	}
	sweepID, err := f.check(fs, "compare")
	if err != nil {
		return err
	}
	if !(*confidence > 0 && *confidence < 1) {
		return usagef("--confidence must lie strictly between 0 and 1, got %g", *confidence)
	}
	store, err := f.conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	c, err := f.loadComparison(ctx, store, sweepID, *confidence)
	if err != nil {
		return err
	}
	return f.emit(&c, stdout, stderr)
}
