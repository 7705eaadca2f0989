package report

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"rebound/grade"
	"rebound/stats"
	"rebound/storage"
)

// Directions of a paired difference, from the candidate's point of view.
const (
	Better    = "better"
	Worse     = "worse"
	NoChange  = "no change"
	NotTested = "not tested"
)

// Side names one arm of a comparison: an arm of a sweep.
type Side struct {
	SweepID string
	Arm     string
}

func (s Side) String() string { return s.Arm + " (sweep " + s.SweepID + ")" }

// CompareInput is everything [Compare] needs. Cells may hold other arms;
// only the named arm of each side is used. Cross-sweep comparisons pass the
// cells of two sweeps.
type CompareInput struct {
	Baseline, Candidate           Side
	BaselineCells, CandidateCells []storage.Cell
	// Cases gives fault classes per case (optional; see CasesFromTrials).
	Cases map[Key]Case
	// BaselineHashes and CandidateHashes map scenario to file hash (optional;
	// see ScenarioHashes): a scenario whose file changed between the sides
	// is named in a warning.
	BaselineHashes, CandidateHashes map[string]string
	// Confidence of every interval and the level of the direction test;
	// 0 means [Confidence].
	Confidence float64
	// BootstrapReps > 0 adds a seeded cluster-bootstrap interval of each
	// metric's difference (BootstrapSeed seeds it); it costs reps passes over
	// the pairs.
	BootstrapReps int
	BootstrapSeed uint64
}

// MetricDiff is the paired comparison of one metric: candidate − baseline
// over the cases where the metric was tested in both arms.
type MetricDiff struct {
	Metric         string
	HigherIsBetter bool

	Pairs    int // cases tested in both arms
	Clusters int // scenarios among them
	// OneArmOnly counts cases where the metric was tested in one arm but
	// not the other (NOT TESTED in the other): excluded from the pairs.
	OneArmOnly int

	// Baseline and Candidate are the rates over the pairs; with one trial per
	// case, BaselineSuccesses/CandidateSuccesses are their numerators.
	Baseline, Candidate                   float64
	BaselineSuccesses, CandidateSuccesses int

	// Delta is the mean paired difference candidate − baseline; SE its
	// standard error clustered by scenario and ClusteredLo/Hi = Delta ± z·SE.
	Delta, SE                float64
	ClusteredLo, ClusteredHi float64
	// ClusteredP is the two-sided p-value of Delta/SE against a normal.
	// All four are NaN with a single scenario, where the clustered SE is 0
	// by construction.
	ClusteredP float64

	// Binary: every case held one trial per arm, so the outcomes are 0/1 and
	// the 2×2 table, McNemar and the Newcombe/Tango intervals exist
	// (they treat pairs as independent).
	Binary                 bool
	Table                  stats.Table2x2
	McNemarP, McNemarMidP  float64
	NewcombeLo, NewcombeHi float64
	TangoLo, TangoHi       float64

	// BootLo/BootHi is the seeded cluster-bootstrap percentile interval of
	// Delta, a cross-check; NaN unless CompareInput.BootstrapReps > 0.
	BootLo, BootHi float64

	// The decision quantities, used for Direction and by package gate. They
	// answer "is the candidate worse on these cases?": given the scenarios,
	// the pairs are independent (each seed is its own draw), so for binary
	// outcomes they are exact or score-based and unaffected by how a change
	// is spread over scenarios:
	//
	//   - Lo/Hi, the decision interval: Tango's score interval (recommended
	//     for paired proportions by Fagerland et al. 2014); the clustered
	//     interval when the outcomes are not binary.
	//   - P, the decision p-value: McNemar's mid-p, which Fagerland,
	//     Lydersen & Laake (2013, BMC Med Res Methodol 13:91) recommend over
	//     the exact conditional test (too conservative: with 5 discordant
	//     pairs all one way its p never goes below 1/16); ClusteredP when not
	//     binary. The exact p is reported beside it.
	//   - Direction: Worse (Better) when the candidate moved the bad (good)
	//     way, P ≤ 1 − confidence and the decision interval excludes 0;
	//     NoChange otherwise; NotTested without pairs.
	//
	// The clustered interval and p answer a different question, "would the
	// difference hold on new scenarios like these?", and are reported beside
	// them: a change confined to one scenario of four is certain on the
	// cases yet uncertain as a property of the agent.
	Lo, Hi    float64
	P         float64
	Direction string
}

// Unmatched is a case that could not be paired: present in one arm only,
// or present in both but lost to attrition (or never graded) in one.
type Unmatched struct {
	Key
	// Side is "baseline" or "candidate": the side that has a graded trial.
	// For a case with no graded trial in either arm it is "neither".
	Side   string
	Reason string
}

