package report

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"rebound/results/record"
	"rebound/stats"
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
	BaselineCells, CandidateCells []record.Cell
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
	// Generalize clusters the decision by scenario instead of by case: it
	// asks whether the result would hold on new scenarios like these.
	Generalize bool
}

// Units of evidence of the paired decision.
const (
	// UnitCase clusters pairs by case (scenario, variant): seeds are repeated
	// measures of their case. It answers "is the candidate worse on cases
	// like these?" (the default).
	UnitCase = "case"
	// UnitScenario clusters pairs by scenario (--generalize): variants and
	// seeds are repeated measures of their scenario. It answers "would the
	// result hold on new scenarios like these?".
	UnitScenario = "scenario"
)

// MetricDiff is the paired comparison of one metric: candidate − baseline
// over the (scenario, variant, seed) where the metric was tested in both
// arms.
//
// The decision counts independent evidence once. Pairs are grouped into
// clusters, cases (scenario, variant) by default or scenarios with
// --generalize, and seeds are repeated measures of their cluster:
//
//   - Lo/Hi: Δ ± t_{G−1}·SE, with the cluster-robust (CR1) standard error
//     and Student's t on G − 1 degrees of freedom (G clusters), so that the
//     interval does not pretend with ten clusters;
//   - P: the exact two-sided p-value of the cluster sign-flip test (under
//     equal arms each cluster's total difference is as likely + as −); with
//     one pair per cluster it is McNemar's exact test;
//   - Direction: Worse (Better) when the candidate moved the bad (good) way,
//     P ≤ 1 − confidence, and the interval excludes 0 when it is estimable;
//     NoChange otherwise; NotTested without pairs.
//
// A simulation (stats/calibration_test.go) checks that this decision raises
// a false alarm at most 6% of the time at α = 0.05 across 10–200 scenarios,
// 1–50 seeds, intra-cluster correlation 0–0.9, deterministic and stochastic
// arms. The iid figures (Tango's interval, McNemar's mid-p) treat every
// pair as independent; they are kept as a labelled secondary column.
type MetricDiff struct {
	Metric         string
	HigherIsBetter bool

	Pairs    int // (scenario, variant, seed) tested in both arms
	Cases    int // distinct cases (scenario, variant) among them
	Clusters int // distinct clusters of the decision's unit among them
	// OneArmOnly counts cases where the metric was tested in one arm but
	// not the other (NOT TESTED in the other): excluded from the pairs.
	OneArmOnly int

	// Baseline and Candidate are the rates over the pairs; with one trial per
	// case, BaselineSuccesses/CandidateSuccesses are their numerators.
	Baseline, Candidate                   float64
	BaselineSuccesses, CandidateSuccesses int

	// Delta is the mean paired difference candidate − baseline; SE its
	// cluster-robust standard error; Lo/Hi the decision interval; P the
	// decision p-value (sign-flip, exact unless PMethod says otherwise) and
	// MidP its mid-p; TP the p-value of Δ/SE on t_{G−1}.
	Delta, SE float64
	Lo, Hi    float64
	P, MidP   float64
	TP        float64
	PMethod   string
	// NotEstimable says why SE and the interval are undefined (one cluster,
	// or no variation between clusters); empty when they are estimable.
	NotEstimable string
	// DesignEffect is the clustered variance of Δ over its iid variance;
	// EffectiveN = Pairs/DesignEffect, the independent pairs the data are
	// worth. NaN when undefined.
	DesignEffect, EffectiveN float64
	// BaselineVariation and CandidateVariation count the cases with two or
	// more seeds whose outcomes never varied: a deterministic agent's seeds
	// are copies of one outcome.
	BaselineVariation, CandidateVariation stats.ArmVariation

	// ScenarioLo/ScenarioHi is the interval clustered by scenario (the
	// --generalize interval), reported beside the decision whatever its
	// unit; NaN with fewer than two scenarios or no variation.
	ScenarioLo, ScenarioHi float64

	// The iid figures, which count every pair as independent evidence.
	// Binary: every case held one trial per arm, so the outcomes are 0/1 and
	// the 2×2 table, McNemar and the Newcombe/Tango intervals exist.
	Binary                 bool
	Table                  stats.Table2x2
	McNemarP, McNemarMidP  float64
	NewcombeLo, NewcombeHi float64
	TangoLo, TangoHi       float64

	// BootLo/BootHi is the seeded cluster-bootstrap percentile interval of
	// Delta (resampling the decision's clusters), a cross-check; NaN unless
	// CompareInput.BootstrapReps > 0.
	BootLo, BootHi float64

	// Weighted is the consequence-weighted paired difference of the same
	// pairs, with the same clustering and decision rule.
	Weighted WeightedDiff

	Direction string
}

