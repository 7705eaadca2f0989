package judge

import (
	"encoding/json"
	"strings"

	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/results/record"
	"rebound/stats"
)

// Raters compared with the human reviewers (HumanAgreement.Rater).
const (
	RaterJudge  = "judge"
	RaterChecks = "checks"
)

// Reviewed is one trial a person reviewed: the machine's answers (the
// stored verdict; the judge's scores when a judge ran, else nil) and the
// human verdicts in force, by target (record.ReviewOutcome+metric or
// record.ReviewJudge+dimension): true for pass.
type Reviewed struct {
	TrialID string
	Verdict grade.Verdict
	Scores  map[Dimension]int
	Human   map[string]bool
}

// HumanAgreement is one machine rater's agreement with the humans on one
// target, over the reviewed trials where both answered.
type HumanAgreement struct {
	// Target is record.ReviewJudge+dimension or record.ReviewOutcome+metric.
	Target string `json:"target"`
	// Rater is RaterJudge (a score of PassScore or more is a pass) or
	// RaterChecks (the executable verdict: Mappings for a dimension, the
	// outcome itself for an outcome).
	Rater string `json:"rater"`
	N     int    `json:"n"`
	// The 2x2 table: rater pass/fail by human pass/fail.
	BothPass      int `json:"both_pass"`
	RaterPassOnly int `json:"rater_pass_human_fail"`
	HumanPassOnly int `json:"rater_fail_human_pass"`
	BothFail      int `json:"both_fail"`
	// Rate is the observed agreement, Kappa Cohen's kappa with its interval
	// (stats.CohenKappa); NaN (null in JSON) when undefined.
	Rate    float64 `json:"rate"`
	Kappa   float64 `json:"kappa"`
	KappaLo float64 `json:"kappa_lo"`
	KappaHi float64 `json:"kappa_hi"`
	// Disagreements lists the trials where the two differ.
	Disagreements []string `json:"disagreements"`
}

// MarshalJSON writes undefined numbers as null.
func (h HumanAgreement) MarshalJSON() ([]byte, error) {
	type plain HumanAgreement
	return json.Marshal(struct {
		plain
		Rate    *float64 `json:"rate"`
		Kappa   *float64 `json:"kappa"`
		KappaLo *float64 `json:"kappa_lo"`
		KappaHi *float64 `json:"kappa_hi"`
	}{plain(h), finite(h.Rate), finite(h.Kappa), finite(h.KappaLo), finite(h.KappaHi)})
}

// AgreementWithHumans compares the judge and the checks with the human
// verdicts: per judge dimension the judge and the checks (through
// Mappings), per outcome the checks, each with Cohen's kappa and its
// interval at confidence conf. Targets no human answered are left out;
// a target with human answers but no machine answer has N = 0.
func AgreementWithHumans(trials []Reviewed, conf float64) []HumanAgreement {
	var out []HumanAgreement
	for _, m := range Mappings {
		target := record.ReviewJudge + string(m.Dimension)
		if !anyHuman(trials, target) {
			continue
		}
		out = append(out,
			humanRow(trials, target, RaterJudge, conf, func(r Reviewed) (bool, bool) {
				s := r.Scores[m.Dimension]
				return s >= PassScore, s >= 1 && s <= 5
			}),
			humanRow(trials, target, RaterChecks, conf, func(r Reviewed) (bool, bool) { return m.Eval(r.Verdict) }))
	}
	for _, metric := range outcome.Graded {
		target := record.ReviewOutcome + string(metric)
		if !anyHuman(trials, target) {
			continue
		}
		out = append(out, humanRow(trials, target, RaterChecks, conf, func(r Reviewed) (bool, bool) {
			v := r.Verdict.Metric(metric)
			return v != nil && *v, v != nil
		}))
	}
	if out == nil {
		out = []HumanAgreement{}
	}
	return out
}

func anyHuman(trials []Reviewed, target string) bool {
	for _, r := range trials {
		if _, ok := r.Human[target]; ok {
			return true
		}
	}
	return false
}

func humanRow(trials []Reviewed, target, rater string, conf float64, machine func(Reviewed) (pass, ok bool)) HumanAgreement {
	h := HumanAgreement{Target: target, Rater: rater, Disagreements: []string{}}
	for _, r := range trials {
		human, ok := r.Human[target]
		if !ok {
			continue
		}
		pass, ok := machine(r)
		if !ok {
			continue
		}
		switch {
		case pass && human:
			h.BothPass++
		case pass:
			h.RaterPassOnly++
		case human:
			h.HumanPassOnly++
		default:
			h.BothFail++
		}
		if pass != human {
			h.Disagreements = append(h.Disagreements, r.TrialID)
		}
	}
	k := stats.CohenKappa(h.BothPass, h.RaterPassOnly, h.HumanPassOnly, h.BothFail, conf)
	h.N, h.Rate, h.Kappa, h.KappaLo, h.KappaHi = k.N, k.Agreement, k.Kappa, k.Interval.Lo, k.Interval.Hi
	return h
}

// HumanVerdicts turns the reviews in force into Reviewed.Human maps by
// trial (cleared reviews are not in force and never reach here).
func HumanVerdicts(reviews []record.Review) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, r := range reviews {
		if r.Verdict != record.ReviewPass && r.Verdict != record.ReviewFail {
			continue
		}
		if out[r.TrialID] == nil {
			out[r.TrialID] = map[string]bool{}
		}
		out[r.TrialID][r.Target] = r.Verdict == record.ReviewPass
	}
	return out
}

// TargetName is a target without its kind ("recovered", "error_detection").
func TargetName(target string) string {
	_, name, _ := strings.Cut(target, ":")
	return name
}