// Comparison is the paired comparison of a candidate arm against a baseline.
type Comparison struct {
	Baseline, Candidate Side
	Confidence          float64
	// Cases is the number of cases graded in both arms (the pairs before
	// NOT TESTED is excluded per metric); Scenarios the distinct scenarios
	// among them.
	Cases     int
	Scenarios int
	// Trials and attrition of each side (all its cases, paired or not).
	BaselineTrials, CandidateTrials       int
	BaselineAttrition, CandidateAttrition int

	Metrics []MetricDiff // in report order

	// ByFaultClass and ByScenario repeat the paired comparison within each
	// fault class (a case counts in each of its classes) and each scenario.
	ByFaultClass []GroupDiff
	ByScenario   []GroupDiff

	// Unmatched lists every case that could not be paired, sorted; never
	// dropped silently.
	Unmatched                             []Unmatched
	UnmatchedBaseline, UnmatchedCandidate int // graded only in that side
	UnmatchedNeither                      int // graded in neither
	Warnings                              []string
	Gate                                  *Gate // set by package gate
}

// GroupDiff is the paired comparison within one fault class or scenario.
type GroupDiff struct {
	Name    string
	Cases   int
	Metrics []MetricDiff
}

// Metric returns the diff of the named metric.
func (c *Comparison) Metric(name string) (MetricDiff, bool) {
	for _, m := range c.Metrics {
		if m.Metric == name {
			return m, true
		}
	}
	return MetricDiff{}, false
}

// Worse lists the metrics on which the candidate is worse; Better those on
// which it is better.
func (c *Comparison) Worse() []MetricDiff  { return c.filter(Worse) }
func (c *Comparison) Better() []MetricDiff { return c.filter(Better) }

func (c *Comparison) filter(dir string) []MetricDiff {
	var out []MetricDiff
	for _, m := range c.Metrics {
		if m.Direction == dir {
			out = append(out, m)
		}
	}
	return out
}

// armCells returns the indices of arm's cells sorted by case key.
func armCells(cells []storage.Cell, arm string) []int32 {
	var idx []int32
	sorted := true
	for i := range cells {
		if cells[i].Arm != arm {
			continue
		}
		if n := len(idx); n > 0 && compareKeys(keyOf(&cells[idx[n-1]]), keyOf(&cells[i])) > 0 {
			sorted = false
		}
		idx = append(idx, int32(i))
	}
	if !sorted {
		slices.SortStableFunc(idx, func(a, b int32) int { return compareKeys(keyOf(&cells[a]), keyOf(&cells[b])) })
	}
	return idx
}

// graded reports whether any metric of the cell was tested (a cell lost to
// attrition has none).
func (r *row) graded() bool {
	for _, mc := range r {
		if mc.n > 0 {
			return true
		}
	}
	return false
}

// ungraded says why a cell has no tested metric.
func ungraded(c *storage.Cell) string {
	if c.Attrition > 0 {
		return "lost to attrition (provider failure)"
	}
	return "had no tested metric"
}

// pair is one case present in both arms: indices into the two cell slices.
type pair struct{ a, b int32 }

