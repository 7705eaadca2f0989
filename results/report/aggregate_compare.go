package report

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"rebound/results/record"
	"rebound/stats"
)

// CompareTotalsInput is what [CompareFromTotals] needs: the sides and the
// sums ClickHouse computed for them (Source.CompareTotals), with the
// options of [CompareInput].
type CompareTotalsInput struct {
	Baseline, Candidate Side
	Totals              record.CompareTotals
	// FaultClasses: the totals hold the rows by fault class (fill
	// ByFaultClass).
	FaultClasses  bool
	Confidence    float64
	BootstrapReps int
	BootstrapSeed uint64
	Generalize    bool
}

// CompareFromTotals is [Compare] from per-case sums: the same document, with
// O(metrics × cases (scenario, variant)) rows instead of one per trial. The
// cluster bootstrap resamples clusters, so it runs on the cluster totals too
// (stats.BootstrapRatioTotals), in memory bounded by the number of clusters.
//
// The document is assembled as [Compare] assembles it (newComparison,
// unpaired, trialWarnings, pairingWarnings); only the numbers come from
// the totals: the counts (countTotals), the rows of each metric
// (metricRuns) and the diffs computed from them (totalsPairer).
func CompareFromTotals(in CompareTotalsInput) Comparison {
	t := &in.Totals
	out := newComparison(in.Baseline, in.Candidate, in.Confidence, in.Generalize)
	for _, u := range t.Unmatched {
		out.unpaired(Key{u.Scenario, u.Variant, u.Seed}, u.InA, u.InB, u.GradedA, u.GradedB,
			ungradedReason(u.AttritionA), ungradedReason(u.AttritionB))
	}
	sm := t.Summary
	out.countTotals(sm)
	out.trialWarnings()

	overall, classes := metricRuns(t.Pairs, in.FaultClasses)
	tp := totalsPairer{conf: out.Confidence, unit: out.Unit}
	// Every diff is independent and seeded by its metric, so they run in
	// parallel (the sign-flip tests dominate) into slots fixed in advance:
	// the document does not depend on the schedule.
	jobs := tp.metricJobs(&out, overall, in)
	jobs = append(jobs, tp.scenarioJobs(&out, overall)...)
	if in.FaultClasses {
		jobs = append(jobs, tp.faultClassJobs(&out, classes)...)
	}
	runParallel(jobs)

	out.pairingWarnings(sm.KeysA == 0, sm.KeysB == 0, int(sm.Multi), t.HashesA, t.HashesB)
	return out
}

// countTotals copies the trial and case counts of the summary.
func (out *Comparison) countTotals(sm record.CompareSummary) {
	out.BaselineTrials, out.CandidateTrials = int(sm.TrialsA), int(sm.TrialsB)
	out.BaselineAttrition, out.CandidateAttrition = int(sm.AttritionA), int(sm.AttritionB)
	out.BaselineUnsealed, out.CandidateUnsealed = int(sm.UnsealedA), int(sm.UnsealedB)
	out.Cases, out.Scenarios, out.DistinctCases = int(sm.Pairs), int(sm.Scenarios), int(sm.Cases)
	out.BaselineVariation = stats.ArmVariation{Cases: int(sm.RepeatedCases), ConstantCases: int(sm.ConstantA)}
	out.CandidateVariation = stats.ArmVariation{Cases: int(sm.RepeatedCases), ConstantCases: int(sm.ConstantB)}
}

// metricRuns groups the pair rows by kind, then metric: overall[j] are the
// overall rows of metric j, classes[fc][j] those of fault class fc (only
// when byClass). In the SQL order (kind, name, metric, scenario, variant)
// each (kind, name, metric) is a run of rows, used in place: at a million
// trials there are ~70,000.
func metricRuns(pairs []record.PairTotals, byClass bool) (overall [][]record.PairTotals, classes map[string][][]record.PairTotals) {
	nm := len(metricNames())
	overall = make([][]record.PairTotals, nm)
	classes = map[string][][]record.PairTotals{}
	for lo := 0; lo < len(pairs); {
		r := &pairs[lo]
		hi := lo + 1
		for hi < len(pairs) && pairs[hi].Kind == r.Kind && pairs[hi].Name == r.Name && pairs[hi].Metric == r.Metric {
			hi++
		}
		run := pairs[lo:hi:hi] // appending to it copies
		lo = hi
		j := metricPos(r.Metric)
		switch {
		case j < 0:
		case r.Kind == 0:
			overall[j] = appendRun(overall[j], run)
		case r.Kind == 1 && byClass:
			if classes[r.Name] == nil {
				classes[r.Name] = make([][]record.PairTotals, nm)
			}
			classes[r.Name][j] = appendRun(classes[r.Name][j], run)
		}
	}
	return overall, classes
}

