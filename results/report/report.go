// Package report turns stored sweep cells into what people and machines
// read.
//
// Two reports live here, both pure functions of records (package record)
// already read; Load, LoadComparison, LoadTrend and ListTrials read them
// from a Source, which storage.Store implements:
//
//   - [Build] summarizes one sweep: per arm and metric the rate with its
//     Wilson interval, n (trials where the metric was tested; NOT TESTED
//     trials are excluded, never counted as zero), the standard error and
//     interval clustered by scenario, the consequence-weighted rate with its
//     interval, attrition per arm, and breakdowns by scenario and by fault
//     class.
//   - [Compare] pairs two arms on (scenario, variant, seed) and reports, per
//     metric, the paired difference candidate − baseline with its intervals,
//     McNemar's test (mid-p and exact) and a direction (better, worse, no
//     change), plus
//     every case that could not be paired. Package gate adds a verdict.
//
// Two routes lead to the same documents. The aggregated one is what the
// commands use: ClickHouse computes the sufficient statistics
// (Source.ReportTotals, Source.CompareTotals: per arm,
// scenario and metric, per fault class, per case and metric) and
// [BuildFromTotals] and [CompareFromTotals] compute the intervals and tests
// from them with the totals forms of package stats, so that Go receives
// O(arms × scenarios × metrics) rows, not O(trials). The per-case route,
// [BuildWith] and [Compare] over storage's Store.Cells (one cell per arm,
// scenario, variant and seed) with fault classes from [CasesFromFaults] or
// [CasesFromTrials], is the reference: an integration test runs both on
// stored example sweeps and requires every number to agree to 1e-12.
//
// Every output (text, Markdown, JSON, JUnit XML, HTML) shows NaN and
// untested values as "not tested" (null in JSON).
package report

import (
	"cmp"
	"encoding/json"
	"math"
	"rebound/core/scenario"
	"slices"

	"rebound/results/record"
	"rebound/stats"
)

// ArmSummary is one arm's trials, attrition and metrics.
type ArmSummary struct {
	Arm       string
	Trials    int // trials stored, attrition included
	Attrition int // trials lost to provider failures (never graded)
	// Unsealed counts the trials whose agent ran unsealed (a command arm
	// with sandbox: none), as stored: every output says so beside the
	// arm's rates (UnsealedNotes).
	Unsealed  int
	Scenarios int
	Metrics   map[string]Cell
	// Variation counts the cases (scenario, variant) with two or more graded
	// seeds, and those whose seeds all gave the same outcomes on every
	// metric: a deterministic agent's seeds are copies, not evidence.
	Variation stats.ArmVariation
}

// AttritionRate is Attrition/Trials (NaN without trials).
func (a ArmSummary) AttritionRate() float64 {
	if a.Trials == 0 {
		return math.NaN()
	}
	return float64(a.Attrition) / float64(a.Trials)
}

// GroupArm is one arm within a breakdown group.
type GroupArm struct {
	Arm     string
	Trials  int
	Metrics map[string]Cell
}

// Group is one row of a breakdown: a scenario, or a fault class.
type Group struct {
	Name string
	Arms []GroupArm // in the summary's arm order; arms without trials in the group are absent
}

// Arm returns the group's cell for arm and metric (untested when absent).
func (g Group) Arm(arm, metric string) Cell {
	for _, a := range g.Arms {
		if a.Arm == arm {
			if c, ok := a.Metrics[metric]; ok {
				return c
			}
		}
	}
	return untested()
}

// Summary is the report of one sweep.
type Summary struct {
	SweepID       string
	Name          string
	Status        string
	TrialsPlanned uint64
	TrialsStored  uint64
	Confidence    float64
	Arms          []ArmSummary
	// ByScenario has one group per scenario (Wilson intervals; the cluster
	// is the scenario itself).
	ByScenario []Group
	// ByFaultClass has one group per fault class (clustered by scenario). A
	// case with several classes counts in each of them; NoFault collects
	// cases with no fault. Empty when fault classes were not given.
	ByFaultClass []Group
	// ByAxis pools, for each matrix axis (model, prompt, temperature,
	// top_p), the arms that share a value: one group per value, clustered
	// by scenario. Empty for a plan without a matrix.
	ByAxis []AxisBreakdown
	// Pairs are the metamorphic pairs the scenarios declare, checked per
	// arm against the stored trials (LoadPairs); empty when none declares
	// one.
	Pairs []scenario.PairResult
	// Spend is what the sweep's model requests cost, exact and estimated
	// (AddSpend); nil when it was not read.
	Spend *record.Spend
}