// Compare pairs the candidate's cases with the baseline's on (scenario,
// variant, seed) and compares every metric. It is a pure function of its
// input.
func Compare(in CompareInput) Comparison {
	conf := in.Confidence
	if conf == 0 {
		conf = Confidence
	}
	out := Comparison{Baseline: in.Baseline, Candidate: in.Candidate, Confidence: conf}
	ac, bc := in.BaselineCells, in.CandidateCells
	ai, bi := armCells(ac, in.Baseline.Arm), armCells(bc, in.Candidate.Arm)
	ra, rb := flatten(ac), []row(nil)
	if len(bc) == len(ac) && (len(bc) == 0 || &bc[0] == &ac[0]) {
		rb = ra // one sweep: flatten it once
	} else {
		rb = flatten(bc)
	}

	// Merge join on the sorted keys.
	var pairs []pair
	multi := 0
	unmatched := func(c *storage.Cell, side, reason string) {
		out.Unmatched = append(out.Unmatched, Unmatched{Key: keyOf(c), Side: side, Reason: reason})
	}
	i, j := 0, 0
	for i < len(ai) || j < len(bi) {
		var ca, cb *storage.Cell
		if i < len(ai) {
			ca = &ac[ai[i]]
		}
		if j < len(bi) {
			cb = &bc[bi[j]]
		}
		switch {
		case cb == nil || (ca != nil && compareKeys(keyOf(ca), keyOf(cb)) < 0):
			if ra[ai[i]].graded() {
				unmatched(ca, "baseline", "no candidate trial")
				out.UnmatchedBaseline++
			} else {
				unmatched(ca, "neither", "no candidate trial; baseline trial "+ungraded(ca))
				out.UnmatchedNeither++
			}
			i++
		case ca == nil || compareKeys(keyOf(ca), keyOf(cb)) > 0:
			if rb[bi[j]].graded() {
				unmatched(cb, "candidate", "no baseline trial")
				out.UnmatchedCandidate++
			} else {
				unmatched(cb, "neither", "no baseline trial; candidate trial "+ungraded(cb))
				out.UnmatchedNeither++
			}
			j++
		default:
			ga, gb := ra[ai[i]].graded(), rb[bi[j]].graded()
			switch {
			case ga && !gb:
				unmatched(ca, "baseline", "candidate trial "+ungraded(cb))
				out.UnmatchedBaseline++
			case !ga && gb:
				unmatched(cb, "candidate", "baseline trial "+ungraded(ca))
				out.UnmatchedCandidate++
			case !ga && !gb:
				unmatched(ca, "neither", "baseline trial "+ungraded(ca)+"; candidate trial "+ungraded(cb))
				out.UnmatchedNeither++
			}
			if ga && gb {
				if ca.Trials > 1 || cb.Trials > 1 {
					multi++
				}
				pairs = append(pairs, pair{ai[i], bi[j]})
			}
			i++
			j++
		}
	}
	for _, k := range ai {
		out.BaselineTrials += int(ac[k].Trials)
		out.BaselineAttrition += int(ac[k].Attrition)
	}
	for _, k := range bi {
		out.CandidateTrials += int(bc[k].Trials)
		out.CandidateAttrition += int(bc[k].Attrition)
	}
	out.Cases = len(pairs)
	scen := map[string]bool{}
	for _, p := range pairs {
		scen[ac[p.a].Scenario] = true
	}
	out.Scenarios = len(scen)

	pc := &pairer{conf: conf, a: ac, ra: ra, rb: rb}
	for j := range metricNames() {
		d := pc.diff(pairs, j)
		if in.BootstrapReps > 0 && d.Pairs > 0 {
			b := stats.BootstrapPairedDiff(pc.obs, in.BootstrapReps, conf, in.BootstrapSeed)
			d.BootLo, d.BootHi = b.CI.Lo, b.CI.Hi
		}
		out.Metrics = append(out.Metrics, d)
	}

	// Breakdowns: by scenario (pairs are grouped by scenario already, since
	// keys sort by scenario first) and by fault class.
	for lo := 0; lo < len(pairs); {
		hi := lo
		for hi < len(pairs) && ac[pairs[hi].a].Scenario == ac[pairs[lo].a].Scenario {
			hi++
		}
		out.ByScenario = append(out.ByScenario, pc.group(ac[pairs[lo].a].Scenario, pairs[lo:hi]))
		lo = hi
	}
	if in.Cases != nil {
		byClass := map[string][]pair{}
		for _, p := range pairs {
			classes := in.Cases[keyOf(&ac[p.a])].FaultClasses
			if len(classes) == 0 {
				classes = []string{NoFault}
			}
			for _, fc := range classes {
				byClass[fc] = append(byClass[fc], p)
			}
		}
		for _, fc := range sortedClasses(byClass) {
			out.ByFaultClass = append(out.ByFaultClass, pc.group(fc, byClass[fc]))
		}
	}

	sort.SliceStable(out.Unmatched, func(i, j int) bool {
		return compareKeys(out.Unmatched[i].Key, out.Unmatched[j].Key) < 0
	})
	if n := len(out.Unmatched); n > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d case(s) could not be paired and are excluded: %d graded only in the baseline, %d only in the candidate, %d in neither (listed below)",
			n, out.UnmatchedBaseline, out.UnmatchedCandidate, out.UnmatchedNeither))
	}
	if len(ai) == 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the baseline arm %q has no trials in sweep %s", in.Baseline.Arm, in.Baseline.SweepID))
	}
	if len(bi) == 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the candidate arm %q has no trials in sweep %s", in.Candidate.Arm, in.Candidate.SweepID))
	}
	if multi > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d case(s) hold more than one trial per arm: their outcomes are averaged, and McNemar/Newcombe/Tango are not computed for metrics they touch", multi))
	}
	for _, sc := range changedScenarios(in.BaselineHashes, in.CandidateHashes) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("scenario %q was run from different files in the two sweeps (hash %s vs %s): its pairs may not be the same cases",
			sc, short(in.BaselineHashes[sc]), short(in.CandidateHashes[sc])))
	}
	return out
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func changedScenarios(a, b map[string]string) []string {
	var out []string
	for sc, ha := range a {
		if hb, ok := b[sc]; ok && (ha != hb || ha == "mixed") {
			out = append(out, sc)
		}
	}
	sort.Strings(out)
	return out
}