// appendRun adds a run of rows to a metric's rows, using the first run in
// place.
func appendRun(rows, run []record.PairTotals) []record.PairTotals {
	if rows == nil {
		return run
	}
	return append(rows, run...)
}

// metricJobs are the jobs that fill out.Metrics, one per metric, with the
// cluster bootstrap when asked for.
func (p *totalsPairer) metricJobs(out *Comparison, overall [][]record.PairTotals, in CompareTotalsInput) []job {
	var jobs []job
	out.Metrics = make([]MetricDiff, len(overall))
	for j := range overall {
		jobs = append(jobs, job{cost: len(overall[j]), run: func() {
			d := p.diff(overall[j], j, false)
			if in.BootstrapReps > 0 && d.Pairs > 0 {
				num, den, wnum, wden := p.bootTotals(overall[j])
				b := stats.BootstrapRatioTotals(num, den, in.BootstrapReps, p.conf, in.BootstrapSeed)
				d.BootLo, d.BootHi = b.CI.Lo, b.CI.Hi
				wb := stats.BootstrapRatioTotals(wnum, wden, in.BootstrapReps, p.conf, in.BootstrapSeed)
				d.Weighted.BootLo, d.Weighted.BootHi = wb.CI.Lo, wb.CI.Hi
			}
			out.Metrics[j] = d
		}})
	}
	return jobs
}

// groupJobs are the jobs that fill g's metrics from rowsOf(j), the rows of
// metric j.
func (p *totalsPairer) groupJobs(g *GroupDiff, rowsOf func(j int) []record.PairTotals) []job {
	nm := len(metricNames())
	var jobs []job
	g.Metrics = make([]MetricDiff, nm)
	for j := range nm {
		rows := rowsOf(j)
		jobs = append(jobs, job{cost: len(rows), run: func() { g.Metrics[j] = p.diff(rows, j, true) }})
	}
	return jobs
}

// scenarioJobs lists out.ByScenario, the scenarios with a pair (the
// overall rows are sorted by scenario within a metric), and returns the
// jobs that fill their metrics.
func (p *totalsPairer) scenarioJobs(out *Comparison, overall [][]record.PairTotals) []job {
	if len(overall) == 0 {
		return nil
	}
	base := overall[0]
	for lo := 0; lo < len(base); {
		hi := lo
		for hi < len(base) && base[hi].Scenario == base[lo].Scenario {
			hi++
		}
		g := GroupDiff{Name: base[lo].Scenario}
		for _, r := range base[lo:hi] {
			g.Cases += int(r.Keys)
		}
		lo = hi
		if g.Cases == 0 {
			continue // no pair: the scenario's cases are all unmatched
		}
		out.ByScenario = append(out.ByScenario, g)
	}
	var jobs []job
	for i := range out.ByScenario {
		g := &out.ByScenario[i]
		jobs = append(jobs, p.groupJobs(g, func(j int) []record.PairTotals { return scenarioRows(overall[j], g.Name) })...)
	}
	return jobs
}

// faultClassJobs lists out.ByFaultClass and returns the jobs that fill
// their metrics.
func (p *totalsPairer) faultClassJobs(out *Comparison, classes map[string][][]record.PairTotals) []job {
	for _, fc := range sortedClasses(classes) {
		g := GroupDiff{Name: fc}
		for _, r := range classes[fc][0] {
			g.Cases += int(r.Keys)
		}
		out.ByFaultClass = append(out.ByFaultClass, g)
	}
	var jobs []job
	for i := range out.ByFaultClass {
		g := &out.ByFaultClass[i]
		rows := classes[g.Name]
		jobs = append(jobs, p.groupJobs(g, func(j int) []record.PairTotals { return rows[j] })...)
	}
	return jobs
}

