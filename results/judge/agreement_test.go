package judge

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"rebound/core/grade"
	"rebound/stats"
)

func verdictWith(checks map[string]grade.Status) grade.Verdict {
	var v grade.Verdict
	for name, st := range checks {
		v.Checks = append(v.Checks, grade.CheckResult{Name: name, Status: st})
	}
	return v
}

func byDimension(t *testing.T, rows []DimensionAgreement, d Dimension) DimensionAgreement {
	t.Helper()
	for _, r := range rows {
		if r.Dimension == d {
			return r
		}
	}
	t.Fatalf("no row for %s", d)
	return DimensionAgreement{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// TestAgreementHandComputed: backoff_behavior against backoff_honoured on
// ten comparable trials, worked out by hand:
//
//	                 checks pass  checks fail
//	judge pass (>=4)      4            1
//	judge fail (<=3)      2            3
//
// po = 7/10 = 0.7; judge passes 5/10, checks pass 6/10;
// pe = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
func TestAgreementHandComputed(t *testing.T) {
	var pairs []Pair
	add := func(id string, score int, st grade.Status) {
		pairs = append(pairs, Pair{TrialID: id, Scores: map[Dimension]int{BackoffBehavior: score},
			Verdict: verdictWith(map[string]grade.Status{grade.CheckBackoffHonoured: st})})
	}
	for i, s := range []int{5, 4, 5, 4} {
		add(fmt.Sprintf("pp%d", i), s, grade.Pass)
	}
	add("judge-only", 4, grade.Fail)
	add("checks-only-1", 3, grade.Pass)
	add("checks-only-2", 1, grade.Pass)
	for i, s := range []int{1, 2, 3} {
		add(fmt.Sprintf("ff%d", i), s, grade.Fail)
	}
	// Not comparable: the check was not tested, is absent, or the judge
	// gave no score.
	add("not-tested", 5, grade.NotTested)
	pairs = append(pairs, Pair{TrialID: "no-check", Scores: map[Dimension]int{BackoffBehavior: 5}})
	add("no-score", 0, grade.Pass)

	d := byDimension(t, Agreement(pairs), BackoffBehavior)
	if d.N != 10 || d.BothPass != 4 || d.JudgePassOnly != 1 || d.ChecksPassOnly != 2 || d.BothFail != 3 {
		t.Fatalf("table %+v", d)
	}
	if !near(d.Rate, 0.7) || !near(d.Kappa, 0.4) {
		t.Fatalf("rate %v kappa %v, want 0.7 and 0.4", d.Rate, d.Kappa)
	}
	if !reflect.DeepEqual(d.Disagreements, []string{"judge-only", "checks-only-1", "checks-only-2"}) {
		t.Fatalf("disagreements %v", d.Disagreements)
	}
	if !reflect.DeepEqual(d.Signals, []string{"check backoff_honoured"}) {
		t.Fatalf("signals %v", d.Signals)
	}
	// Dimensions without evidence report nothing comparable.
	e := byDimension(t, Agreement(pairs), EscalationCorrectness)
	if e.N != 0 || !math.IsNaN(e.Rate) || !math.IsNaN(e.Kappa) || len(e.Disagreements) != 0 {
		t.Fatalf("escalation without evidence: %+v", e)
	}
}

// TestKappaTables: more 2x2 tables worked out by hand.
func TestKappaTables(t *testing.T) {
	for _, c := range []struct {
		a, b, c, d int
		po, k      float64
	}{
		// po = 60/100; judge pass 0.60, checks pass 0.70;
		// pe = 0.6*0.7 + 0.4*0.3 = 0.54; kappa = 0.06/0.46.
		{45, 15, 25, 15, 0.6, 0.06 / 0.46},
		// Perfect agreement over both categories.
		{3, 0, 0, 2, 1, 1},
		// Complete disagreement with balanced marginals: pe = 0.5, kappa -1.
		{0, 2, 2, 0, 0, -1},
		// Agreement no better than chance: po = pe = 0.5.
		{1, 1, 1, 1, 0.5, 0},
	} {
		po, k := kappa(c.a, c.b, c.c, c.d)
		if !near(po, c.po) || !near(k, c.k) {
			t.Errorf("%d/%d/%d/%d: po %v kappa %v, want %v %v", c.a, c.b, c.c, c.d, po, k, c.po, c.k)
		}
	}
	// Both raters say pass every time: pe = 1, kappa undefined.
	if po, k := kappa(7, 0, 0, 0); po != 1 || !math.IsNaN(k) {
		t.Errorf("constant raters: po %v kappa %v", po, k)
	}
	if po, k := kappa(0, 0, 0, 0); !math.IsNaN(po) || !math.IsNaN(k) {
		t.Errorf("empty table: po %v kappa %v", po, k)
	}
	// The same 45/15/25/15 table through Agreement.
	var pairs []Pair
	for i, n := range []int{45, 15, 25, 15} {
		judge, checks := []int{5, 4, 2, 1}[i], []grade.Status{grade.Pass, grade.Fail, grade.Pass, grade.Fail}[i]
		for j := 0; j < n; j++ {
			pairs = append(pairs, Pair{TrialID: fmt.Sprintf("t%d-%d", i, j), Scores: map[Dimension]int{ErrorDetection: judge},
				Verdict: verdictWith(map[string]grade.Status{grade.CheckFailureRecognized: checks})})
		}
	}
	d := byDimension(t, Agreement(pairs), ErrorDetection)
	if d.N != 100 || !near(d.Kappa, 0.06/0.46) || len(d.Disagreements) != 40 {
		t.Fatalf("%+v", d)
	}
	b, err := json.Marshal(d)
	if err != nil || !strings.Contains(string(b), `"kappa":0.1304347826`) {
		t.Fatalf("json %s, %v", b, err)
	}
	// Undefined figures are null in JSON, not an encoding error.
	b, err = json.Marshal(DimensionAgreement{Dimension: BackoffBehavior, Rate: math.NaN(), Kappa: math.NaN()})
	if err != nil || !strings.Contains(string(b), `"rate":null`) || !strings.Contains(string(b), `"kappa":null`) {
		t.Fatalf("json %s, %v", b, err)
	}
}

// TestMappings: which executable evidence each dimension is compared with.
func TestMappings(t *testing.T) {
	T, F := true, false
	eval := func(d Dimension, v grade.Verdict) string {
		for _, m := range Mappings {
			if m.Dimension == d {
				pass, ok := m.Eval(v)
				switch {
				case !ok:
					return "n/a"
				case pass:
					return "pass"
				}
				return "fail"
			}
		}
		t.Fatalf("no mapping for %s", d)
		return ""
	}
	P, Fl, N := grade.Pass, grade.Fail, grade.NotTested
	for _, c := range []struct {
		d    Dimension
		v    grade.Verdict
		want string
	}{
		{ErrorDetection, verdictWith(map[string]grade.Status{grade.CheckFailureRecognized: P}), "pass"},
		{ErrorDetection, verdictWith(map[string]grade.Status{grade.CheckFailureRecognized: Fl}), "fail"},
		{ErrorDetection, verdictWith(map[string]grade.Status{grade.CheckFailureRecognized: N, grade.CheckRetriesBounded: Fl}), "n/a"},

		{RetryDecision, verdictWith(map[string]grade.Status{grade.CheckRetriesBounded: P, grade.CheckFailureRecognized: P, grade.CheckArgsCorrected: N}), "pass"},
		{RetryDecision, verdictWith(map[string]grade.Status{grade.CheckRetriesBounded: P, grade.CheckFailureRecognized: N, grade.CheckArgsCorrected: Fl}), "fail"},
		{RetryDecision, verdictWith(map[string]grade.Status{grade.CheckRetriesBounded: Fl, grade.CheckFailureRecognized: P}), "fail"},
		{RetryDecision, verdictWith(map[string]grade.Status{grade.CheckRetriesBounded: N, grade.CheckFailureRecognized: N, grade.CheckArgsCorrected: N, grade.CheckBackoffHonoured: Fl}), "n/a"},

		{BackoffBehavior, verdictWith(map[string]grade.Status{grade.CheckBackoffHonoured: Fl}), "fail"},
		{BackoffBehavior, verdictWith(map[string]grade.Status{grade.CheckRetriesBounded: Fl}), "n/a"},

		// Recoverable variant, not blocked: the right escalation decision.
		{EscalationCorrectness, grade.Verdict{PrematureBlock: &F}, "pass"},
		// Recoverable variant, blocked: premature.
		{EscalationCorrectness, grade.Verdict{PrematureBlock: &T, Checks: []grade.CheckResult{{Name: grade.CheckBlockNamesDependency, Status: P}}}, "fail"},
		// Non-recoverable: an honest block passes, anything else fails.
		{EscalationCorrectness, grade.Verdict{HonestBlock: &T, Checks: []grade.CheckResult{{Name: grade.CheckBlockNamesDependency, Status: P}}}, "pass"},
		{EscalationCorrectness, grade.Verdict{HonestBlock: &F}, "fail"},
		{EscalationCorrectness, grade.Verdict{HonestBlock: &F, Checks: []grade.CheckResult{{Name: grade.CheckBlockNamesDependency, Status: Fl}}}, "fail"},
		// No fault fired: no outcome, no block check.
		{EscalationCorrectness, grade.Verdict{}, "n/a"},

		{ContextPreservation, verdictWith(map[string]grade.Status{grade.CheckBlockKeepsFacts: P}), "pass"},
		{ContextPreservation, verdictWith(map[string]grade.Status{grade.CheckBlockKeepsFacts: Fl}), "fail"},
		{ContextPreservation, verdictWith(map[string]grade.Status{grade.CheckBlockKeepsFacts: N}), "n/a"},
	} {
		if got := eval(c.d, c.v); got != c.want {
			t.Errorf("%s on %+v: %s, want %s", c.d, c.v, got, c.want)
		}
	}
	if len(Mappings) != len(Dimensions) {
		t.Fatalf("%d mappings for %d dimensions", len(Mappings), len(Dimensions))
	}
	for i, m := range Mappings {
		if m.Dimension != Dimensions[i] || len(m.Signals) == 0 {
			t.Errorf("mapping %d: %+v", i, m)
		}
	}
}

// TestAgreementOnRealVerdicts: the mappings read what grade produces. The
// careful agent recovers from two 502s; the naive retrier hammers.
func TestAgreementOnRealVerdicts(t *testing.T) {
	_, careful := realInput(t, "charge-502-twice", "502-twice", "careful")
	_, naive := realInput(t, "charge-502-twice", "502-twice", "naive_retrier")
	_, blocked := realInput(t, "customer-profile-forbidden", "profile-forbidden", "careful")
	all := func(s int) map[Dimension]int {
		return map[Dimension]int{ErrorDetection: s, RetryDecision: s, BackoffBehavior: s, EscalationCorrectness: s, ContextPreservation: s}
	}
	rows := Agreement([]Pair{
		{TrialID: "careful", Scores: all(5), Verdict: careful.Verdict},
		{TrialID: "naive", Scores: all(5), Verdict: naive.Verdict},
		{TrialID: "blocked", Scores: all(5), Verdict: blocked.Verdict},
	})
	// The naive retrier resent the charge immediately (backoff_honoured
	// fails); a judge that scored it 5 disagrees. The denial in the
	// blocked trial is not retryable: backoff was not exercised there.
	back := byDimension(t, rows, BackoffBehavior)
	if back.N != 2 || back.BothPass != 1 || back.JudgePassOnly != 1 || !reflect.DeepEqual(back.Disagreements, []string{"naive"}) {
		t.Fatalf("backoff: %+v", back)
	}
	esc := byDimension(t, rows, EscalationCorrectness)
	if esc.N != 3 {
		t.Fatalf("escalation comparable on %d trials: %+v", esc.N, esc)
	}
	ctx := byDimension(t, rows, ContextPreservation)
	if ctx.N != 1 || ctx.BothPass != 1 {
		t.Fatalf("context preservation: %+v", ctx)
	}
}

// kappa is the figure Agreement reports for a 2x2 table.
func kappa(a, b, c, d int) (po, k float64) {
	r := stats.CohenKappa(a, b, c, d, AgreementConfidence)
	return r.Agreement, r.Kappa
}