// pairer computes MetricDiffs, reusing one buffer of paired observations.
type pairer struct {
	conf   float64
	a      []storage.Cell // the baseline's cells, for the scenario of a pair
	ra, rb []row          // the metrics of the baseline's and candidate's cells
	obs    []stats.PairedObs
}

func (p *pairer) group(name string, pairs []pair) GroupDiff {
	g := GroupDiff{Name: name, Cases: len(pairs)}
	for j := range metricNames() {
		g.Metrics = append(g.Metrics, p.diff(pairs, j))
	}
	return g
}

func (p *pairer) diff(pairs []pair, j int) MetricDiff {
	metric := metricNames()[j]
	d := MetricDiff{Metric: metric, HigherIsBetter: grade.HigherIsBetter(metric)}
	p.obs = p.obs[:0]
	binary := true
	for _, pr := range pairs {
		ma, mb := p.ra[pr.a][j], p.rb[pr.b][j]
		switch {
		case ma.n > 0 && mb.n > 0:
		case ma.n > 0 || mb.n > 0:
			d.OneArmOnly++
			continue
		default:
			continue
		}
		binary = binary && ma.n == 1 && mb.n == 1
		p.obs = append(p.obs, stats.PairedObs{Cluster: p.a[pr.a].Scenario, A: float64(ma.k) / float64(ma.n), B: float64(mb.k) / float64(mb.n)})
	}
	nan := math.NaN()
	d.Pairs = len(p.obs)
	d.Baseline, d.Candidate, d.Delta, d.SE, d.ClusteredP, d.P = nan, nan, nan, nan, nan, nan
	d.ClusteredLo, d.ClusteredHi, d.Lo, d.Hi = nan, nan, nan, nan
	d.McNemarP, d.McNemarMidP, d.NewcombeLo, d.NewcombeHi, d.TangoLo, d.TangoHi = nan, nan, nan, nan, nan, nan
	d.BootLo, d.BootHi = nan, nan
	if d.Pairs == 0 {
		d.Direction = NotTested
		return d
	}
	r := stats.Paired(p.obs, p.conf, stats.MillerSE)
	d.Clusters = r.Clusters
	d.Baseline, d.Candidate = r.MeanA, r.MeanB
	d.Delta, d.SE = r.Diff, r.SE
	d.ClusteredLo, d.ClusteredHi = r.CI.Lo, r.CI.Hi
	switch {
	case r.Clusters < 2:
		// One scenario: the clustered SE is 0 by construction, not a
		// measurement; leave it undefined.
		d.SE, d.ClusteredLo, d.ClusteredHi, d.ClusteredP = nan, nan, nan, nan
	case math.IsNaN(r.SE):
		d.ClusteredP = nan
	case r.SE == 0 && r.Diff == 0:
		d.ClusteredP = 1
	default:
		d.ClusteredP = 2 * stats.NormalCDF(-math.Abs(r.Diff)/r.SE)
	}
	d.Lo, d.Hi, d.P = d.ClusteredLo, d.ClusteredHi, d.ClusteredP
	if binary && r.Binary {
		d.Binary = true
		d.Table = r.Table
		d.BaselineSuccesses = r.Table.N11 + r.Table.N12
		d.CandidateSuccesses = r.Table.N11 + r.Table.N21
		d.McNemarP, d.McNemarMidP = r.McNemarP, r.McNemarMidP
		d.NewcombeLo, d.NewcombeHi = r.Newcombe.Lo, r.Newcombe.Hi
		d.TangoLo, d.TangoHi = r.Tango.Lo, r.Tango.Hi
		d.Lo, d.Hi = d.TangoLo, d.TangoHi
		d.P = d.McNemarMidP
	}
	d.Direction = direction(d, 1-p.conf)
	return d
}

// direction applies the rule documented on MetricDiff.
func direction(d MetricDiff, alpha float64) string {
	if d.Pairs == 0 || math.IsNaN(d.Delta) {
		return NotTested
	}
	if math.IsNaN(d.P) || d.P > alpha || d.Delta == 0 || (d.Lo <= 0 && d.Hi >= 0) {
		return NoChange
	}
	if (d.Delta > 0) == d.HigherIsBetter {
		return Better
	}
	return Worse
}

// Bad reports whether a difference of the given sign is a regression for
// the metric: an increase of a lower-is-better metric or a decrease of a
// higher-is-better one.
func (d MetricDiff) Bad(delta float64) bool {
	if d.HigherIsBetter {
		return delta < 0
	}
	return delta > 0
}
