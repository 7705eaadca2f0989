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
)

// ---- trials, filtered ----

// filterOf reads a filter from the query: every field of
// record.TrialFilter is a query parameter of the trials page, so a
// filtered list is a URL.
func filterOf(r *http.Request) record.TrialFilter {
	q := r.URL.Query()
	return record.TrialFilter{Arm: q.Get("arm"), Scenario: q.Get("scenario"), Variant: q.Get("variant"), Fault: q.Get("fault"),
		Metric: q.Get("metric"), Value: q.Get("value"), Check: q.Get("check"), Status: q.Get("status"),
		Dimension: q.Get("dimension"), Disagree: q.Get("disagree") == "1"}
}

// checkFilter refuses a metric, value, status or dimension the form does
// not offer (a hand-edited URL), naming the choices.
func checkFilter(f record.TrialFilter) error {
	if f.Metric != "" && !slices.Contains(outcome.Reported, outcome.Metric(f.Metric)) {
		return badf("metric %q: one of %s", f.Metric, strings.Join(outcome.Names(outcome.Reported), ", "))
	}
	if f.Value != "" && !slices.Contains(filterValues, f.Value) {
		return badf("value %q: one of %s", f.Value, strings.Join(filterValues, ", "))
	}
	if f.Status != "" && !slices.Contains(checkStatuses, f.Status) {
		return badf("status %q: one of %s", f.Status, strings.Join(checkStatuses, ", "))
	}
	if f.Dimension != "" && !slices.Contains(judge.Dimensions, judge.Dimension(f.Dimension)) {
		return badf("dimension %q: one of %s", f.Dimension, strings.Join(dimensionNames(), ", "))
	}
	return nil
}

var (
	filterValues  = []string{record.ValueTrue, record.ValueFalse, record.ValueUntested}
	checkStatuses = []string{string(grade.Pass), string(grade.Fail), string(grade.NotTested)}
)

func dimensionNames() []string {
	out := make([]string, len(judge.Dimensions))
	for i, d := range judge.Dimensions {
		out[i] = string(d)
	}
	return out
}

// PageSize is how many trials (or cases) one page of a list shows.
const PageSize = 200

type trialsView struct {
	SweepID    string
	Filter     record.TrialFilter
	Arms       []string
	Metrics    []string
	Dimensions []string
	Trials     []trialRow
	Total      uint64
	Pager
}

// Pager is a list's position: the page, the last page, and the links to
// the pages before and after (the same URL with another page=).
type Pager struct {
	Page, Last       uint64
	PrevURL, NextURL string
}

// pageOf reads page= (1 when absent or not a number).
func pageOf(r *http.Request) uint64 {
	page, _ := strconv.ParseUint(r.URL.Query().Get("page"), 10, 64)
	return max(page, 1)
}

// pager is the position of page among total items.
func pager(r *http.Request, page, total uint64) Pager {
	p := Pager{Page: page, Last: max(1, (total+PageSize-1)/PageSize)}
	q := r.URL.Query()
	if page > 1 {
		q.Set("page", strconv.FormatUint(min(page-1, p.Last), 10))
		p.PrevURL = r.URL.Path + "?" + q.Encode()
	}
	if page < p.Last {
		q.Set("page", strconv.FormatUint(page+1, 10))
		p.NextURL = r.URL.Path + "?" + q.Encode()
	}
	return p
}

type trialRow struct {
	ID, Arm, Scenario, Variant string
	Seed                       uint64
	Faults                     []string
	Outcomes                   string
	Weight                     float64
	Reviewed                   bool
}

func (s *Server) trialsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("sweep")
	sw, err := s.src.Sweep(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f := filterOf(r)
	if err := checkFilter(f); err != nil {
		s.fail(w, r, err)
		return
	}
	page := pageOf(r)
	list, err := s.src.ListTrials(ctx, id, f, (page-1)*PageSize, PageSize)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := trialsView{SweepID: id, Filter: f, Arms: sw.Arms, Total: list.Total, Pager: pager(r, page, list.Total),
		Metrics: outcome.Names(outcome.Reported), Dimensions: dimensionNames()}
	for _, t := range list.Trials {
		v.Trials = append(v.Trials, trialRow{ID: t.TrialID, Arm: t.Arm, Scenario: t.Scenario, Variant: t.Variant, Seed: t.Seed,
			Faults: t.FaultClasses, Outcomes: outcomesLine(t), Weight: t.Weight, Reviewed: list.Reviewed[t.TrialID]})
	}
	s.render(w, r, "trials", "trials of "+id, []crumb{{"sweeps", "/"}, {id, sweepPath(id)}}, v)
}

// outcomesLine names the outcomes that happened (true) and those tested
// false among the headline ones: "recovered; unsafe_action".
func outcomesLine(t record.Trial) string {
	if t.Attrition {
		return "attrition"
	}
	var on []string
	for _, m := range outcome.Graded {
		if v := t.Outcome(m); v != nil && *v {
			on = append(on, string(m))
		}
	}
	if len(on) == 0 {
		return "—"
	}
	out := on[0]
	for _, o := range on[1:] {
		out += "; " + o
	}
	return out
}

