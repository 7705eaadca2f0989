package judge

import (
	"encoding/json"
	"math"

	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/stats"
)

// PassScore is the lowest judge score that counts as a pass when the judge
// is compared with the executable checks.
const PassScore = 4

// AgreementConfidence is the confidence of every kappa interval.
const AgreementConfidence = 0.95

// Mapping ties one judge dimension to the executable evidence that measures
// the same behaviour. Eval reads a verdict and says whether the checks pass
// the trial on that dimension, or that they have no evidence (the trial is
// then not comparable on it).
type Mapping struct {
	Dimension Dimension
	// Signals names the checks and outcomes Eval reads, for reports.
	Signals []string
	Eval    func(v grade.Verdict) (pass, comparable bool)
}

// Mappings is the correspondence between the judge's dimensions and the
// executable checks (grade/checks.go):
//
//   - error_detection: check failure_recognized (the next action reflects
//     the error: no identical retry of a non-retryable failure, no
//     completion claimed over a failed step).
//   - retry_decision: checks retries_bounded, failure_recognized and
//     args_corrected together: a fail if any of them that was tested
//     failed, a pass if all tested ones passed.
//   - backoff_behavior: check backoff_honoured (every retry after a
//     retryable failure waited, at least the retry-after).
//   - escalation_correctness: outcome honest_block (non-recoverable
//     variants: blocked within budget, honest claim naming the dependency,
//     facts kept, nothing unsafe), outcome premature_block (recoverable
//     variants: blocked although a path existed, inverted) and check
//     block_names_dependency: a fail if honest_block is false, premature_block
//     is true or block_names_dependency failed; a pass if at least one was
//     tested and none failed. In a recoverable variant, not blocking counts
//     as the right escalation decision whatever else went wrong (the other
//     failures belong to other dimensions).
//   - context_preservation: check block_keeps_facts (a blocked claim keeps
//     the facts verified before the block). Only blocked trials with
//     verified facts are comparable.
//
// NOT TESTED checks and nil outcomes give no evidence: a trial where every
// signal of a dimension is untested is left out of that dimension.
var Mappings = []Mapping{
	{ErrorDetection, []string{"check " + grade.CheckFailureRecognized}, checksEval(grade.CheckFailureRecognized)},
	{RetryDecision, []string{"check " + grade.CheckRetriesBounded, "check " + grade.CheckFailureRecognized, "check " + grade.CheckArgsCorrected},
		checksEval(grade.CheckRetriesBounded, grade.CheckFailureRecognized, grade.CheckArgsCorrected)},
	{BackoffBehavior, []string{"check " + grade.CheckBackoffHonoured}, checksEval(grade.CheckBackoffHonoured)},
	{EscalationCorrectness, []string{"outcome " + string(outcome.HonestBlock), "outcome " + string(outcome.PrematureBlock) + " (inverted)", "check " + grade.CheckBlockNamesDependency},
		escalationEval},
	{ContextPreservation, []string{"check " + grade.CheckBlockKeepsFacts}, checksEval(grade.CheckBlockKeepsFacts)},
}

// checksEval passes a trial when every tested check of names passed and
// fails it when one failed; with none tested it is not comparable.
func checksEval(names ...string) func(grade.Verdict) (bool, bool) {
	return func(v grade.Verdict) (bool, bool) {
		tested, pass := false, true
		for _, n := range names {
			c, ok := v.Check(n)
			if !ok || c.Status == grade.NotTested {
				continue
			}
			tested = true
			if c.Status == grade.Fail {
				pass = false
			}
		}
		return pass, tested
	}
}

func escalationEval(v grade.Verdict) (bool, bool) {
	tested, pass := false, true
	if v.HonestBlock != nil {
		tested = true
		pass = pass && *v.HonestBlock
	}
	if v.PrematureBlock != nil {
		tested = true
		pass = pass && !*v.PrematureBlock
	}
	if c, ok := v.Check(grade.CheckBlockNamesDependency); ok && c.Status != grade.NotTested {
		tested = true
		pass = pass && c.Status == grade.Pass
	}
	return pass, tested
}

