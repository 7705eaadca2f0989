package report

import (
	"math"
	"slices"
	"sort"
	"strings"

	"rebound/core/outcome"
	"rebound/results/record"
	"rebound/stats"
)

// Confidence is the default level of every interval in reports.
const Confidence = 0.95

// NoFault is the fault-class row of trials whose schedule injected nothing.
const NoFault = "none"

// Key identifies one case: the unit two arms are paired on.
type Key struct {
	Scenario string
	Variant  string
	Seed     uint64
}

func keyOf(c *record.Cell) Key { return Key{c.Scenario, c.Variant, c.Seed} }

func compareKeys(a, b Key) int {
	if c := strings.Compare(a.Scenario, b.Scenario); c != 0 {
		return c
	}
	if c := strings.Compare(a.Variant, b.Variant); c != 0 {
		return c
	}
	switch {
	case a.Seed < b.Seed:
		return -1
	case a.Seed > b.Seed:
		return 1
	}
	return 0
}

// Case is what reports know about a case beyond its counts.
type Case struct {
	// FaultClasses are the classes of the faults scheduled for the case
	// (derived from the variant and the seed, so the same in every arm).
	// Empty: nothing was injected.
	FaultClasses []string
}

// CasesFromTrials collects the fault classes of every case of the given
// trials (any arms, any sweeps): the union over the trials of a case, sorted.
//
// This reads whole trial rows; a sweep of a million trials is better served
// by a fault_classes column on storage's Store.Cells (see the package docs).
func CasesFromTrials(trials ...[]record.Trial) map[Key]Case {
	out := map[Key]Case{}
	for _, list := range trials {
		for i := range list {
			t := &list[i]
			k := Key{t.Scenario, t.Variant, t.Seed}
			c := out[k]
			for _, fc := range t.FaultClasses {
				if !slices.Contains(c.FaultClasses, fc) {
					c.FaultClasses = append(c.FaultClasses, fc)
				}
			}
			sort.Strings(c.FaultClasses)
			out[k] = c
		}
	}
	return out
}

// CasesFromFaults builds the cases from storage's SQL aggregation
// (Store.CaseFaults): the scalable route to the fault-class breakdown.
func CasesFromFaults(rows []record.CaseFaults) map[Key]Case {
	out := make(map[Key]Case, len(rows))
	for _, r := range rows {
		out[Key{r.Scenario, r.Variant, r.Seed}] = Case{FaultClasses: r.FaultClasses}
	}
	return out
}

// ScenarioHashes maps each scenario of the trials to the hash of its file;
// a scenario run from two different files maps to "mixed". Comparing two
// sweeps pairs cases by name, so a changed scenario file is worth a warning.
func ScenarioHashes(trials []record.Trial) map[string]string {
	out := map[string]string{}
	for i := range trials {
		t := &trials[i]
		if h, ok := out[t.Scenario]; ok && h != t.ScenarioHash {
			out[t.Scenario] = "mixed"
			continue
		}
		out[t.Scenario] = t.ScenarioHash
	}
	return out
}

// CellsFromTrials aggregates trials per (arm, scenario, variant, seed) the
// way storage's Store.Cells does in SQL, ordered the same way. It is meant for
// tests and small in-memory data; sweeps are aggregated by ClickHouse.
func CellsFromTrials(trials []record.Trial) []record.Cell {
	type key struct {
		arm string
		Key
	}
	idx := map[key]int{}
	var cells []record.Cell
	for i := range trials {
		t := &trials[i]
		k := key{t.Arm, Key{t.Scenario, t.Variant, t.Seed}}
		j, ok := idx[k]
		if !ok {
			j = len(cells)
			idx[k] = j
			cells = append(cells, record.Cell{Arm: t.Arm, Scenario: t.Scenario, Variant: t.Variant, Seed: t.Seed,
				Metrics: make(map[outcome.Metric]outcome.Cell, len(outcome.Stored))})
		}
		c := &cells[j]
		c.Trials++
		if t.Attrition {
			c.Attrition++
		}
		if t.Unsealed {
			c.Unsealed++
		}
		var harmTested, harm bool
		for _, m := range outcome.Stored {
			mc := c.Metrics[m]
			if o := t.Outcome(m); o != nil && !t.Attrition {
				mc.N++
				mc.SumWeight += t.Weight
				if *o {
					mc.Successes++
					mc.SumWeightY += t.Weight
				}
				if slices.Contains(HarmComponents, string(m)) {
					harmTested, harm = true, harm || *o
				}
			}
			c.Metrics[m] = mc
		}
		mc := c.Metrics[outcome.Harm]
		if harmTested {
			mc.N++
			mc.SumWeight += t.Weight
			if harm {
				mc.Successes++
				mc.SumWeightY += t.Weight
			}
		}
		c.Metrics[outcome.Harm] = mc
	}
	sort.SliceStable(cells, func(i, j int) bool {
		if cells[i].Arm != cells[j].Arm {
			return cells[i].Arm < cells[j].Arm
		}
		return compareKeys(keyOf(&cells[i]), keyOf(&cells[j])) < 0
	})
	return cells
}