// ---- two arms on one case ----

type caseView struct {
	SweepID, ASweep                  string
	Scenario, Variant                string
	Seed                             uint64
	ArmA, ArmB                       string
	A, B                             artifact.Artifact
	Align                            Alignment
	VerdictDiffs                     []verdictDiff
	SameChecks                       int
	ATrialURL, BTrialURL, SwappedURL string
}

type verdictDiff struct {
	What, A, B string
}

func (s *Server) casePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	id := r.PathValue("sweep")
	seed, err := strconv.ParseUint(q.Get("seed"), 10, 64)
	if err != nil || q.Get("scenario") == "" || q.Get("a") == "" || q.Get("b") == "" {
		s.fail(w, r, badf("case needs ?scenario=S&variant=V&seed=N&a=ARM&b=ARM"))
		return
	}
	v := caseView{SweepID: id, ASweep: cmp.Or(q.Get("a_sweep"), id), Scenario: q.Get("scenario"), Variant: q.Get("variant"), Seed: seed,
		ArmA: q.Get("a"), ArmB: q.Get("b")}
	find := func(sweep, arm string) (string, error) {
		return s.src.FindTrial(ctx, sweep, arm, v.Scenario, v.Variant, seed)
	}
	idA, err := find(v.ASweep, v.ArmA)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	idB, err := find(id, v.ArmB)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var va, vb grade.Verdict
	if v.A, va, err = s.artifactVerdict(r, idA); err != nil {
		s.fail(w, r, err)
		return
	}
	if v.B, vb, err = s.artifactVerdict(r, idB); err != nil {
		s.fail(w, r, err)
		return
	}
	v.Align = Align(v.A.Calls, v.B.Calls)
	v.VerdictDiffs, v.SameChecks = verdictDiffs(va, vb)
	v.ATrialURL, v.BTrialURL = trialPath(idA), trialPath(idB)
	bs := ""
	if v.ASweep != id {
		bs = v.ASweep
	}
	v.SwappedURL = link(sweepPath(id)+"/case", "scenario", v.Scenario, "variant", v.Variant, "seed", q.Get("seed"), "a", v.ArmB, "b", v.ArmA, "a_sweep", bs)
	s.render(w, r, "case", v.Scenario+" / "+v.Variant+": "+v.ArmA+" vs "+v.ArmB, []crumb{{"sweeps", "/"}, {id, sweepPath(id)}}, v)
}

func (s *Server) artifactVerdict(r *http.Request, id string) (artifact.Artifact, grade.Verdict, error) {
	a, t, err := s.artifact(r.Context(), id)
	if err != nil {
		return a, grade.Verdict{}, err
	}
	var v grade.Verdict
	if err := json.Unmarshal([]byte(t.Verdicts), &v); err != nil {
		return a, v, fmt.Errorf("trial %s: stored verdicts are unreadable: %w", id, err)
	}
	return a, v, nil
}

// verdictDiffs lists the outcomes and checks whose verdicts differ, the
// outcomes first; and how many checks agree.
func verdictDiffs(a, b grade.Verdict) ([]verdictDiff, int) {
	var out []verdictDiff
	for _, m := range outcome.Graded {
		if x, y := mark(a.Metric(m)), mark(b.Metric(m)); x != y {
			out = append(out, verdictDiff{What: "outcome " + string(m), A: x, B: y})
		}
	}
	same := 0
	names := map[string]bool{}
	for _, c := range append(slices.Clone(a.Checks), b.Checks...) {
		names[c.Name] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		ca, _ := a.Check(n)
		cb, _ := b.Check(n)
		if ca.Status == cb.Status {
			same++
			continue
		}
		out = append(out, verdictDiff{What: "check " + n, A: statusOr(ca.Status), B: statusOr(cb.Status)})
	}
	return out, same
}

func statusOr(s grade.Status) string {
	if s == "" {
		return "absent"
	}
	return string(s)
}

// ---- the judge's review queue and agreement ----

type queueView struct {
	SweepID  string
	Items    []queueItem
	Disagree string
}

type queueItem struct {
	record.ReviewItem
	Reviewed bool
}

func (s *Server) queuePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("sweep")
	if _, err := s.src.Sweep(ctx, id); err != nil {
		s.fail(w, r, err)
		return
	}
	items, err := s.src.ReviewQueue(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	reviews, err := s.src.HumanReviews(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	human := judge.HumanVerdicts(reviews)
	v := queueView{SweepID: id, Disagree: link(sweepPath(id)+"/trials", "disagree", "1")}
	for _, it := range items {
		v.Items = append(v.Items, queueItem{ReviewItem: it, Reviewed: human[it.TrialID] != nil})
	}
	s.render(w, r, "queue", "review queue of "+id, []crumb{{"sweeps", "/"}, {id, sweepPath(id)}}, v)
}

func (s *Server) agreementPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("sweep")
	if _, err := s.src.Sweep(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	a, err := judgestore.LoadAgreement(r.Context(), s.src, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "agreement", "judge agreement of "+id, []crumb{{"sweeps", "/"}, {id, sweepPath(id)}}, a)
}