// WeightedDiff is the consequence-weighted paired difference
// Δw = Σ w·(y_cand − y_base) / Σ w over the pairs of a MetricDiff, w the
// case's consequence weight from the scenario. SE is the clustered
// linearization SE (CR1), Lo/Hi = Δw ± t_{G−1}·SE, P the cluster sign-flip
// test of the weighted cluster totals; BootLo/BootHi the seeded cluster
// bootstrap cross-check. With all weights equal it equals the unweighted
// difference.
type WeightedDiff struct {
	Baseline, Candidate float64 // weighted rates Σw·y/Σw of the pairs
	Delta, SE           float64
	Lo, Hi              float64
	P, MidP             float64
	PMethod             string
	NotEstimable        string
	SumWeight           float64
	BootLo, BootHi      float64
	Direction           string
}

// attritionWarning flags arms that lost significantly different shares of
// their trials to provider failures (Fisher's exact test, two-sided, at
// 0.05): attrition is not random across arms then, and the pairs that
// remain may favour one of them.
func attritionWarning(attrA, trialsA, attrB, trialsB int) string {
	if trialsA == 0 || trialsB == 0 || attrA+attrB == 0 {
		return ""
	}
	p := stats.FisherExact(attrA, trialsA-attrA, attrB, trialsB-attrB)
	if p >= 0.05 {
		return ""
	}
	return fmt.Sprintf("attrition differs between the arms (baseline %d/%d = %.1f%%, candidate %d/%d = %.1f%%; Fisher's exact p = %s): provider failures are not random across arms, so the remaining pairs may be biased",
		attrA, trialsA, 100*float64(attrA)/float64(trialsA), attrB, trialsB, 100*float64(attrB)/float64(trialsB), pval(p))
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
	// Cases is the number of pairs, (scenario, variant, seed) graded in both
	// arms (before NOT TESTED is excluded per metric); DistinctCases the
	// cases (scenario, variant) and Scenarios the scenarios among them.
	Cases         int
	DistinctCases int
	Scenarios     int
	// Unit is the decision's unit of evidence: UnitCase or UnitScenario.
	Unit string
	// BaselineVariation and CandidateVariation count, over the cases with
	// two or more paired seeds, those where every seed gave the same
	// outcomes on every metric (a deterministic agent).
	BaselineVariation, CandidateVariation stats.ArmVariation
	// Trials and attrition of each side (all its cases, paired or not),
	// and those of its trials whose agent ran unsealed (UnsealedNotes).
	BaselineTrials, CandidateTrials       int
	BaselineAttrition, CandidateAttrition int
	BaselineUnsealed, CandidateUnsealed   int

	Metrics []MetricDiff // in report order

	// Spend is what the compared sweeps' model requests cost, exact and
	// estimated (AddSpend): the candidate's sweep, then the baseline's
	// when it is another; nil when not read.
	Spend []SweepSpend

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
func armCells(cells []record.Cell, arm string) []int32 {
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
func ungraded(c *record.Cell) string { return ungradedReason(c.Attrition) }

// pair is one case present in both arms: indices into the two cell slices.
// cl is the key of the decision's cluster (the case or the scenario), ck
// the key of the case; both are set once by Compare.
type pair struct {
	a, b   int32
	cl, ck string
}

// Compare pairs the candidate's cases with the baseline's on (scenario,
// variant, seed) and compares every metric. It is a pure function of its
// input.
//
// Compare is the per-case route, kept as the reference of
// [CompareFromTotals] (results/report/aggregate_integration_test.go holds
// the two documents equal to 1e-12); both assemble the document the same
// way (newComparison, unpaired, trialWarnings, pairingWarnings).
func Compare(in CompareInput) Comparison {
	out := newComparison(in.Baseline, in.Candidate, in.Confidence, in.Generalize)
	conf := out.Confidence
	ac, bc := in.BaselineCells, in.CandidateCells
	ai, bi := armCells(ac, in.Baseline.Arm), armCells(bc, in.Candidate.Arm)
	ra, rb := flatten(ac), []row(nil)
	if len(bc) == len(ac) && (len(bc) == 0 || &bc[0] == &ac[0]) {
		rb = ra // one sweep: flatten it once
	} else {
		rb = flatten(bc)
	}

	pairs, multi := pairCases(&out, ac, bc, ai, bi, ra, rb)
	countTrials(&out, ac, bc, ai, bi)
	out.trialWarnings()
	out.Cases = len(pairs)
	scen, cases := map[string]bool{}, map[caseKey]bool{}
	var varA, varB []stats.CaseOutcome
	for _, p := range pairs {
		c := &ac[p.a]
		scen[c.Scenario] = true
		cases[caseKey{c.Scenario, c.Variant}] = true
	}
	out.Scenarios, out.DistinctCases = len(scen), len(cases)
	out.BaselineVariation, out.CandidateVariation = rowVariation(pairs, ac, ra, rb, &varA, &varB)

	pc := &pairer{conf: conf, a: ac, ra: ra, rb: rb, unit: out.Unit}
	for i := range pairs {
		c := &ac[pairs[i].a]
		pairs[i].ck = pc.caseKeyOf(c)
		pairs[i].cl = pairs[i].ck
		if out.Unit == UnitScenario {
			pairs[i].cl = c.Scenario
		}
	}
	out.Metrics = metricDiffs(pc, pairs, in)
	out.ByScenario, out.ByFaultClass = breakdowns(pc, pairs, ac, in.Cases)
	sort.SliceStable(out.Unmatched, func(i, j int) bool {
		return compareKeys(out.Unmatched[i].Key, out.Unmatched[j].Key) < 0
	})
	out.pairingWarnings(len(ai) == 0, len(bi) == 0, multi, in.BaselineHashes, in.CandidateHashes)
	return out
}

// newComparison is the head of a comparison document, either route's.
func newComparison(baseline, candidate Side, confidence float64, generalize bool) Comparison {
	if confidence == 0 {
		confidence = Confidence
	}
	out := Comparison{Baseline: baseline, Candidate: candidate, Confidence: confidence, Unit: UnitCase}
	if generalize {
		out.Unit = UnitScenario
	}
	return out
}

// unpaired lists a case that is not a pair, with the side that has it
// graded (baseline, candidate or neither) and why: inA and inB say whether
// each arm has the case, gradedA and gradedB whether its trial there has a
// tested metric, whyA and whyB why not (ungradedReason). A case graded in
// both arms is a pair, and is not listed.
func (out *Comparison) unpaired(key Key, inA, inB, gradedA, gradedB bool, whyA, whyB string) {
	add := func(side, reason string) {
		out.Unmatched = append(out.Unmatched, Unmatched{Key: key, Side: side, Reason: reason})
	}
	switch {
	case inA && !inB && gradedA:
		add("baseline", "no candidate trial")
		out.UnmatchedBaseline++
	case inA && !inB:
		add("neither", "no candidate trial; baseline trial "+whyA)
		out.UnmatchedNeither++
	case !inA && inB && gradedB:
		add("candidate", "no baseline trial")
		out.UnmatchedCandidate++
	case !inA && inB:
		add("neither", "no baseline trial; candidate trial "+whyB)
		out.UnmatchedNeither++
	case gradedA && !gradedB:
		add("baseline", "candidate trial "+whyB)
		out.UnmatchedBaseline++
	case !gradedA && gradedB:
		add("candidate", "baseline trial "+whyA)
		out.UnmatchedCandidate++
	case !gradedA && !gradedB:
		add("neither", "baseline trial "+whyA+"; candidate trial "+whyB)
		out.UnmatchedNeither++
	}
}

// pairCases merge-joins the two arms' cells on their sorted keys: a case
// graded on both sides is a pair; every other one is listed as unmatched,
// with the side that has it. multi counts pairs holding more than one
// trial per arm.
func pairCases(out *Comparison, ac, bc []record.Cell, ai, bi []int32, ra, rb []row) (pairs []pair, multi int) {
	i, j := 0, 0
	for i < len(ai) || j < len(bi) {
		var ca, cb *record.Cell
		if i < len(ai) {
			ca = &ac[ai[i]]
		}
		if j < len(bi) {
			cb = &bc[bi[j]]
		}
		switch {
		case cb == nil || (ca != nil && compareKeys(keyOf(ca), keyOf(cb)) < 0):
			out.unpaired(keyOf(ca), true, false, ra[ai[i]].graded(), false, ungraded(ca), "")
			i++
		case ca == nil || compareKeys(keyOf(ca), keyOf(cb)) > 0:
			out.unpaired(keyOf(cb), false, true, false, rb[bi[j]].graded(), "", ungraded(cb))
			j++
		default:
			ga, gb := ra[ai[i]].graded(), rb[bi[j]].graded()
			out.unpaired(keyOf(ca), true, true, ga, gb, ungraded(ca), ungraded(cb))
			if ga && gb {
				if ca.Trials > 1 || cb.Trials > 1 {
					multi++
				}
				pairs = append(pairs, pair{a: ai[i], b: bi[j]})
			}
			i++
			j++
		}
	}
	return pairs, multi
}

// countTrials totals each arm's trials, attrition and unsealed trials.
func countTrials(out *Comparison, ac, bc []record.Cell, ai, bi []int32) {
	for _, k := range ai {
		out.BaselineTrials += int(ac[k].Trials)
		out.BaselineAttrition += int(ac[k].Attrition)
		out.BaselineUnsealed += int(ac[k].Unsealed)
	}
	for _, k := range bi {
		out.CandidateTrials += int(bc[k].Trials)
		out.CandidateAttrition += int(bc[k].Attrition)
		out.CandidateUnsealed += int(bc[k].Unsealed)
	}
}

// trialWarnings warns, once the trials are counted, when a side ran
// unsealed or attrition could bias the comparison.
func (out *Comparison) trialWarnings() {
	out.Warnings = append(out.Warnings, out.UnsealedNotes()...)
	if w := attritionWarning(out.BaselineAttrition, out.BaselineTrials, out.CandidateAttrition, out.CandidateTrials); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
}

// metricDiffs computes every reported metric's paired difference, with the
// cluster bootstrap when asked for.
func metricDiffs(pc *pairer, pairs []pair, in CompareInput) []MetricDiff {
	var out []MetricDiff
	for j := range metricNames() {
		d := pc.diff(pairs, j)
		if in.BootstrapReps > 0 && d.Pairs > 0 {
			b := stats.BootstrapPairedDiff(pc.obs, in.BootstrapReps, pc.conf, in.BootstrapSeed)
			d.BootLo, d.BootHi = b.CI.Lo, b.CI.Hi
			wb := stats.BootstrapWeightedPairedDiff(pc.wobs, in.BootstrapReps, pc.conf, in.BootstrapSeed)
			d.Weighted.BootLo, d.Weighted.BootHi = wb.CI.Lo, wb.CI.Hi
		}
		out = append(out, d)
	}
	return out
}

// breakdowns groups the pairs by scenario (they sort by scenario first) and,
// when the cases' fault classes are known, by fault class.
func breakdowns(pc *pairer, pairs []pair, ac []record.Cell, caseFaults map[Key]Case) (byScenario, byFaultClass []GroupDiff) {
	for lo := 0; lo < len(pairs); {
		hi := lo
		for hi < len(pairs) && ac[pairs[hi].a].Scenario == ac[pairs[lo].a].Scenario {
			hi++
		}
		byScenario = append(byScenario, pc.group(ac[pairs[lo].a].Scenario, pairs[lo:hi]))
		lo = hi
	}
	if caseFaults != nil {
		byClass := map[string][]pair{}
		for _, p := range pairs {
			classes := caseFaults[keyOf(&ac[p.a])].FaultClasses
			if len(classes) == 0 {
				classes = []string{NoFault}
			}
			for _, fc := range classes {
				byClass[fc] = append(byClass[fc], p)
			}
		}
		for _, fc := range sortedClasses(byClass) {
			byFaultClass = append(byFaultClass, pc.group(fc, byClass[fc]))
		}
	}
	return byScenario, byFaultClass
}

// pairingWarnings adds what a reader must know before trusting the
// numbers: unpaired cases, an empty arm (emptyA, emptyB), cases with
// several trials (multi), a scenario file that changed between the sweeps
// (the scenario hashes of each side).
func (out *Comparison) pairingWarnings(emptyA, emptyB bool, multi int, hashesA, hashesB map[string]string) {
	if n := len(out.Unmatched); n > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d case(s) could not be paired and are excluded: %d graded only in the baseline, %d only in the candidate, %d in neither (listed below)",
			n, out.UnmatchedBaseline, out.UnmatchedCandidate, out.UnmatchedNeither))
	}
	if emptyA {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the baseline arm %q has no trials in sweep %s", out.Baseline.Arm, out.Baseline.SweepID))
	}
	if emptyB {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the candidate arm %q has no trials in sweep %s", out.Candidate.Arm, out.Candidate.SweepID))
	}
	if multi > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d case(s) hold more than one trial per arm: their outcomes are averaged, and McNemar/Newcombe/Tango are not computed for metrics they touch", multi))
	}
	for _, sc := range changedScenarios(hashesA, hashesB) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("scenario %q was run from different files in the two sweeps (hash %s vs %s): its pairs may not be the same cases",
			sc, short(hashesA[sc]), short(hashesB[sc])))
	}
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

