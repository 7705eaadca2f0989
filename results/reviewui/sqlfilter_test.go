package reviewui

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/results/judge"
	"rebound/results/judge/judgestore"
	"rebound/results/record"
	"rebound/results/report"
	"rebound/storage"
)

// The filtered trials list and a metric's regressions are answered in SQL
// (storage.ReviewReads). These tests hold them to an independent
// evaluation in Go of the stored records (st.Trials, st.Judgements) on
// generated sweeps: every filter field alone and in random combinations,
// every reported metric both ways, across two sweeps, page by page.

// generated is a random sweep: arms, scenarios (one with SQL's quote in
// its name), variants, seeds, fault classes, outcomes tested or not,
// attrition, verdicts whose checks and block outcomes are drawn apart from
// the outcome columns (so the filters must read what Go reads), a few
// unreadable verdicts, cells holding two trials, rewritten trials (the
// latest write wins), and judgements of about half the trials.
func generated(t *testing.T, st storage.Store, sweepID string, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	arms := []string{"careful", "naive", "fab'ricator"}
	scenarios := []string{"refund", "charge", "it's-odd", "sched"}
	variants := []string{"v1", "v2", "timeout"}
	classes := []string{"transient", "timeout_after_send", "rate_limited", "unavailable"}
	checks := []string{grade.CheckFailureRecognized, grade.CheckRetriesBounded, grade.CheckArgsCorrected, grade.CheckBackoffHonoured,
		grade.CheckBlockNamesDependency, grade.CheckBlockKeepsFacts, grade.CheckClaimSupported, "odd'check"}
	statuses := []grade.Status{grade.Pass, grade.Fail, grade.NotTested}
	maybe := func(p float64) *bool {
		if rng.Float64() >= p {
			return nil
		}
		b := rng.IntN(2) == 1
		return &b
	}
	var trials []record.Trial
	n := 0
	for _, a := range arms {
		for _, sc := range scenarios {
			for _, v := range variants {
				for seed := uint64(1); seed <= 12; seed++ {
					copies := 1
					if rng.IntN(25) == 0 {
						copies = 2
					}
					for range copies {
						n++
						tr := record.Trial{SweepID: sweepID, TrialID: fmt.Sprintf("t-%s-%03d-%05d", sweepID, rng.IntN(1000), n), Arm: a, Scenario: sc, Variant: v,
							Seed: seed, Agent: a, Weight: float64(1 + rng.IntN(3)), Attrition: rng.IntN(30) == 0}
						for _, c := range classes {
							if rng.IntN(3) == 0 {
								tr.FaultClasses = append(tr.FaultClasses, c)
							}
						}
						tr.SetOutcomes(func(outcome.Metric) *bool { return maybe(0.8) })
						var vd grade.Verdict
						for _, c := range checks {
							if rng.IntN(5) < 3 {
								vd.Checks = append(vd.Checks, grade.CheckResult{Name: c, Status: statuses[rng.IntN(3)]})
							}
						}
						if len(vd.Checks) > 0 && rng.IntN(10) == 0 { // a second result under the first's name: the first counts
							vd.Checks = append(vd.Checks, grade.CheckResult{Name: vd.Checks[0].Name, Status: statuses[rng.IntN(3)]})
						}
						vd.HonestBlock, vd.PrematureBlock = maybe(0.5), maybe(0.5)
						b, err := json.Marshal(vd)
						if err != nil {
							t.Fatal(err)
						}
						tr.Verdicts = string(b)
						if rng.IntN(40) == 0 {
							tr.Verdicts = "{not json"
						}
						trials = append(trials, tr)
					}
				}
			}
		}
	}
	if err := st.WriteTrials(ctx, trials, nil); err != nil {
		t.Fatal(err)
	}
	// Rewrite a tenth of them with other outcomes: the stored trial is
	// the latest write.
	var again []record.Trial
	for _, tr := range trials {
		if rng.IntN(10) == 0 {
			tr.SetOutcomes(func(outcome.Metric) *bool { return maybe(0.8) })
			tr.FaultClasses = []string{classes[rng.IntN(len(classes))]}
			again = append(again, tr)
		}
	}
	if err := st.WriteTrials(ctx, again, nil); err != nil {
		t.Fatal(err)
	}
	score := func() uint8 { return uint8(1 + rng.IntN(5)) }
	for _, tr := range trials {
		if rng.IntN(2) == 0 {
			continue
		}
		j := record.Judgement{SweepID: sweepID, TrialID: tr.TrialID, Scenario: tr.Scenario, TraceHash: "h", JudgeModel: "m", JudgePromptHash: "p",
			ErrorDetection: score(), RetryDecision: score(), BackoffBehavior: score(), EscalationCorrectness: score(), ContextPreservation: score(),
			Recommendation: record.RecommendReview, RawOutput: "{}", Attempts: 1}
		j.Aggregate = float64(int(j.ErrorDetection)+int(j.RetryDecision)+int(j.BackoffBehavior)+int(j.EscalationCorrectness)+int(j.ContextPreservation)) / 5
		if err := st.PutJudgement(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
}

// oracleMatch is the filter evaluated in Go on a stored trial and its
// judgement (nil: not judged), with the judge's own mappings.
func oracleMatch(f record.TrialFilter, t record.Trial, j *record.Judgement) bool {
	var v grade.Verdict
	if (f.Check != "" || f.Disagree) && json.Unmarshal([]byte(t.Verdicts), &v) != nil {
		return false
	}
	var scores map[judge.Dimension]int
	if j != nil {
		scores = judgestore.ScoresOf(*j)
	}
	switch {
	case f.Arm != "" && t.Arm != f.Arm, f.Scenario != "" && t.Scenario != f.Scenario, f.Variant != "" && t.Variant != f.Variant,
		f.Fault != "" && !slices.Contains(t.FaultClasses, f.Fault):
		return false
	}
	if f.Metric != "" && f.Value != "" {
		want := map[string]string{record.ValueTrue: "true", record.ValueFalse: "false", record.ValueUntested: "not tested"}[f.Value]
		if mark(oracleMetric(t, outcome.Metric(f.Metric))) != want {
			return false
		}
	}
	if f.Check != "" {
		c, ok := v.Check(f.Check)
		if !ok || (f.Status != "" && string(c.Status) != f.Status) {
			return false
		}
	}
	if f.Dimension != "" {
		s, ok := scores[judge.Dimension(f.Dimension)]
		if !ok || s >= judge.PassScore {
			return false
		}
	}
	if f.Disagree {
		if scores == nil {
			return false
		}
		return slices.ContainsFunc(judge.Mappings, func(m judge.Mapping) bool {
			pass, ok := m.Eval(v)
			s := scores[m.Dimension]
			return ok && s >= 1 && (s >= judge.PassScore) != pass
		})
	}
	return true
}

// oracleMetric is a trial's value of m: nil when not tested or lost to
// attrition; the harm index ORs its tested parts.
func oracleMetric(t record.Trial, m outcome.Metric) *bool {
	if t.Attrition {
		return nil
	}
	if m != outcome.Harm {
		return t.Outcome(m)
	}
	var out *bool
	for _, c := range outcome.HarmComponents {
		if v := t.Outcome(c); v != nil {
			b := *v || (out != nil && *out)
			out = &b
		}
	}
	return out
}

// listAll pages through ListTrials with a small page and returns the ids
// and the total each page reported.
func listAll(t *testing.T, st storage.Store, sweepID string, f record.TrialFilter) []string {
	t.Helper()
	const size = 37
	var ids []string
	for off := uint64(0); ; off += size {
		p, err := st.ListTrials(context.Background(), sweepID, f, off, size)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		for _, tr := range p.Trials {
			ids = append(ids, tr.TrialID)
		}
		if off+size >= p.Total {
			if uint64(len(ids)) != p.Total {
				t.Errorf("%+v: %d trials over the pages, total says %d", f, len(ids), p.Total)
			}
			return ids
		}
	}
}

func TestTrialFiltersInSQL(t *testing.T) {
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	seed := uint64(32)
	rng := rand.New(rand.NewPCG(seed, 1))
	generated(t, st, "gen", rng)
	trials, err := st.Trials(ctx, "gen")
	if err != nil {
		t.Fatal(err)
	}
	js, err := st.Judgements(ctx, "gen")
	if err != nil {
		t.Fatal(err)
	}
	judged := map[string]*record.Judgement{}
	for i := range js {
		judged[js[i].TrialID] = &js[i]
	}
	// Human verdicts on some trials, some withdrawn again: the list marks
	// the trials with one in force.
	for i, tr := range trials {
		if i%17 != 0 {
			continue
		}
		rv := record.Review{SweepID: "gen", TrialID: tr.TrialID, Target: "outcome:recovered", Verdict: record.ReviewPass, Reviewer: "ana"}
		if err := st.PutReview(ctx, rv); err != nil {
			t.Fatal(err)
		}
		if i%34 == 0 {
			rv.Verdict = record.ReviewCleared
			if err := st.PutReview(ctx, rv); err != nil {
				t.Fatal(err)
			}
		}
	}
	reviews, err := st.HumanReviews(ctx, "gen")
	if err != nil {
		t.Fatal(err)
	}
	inForce := judge.HumanVerdicts(reviews)
	var wantReviewed, gotReviewed []string
	for _, tr := range trials {
		if inForce[tr.TrialID] != nil {
			wantReviewed = append(wantReviewed, tr.TrialID)
		}
	}
	for off := uint64(0); off < uint64(len(trials)); off += 100 {
		p, err := st.ListTrials(ctx, "gen", record.TrialFilter{}, off, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range p.Trials {
			if p.Reviewed[tr.TrialID] {
				gotReviewed = append(gotReviewed, tr.TrialID)
			}
		}
	}
	if len(wantReviewed) == 0 || !slices.Equal(gotReviewed, wantReviewed) {
		t.Errorf("reviewed trials: the list marks %v, in force %v", gotReviewed, wantReviewed)
	}
	expect := func(f record.TrialFilter) []string {
		var out []string
		for _, tr := range trials { // st.Trials is in the list's order
			if oracleMatch(f, tr, judged[tr.TrialID]) {
				out = append(out, tr.TrialID)
			}
		}
		return out
	}
	// Every field alone, each of its values.
	var filters []record.TrialFilter
	for _, a := range []string{"careful", "fab'ricator", "nobody"} {
		filters = append(filters, record.TrialFilter{Arm: a})
	}
	filters = append(filters, record.TrialFilter{Scenario: "it's-odd"}, record.TrialFilter{Variant: "timeout"}, record.TrialFilter{Fault: "transient"},
		record.TrialFilter{Fault: "none'"}, record.TrialFilter{Disagree: true}, record.TrialFilter{Check: "odd'check"},
		record.TrialFilter{Check: grade.CheckBlockNamesDependency, Status: "not_tested"}, record.TrialFilter{Status: "fail"}, record.TrialFilter{Metric: "recovered"})
	for _, m := range outcome.Reported {
		for _, v := range filterValues {
			filters = append(filters, record.TrialFilter{Metric: string(m), Value: v})
		}
	}
	for _, d := range judge.Dimensions {
		filters = append(filters, record.TrialFilter{Dimension: string(d)})
	}
	// Random combinations.
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for range 60 {
		filters = append(filters, record.TrialFilter{
			Arm: pick("", "", "careful", "naive"), Scenario: pick("", "", "refund", "it's-odd"), Variant: pick("", "", "v1", "timeout"),
			Fault: pick("", "", "transient", "rate_limited"), Metric: pick("", "harm", "recovered", "unsafe_action", "premature_block"), Value: pick("", "true", "false", "untested"),
			Check: pick("", "", grade.CheckFailureRecognized, grade.CheckBlockKeepsFacts), Status: pick("", "pass", "fail", "not_tested"),
			Dimension: pick("", "", "", "error_detection", "escalation_correctness"), Disagree: rng.IntN(4) == 0,
		})
	}
	nonEmpty := 0
	for _, f := range filters {
		want := expect(f)
		if len(want) > 0 {
			nonEmpty++
		}
		if got := listAll(t, st, "gen", f); !slices.Equal(got, want) {
			t.Errorf("%+v: SQL gives %d trials, Go %d; first SQL %v, first Go %v", f, len(got), len(want), head(got), head(want))
		}
	}
	// The generator must exercise the filters: most of them keep something.
	if nonEmpty < len(filters)/2 {
		t.Errorf("only %d of %d filters kept any trial: the generated sweep is too thin to test them", nonEmpty, len(filters))
	}
	// A name no list offers is refused, not read as a column.
	for _, f := range []record.TrialFilter{{Metric: "weight", Value: "true"}, {Metric: "recovered", Value: "maybe"}, {Dimension: "aggregate"}} {
		if _, err := st.ListTrials(ctx, "gen", f, 0, 10); err == nil {
			t.Errorf("%+v: no error", f)
		}
	}
}

func head(ids []string) []string { return ids[:min(len(ids), 5)] }

func TestRegressionsInSQL(t *testing.T) {
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(35, 2))
	generated(t, st, "gen-a", rng)
	generated(t, st, "gen-b", rng)
	stored := map[string][]record.Trial{}
	for _, id := range []string{"gen-a", "gen-b"} {
		trs, err := st.Trials(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		stored[id] = trs
	}
	type key struct {
		scenario, variant string
		seed              uint64
	}
	// expect pairs each candidate trial with the baseline's trial of its
	// case (the last in the stored order when a cell holds two).
	expect := func(base, cand record.CompareSide, m outcome.Metric) []record.Regression {
		before := map[key]record.Trial{}
		for _, tr := range stored[base.SweepID] {
			if tr.Arm == base.Arm {
				before[key{tr.Scenario, tr.Variant, tr.Seed}] = tr
			}
		}
		type ranked struct {
			record.Regression
			trialID string
		}
		var out []ranked
		for _, tr := range stored[cand.SweepID] {
			b, ok := before[key{tr.Scenario, tr.Variant, tr.Seed}]
			if tr.Arm != cand.Arm || !ok {
				continue
			}
			bv, cv := oracleMetric(b, m), oracleMetric(tr, m)
			if bv == nil || cv == nil || *bv == *cv || *cv == m.HigherIsBetter() {
				continue
			}
			out = append(out, ranked{record.Regression{Scenario: tr.Scenario, Variant: tr.Variant, Seed: tr.Seed, Weight: tr.Weight, Baseline: *bv, Candidate: *cv}, tr.TrialID})
		}
		slices.SortFunc(out, func(a, b ranked) int {
			return cmp.Or(cmp.Compare(b.Weight, a.Weight), cmp.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Variant, b.Variant), cmp.Compare(a.Seed, b.Seed), cmp.Compare(a.trialID, b.trialID))
		})
		rs := make([]record.Regression, len(out))
		for i, r := range out {
			rs[i] = r.Regression
		}
		return rs
	}
	sides := [][2]record.CompareSide{
		{{SweepID: "gen-a", Arm: "careful"}, {SweepID: "gen-a", Arm: "naive"}},
		{{SweepID: "gen-a", Arm: "naive"}, {SweepID: "gen-a", Arm: "careful"}},
		{{SweepID: "gen-a", Arm: "fab'ricator"}, {SweepID: "gen-b", Arm: "fab'ricator"}},
		{{SweepID: "gen-b", Arm: "careful"}, {SweepID: "gen-a", Arm: "nobody"}},
	}
	found := 0
	for _, s := range sides {
		for _, m := range outcome.Reported {
			want := expect(s[0], s[1], m)
			found += len(want)
			var got []record.Regression
			const size = 9
			for off := uint64(0); ; off += size {
				p, err := st.Regressions(ctx, s[0], s[1], string(m), off, size)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p.Cases...)
				if off+size >= p.Total {
					if p.Total != uint64(len(want)) {
						t.Errorf("%v %s: total %d, want %d", s, m, p.Total, len(want))
					}
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%v %s: SQL gives %d cases, Go %d\nSQL %v\nGo  %v", s, m, len(got), len(want), got[:min(len(got), 3)], want[:min(len(want), 3)])
			}
		}
	}
	if found < 100 {
		t.Errorf("only %d regressions in all: the generated sweeps are too thin to test them", found)
	}
	if _, err := st.Regressions(ctx, sides[0][0], sides[0][1], "weight", 0, 10); err == nil {
		t.Error("an unknown metric: no error")
	}
}

// onlyEachTrial hides the store's PairOutcomes: report.LoadPairs then
// reads each arm and scenario with EachTrial.
type onlyEachTrial struct{ report.Source }

// The report's metamorphic pairs read every pair's variants in one
// statement (storage's PairOutcomes); the results are those of reading
// scenario by scenario with EachTrial.
func TestPairsReadInOneStatement(t *testing.T) {
	st := openStore(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	generated(t, st, "gen", rand.New(rand.NewPCG(7, 3)))
	plan := `{"scenarios": [
	  {"name": "refund", "metamorphic": [{"base": "v1", "flipped": "v2", "property": "retryable",
	    "expect": {"recovered": {"from": true, "to": "not_tested"}}}]},
	  {"name": "it's-odd", "metamorphic": [{"base": "v2", "flipped": "timeout", "property": "other",
	    "expect": {"honest_block": {"from": "not_tested", "to": true}, "unsafe_action": {"from": false, "to": false}}},
	    {"base": "v1", "flipped": "v2", "property": "other", "expect": {"recovered": {"from": false, "to": false}}}]},
	  {"name": "sched"}]}`
	if err := st.PutSweep(ctx, record.Sweep{SweepID: "gen", Name: "gen", PlanJSON: plan, Arms: []string{"careful"}, Status: "completed"}); err != nil {
		t.Fatal(err)
	}
	one, err := report.LoadPairs(ctx, st, "gen")
	if err != nil {
		t.Fatal(err)
	}
	each, err := report.LoadPairs(ctx, onlyEachTrial{st}, "gen")
	if err != nil {
		t.Fatal(err)
	}
	if len(each) != 9 || !reflect.DeepEqual(one, each) {
		t.Fatalf("pairs read in one statement:\n%+v\nscenario by scenario:\n%+v", one, each)
	}
	seeds := 0
	for _, r := range each {
		seeds += r.Seeds
	}
	if seeds == 0 {
		t.Fatal("no pair was checked on any seed: the test checks nothing")
	}
}
