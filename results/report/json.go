package report

import (
	"encoding/json"
	"io"
	"math"
	"strconv"

	"rebound/core/scenario"
	"rebound/stats"
)

// jnum is a float written as null when NaN or infinite (NOT TESTED or
// undefined), never as a zero.
type jnum float64

func (x jnum) MarshalJSON() ([]byte, error) {
	if isNaN(float64(x)) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(x), 'g', -1, 64), nil
}

type jsonCell struct {
	Successes    int  `json:"successes"`
	N            int  `json:"n"`
	Rate         jnum `json:"rate"`
	Lo           jnum `json:"ci_lo"`
	Hi           jnum `json:"ci_hi"`
	Clusters     int  `json:"clusters"`
	SE           jnum `json:"se"`
	ClusteredLo  jnum `json:"clustered_ci_lo"`
	ClusteredHi  jnum `json:"clustered_ci_hi"`
	DesignEffect jnum `json:"design_effect"`
	// NotEstimable: why se is null (one scenario, or all trials agree).
	NotEstimable *string `json:"not_estimable"`
	Weighted     jnum    `json:"weighted_rate"`
	WeightedSE   jnum    `json:"weighted_se"`
	WeightedLo   jnum    `json:"weighted_ci_lo"`
	WeightedHi   jnum    `json:"weighted_ci_hi"`
	// WeightedFloored: the interval was widened to the Wilson floor.
	WeightedFloored      bool    `json:"weighted_ci_floored"`
	WeightedNotEstimable *string `json:"weighted_not_estimable"`
}

// MarshalJSON writes NaN (not tested) as null.
func (c Cell) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonCell{
		Successes: c.Successes, N: c.N, Rate: jnum(c.Rate), Lo: jnum(c.Lo), Hi: jnum(c.Hi),
		Clusters: c.Clusters, SE: jnum(c.SE), ClusteredLo: jnum(c.ClusteredLo), ClusteredHi: jnum(c.ClusteredHi),
		DesignEffect: jnum(c.DesignEffect), NotEstimable: optString(c.NotEstimable), Weighted: jnum(c.Weighted), WeightedSE: jnum(c.WeightedSE),
		WeightedLo: jnum(c.WeightedLo), WeightedHi: jnum(c.WeightedHi),
		WeightedFloored: c.WeightedFloored, WeightedNotEstimable: optString(c.WeightedNotEstimable),
	})
}

// MarshalJSON adds the attrition rate. unsealed_trials counts the trials
// whose agent ran unsealed (0 when all ran sealed or in process).
func (a ArmSummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Arm           string          `json:"arm"`
		Trials        int             `json:"trials"`
		Attrition     int             `json:"attrition"`
		AttritionRate jnum            `json:"attrition_rate"`
		Unsealed      int             `json:"unsealed_trials"`
		Scenarios     int             `json:"scenarios"`
		Variation     jsonVariation   `json:"variation"`
		Metrics       map[string]Cell `json:"metrics"`
	}{a.Arm, a.Trials, a.Attrition, jnum(a.AttritionRate()), a.Unsealed, a.Scenarios, jvar(a.Variation), a.Metrics})
}

type jsonGroupArm struct {
	Arm     string          `json:"arm"`
	Trials  int             `json:"trials"`
	Metrics map[string]Cell `json:"metrics"`
}

type jsonGroup struct {
	Name string         `json:"name"`
	Arms []jsonGroupArm `json:"arms"`
}

func jsonGroups(gs []Group) []jsonGroup {
	out := make([]jsonGroup, 0, len(gs))
	for _, g := range gs {
		jg := jsonGroup{Name: g.Name, Arms: []jsonGroupArm{}}
		for _, a := range g.Arms {
			jg.Arms = append(jg.Arms, jsonGroupArm(a))
		}
		out = append(out, jg)
	}
	return out
}