// caseKey is a case: a (scenario, variant), whose seeds are repeated
// measures.
type caseKey struct{ scenario, variant string }

func (k caseKey) String() string { return k.scenario + "\x1f" + k.variant }

// rowVariation counts, per arm, the cases with two or more paired seeds whose
// outcomes (every metric) never varied.
func rowVariation(pairs []pair, ac []record.Cell, ra, rb []row, bufA, bufB *[]stats.CaseOutcome) (stats.ArmVariation, stats.ArmVariation) {
	// Pairs are sorted by (scenario, variant, seed): cases are contiguous.
	var va, vb stats.ArmVariation
	for lo := 0; lo < len(pairs); {
		hi := lo + 1
		c0 := &ac[pairs[lo].a]
		for hi < len(pairs) && ac[pairs[hi].a].Scenario == c0.Scenario && ac[pairs[hi].a].Variant == c0.Variant {
			hi++
		}
		if hi-lo >= 2 {
			va.Cases++
			vb.Cases++
			constA, constB := true, true
			for k := lo + 1; k < hi; k++ {
				constA = constA && sameOutcomes(&ra[pairs[k].a], &ra[pairs[lo].a])
				constB = constB && sameOutcomes(&rb[pairs[k].b], &rb[pairs[lo].b])
			}
			if constA {
				va.ConstantCases++
			}
			if constB {
				vb.ConstantCases++
			}
		}
		lo = hi
	}
	return va, vb
}

