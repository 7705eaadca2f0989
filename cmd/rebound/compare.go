package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"rebound/internal/runner"
	"rebound/results/report"
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

func newCompareCmd() *cobra.Command {
	var (
		f          compareFlags
		confidence float64
	)
	cmd := &cobra.Command{
		Use:   "compare --baseline ARM --candidate ARM [flags] SWEEP_ID",
		Short: "compare two arms on the same cases (paired), as text, Markdown, JSON, JUnit or HTML",
		Long:  compareAbout,
		Args:  exactArgs(1, "compare takes exactly one SWEEP_ID (list them with 'rebound sweeps')"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check("compare", args[0]); err != nil {
				return err
			}
			if !(confidence > 0 && confidence < 1) {
				return usagef("--confidence must lie strictly between 0 and 1, got %g", confidence)
			}
			ctx := cmd.Context()
			store, err := f.conn.openReadStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			c, err := f.load(ctx, store, confidence)
			if err != nil {
				return err
			}
			return f.emit(&c, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().Float64Var(&confidence, "confidence", report.Confidence, "level of every interval, and 1 − the significance level of better/worse")
	return cmd
}

// compareFlags are the flags compare and gate share.
type compareFlags struct {
	conn   connection
	req    report.CompareRequest
	output string
	saves  []string
}

// previousSweep is the --baseline-sweep value that names the run before.
const previousSweep = "previous"

var formats = []string{"text", "markdown", "json", "junit", "html"}

func (f *compareFlags) register(fs *pflag.FlagSet) {
	f.conn.storageFlags(fs)
	fs.StringVar(&f.req.Baseline, "baseline", "", "the baseline arm (required)")
	fs.StringVar(&f.req.Candidate, "candidate", "", "the candidate arm (required)")
	fs.StringVar(&f.req.BaselineSweep, "baseline-sweep", "", "read the baseline arm from this sweep instead of SWEEP_ID (same plan, another run); 'previous' is the last completed run of the same schedule (or plan) before SWEEP_ID")
	choiceFlag(fs, &f.output, "output", "format on stdout", formats...)
	fs.StringArrayVar(&f.saves, "save", nil, "also write the report to FILE, format from its extension (.txt .md .json .xml .html); repeatable")
	fs.BoolVar(&f.req.FaultClasses, "fault-classes", true, "break the comparison down by fault class (computed in SQL; off: skip the breakdown)")
	intFlag(fs, &f.req.BootstrapReps, "bootstrap", 0, 0, 100000, "add a seeded cluster-bootstrap interval with this many replicates (0: off)")
	fs.BoolVar(&f.req.Generalize, "generalize", false, "count scenarios, not cases, as the unit of evidence: would the result hold on new scenarios like these?")
}

// check validates the flags against the candidate sweep ID.
func (f *compareFlags) check(cmd, sweepID string) error {
	f.req.SweepID = sweepID
	if f.req.Baseline == "" || f.req.Candidate == "" {
		return usagef("%s needs --baseline ARM and --candidate ARM", cmd)
	}
	for _, path := range f.saves {
		if _, err := formatOf(path); err != nil {
			return err
		}
	}
	if (f.req.BaselineSweep == "" || f.req.BaselineSweep == sweepID) && f.req.Baseline == f.req.Candidate {
		return usagef("--baseline and --candidate are the same arm %q of the same sweep; name two arms, or another sweep with --baseline-sweep", f.req.Baseline)
	}
	return nil
}

// load resolves --baseline-sweep previous and compares the two arms.
func (f *compareFlags) load(ctx context.Context, store storage.Store, confidence float64) (report.Comparison, error) {
	if f.req.BaselineSweep == previousSweep {
		prev, err := runner.PreviousRun(ctx, store, f.req.SweepID)
		if err != nil {
			return report.Comparison{}, fmt.Errorf("--baseline-sweep previous: %w", err)
		}
		f.req.BaselineSweep = prev
	}
	f.req.Confidence = confidence
	c, err := report.LoadComparison(ctx, store, f.req)
	if err != nil {
		return c, err
	}
	return c, c.AddSpend(ctx, store)
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