// MarshalJSON writes the summary with snake_case keys.
func (s Summary) MarshalJSON() ([]byte, error) {
	arms := s.Arms
	if arms == nil {
		arms = []ArmSummary{}
	}
	pairs := s.Pairs
	if pairs == nil {
		pairs = []scenario.PairResult{}
	}
	return json.Marshal(struct {
		SweepID       string                 `json:"sweep_id"`
		Name          string                 `json:"name"`
		Status        string                 `json:"status"`
		TrialsPlanned uint64                 `json:"trials_planned"`
		TrialsStored  uint64                 `json:"trials_stored"`
		Confidence    float64                `json:"confidence"`
		Arms          []ArmSummary           `json:"arms"`
		ByScenario    []jsonGroup            `json:"by_scenario"`
		ByFaultClass  []jsonGroup            `json:"by_fault_class"`
		ByAxis        map[string][]jsonGroup `json:"by_axis,omitempty"`
		Pairs         []scenario.PairResult  `json:"metamorphic_pairs"`
		Spend         any                    `json:"spend,omitempty"`
	}{s.SweepID, s.Name, s.Status, s.TrialsPlanned, s.TrialsStored, s.Confidence, arms,
		jsonGroups(s.ByScenario), jsonGroups(s.ByFaultClass), axisGroups(s.ByAxis), pairs, SpendJSON(s.Spend)})
}

func axisGroups(bs []AxisBreakdown) map[string][]jsonGroup {
	if len(bs) == 0 {
		return nil
	}
	out := map[string][]jsonGroup{}
	for _, b := range bs {
		out[b.Axis] = jsonGroups(b.Groups)
	}
	return out
}