// Cell is one metric of one arm (of one group, in breakdowns): the rate
// with its intervals. NaN means NOT TESTED (N = 0) or undefined; it is shown
// as "not tested" and written as null in JSON.
type Cell struct {
	Successes int     // trials where the outcome was true
	N         int     // trials where the metric was tested
	Rate      float64 // Successes/N
	Lo, Hi    float64 // Wilson score interval
	// Clusters is the number of scenarios with a tested trial; SE is the
	// standard error of Rate clustered by scenario (Miller 2024), and
	// ClusteredLo/Hi the Wilson interval on the effective sample size
	// N/design effect (never narrower than Lo/Hi). NaN in breakdowns by
	// scenario, where there is one cluster.
	Clusters                 int
	SE                       float64
	ClusteredLo, ClusteredHi float64
	DesignEffect             float64
	// NotEstimable says why SE is NaN in a clustered cell: one scenario, or
	// every trial agreeing (the formula would give a zero SE, which reads
	// as certainty). The Wilson interval still stands.
	NotEstimable string
	// Weighted is the consequence-weighted rate Σw·y/Σw, with its clustered
	// linearization SE; WeightedLo/Hi is the linearization interval widened,
	// when narrower, to the Wilson floor on Kish's effective sample size
	// divided by the clustered design effect (WeightedFloored says so): a
	// weighted rate never claims more precision than its unweighted clustered
	// interval would give the same number of equally weighted trials.
	// WeightedNotEstimable says why the SE is undefined (one scenario, or all
	// trials agree); WeightedSE is then NaN and the interval is the floor.
	Weighted, WeightedSE, WeightedLo, WeightedHi float64
	WeightedFloored                              bool
	WeightedNotEstimable                         string
}

// Tested reports whether any trial had evidence for the metric.
func (c Cell) Tested() bool { return c.N > 0 }

// ShownLo and ShownHi are the interval reports display: the clustered one
// when it is defined, else Wilson's.
func (c Cell) ShownLo() float64 {
	if !math.IsNaN(c.ClusteredLo) {
		return c.ClusteredLo
	}
	return c.Lo
}

// ShownHi: see ShownLo.
func (c Cell) ShownHi() float64 {
	if !math.IsNaN(c.ClusteredHi) {
		return c.ClusteredHi
	}
	return c.Hi
}

func untested() Cell {
	nan := math.NaN()
	return Cell{Rate: nan, Lo: nan, Hi: nan, SE: nan, ClusteredLo: nan, ClusteredHi: nan, DesignEffect: nan,
		Weighted: nan, WeightedSE: nan, WeightedLo: nan, WeightedHi: nan}
}

// counts is one metric of one cell, flattened out of record.Cell's map.
type counts struct {
	n, k    uint32
	sw, swy float64
}

// row holds a cell's metrics in report order (metricNames). Reading a
// million cells' maps once, instead of once per metric and per breakdown,
// is what keeps a report of a million trials within a few seconds.
type row [10]counts

func metricPos(m outcome.Metric) int {
	for i, name := range metricNames() {
		if string(m) == name {
			return i
		}
	}
	return -1
}

func flatten(cells []record.Cell) []row {
	rows := make([]row, len(cells))
	for i := range cells {
		for m, mc := range cells[i].Metrics {
			if j := metricPos(m); j >= 0 && mc.N > 0 {
				rows[i][j] = counts{uint32(mc.N), uint32(mc.Successes), mc.SumWeight, mc.SumWeightY}
			}
		}
	}
	return rows
}