// AxisBreakdown is the breakdown by one matrix axis.
type AxisBreakdown struct {
	Axis   string
	Groups []Group // one per value; its one GroupArm is PooledArm
}

// PooledArm names the column of an axis breakdown: every arm with the value.
const PooledArm = "pooled arms"

// Options tunes [BuildWith].
type Options struct {
	// Confidence of every interval; 0 means [Confidence].
	Confidence float64
	// Cases gives fault classes per case; nil leaves ByFaultClass empty.
	Cases map[Key]Case
	// Axes gives each matrix arm's axis values (arm -> axis -> value); nil
	// leaves ByAxis empty.
	Axes map[string]map[string]string
}

// Build aggregates cells (one per arm, scenario, variant, seed) into the
// summary, without the fault-class breakdown. Arms appear in the sweep's
// order, then any other arm found in cells.
func Build(sw record.Sweep, stored uint64, cells []record.Cell) Summary {
	return BuildWith(sw, stored, cells, Options{})
}

// BuildWith is [Build] with options.
func BuildWith(sw record.Sweep, stored uint64, cells []record.Cell, opt Options) Summary {
	conf := opt.Confidence
	if conf == 0 {
		conf = Confidence
	}
	s := Summary{SweepID: sw.SweepID, Name: sw.Name, Status: sw.Status, TrialsPlanned: sw.TrialsPlanned,
		TrialsStored: stored, Confidence: conf}
	r := newRater(conf, cells)

	order := slices.Clone(sw.Arms)
	byArm := map[string][]int32{}
	byArmScenario := map[string]map[string][]int32{}
	var scenarios []string
	for i := range cells {
		c := &cells[i]
		if _, ok := byArm[c.Arm]; !ok && !slices.Contains(order, c.Arm) {
			order = append(order, c.Arm)
		}
		byArm[c.Arm] = append(byArm[c.Arm], int32(i))
		m := byArmScenario[c.Scenario]
		if m == nil {
			m = map[string][]int32{}
			byArmScenario[c.Scenario] = m
			scenarios = append(scenarios, c.Scenario)
		}
		m[c.Arm] = append(m[c.Arm], int32(i))
	}
	slices.Sort(scenarios)

	for _, arm := range order {
		idx, ok := byArm[arm]
		if !ok {
			continue
		}
		as := ArmSummary{Arm: arm, Metrics: map[string]Cell{}}
		seen := map[string]bool{}
		for _, i := range idx {
			as.Trials += int(cells[i].Trials)
			as.Attrition += int(cells[i].Attrition)
			as.Unsealed += int(cells[i].Unsealed)
			seen[cells[i].Scenario] = true
		}
		as.Scenarios = len(seen)
		as.Variation = caseVariation(cells, r.rows, idx)
		for j, m := range metricNames() {
			as.Metrics[m] = r.rate(idx, j, true)
		}
		s.Arms = append(s.Arms, as)
	}
	arms := s.ArmNames()

	for _, sc := range scenarios {
		s.ByScenario = append(s.ByScenario, buildGroup(r, sc, cells, byArmScenario[sc], arms, false))
	}
	if opt.Cases != nil {
		byClass := map[string]map[string][]int32{}
		for i := range cells {
			c := &cells[i]
			classes := opt.Cases[keyOf(c)].FaultClasses
			if len(classes) == 0 {
				classes = []string{NoFault}
			}
			for _, fc := range classes {
				m := byClass[fc]
				if m == nil {
					m = map[string][]int32{}
					byClass[fc] = m
				}
				m[c.Arm] = append(m[c.Arm], int32(i))
			}
		}
		for _, fc := range sortedClasses(byClass) {
			s.ByFaultClass = append(s.ByFaultClass, buildGroup(r, fc, cells, byClass[fc], arms, true))
		}
	}
	s.ByAxis = axisBreakdowns(r, cells, byArm, arms, opt.Axes)
	return s
}