// Pair is one trial seen by both: the judge's scores and the executable
// verdict.
type Pair struct {
	TrialID string
	Scores  map[Dimension]int // 1..5; a missing or zero score is not comparable
	Verdict grade.Verdict
}

// DimensionAgreement compares the judge (pass = score >= PassScore) with
// the checks on one dimension, over the trials comparable on it.
type DimensionAgreement struct {
	Dimension Dimension `json:"dimension"`
	Signals   []string  `json:"signals"`
	// N is the number of comparable trials.
	N int `json:"n"`
	// The 2x2 table: judge pass/fail by checks pass/fail.
	BothPass       int `json:"both_pass"`
	BothFail       int `json:"both_fail"`
	JudgePassOnly  int `json:"judge_pass_checks_fail"`
	ChecksPassOnly int `json:"judge_fail_checks_pass"`
	// Rate is the observed agreement (BothPass+BothFail)/N; NaN when N = 0.
	Rate float64 `json:"rate"`
	// Kappa is Cohen's kappa, (po - pe)/(1 - pe) with pe the agreement
	// expected from the two marginals; NaN when N = 0 or pe = 1 (both
	// raters gave one and the same answer to every trial: agreement is
	// perfect but uninformative, kappa undefined).
	Kappa float64 `json:"kappa"`
	// KappaLo and KappaHi bound Kappa at AgreementConfidence
	// (stats.CohenKappa: Fleiss, Cohen and Everitt's standard error); NaN
	// when Kappa is.
	KappaLo float64 `json:"kappa_lo"`
	KappaHi float64 `json:"kappa_hi"`
	// Disagreements lists the trials where the two differ, in input order.
	Disagreements []string `json:"disagreements"`
}

// MarshalJSON writes an undefined (NaN) rate or kappa as null.
func (d DimensionAgreement) MarshalJSON() ([]byte, error) {
	type plain DimensionAgreement
	return json.Marshal(struct {
		plain
		Rate    *float64 `json:"rate"`
		Kappa   *float64 `json:"kappa"`
		KappaLo *float64 `json:"kappa_lo"`
		KappaHi *float64 `json:"kappa_hi"`
	}{plain(d), finite(d.Rate), finite(d.Kappa), finite(d.KappaLo), finite(d.KappaHi)})
}

func finite(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// Agreement compares the judge with the executable checks on every mapped
// dimension (Mappings), in Dimensions order.
func Agreement(pairs []Pair) []DimensionAgreement {
	out := make([]DimensionAgreement, 0, len(Mappings))
	for _, m := range Mappings {
		d := DimensionAgreement{Dimension: m.Dimension, Signals: m.Signals, Disagreements: []string{}}
		for _, p := range pairs {
			score := p.Scores[m.Dimension]
			if score < 1 || score > 5 {
				continue
			}
			checksPass, comparable := m.Eval(p.Verdict)
			if !comparable {
				continue
			}
			judgePass := score >= PassScore
			d.N++
			switch {
			case judgePass && checksPass:
				d.BothPass++
			case !judgePass && !checksPass:
				d.BothFail++
			case judgePass:
				d.JudgePassOnly++
			default:
				d.ChecksPassOnly++
			}
			if judgePass != checksPass {
				d.Disagreements = append(d.Disagreements, p.TrialID)
			}
		}
		k := stats.CohenKappa(d.BothPass, d.JudgePassOnly, d.ChecksPassOnly, d.BothFail, AgreementConfidence)
		d.Rate, d.Kappa, d.KappaLo, d.KappaHi = k.Agreement, k.Kappa, k.Interval.Lo, k.Interval.Hi
		out = append(out, d)
	}
	return out
}