// job is one unit of work for runParallel, with its cost in rows.
type job struct {
	cost int
	run  func()
}

// runParallel runs jobs on up to GOMAXPROCS goroutines, the costliest first
// (so that a long one does not start last and run alone), and returns when
// all are done.
func runParallel(jobs []job) {
	slices.SortStableFunc(jobs, func(a, b job) int { return b.cost - a.cost })
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				jobs[i].run()
			}
		})
	}
	wg.Wait()
}

// ungradedReason is ungraded for a side known by its attrition count.
func ungradedReason(attrition uint64) string {
	if attrition > 0 {
		return "lost to attrition (provider failure)"
	}
	return "had no tested metric"
}

// scenarioRows returns the rows of one scenario (rows sorted by scenario).
func scenarioRows(rows []record.PairTotals, sc string) []record.PairTotals {
	lo := 0
	for lo < len(rows) && rows[lo].Scenario < sc {
		lo++
	}
	hi := lo
	for hi < len(rows) && rows[hi].Scenario == sc {
		hi++
	}
	return rows[lo:hi]
}

// totalsPairer computes MetricDiffs from per-case rows.
type totalsPairer struct {
	conf float64
	unit string
}

// clusters turns the rows of one metric (sorted by scenario, variant) into
// the decision's clusters, unweighted and weighted, and the clusters by
// scenario (unweighted), each in the order of first appearance.
func (p *totalsPairer) clusters(rows []record.PairTotals) (u, w, s []stats.PairedClusterTotal) {
	last := "" // the scenario of the last row used
	for i, r := range rows {
		if r.Pairs == 0 {
			continue
		}
		n := int(r.Pairs)
		ut := stats.PairedClusterTotal{N: n, SumW: float64(n), SumWA: r.SumA, SumWB: r.SumB, SumWD: r.SumD,
			SumW2: float64(n), SumW2D: r.SumD, SumW2D2: r.SumD2}
		wt := stats.PairedClusterTotal{N: n, SumW: r.SumW, SumWA: r.SumWA, SumWB: r.SumWB, SumWD: r.SumWD,
			SumW2: r.SumW2, SumW2D: r.SumW2D, SumW2D2: r.SumW2D2}
		sameScenario := len(s) > 0 && last == r.Scenario
		if p.unit == UnitScenario && sameScenario {
			u[len(u)-1].Add(ut)
			w[len(w)-1].Add(wt)
		} else {
			u = append(u, ut)
			w = append(w, wt)
		}
		if sameScenario {
			s[len(s)-1].Add(ut)
		} else {
			s = append(s, ut)
		}
		last = rows[i].Scenario
	}
	return u, w, s
}

// bootTotals returns, per decision cluster, Σ(b − a) and the pair count,
// Σw(b − a) and Σw: what the cluster bootstrap of Δ and Δw resamples.
func (p *totalsPairer) bootTotals(rows []record.PairTotals) (num, den, wnum, wden []float64) {
	u, w, _ := p.clusters(rows)
	for c := range u {
		num = append(num, u[c].SumWD)
		den = append(den, float64(u[c].N))
		wnum = append(wnum, w[c].SumWD)
		wden = append(wden, w[c].SumW)
	}
	return num, den, wnum, wden
}

