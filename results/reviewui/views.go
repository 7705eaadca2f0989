package reviewui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/results/artifact"
	"rebound/results/judge"
	"rebound/results/judge/judgestore"
	"rebound/results/record"

	"rebound/results/report"
)

// ---- sweeps ----

func (s *Server) sweepsPage(w http.ResponseWriter, r *http.Request) {
	sweeps, err := s.src.Sweeps(r.Context(), 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "sweeps", "sweeps", nil, sweeps)
}

type sweepView struct {
	Sweep   record.Sweep
	Harm    string
	Arms    []string // labels
	ArmIDs  []string
	Rows    []metricRow
	Text    string // the terminal report, from the same code as rebound report
	Planned uint64
	Stored  uint64
}

type metricRow struct {
	Metric string
	Cells  []string
}

func (s *Server) sweepPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("sweep")
	sw, err := s.src.Sweep(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sum, err := s.summary(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := sweepView{Sweep: sw, Harm: sum.HarmLine(), Planned: sum.TrialsPlanned, Stored: sum.TrialsStored}
	for _, a := range sum.Arms {
		v.Arms = append(v.Arms, a.Label())
		v.ArmIDs = append(v.ArmIDs, a.Arm)
	}
	for _, m := range outcome.Reported {
		row := metricRow{Metric: string(m)}
		for _, a := range sum.Arms {
			row.Cells = append(row.Cells, a.Metrics[string(m)].String())
		}
		v.Rows = append(v.Rows, row)
	}
	var b strings.Builder
	if err := sum.WriteText(&b); err != nil {
		s.fail(w, r, err)
		return
	}
	v.Text = b.String()
	s.render(w, r, "sweep", "sweep "+id, []crumb{{"sweeps", "/"}}, v)
}

// ---- compare ----

type compareView struct {
	SweepID, Baseline, Candidate, BaselineSweep string
	Body                                        string // the report's HTML, escaped by it
	Style                                       string
	Metrics                                     []regressionLink
}

type regressionLink struct {
	Metric    string
	Direction string
	URL       string
}

func (s *Server) comparePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := r.PathValue("sweep")
	req := report.CompareRequest{SweepID: id, BaselineSweep: q.Get("baseline_sweep"), Baseline: q.Get("baseline"), Candidate: q.Get("candidate"),
		Confidence: report.Confidence, FaultClasses: true}
	if req.Baseline == "" || req.Candidate == "" {
		s.fail(w, r, badf("compare needs ?baseline=ARM&candidate=ARM"))
		return
	}
	c, err := s.comparison(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := compareView{SweepID: id, Baseline: req.Baseline, Candidate: req.Candidate, BaselineSweep: req.BaselineSweep,
		Body: c.HTMLBody(), Style: report.HTMLStyle()}
	for _, d := range c.Metrics {
		v.Metrics = append(v.Metrics, regressionLink{Metric: d.Metric, Direction: d.Direction,
			URL: link(sweepPath(id)+"/regressions", "baseline", req.Baseline, "candidate", req.Candidate, "baseline_sweep", req.BaselineSweep, "metric", d.Metric)})
	}
	s.render(w, r, "compare", req.Candidate+" vs "+req.Baseline, []crumb{{"sweeps", "/"}, {id, sweepPath(id)}}, v)
}

// ---- regressions: a metric's cases that moved the bad way ----

type regressionsView struct {
	SweepID, Metric, Baseline, Candidate string
	Cases                                []regressedCase
	Total                                uint64
	Pager
}

type regressedCase struct {
	record.Regression
	URL string
}

func (s *Server) regressionsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := r.PathValue("sweep")
	base, cand, m := q.Get("baseline"), q.Get("candidate"), outcome.Metric(q.Get("metric"))
	baseSweep := cmp.Or(q.Get("baseline_sweep"), id)
	if !slices.Contains(outcome.Reported, m) || base == "" || cand == "" {
		s.fail(w, r, badf("regressions needs ?baseline=ARM&candidate=ARM&metric=METRIC (a reported metric)"))
		return
	}
	page := pageOf(r)
	list, err := s.src.Regressions(r.Context(), record.CompareSide{SweepID: baseSweep, Arm: base}, record.CompareSide{SweepID: id, Arm: cand},
		string(m), (page-1)*PageSize, PageSize)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := regressionsView{SweepID: id, Metric: string(m), Baseline: base, Candidate: cand, Total: list.Total, Pager: pager(r, page, list.Total)}
	for _, c := range list.Cases {
		v.Cases = append(v.Cases, regressedCase{Regression: c, URL: caseLink(id, baseSweep, c.Scenario, c.Variant, c.Seed, base, cand)})
	}
	s.render(w, r, "regressions", string(m)+": "+cand+" worse than "+base, []crumb{{"sweeps", "/"}, {id, sweepPath(id)},
		{"compare", link(sweepPath(id)+"/compare", "baseline", base, "candidate", cand, "baseline_sweep", q.Get("baseline_sweep"))}}, v)
}

func caseLink(sweep, baseSweep, scenario, variant string, seed uint64, a, b string) string {
	bs := ""
	if baseSweep != sweep {
		bs = baseSweep
	}
	return link(sweepPath(sweep)+"/case", "scenario", scenario, "variant", variant, "seed", strconv.FormatUint(seed, 10), "a", a, "b", b, "a_sweep", bs) + "#first-divergence"
}

// ---- a trial ----

type trialView struct {
	A       artifact.Artifact
	Trial   record.Trial
	Verdict grade.Verdict
	Checks  []checkRow
	// ClaimChecks are the checks that hold the claim against the world.
	ClaimChecks []checkRow
	Outcome     []outcomeRow
	Judge       *judgeView
	Human       []record.Review
	History     []record.Review
	Targets     []string
	Target      string // preselected
	Calls       []callRow
}

