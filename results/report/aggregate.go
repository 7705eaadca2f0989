package report

import (
	"math"
	"slices"

	"rebound/results/record"
	"rebound/stats"
)

// The aggregated route of reports: ClickHouse sums per (arm, scenario,
// metric) and per (arm, fault class, scenario, metric)
// (Source.ReportTotals), and the rates, clustered intervals and
// weighted intervals are computed here from those sums with the totals
// forms of package stats. It gives the numbers [BuildWith] gives from the
// per-case cells (the integration test compares every number of the two
// documents), with O(arms × scenarios × metrics) rows instead of one per
// trial and metric.

// sums is one metric of a block: tested trials, successes, tested cells
// and the weight sums (Σw, Σw·y, Σ over cells of the cell's Σw squared).
type sums struct {
	n, k, cells  int
	sw, swy, sww float64
}

// block is one scenario's cells of an arm (or of a group of arms).
type block struct {
	scenario                    string
	trials, attrition, unsealed int
	m                           row2
}

type row2 [len(row{})]sums

func (b *block) add(o *block) {
	b.trials += o.trials
	b.attrition += o.attrition
	b.unsealed += o.unsealed
	for j := range b.m {
		s, t := &b.m[j], &o.m[j]
		s.n += t.n
		s.k += t.k
		s.cells += t.cells
		s.sw += t.sw
		s.swy += t.swy
		s.sww += t.sww
	}
}

// blocksOf groups totals rows (ordered by scenario within one arm and
// group) into one block per scenario.
func blocksOf(rows []record.RateTotals) []*block {
	var out []*block
	for i := range rows {
		r := &rows[i]
		if len(out) == 0 || out[len(out)-1].scenario != r.Scenario {
			out = append(out, &block{scenario: r.Scenario, trials: int(r.Trials), attrition: int(r.Attrition), unsealed: int(r.Unsealed)})
		}
		j := metricPos(r.Metric)
		if j < 0 || r.N == 0 {
			continue
		}
		out[len(out)-1].m[j] = sums{n: int(r.N), k: int(r.Successes), cells: int(r.TestedCells),
			sw: r.SumWeight, swy: r.SumWeightY, sww: r.SumCellWeightSq}
	}
	return out
}

// pool merges blocks of several arms by scenario (sorted).
func pool(lists ...[]*block) []*block {
	by := map[string]*block{}
	var names []string
	for _, l := range lists {
		for _, b := range l {
			p, ok := by[b.scenario]
			if !ok {
				p = &block{scenario: b.scenario}
				by[b.scenario] = p
				names = append(names, b.scenario)
			}
			p.add(b)
		}
	}
	slices.Sort(names)
	out := make([]*block, len(names))
	for i, n := range names {
		out[i] = by[n]
	}
	return out
}

// rateOfBlocks is rater.rate over blocks, one per scenario.
func rateOfBlocks(conf float64, blocks []*block, j int, clustered bool) Cell {
	var k, n int
	var sw, swy float64
	counts := make([]stats.ClusterCount, 0, len(blocks))
	weighted := make([]stats.WeightedClusterTotal, 0, len(blocks))
	for _, b := range blocks {
		s := b.m[j]
		if s.n == 0 {
			continue
		}
		n += s.n
		k += s.k
		sw += s.sw
		swy += s.swy
		counts = append(counts, stats.ClusterCount{N: s.n, K: s.k})
		weighted = append(weighted, stats.WeightedClusterTotal{Obs: s.cells, SumW: s.sw, SumWY: s.swy, SumWW: s.sww})
	}
	out := untested()
	if n == 0 {
		return out
	}
	out.Successes, out.N = k, n
	name := metricNames()[j]
	if !clustered {
		rt := stats.NewRate(name, k, n, conf)
		out.Rate, out.Lo, out.Hi = rt.Estimate, rt.CI.Lo, rt.CI.Hi
		if sw > 0 {
			out.Weighted = swy / sw
		}
		return out
	}
	rt := stats.RateFromClusterCounts(name, counts, conf, stats.MillerSE)
	out.Rate, out.Lo, out.Hi = rt.Estimate, rt.CI.Lo, rt.CI.Hi
	out.Clusters, out.SE, out.DesignEffect = rt.Clusters, rt.SE, rt.DesignEffect
	switch {
	case rt.Clusters < 2:
		out.SE, out.NotEstimable = math.NaN(), stats.OneCluster
	case !(rt.SE > 0):
		out.SE, out.NotEstimable = math.NaN(), stats.NoVariation
	}
	out.ClusteredLo, out.ClusteredHi = rt.ClusteredCI.Lo, rt.ClusteredCI.Hi
	w := stats.WeightedRateIntervalFromTotals(weighted, conf, stats.MillerSE, rt.DesignEffect)
	out.Weighted, out.WeightedSE, out.WeightedLo, out.WeightedHi = w.Value, w.SE, w.Shown.Lo, w.Shown.Hi
	out.WeightedFloored, out.WeightedNotEstimable = w.Floored, w.NotEstimable
	return out
}