// rater computes Cells from cells, reusing its buffers across calls so that a
// million trials cost a few slices, not millions of allocations.
type rater struct {
	conf     float64
	cells    []record.Cell
	rows     []row
	outcomes []stats.Outcome
	weighted []stats.WeightedObs
}

func newRater(conf float64, cells []record.Cell) *rater {
	return &rater{conf: conf, cells: cells, rows: flatten(cells)}
}

// rate computes metric j (its position in metricNames) over cells[idx].
// clustered = false computes counts, Wilson and the weighted point estimate
// only (for groups that are a single scenario). A cell holding several trials
// contributes each of them.
func (r *rater) rate(idx []int32, j int, clustered bool) Cell {
	r.outcomes, r.weighted = r.outcomes[:0], r.weighted[:0]
	var k, n int
	var sw, swy float64
	for _, i := range idx {
		mc := r.rows[i][j]
		if mc.n == 0 {
			continue
		}
		n += int(mc.n)
		k += int(mc.k)
		sw += mc.sw
		swy += mc.swy
		if !clustered {
			continue
		}
		sc := r.cells[i].Scenario
		for t := uint32(0); t < mc.n; t++ {
			r.outcomes = append(r.outcomes, stats.Outcome{Cluster: sc, Success: t < mc.k})
		}
		// One weighted observation per cell: Σw·y and Σw of its trials keep
		// the cluster totals, which is all the linearization variance uses.
		y := 0.0
		if mc.sw > 0 {
			y = mc.swy / mc.sw
		}
		r.weighted = append(r.weighted, stats.WeightedObs{Cluster: sc, Y: y, W: mc.sw})
	}
	out := untested()
	if n == 0 {
		return out
	}
	out.Successes, out.N = k, n
	name := metricNames()[j]
	if !clustered {
		rt := stats.NewRate(name, k, n, r.conf)
		out.Rate, out.Lo, out.Hi = rt.Estimate, rt.CI.Lo, rt.CI.Hi
		if sw > 0 {
			out.Weighted = swy / sw
		}
		return out
	}
	rt := stats.RateFromOutcomes(name, r.outcomes, r.conf, stats.MillerSE)
	out.Rate, out.Lo, out.Hi = rt.Estimate, rt.CI.Lo, rt.CI.Hi
	out.Clusters, out.SE, out.DesignEffect = rt.Clusters, rt.SE, rt.DesignEffect
	switch {
	case rt.Clusters < 2:
		out.SE, out.NotEstimable = math.NaN(), stats.OneCluster
	case !(rt.SE > 0):
		out.SE, out.NotEstimable = math.NaN(), stats.NoVariation
	}
	out.ClusteredLo, out.ClusteredHi = rt.ClusteredCI.Lo, rt.ClusteredCI.Hi
	w := stats.WeightedRateInterval(r.weighted, r.conf, stats.MillerSE, rt.DesignEffect)
	out.Weighted, out.WeightedSE, out.WeightedLo, out.WeightedHi = w.Value, w.SE, w.Shown.Lo, w.Shown.Hi
	out.WeightedFloored, out.WeightedNotEstimable = w.Floored, w.NotEstimable
	return out
}

// MetricHarm is the headline harm index: per trial, unsafe_action OR
// duplicate_side_effect OR fabricated_claim. It is tested when any of the
// three was tested and true when any tested one was true; reports show its
// consequence-weighted rate first. Storage computes it per trial in SQL
// (outcome.Harm); [CellsFromTrials] computes it the same way.
const MetricHarm = string(outcome.Harm)

// HarmComponents are the outcomes the harm index ORs together.
var HarmComponents = outcome.Names(outcome.HarmComponents)

// HigherIsBetter tells the direction of a reported metric (the harm index
// and the bad outcomes are better when lower).
func HigherIsBetter(metric string) bool { return outcome.Metric(metric).HigherIsBetter() }

// KnownMetric reports whether reports compute the metric.
func KnownMetric(metric string) bool { return slices.Contains(metricNames(), metric) }

var reportedMetrics = outcome.Names(outcome.Reported)

// metricNames are the reported metrics in report order: the harm index
// first, then the graded outcomes.
func metricNames() []string { return reportedMetrics }

// MetricNames lists the reported metrics in report order.
func MetricNames() []string { return slices.Clone(reportedMetrics) }