// axisBreakdowns pools the arms that share each value of each matrix axis.
func axisBreakdowns(r *rater, cells []record.Cell, byArm map[string][]int32, arms []string, axes map[string]map[string]string) []AxisBreakdown {
	values := map[string]map[string][]int32{} // axis -> value -> cell indexes
	for _, arm := range arms {
		for axis, v := range axes[arm] {
			if values[axis] == nil {
				values[axis] = map[string][]int32{}
			}
			values[axis][v] = append(values[axis][v], byArm[arm]...)
		}
	}
	var out []AxisBreakdown
	for _, axis := range sortedClasses(values) {
		b := AxisBreakdown{Axis: axis}
		for _, v := range sortedClasses(values[axis]) {
			b.Groups = append(b.Groups, buildGroup(r, v, cells, map[string][]int32{PooledArm: values[axis][v]}, []string{PooledArm}, true))
		}
		out = append(out, b)
	}
	return out
}

// AxesFromPlan reads the matrix axes of a stored plan's arms (the stored
// plan_json, redacted or not); nil when no arm carries any.
func AxesFromPlan(planJSON string) map[string]map[string]string {
	var p struct {
		Arms []struct {
			Name string            `json:"name"`
			Axes map[string]string `json:"axes"`
		} `json:"arms"`
	}
	if json.Unmarshal([]byte(planJSON), &p) != nil {
		return nil
	}
	var out map[string]map[string]string
	for _, a := range p.Arms {
		if len(a.Axes) > 0 {
			if out == nil {
				out = map[string]map[string]string{}
			}
			out[a.Name] = a.Axes
		}
	}
	return out
}

// caseVariation counts the cases of idx (cells of one arm, in storage order:
// sorted by scenario, variant, seed) with two or more graded seeds, and
// those whose graded seeds all agree on every metric.
func caseVariation(cells []record.Cell, rows []row, idx []int32) stats.ArmVariation {
	var v stats.ArmVariation
	seeds, constant := 0, true
	var first int32 = -1
	flush := func() {
		if seeds >= 2 {
			v.Cases++
			if constant {
				v.ConstantCases++
			}
		}
		seeds, constant, first = 0, true, -1
	}
	for k, i := range idx {
		if k > 0 {
			p := &cells[idx[k-1]]
			if p.Scenario != cells[i].Scenario || p.Variant != cells[i].Variant {
				flush()
			}
		}
		if !rows[i].graded() {
			continue
		}
		seeds++
		if first < 0 {
			first = i
		} else if !sameOutcomes(&rows[i], &rows[first]) {
			constant = false
		}
	}
	flush()
	return v
}

func buildGroup(r *rater, name string, cells []record.Cell, byArm map[string][]int32, arms []string, clustered bool) Group {
	g := Group{Name: name}
	for _, arm := range arms {
		idx, ok := byArm[arm]
		if !ok {
			continue
		}
		ga := GroupArm{Arm: arm, Metrics: map[string]Cell{}}
		for _, i := range idx {
			ga.Trials += int(cells[i].Trials)
		}
		for j, m := range metricNames() {
			ga.Metrics[m] = r.rate(idx, j, clustered)
		}
		g.Arms = append(g.Arms, ga)
	}
	return g
}

// sortedClasses orders fault classes by name with NoFault last.
func sortedClasses[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int {
		if (a == NoFault) != (b == NoFault) {
			if a == NoFault {
				return 1
			}
			return -1
		}
		return cmp.Compare(a, b)
	})
	return out
}

// Metric returns the cell of one arm and metric.
func (s Summary) Metric(arm, metric string) (Cell, bool) {
	for _, a := range s.Arms {
		if a.Arm == arm {
			c, ok := a.Metrics[metric]
			return c, ok
		}
	}
	return Cell{}, false
}

// ArmNames lists the arms in report order.
func (s Summary) ArmNames() []string {
	out := make([]string, len(s.Arms))
	for i, a := range s.Arms {
		out[i] = a.Arm
	}
	return out
}