// WriteJSON renders the summary for machines; untested rates are null.
func (s Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

type jsonVariation struct {
	CasesWithSeveralSeeds int  `json:"cases_with_several_seeds"`
	ConstantCases         int  `json:"constant_across_seeds"`
	Constant              bool `json:"never_varies"`
}

func jvar(v stats.ArmVariation) jsonVariation {
	return jsonVariation{v.Cases, v.ConstantCases, v.Constant()}
}

type jsonWeighted struct {
	Baseline     jnum    `json:"baseline_rate"`
	Candidate    jnum    `json:"candidate_rate"`
	Delta        jnum    `json:"delta"`
	SE           jnum    `json:"se"`
	Lo           jnum    `json:"ci_lo"`
	Hi           jnum    `json:"ci_hi"`
	P            jnum    `json:"p"`
	MidP         jnum    `json:"mid_p"`
	PMethod      string  `json:"p_method"`
	NotEstimable *string `json:"not_estimable"`
	SumWeight    jnum    `json:"sum_weight"`
	BootLo       jnum    `json:"bootstrap_ci_lo"`
	BootHi       jnum    `json:"bootstrap_ci_hi"`
	Direction    string  `json:"direction"`
}

type jsonDiff struct {
	Metric             string        `json:"metric"`
	HigherIsBetter     bool          `json:"higher_is_better"`
	Direction          string        `json:"direction"`
	Pairs              int           `json:"pairs"`
	Cases              int           `json:"cases"`
	Clusters           int           `json:"clusters"`
	OneArmOnly         int           `json:"tested_in_one_arm_only"`
	Baseline           jnum          `json:"baseline_rate"`
	Candidate          jnum          `json:"candidate_rate"`
	BaselineSuccesses  *int          `json:"baseline_successes"`
	CandidateSuccesses *int          `json:"candidate_successes"`
	Delta              jnum          `json:"delta"`
	Lo                 jnum          `json:"ci_lo"`
	Hi                 jnum          `json:"ci_hi"`
	P                  jnum          `json:"p"`
	MidP               jnum          `json:"mid_p"`
	PMethod            string        `json:"p_method"`
	SE                 jnum          `json:"clustered_se"`
	TP                 jnum          `json:"clustered_t_p"`
	NotEstimable       *string       `json:"not_estimable"`
	DesignEffect       jnum          `json:"design_effect"`
	EffectiveN         jnum          `json:"effective_n"`
	BaselineVariation  jsonVariation `json:"baseline_variation"`
	CandidateVariation jsonVariation `json:"candidate_variation"`
	ScenarioLo         jnum          `json:"by_scenario_ci_lo"`
	ScenarioHi         jnum          `json:"by_scenario_ci_hi"`
	Weighted           jsonWeighted  `json:"weighted"`
	Binary             bool          `json:"binary"`
	Table              *[4]int       `json:"table_n11_n12_n21_n22"`
	McNemarP           jnum          `json:"iid_mcnemar_exact_p"`
	McNemarMidP        jnum          `json:"iid_mcnemar_mid_p"`
	NewcombeLo         jnum          `json:"iid_newcombe_ci_lo"`
	NewcombeHi         jnum          `json:"iid_newcombe_ci_hi"`
	TangoLo            jnum          `json:"iid_tango_ci_lo"`
	TangoHi            jnum          `json:"iid_tango_ci_hi"`
	BootLo             jnum          `json:"bootstrap_ci_lo"`
	BootHi             jnum          `json:"bootstrap_ci_hi"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON writes NaN as null; the 2×2 table and successes only when
// the outcomes are binary. not_estimable is null, or why the clustered SE and
// interval are null.
func (d MetricDiff) MarshalJSON() ([]byte, error) {
	w := d.Weighted
	j := jsonDiff{
		Metric: d.Metric, HigherIsBetter: d.HigherIsBetter, Direction: d.Direction, Pairs: d.Pairs, Cases: d.Cases,
		Clusters: d.Clusters, OneArmOnly: d.OneArmOnly, Baseline: jnum(d.Baseline), Candidate: jnum(d.Candidate),
		Delta: jnum(d.Delta), Lo: jnum(d.Lo), Hi: jnum(d.Hi), P: jnum(d.P), MidP: jnum(d.MidP), PMethod: d.PMethod,
		SE: jnum(d.SE), TP: jnum(d.TP), NotEstimable: optString(d.NotEstimable),
		DesignEffect: jnum(d.DesignEffect), EffectiveN: jnum(d.EffectiveN),
		BaselineVariation: jvar(d.BaselineVariation), CandidateVariation: jvar(d.CandidateVariation),
		ScenarioLo: jnum(d.ScenarioLo), ScenarioHi: jnum(d.ScenarioHi),
		Weighted: jsonWeighted{Baseline: jnum(w.Baseline), Candidate: jnum(w.Candidate), Delta: jnum(w.Delta), SE: jnum(w.SE),
			Lo: jnum(w.Lo), Hi: jnum(w.Hi), P: jnum(w.P), MidP: jnum(w.MidP), PMethod: w.PMethod,
			NotEstimable: optString(w.NotEstimable), SumWeight: jnum(w.SumWeight), BootLo: jnum(w.BootLo), BootHi: jnum(w.BootHi),
			Direction: w.Direction},
		Binary: d.Binary, McNemarP: jnum(d.McNemarP), McNemarMidP: jnum(d.McNemarMidP),
		NewcombeLo: jnum(d.NewcombeLo), NewcombeHi: jnum(d.NewcombeHi), TangoLo: jnum(d.TangoLo), TangoHi: jnum(d.TangoHi),
		BootLo: jnum(d.BootLo), BootHi: jnum(d.BootHi),
	}
	if d.Binary {
		bs, cs := d.BaselineSuccesses, d.CandidateSuccesses
		j.BaselineSuccesses, j.CandidateSuccesses = &bs, &cs
		j.Table = &[4]int{d.Table.N11, d.Table.N12, d.Table.N21, d.Table.N22}
	}
	return json.Marshal(j)
}

type jsonSide struct {
	SweepID       string `json:"sweep_id"`
	Arm           string `json:"arm"`
	Trials        int    `json:"trials"`
	Attrition     int    `json:"attrition"`
	Unmatched     int    `json:"unmatched"`
	AttritionRate jnum   `json:"attrition_rate"`
	Unsealed      int    `json:"unsealed_trials"`
}

type jsonGroupDiff struct {
	Name    string       `json:"name"`
	Cases   int          `json:"cases"`
	Metrics []MetricDiff `json:"metrics"`
}

type jsonUnmatched struct {
	Scenario string `json:"scenario"`
	Variant  string `json:"variant"`
	Seed     uint64 `json:"seed"`
	Side     string `json:"graded_in"`
	Reason   string `json:"reason"`
}

type jsonCheck struct {
	Metric         string  `json:"metric"`
	Weighted       bool    `json:"weighted"`
	Rule           string  `json:"rule"`
	Limit          float64 `json:"limit"`
	Blocking       bool    `json:"blocking"`
	MinPairs       int     `json:"min_pairs"`
	Status         string  `json:"status"`
	Reason         string  `json:"reason"`
	Pairs          int     `json:"pairs"`
	Delta          jnum    `json:"delta"`
	Lo             jnum    `json:"ci_lo"`
	Hi             jnum    `json:"ci_hi"`
	Bound          jnum    `json:"bound"`
	Within         bool    `json:"within_limit"`
	P              jnum    `json:"p"`
	AdjustedP      jnum    `json:"adjusted_p"`
	Adjustment     string  `json:"adjustment"`
	HigherIsBetter bool    `json:"higher_is_better"`
}

type jsonGate struct {
	File       string      `json:"thresholds_file"`
	Confidence float64     `json:"confidence"`
	Passed     bool        `json:"passed"`
	Failures   int         `json:"failures"`
	Warnings   int         `json:"warnings"`
	Blocking   int         `json:"blocking_family_size"`
	Checks     []jsonCheck `json:"checks"`
}

func rate(k, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return float64(k) / float64(n)
}

// MarshalJSON writes the comparison (and the gate, when evaluated).
func (c Comparison) MarshalJSON() ([]byte, error) {
	groups := func(gs []GroupDiff) []jsonGroupDiff {
		out := make([]jsonGroupDiff, 0, len(gs))
		for _, g := range gs {
			out = append(out, jsonGroupDiff(g))
		}
		return out
	}
	un := make([]jsonUnmatched, 0, len(c.Unmatched))
	for _, u := range c.Unmatched {
		un = append(un, jsonUnmatched{u.Scenario, u.Variant, u.Seed, u.Side, u.Reason})
	}
	var g *jsonGate
	if c.Gate != nil {
		g = &jsonGate{File: c.Gate.File, Confidence: c.Gate.Confidence, Passed: c.Gate.Passed,
			Failures: c.Gate.Failures, Warnings: c.Gate.Warnings, Blocking: c.Gate.Blocking, Checks: []jsonCheck{}}
		for _, k := range c.Gate.Checks {
			g.Checks = append(g.Checks, jsonCheck{
				Metric: k.Metric, Weighted: k.Weighted, Rule: k.Rule, Limit: k.Limit, Blocking: k.Blocking, MinPairs: k.MinPairs,
				Status: k.Status, Reason: k.Reason, Pairs: k.Pairs, Delta: jnum(k.Delta), Lo: jnum(k.Lo), Hi: jnum(k.Hi),
				Bound: jnum(k.Bound), Within: k.Within, P: jnum(k.P), AdjustedP: jnum(k.AdjustedP),
				Adjustment: k.Adjustment, HigherIsBetter: k.HigherIsBetter,
			})
		}
	}
	warnings := c.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	metrics := c.Metrics
	if metrics == nil {
		metrics = []MetricDiff{}
	}
	return json.Marshal(struct {
		Baseline   jsonSide        `json:"baseline"`
		Candidate  jsonSide        `json:"candidate"`
		Confidence float64         `json:"confidence"`
		Cases      int             `json:"paired_cases"`
		Distinct   int             `json:"cases"`
		Scenarios  int             `json:"scenarios"`
		Unit       string          `json:"unit"`
		BaseVar    jsonVariation   `json:"baseline_variation"`
		CandVar    jsonVariation   `json:"candidate_variation"`
		Harm       string          `json:"harm_index"`
		Verdict    string          `json:"verdict"`
		Gate       *jsonGate       `json:"gate,omitempty"`
		Metrics    []MetricDiff    `json:"metrics"`
		Unmatched  []jsonUnmatched `json:"unmatched"`
		Warnings   []string        `json:"warnings"`
		ByFault    []jsonGroupDiff `json:"by_fault_class"`
		ByScenario []jsonGroupDiff `json:"by_scenario"`
		Spend      any             `json:"spend,omitempty"`
	}{
		Baseline: jsonSide{c.Baseline.SweepID, c.Baseline.Arm, c.BaselineTrials, c.BaselineAttrition, c.UnmatchedBaseline,
			jnum(rate(c.BaselineAttrition, c.BaselineTrials)), c.BaselineUnsealed},
		Candidate: jsonSide{c.Candidate.SweepID, c.Candidate.Arm, c.CandidateTrials, c.CandidateAttrition, c.UnmatchedCandidate,
			jnum(rate(c.CandidateAttrition, c.CandidateTrials)), c.CandidateUnsealed},
		Confidence: c.Confidence, Cases: c.Cases, Distinct: c.DistinctCases, Scenarios: c.Scenarios, Unit: c.Unit,
		BaseVar: jvar(c.BaselineVariation), CandVar: jvar(c.CandidateVariation), Harm: c.HarmLine(),
		Verdict: c.Headline(), Gate: g,
		Metrics: metrics, Unmatched: un, Warnings: warnings,
		ByFault: groups(c.ByFaultClass), ByScenario: groups(c.ByScenario), Spend: c.spendJSON(),
	})
}

// WriteJSON renders the comparison for machines; NaN is null.
func (c Comparison) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}