// sameOutcomes compares the tested counts and successes of two cells.
func sameOutcomes(x, y *row) bool {
	for j := range x {
		if x[j].n != y[j].n || x[j].k != y[j].k {
			return false
		}
	}
	return true
}

// pairer computes MetricDiffs, reusing buffers of paired observations.
type pairer struct {
	conf   float64
	a      []record.Cell // the baseline's cells, for the scenario of a pair
	ra, rb []row         // the metrics of the baseline's and candidate's cells
	unit   string
	obs    []stats.PairedObs    // the decision's clusters, iid figures
	wobs   []stats.WeightedPair // the decision's clusters, weights
	uobs   []stats.WeightedPair // the decision's clusters, weights 1
	sobs   []stats.WeightedPair // clustered by scenario, weights 1
	varA   []stats.CaseOutcome
	varB   []stats.CaseOutcome
	keys   map[caseKey]string
	// inGroup: computing a breakdown group (see group).
	inGroup bool
}

// caseKeyOf returns the (interned) key of a cell's case.
func (p *pairer) caseKeyOf(c *record.Cell) string {
	if p.keys == nil {
		p.keys = map[caseKey]string{}
	}
	k := caseKey{c.Scenario, c.Variant}
	s, ok := p.keys[k]
	if !ok {
		s = k.String()
		p.keys[k] = s
	}
	return s
}

