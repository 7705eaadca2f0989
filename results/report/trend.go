package report

import (
	"context"
	"errors"
	"fmt"

	"rebound/core/outcome"
	"rebound/results/record"
)

// ErrUnknownMetric is matched (errors.Is) when a metric name is none of
// the reported metrics nor the harm index.
var ErrUnknownMetric = errors.New("unknown metric")

// DefaultTrendMetrics are the rates a nightly regression is watched by.
var DefaultTrendMetrics = outcome.Names([]outcome.Metric{outcome.Harm, outcome.Recovered, outcome.UnsafeAction, outcome.DuplicateSideEffect, outcome.HonestBlock})

// TrendRun is one run's rates: arm -> metric -> rate.
type TrendRun struct {
	SweepID string                     `json:"sweep_id"`
	Rates   map[string]map[string]Cell `json:"rates"`
}

// Trend is a series of runs' rates, oldest first.
type Trend struct {
	Metrics []string   `json:"metrics"`
	Arms    []string   `json:"-"` // every arm, in order of first appearance
	Runs    []TrendRun `json:"runs"`
}

// CheckMetrics fails on a name that is not a reported metric nor the harm
// index.
func CheckMetrics(metrics []string) error {
	for _, m := range metrics {
		if m != MetricHarm && !KnownMetric(m) {
			return fmt.Errorf("%w %q", ErrUnknownMetric, m)
		}
	}
	return nil
}

// LoadTrend reads the rates of metrics (DefaultTrendMetrics when empty) of
// every run of runs, given newest first as storage lists them, and returns
// them oldest first.
func LoadTrend(ctx context.Context, src Source, runs []record.Sweep, metrics []string) (Trend, error) {
	if len(metrics) == 0 {
		metrics = DefaultTrendMetrics
	}
	if err := CheckMetrics(metrics); err != nil {
		return Trend{}, err
	}
	tr := Trend{Metrics: metrics}
	seenArm := map[string]bool{}
	for i := len(runs) - 1; i >= 0; i-- {
		sw := runs[i]
		totals, err := src.ReportTotals(ctx, sw.SweepID, NoFault)
		if err != nil {
			return Trend{}, err
		}
		n, err := src.CountTrials(ctx, sw.SweepID)
		if err != nil {
			return Trend{}, err
		}
		sum := BuildFromTotals(sw, n, totals, TotalsOptions{})
		run := TrendRun{SweepID: sw.SweepID, Rates: map[string]map[string]Cell{}}
		for _, a := range sum.Arms {
			if !seenArm[a.Arm] {
				seenArm[a.Arm] = true
				tr.Arms = append(tr.Arms, a.Arm)
			}
			run.Rates[a.Arm] = map[string]Cell{}
			for _, m := range metrics {
				run.Rates[a.Arm][m] = a.Metrics[m]
			}
		}
		tr.Runs = append(tr.Runs, run)
	}
	return tr, nil
}
