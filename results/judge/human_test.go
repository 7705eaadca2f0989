package judge

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"rebound/core/grade"
	"rebound/results/record"
	"rebound/stats"
)

// TestAgreementWithHumans: tables built by hand from generated reviews are
// counted exactly, kappa and its interval are stats.CohenKappa's of that
// table, and targets nobody reviewed are left out.
func TestAgreementWithHumans(t *testing.T) {
	tru, fls := true, false
	var trials []Reviewed
	want := map[string][4]int{} // target/rater -> both pass, rater only, human only, both fail
	add := func(key string, rater, human bool) {
		c := want[key]
		switch {
		case rater && human:
			c[0]++
		case rater:
			c[1]++
		case human:
			c[2]++
		default:
			c[3]++
		}
		want[key] = c
	}
	for i := 0; i < 40; i++ {
		score := 1 + i%5
		check := []grade.Status{grade.Pass, grade.Fail}[i%3%2]
		recovered := []*bool{&tru, &fls, nil}[i%3]
		humanED, humanRec := i%4 != 0, i%2 == 0
		v := verdictWith(map[string]grade.Status{grade.CheckFailureRecognized: check})
		v.Recovered = recovered
		r := Reviewed{TrialID: fmt.Sprintf("t%02d", i), Verdict: v, Human: map[string]bool{
			record.ReviewJudge + string(ErrorDetection): humanED,
			record.ReviewOutcome + "recovered":          humanRec,
		}}
		if i%7 != 0 { // some reviewed trials were never judged
			r.Scores = map[Dimension]int{ErrorDetection: score}
			add("judge:error_detection/judge", score >= PassScore, humanED)
		}
		add("judge:error_detection/checks", check == grade.Pass, humanED)
		if recovered != nil {
			add("outcome:recovered/checks", *recovered, humanRec)
		}
		trials = append(trials, r)
	}
	got := AgreementWithHumans(trials, 0.95)
	if len(got) != 3 {
		t.Fatalf("rows = %d, want 3 (error_detection by judge and checks, recovered by checks): %+v", len(got), got)
	}
	for _, h := range got {
		c := want[h.Target+"/"+h.Rater]
		if [4]int{h.BothPass, h.RaterPassOnly, h.HumanPassOnly, h.BothFail} != c {
			t.Errorf("%s/%s: table %d %d %d %d, want %v", h.Target, h.Rater, h.BothPass, h.RaterPassOnly, h.HumanPassOnly, h.BothFail, c)
		}
		k := stats.CohenKappa(c[0], c[1], c[2], c[3], 0.95)
		if h.N != k.N || h.Kappa != k.Kappa || h.KappaLo != k.Interval.Lo || h.KappaHi != k.Interval.Hi {
			t.Errorf("%s/%s: kappa %v [%v, %v] n %d, want %+v", h.Target, h.Rater, h.Kappa, h.KappaLo, h.KappaHi, h.N, k)
		}
		if len(h.Disagreements) != c[1]+c[2] {
			t.Errorf("%s/%s: %d disagreements, want %d", h.Target, h.Rater, len(h.Disagreements), c[1]+c[2])
		}
	}
	if got := AgreementWithHumans(nil, 0.95); got == nil || len(got) != 0 {
		t.Errorf("no reviews: %v, want []", got)
	}
	// Undefined numbers are null in JSON.
	b, err := json.Marshal(HumanAgreement{Target: "outcome:recovered", Rater: RaterChecks, Rate: math.NaN(), Kappa: math.NaN(), KappaLo: math.NaN(), KappaHi: math.NaN()})
	if err != nil || !strings.Contains(string(b), `"kappa":null`) || !strings.Contains(string(b), `"kappa_lo":null`) {
		t.Errorf("json %s %v", b, err)
	}
}

func TestHumanVerdicts(t *testing.T) {
	got := HumanVerdicts([]record.Review{
		{TrialID: "a", Target: "outcome:recovered", Verdict: record.ReviewPass},
		{TrialID: "a", Target: "judge:retry_decision", Verdict: record.ReviewFail},
		{TrialID: "b", Target: "outcome:recovered", Verdict: record.ReviewCleared},
	})
	if len(got) != 1 || !got["a"]["outcome:recovered"] || got["a"]["judge:retry_decision"] {
		t.Errorf("HumanVerdicts = %v", got)
	}
	if TargetName("judge:retry_decision") != "retry_decision" {
		t.Error("TargetName")
	}
}