type checkRow struct {
	Name, Status, Detail string
	Evidence             []int
}

type outcomeRow struct {
	Metric  string
	Machine string
	Human   string
}

type judgeView struct {
	J    record.Judgement
	Dims []judgeDim
}

type judgeDim struct {
	Dimension string
	Score     int
	Why       string
	Checks    string // the checks' answer through judge.Mappings
	Human     string
}

type callRow struct {
	artifact.Call
	Pivot string // "failed", "recovery" or ""
}

func mark(b *bool) string {
	if b == nil {
		return "not tested"
	}
	return strconv.FormatBool(*b)
}

func (s *Server) trialPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("trial")
	v, err := s.loadTrial(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.Target = r.URL.Query().Get("target")
	s.render(w, r, "trial", "trial "+id, []crumb{{"sweeps", "/"}, {v.Trial.SweepID, sweepPath(v.Trial.SweepID)},
		{"trials", link(sweepPath(v.Trial.SweepID)+"/trials", "arm", v.Trial.Arm, "scenario", v.Trial.Scenario)}}, v)
}

func (s *Server) loadTrial(r *http.Request, id string) (trialView, error) {
	ctx := r.Context()
	a, t, err := s.artifact(ctx, id)
	if err != nil {
		return trialView{}, err
	}
	v := trialView{A: a, Trial: t}
	if err := json.Unmarshal([]byte(t.Verdicts), &v.Verdict); err != nil {
		return v, fmt.Errorf("trial %s: stored verdicts are unreadable: %w", id, err)
	}
	for _, c := range v.Verdict.Checks {
		row := checkRow{Name: c.Name, Status: string(c.Status), Detail: c.Detail, Evidence: c.Evidence}
		v.Checks = append(v.Checks, row)
		if strings.HasPrefix(c.Name, "claim_") || c.Name == grade.CheckBlockKeepsFacts {
			v.ClaimChecks = append(v.ClaimChecks, row)
		}
	}
	for _, c := range a.Calls {
		row := callRow{Call: c}
		switch c.Index {
		case a.Pivot.Failed:
			row.Pivot = "failed"
		case a.Pivot.Recovery:
			row.Pivot = "recovery"
		}
		v.Calls = append(v.Calls, row)
	}
	if v.Human, err = s.src.TrialReviews(ctx, t.SweepID, id); err != nil {
		return v, err
	}
	human := judge.HumanVerdicts(v.Human)[id]
	if v.History, err = s.src.TrialReviewHistory(ctx, t.SweepID, id); err != nil {
		return v, err
	}
	humanOf := func(target string) string {
		if h, ok := human[target]; ok {
			return map[bool]string{true: record.ReviewPass, false: record.ReviewFail}[h]
		}
		return ""
	}
	for _, m := range outcome.Graded {
		target := record.ReviewOutcome + string(m)
		v.Outcome = append(v.Outcome, outcomeRow{Metric: string(m), Machine: mark(v.Verdict.Metric(m)), Human: humanOf(target)})
		v.Targets = append(v.Targets, target)
	}
	j, judged, err := s.src.TrialJudgement(ctx, t.SweepID, id)
	if err != nil {
		return v, err
	}
	if judged {
		jv := &judgeView{J: j}
		scores := judgestore.ScoresOf(j)
		for _, mp := range judge.Mappings {
			pass, ok := mp.Eval(v.Verdict)
			checks := "no evidence"
			if ok {
				checks = map[bool]string{true: record.ReviewPass, false: record.ReviewFail}[pass]
			}
			target := record.ReviewJudge + string(mp.Dimension)
			jv.Dims = append(jv.Dims, judgeDim{Dimension: string(mp.Dimension), Score: scores[mp.Dimension], Why: judgestore.Justification(j, mp.Dimension),
				Checks: checks, Human: humanOf(target)})
			v.Targets = append(v.Targets, target)
		}
		v.Judge = jv
	}
	return v, nil
}

// ---- review ----

// MaxNote bounds a reviewer's note (bytes).
const MaxNote = record.MaxReviewNote

func (s *Server) postReview(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("trial")
	if s.opts.Writer == nil {
		http.Error(w, "reviews cannot be saved: "+s.opts.ReadOnlyReason, http.StatusConflict)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, badf("review form: %v", err))
		return
	}
	t, _, err := s.src.Trial(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rv := record.Review{SweepID: t.SweepID, TrialID: id, Target: r.PostForm.Get("target"), Verdict: r.PostForm.Get("verdict"),
		Reviewer: strings.TrimSpace(r.PostForm.Get("reviewer")), Note: r.PostForm.Get("note")}
	if !knownTarget(rv.Target) {
		s.fail(w, r, badf("review: unknown target %q", rv.Target))
		return
	}
	if err := rv.Validate(); err != nil {
		s.fail(w, r, badRequest{err.Error()})
		return
	}
	if err := s.opts.Writer.PutReview(r.Context(), rv); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, trialPath(id)+"#review", http.StatusSeeOther)
}

// knownTarget accepts an outcome the grader sets or a judge dimension.
func knownTarget(t string) bool {
	if name, ok := strings.CutPrefix(t, record.ReviewOutcome); ok {
		return slices.Contains(outcome.Graded, outcome.Metric(name))
	}
	if name, ok := strings.CutPrefix(t, record.ReviewJudge); ok {
		return slices.Contains(judge.Dimensions, judge.Dimension(name))
	}
	return false
}