// group compares within one scenario or fault class. The by-scenario
// interval is left out there (NaN): within a scenario it has one cluster,
// and the breakdowns never show it.
func (p *pairer) group(name string, pairs []pair) GroupDiff {
	g := GroupDiff{Name: name, Cases: len(pairs)}
	p.inGroup = true
	for j := range metricNames() {
		g.Metrics = append(g.Metrics, p.diff(pairs, j))
	}
	p.inGroup = false
	return g
}

func (p *pairer) diff(pairs []pair, j int) MetricDiff {
	metric := metricNames()[j]
	d := MetricDiff{Metric: metric, HigherIsBetter: HigherIsBetter(metric)}
	p.obs, p.wobs, p.uobs, p.sobs = p.obs[:0], p.wobs[:0], p.uobs[:0], p.sobs[:0]
	p.varA, p.varB = p.varA[:0], p.varB[:0]
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
		c := &p.a[pr.a]
		cl := pr.cl
		ya, yb := float64(ma.k)/float64(ma.n), float64(mb.k)/float64(mb.n)
		// The case's consequence weight: the mean weight of its trials,
		// averaged over the two arms (the same scenario gives both the
		// same weight).
		w := (ma.sw/float64(ma.n) + mb.sw/float64(mb.n)) / 2
		p.obs = append(p.obs, stats.PairedObs{Cluster: cl, A: ya, B: yb})
		p.wobs = append(p.wobs, stats.WeightedPair{Cluster: cl, A: ya, B: yb, W: w})
		p.uobs = append(p.uobs, stats.WeightedPair{Cluster: cl, A: ya, B: yb, W: 1})
		p.sobs = append(p.sobs, stats.WeightedPair{Cluster: c.Scenario, A: ya, B: yb, W: 1})
		if len(p.varA) == 0 || p.varA[len(p.varA)-1].Case != pr.ck {
			d.Cases++ // pairs of a case are contiguous (sorted by scenario, variant, seed)
		}
		p.varA = append(p.varA, stats.CaseOutcome{Case: pr.ck, Y: ya})
		p.varB = append(p.varB, stats.CaseOutcome{Case: pr.ck, Y: yb})
	}
	nan := math.NaN()
	d.Pairs = len(p.obs)
	d.Baseline, d.Candidate, d.Delta, d.SE, d.P, d.MidP, d.TP = nan, nan, nan, nan, nan, nan, nan
	d.Lo, d.Hi, d.ScenarioLo, d.ScenarioHi, d.DesignEffect, d.EffectiveN = nan, nan, nan, nan, nan, nan
	d.McNemarP, d.McNemarMidP, d.NewcombeLo, d.NewcombeHi, d.TangoLo, d.TangoHi = nan, nan, nan, nan, nan, nan
	d.BootLo, d.BootHi = nan, nan
	d.Weighted = WeightedDiff{Baseline: nan, Candidate: nan, Delta: nan, SE: nan, Lo: nan, Hi: nan, P: nan, MidP: nan,
		BootLo: nan, BootHi: nan, Direction: NotTested}
	if d.Pairs == 0 {
		d.Direction = NotTested
		d.NotEstimable = stats.NoObservations
		d.Weighted.NotEstimable = stats.NoObservations
		return d
	}
	alpha := 1 - p.conf
	// One seed for the Monte Carlo fallback of the sign-flip test, derived
	// from the metric so that every run of a report gives the same p.
	seed := uint64(j + 1)
	u := stats.PairedClustered(p.uobs, p.conf, seed)
	d.Clusters = u.Clusters
	d.Baseline, d.Candidate = u.MeanA, u.MeanB
	d.Delta, d.SE, d.Lo, d.Hi = u.Diff, u.SE, u.CI.Lo, u.CI.Hi
	d.P, d.MidP, d.TP, d.PMethod, d.NotEstimable = u.P, u.MidP, u.TP, u.PMethod, u.NotEstimable
	d.DesignEffect, d.EffectiveN = u.DesignEffect, u.EffectiveN
	d.Direction = direction(d.Delta, d.HigherIsBetter, u.Significant(alpha))
	d.BaselineVariation, d.CandidateVariation = stats.Variation(p.varA), stats.Variation(p.varB)
	switch {
	case p.unit == UnitScenario:
		d.ScenarioLo, d.ScenarioHi = d.Lo, d.Hi
	case p.inGroup:
	default:
		sc := stats.PairedClustered(p.sobs, p.conf, seed)
		d.ScenarioLo, d.ScenarioHi = sc.CI.Lo, sc.CI.Hi
	}

	w := stats.PairedClustered(p.wobs, p.conf, seed)
	d.Weighted = WeightedDiff{Baseline: w.MeanA, Candidate: w.MeanB, Delta: w.Diff, SE: w.SE, Lo: w.CI.Lo, Hi: w.CI.Hi,
		P: w.P, MidP: w.MidP, PMethod: w.PMethod, NotEstimable: w.NotEstimable, SumWeight: w.SumW,
		BootLo: nan, BootHi: nan, Direction: direction(w.Diff, d.HigherIsBetter, w.Significant(alpha))}
	if math.IsNaN(w.Diff) {
		d.Weighted.Direction = NotTested
		if d.Weighted.NotEstimable == "" {
			d.Weighted.NotEstimable = "no consequence weight on the pairs"
		}
	}

	r := stats.Paired(p.obs, p.conf, stats.MillerSE)
	if binary && r.Binary {
		d.Binary = true
		d.Table = r.Table
		d.BaselineSuccesses = r.Table.N11 + r.Table.N12
		d.CandidateSuccesses = r.Table.N11 + r.Table.N21
		d.McNemarP, d.McNemarMidP = r.McNemarP, r.McNemarMidP
		d.NewcombeLo, d.NewcombeHi = r.Newcombe.Lo, r.Newcombe.Hi
		d.TangoLo, d.TangoHi = r.Tango.Lo, r.Tango.Hi
	}
	return d
}

// direction names the way a significant difference moved.
func direction(delta float64, higherIsBetter, significant bool) string {
	switch {
	case math.IsNaN(delta):
		return NotTested
	case !significant:
		return NoChange
	case (delta > 0) == higherIsBetter:
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