func groupArmOf(conf float64, arm string, blocks []*block, clustered bool) GroupArm {
	ga := GroupArm{Arm: arm, Metrics: map[string]Cell{}}
	for _, b := range blocks {
		ga.Trials += b.trials
	}
	for j, m := range metricNames() {
		ga.Metrics[m] = rateOfBlocks(conf, blocks, j, clustered)
	}
	return ga
}

// TotalsOptions tunes [BuildFromTotals].
type TotalsOptions struct {
	// Confidence of every interval; 0 means [Confidence].
	Confidence float64
	// FaultClasses fills ByFaultClass from the totals' rows by fault class.
	FaultClasses bool
	// Axes: see Options.Axes.
	Axes map[string]map[string]string
}

// BuildFromTotals is [BuildWith] from the sums ClickHouse computed
// (Source.ReportTotals).
func BuildFromTotals(sw record.Sweep, stored uint64, t record.ReportTotals, opt TotalsOptions) Summary {
	conf := opt.Confidence
	if conf == 0 {
		conf = Confidence
	}
	s := Summary{SweepID: sw.SweepID, Name: sw.Name, Status: sw.Status, TrialsPlanned: sw.TrialsPlanned,
		TrialsStored: stored, Confidence: conf}

	order := slices.Clone(sw.Arms)
	byArm := map[string][]*block{}
	for lo := 0; lo < len(t.ByScenario); {
		hi := lo
		for hi < len(t.ByScenario) && t.ByScenario[hi].Arm == t.ByScenario[lo].Arm {
			hi++
		}
		arm := t.ByScenario[lo].Arm
		if !slices.Contains(order, arm) {
			order = append(order, arm)
		}
		byArm[arm] = blocksOf(t.ByScenario[lo:hi])
		lo = hi
	}
	variation := map[string]stats.ArmVariation{}
	for _, v := range t.Variation {
		variation[v.Arm] = stats.ArmVariation{Cases: int(v.Cases), ConstantCases: int(v.ConstantCases)}
	}
	for _, arm := range order {
		blocks, ok := byArm[arm]
		if !ok {
			continue
		}
		as := ArmSummary{Arm: arm, Metrics: map[string]Cell{}, Scenarios: len(blocks), Variation: variation[arm]}
		for _, b := range blocks {
			as.Trials += b.trials
			as.Attrition += b.attrition
			as.Unsealed += b.unsealed
		}
		for j, m := range metricNames() {
			as.Metrics[m] = rateOfBlocks(conf, blocks, j, true)
		}
		s.Arms = append(s.Arms, as)
	}
	arms := s.ArmNames()

	byScenario := map[string]map[string]*block{}
	var scenarios []string
	for _, arm := range arms {
		for _, b := range byArm[arm] {
			m := byScenario[b.scenario]
			if m == nil {
				m = map[string]*block{}
				byScenario[b.scenario] = m
				scenarios = append(scenarios, b.scenario)
			}
			m[arm] = b
		}
	}
	slices.Sort(scenarios)
	for _, sc := range scenarios {
		g := Group{Name: sc}
		for _, arm := range arms {
			if b, ok := byScenario[sc][arm]; ok {
				g.Arms = append(g.Arms, groupArmOf(conf, arm, []*block{b}, false))
			}
		}
		s.ByScenario = append(s.ByScenario, g)
	}

	if opt.FaultClasses {
		byClass := map[string]map[string][]*block{}
		rows := t.ByFaultClass
		for lo := 0; lo < len(rows); {
			hi := lo
			for hi < len(rows) && rows[hi].Arm == rows[lo].Arm && rows[hi].Group == rows[lo].Group {
				hi++
			}
			m := byClass[rows[lo].Group]
			if m == nil {
				m = map[string][]*block{}
				byClass[rows[lo].Group] = m
			}
			m[rows[lo].Arm] = blocksOf(rows[lo:hi])
			lo = hi
		}
		for _, fc := range sortedClasses(byClass) {
			g := Group{Name: fc}
			for _, arm := range arms {
				if blocks, ok := byClass[fc][arm]; ok {
					g.Arms = append(g.Arms, groupArmOf(conf, arm, blocks, true))
				}
			}
			s.ByFaultClass = append(s.ByFaultClass, g)
		}
	}

	values := map[string]map[string][][]*block{} // axis -> value -> arms' blocks
	for _, arm := range arms {
		for axis, v := range opt.Axes[arm] {
			if values[axis] == nil {
				values[axis] = map[string][][]*block{}
			}
			values[axis][v] = append(values[axis][v], byArm[arm])
		}
	}
	for _, axis := range sortedClasses(values) {
		b := AxisBreakdown{Axis: axis}
		for _, v := range sortedClasses(values[axis]) {
			g := Group{Name: v}
			pooled := pool(values[axis][v]...)
			if len(pooled) > 0 {
				g.Arms = append(g.Arms, groupArmOf(conf, PooledArm, pooled, true))
			}
			b.Groups = append(b.Groups, g)
		}
		s.ByAxis = append(s.ByAxis, b)
	}
	return s
}