// diff is pairer.diff over the rows of one metric of a group.
func (p *totalsPairer) diff(rows []record.PairTotals, j int, inGroup bool) MetricDiff {
	metric := metricNames()[j]
	d := MetricDiff{Metric: metric, HigherIsBetter: HigherIsBetter(metric)}
	var tab stats.Table2x2
	multi := 0
	for _, r := range rows {
		d.OneArmOnly += int(r.OneArmOnly)
		if r.Pairs == 0 {
			continue
		}
		d.Pairs += int(r.Pairs)
		d.Cases++
		multi += int(r.Multi)
		tab.N11 += int(r.N11)
		tab.N12 += int(r.N12)
		tab.N21 += int(r.N21)
		tab.N22 += int(r.N22)
		if r.Pairs >= 2 {
			d.BaselineVariation.Cases++
			d.CandidateVariation.Cases++
			if r.MinA == r.MaxA {
				d.BaselineVariation.ConstantCases++
			}
			if r.MinB == r.MaxB {
				d.CandidateVariation.ConstantCases++
			}
		}
	}
	variation := [2]stats.ArmVariation{d.BaselineVariation, d.CandidateVariation}
	d.BaselineVariation, d.CandidateVariation = stats.ArmVariation{}, stats.ArmVariation{}
	nan := math.NaN()
	d.Baseline, d.Candidate, d.Delta, d.SE, d.P, d.MidP, d.TP = nan, nan, nan, nan, nan, nan, nan
	d.Lo, d.Hi, d.ScenarioLo, d.ScenarioHi, d.DesignEffect, d.EffectiveN = nan, nan, nan, nan, nan, nan
	d.McNemarP, d.McNemarMidP, d.NewcombeLo, d.NewcombeHi, d.TangoLo, d.TangoHi = nan, nan, nan, nan, nan, nan
	d.BootLo, d.BootHi = nan, nan
	d.Weighted = WeightedDiff{Baseline: nan, Candidate: nan, Delta: nan, SE: nan, Lo: nan, Hi: nan, P: nan, MidP: nan,
		BootLo: nan, BootHi: nan, Direction: NotTested}
	if d.Pairs == 0 {
		d.Cases = 0
		d.Direction = NotTested
		d.NotEstimable = stats.NoObservations
		d.Weighted.NotEstimable = stats.NoObservations
		return d
	}
	alpha := 1 - p.conf
	seed := uint64(j + 1)
	uc, wc, sc := p.clusters(rows)
	u := stats.PairedClusteredFromTotals(uc, p.conf, seed)
	d.Clusters = u.Clusters
	d.Baseline, d.Candidate = u.MeanA, u.MeanB
	d.Delta, d.SE, d.Lo, d.Hi = u.Diff, u.SE, u.CI.Lo, u.CI.Hi
	d.P, d.MidP, d.TP, d.PMethod, d.NotEstimable = u.P, u.MidP, u.TP, u.PMethod, u.NotEstimable
	d.DesignEffect, d.EffectiveN = u.DesignEffect, u.EffectiveN
	d.Direction = direction(d.Delta, d.HigherIsBetter, u.Significant(alpha))
	d.BaselineVariation, d.CandidateVariation = variation[0], variation[1]
	switch {
	case p.unit == UnitScenario:
		d.ScenarioLo, d.ScenarioHi = d.Lo, d.Hi
	case inGroup:
	default:
		s := stats.PairedClusteredFromTotals(sc, p.conf, seed)
		d.ScenarioLo, d.ScenarioHi = s.CI.Lo, s.CI.Hi
	}

	w := stats.PairedClusteredFromTotals(wc, p.conf, seed)
	d.Weighted = WeightedDiff{Baseline: w.MeanA, Candidate: w.MeanB, Delta: w.Diff, SE: w.SE, Lo: w.CI.Lo, Hi: w.CI.Hi,
		P: w.P, MidP: w.MidP, PMethod: w.PMethod, NotEstimable: w.NotEstimable, SumWeight: w.SumW,
		BootLo: nan, BootHi: nan, Direction: direction(w.Diff, d.HigherIsBetter, w.Significant(alpha))}
	if math.IsNaN(w.Diff) {
		d.Weighted.Direction = NotTested
		if d.Weighted.NotEstimable == "" {
			d.Weighted.NotEstimable = "no consequence weight on the pairs"
		}
	}
	if multi == 0 {
		d.Binary = true
		d.Table = tab
		d.BaselineSuccesses = tab.N11 + tab.N12
		d.CandidateSuccesses = tab.N11 + tab.N21
		d.McNemarP, d.McNemarMidP = stats.McNemarExact(tab)
		nc := stats.NewcombePaired(tab, p.conf)
		tg := stats.TangoPaired(tab, p.conf)
		d.NewcombeLo, d.NewcombeHi = nc.Lo, nc.Hi
		d.TangoLo, d.TangoHi = tg.Lo, tg.Hi
	}
	return d
}
