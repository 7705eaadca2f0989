package reviewui

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/results/artifact"
	"rebound/results/judge"
	"rebound/results/judge/judgestore"
	"rebound/results/record"
	"rebound/results/replay"
)

// ---- trials, filtered ----

// Filter selects a sweep's trials (each field empty: any). Every field is
// a query parameter of the trials page, so a filtered list is a URL.
type Filter struct {
	Arm, Scenario, Variant string
	Fault                  string // a fault class the trial was injected with
	Metric, Value          string // an outcome and its value (true, false, untested)
	Check, Status          string // a check and its status (pass, fail, not_tested)
	Dimension              string // a judge dimension the judge failed (score < judge.PassScore)
	Disagree               bool   // the judge and the checks disagree on some dimension
}

func filterOf(r *http.Request) Filter {
	q := r.URL.Query()
	return Filter{Arm: q.Get("arm"), Scenario: q.Get("scenario"), Variant: q.Get("variant"), Fault: q.Get("fault"),
		Metric: q.Get("metric"), Value: q.Get("value"), Check: q.Get("check"), Status: q.Get("status"),
		Dimension: q.Get("dimension"), Disagree: q.Get("disagree") == "1"}
}

// PageSize is how many trials one page of a list shows.
const PageSize = 200

type trialsView struct {
	SweepID    string
	Filter     Filter
	Arms       []string
	Metrics    []string
	Dimensions []string
	Trials     []trialRow
	Total      int
	Page, Last int
	PrevURL    string
	NextURL    string
}

type trialRow struct {
	ID, Arm, Scenario, Variant string
	Seed                       uint64
	Faults                     []string
	Outcomes                   string
	Weight                     float64
	Reviewed                   bool
}

func (f Filter) needsVerdict() bool { return f.Check != "" || f.Disagree }
func (f Filter) needsJudge() bool   { return f.Dimension != "" || f.Disagree }

func (f Filter) match(t record.Trial, v *grade.Verdict, scores map[judge.Dimension]int) bool {
	if f.Variant != "" && t.Variant != f.Variant {
		return false
	}
	if f.Fault != "" && !slices.Contains(t.FaultClasses, f.Fault) {
		return false
	}
	if f.Metric != "" && f.Value != "" {
		if mark(metricValue(t, outcome.Metric(f.Metric))) != cmp.Or(map[string]string{"untested": "not tested"}[f.Value], f.Value) {
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
		found := false
		for _, m := range judge.Mappings {
			pass, ok := m.Eval(*v)
			s := scores[m.Dimension]
			if ok && s >= 1 && (s >= judge.PassScore) != pass {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
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
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	var scores map[string]map[judge.Dimension]int
	if f.needsJudge() {
		js, err := s.src.Judgements(ctx, id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		scores = map[string]map[judge.Dimension]int{}
		for _, j := range js {
			scores[j.TrialID] = judgestore.ScoresOf(j)
		}
	}
	reviews, err := s.src.HumanReviews(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	reviewed := judge.HumanVerdicts(reviews)
	v := trialsView{SweepID: id, Filter: f, Arms: sw.Arms, Page: page}
	for _, m := range outcome.Reported {
		v.Metrics = append(v.Metrics, string(m))
	}
	for _, d := range judge.Dimensions {
		v.Dimensions = append(v.Dimensions, string(d))
	}
	from, to := (page-1)*PageSize, page*PageSize
	err = s.src.EachTrial(ctx, id, record.TrialSelect{Arm: f.Arm, Scenario: f.Scenario}, func(t record.Trial) error {
		var verdict grade.Verdict
		if f.needsVerdict() && json.Unmarshal([]byte(t.Verdicts), &verdict) != nil {
			return nil
		}
		var sc map[judge.Dimension]int
		if scores != nil {
			sc = scores[t.TrialID]
		}
		if !f.match(t, &verdict, sc) {
			return nil
		}
		if v.Total >= from && v.Total < to {
			v.Trials = append(v.Trials, trialRow{ID: t.TrialID, Arm: t.Arm, Scenario: t.Scenario, Variant: t.Variant, Seed: t.Seed,
				Faults: t.FaultClasses, Outcomes: outcomesLine(t), Weight: t.Weight, Reviewed: reviewed[t.TrialID] != nil})
		}
		v.Total++
		return nil
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.Last = max(1, (v.Total+PageSize-1)/PageSize)
	q := r.URL.Query()
	if page > 1 {
		q.Set("page", strconv.Itoa(page-1))
		v.PrevURL = sweepPath(id) + "/trials?" + q.Encode()
	}
	if page < v.Last {
		q.Set("page", strconv.Itoa(page+1))
		v.NextURL = sweepPath(id) + "/trials?" + q.Encode()
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
		found := ""
		err := s.src.EachTrial(ctx, sweep, record.TrialSelect{Arm: arm, Scenario: v.Scenario}, func(t record.Trial) error {
			if t.Variant == v.Variant && t.Seed == seed {
				found = t.TrialID
			}
			return nil
		})
		if err == nil && found == "" {
			err = badf("sweep %s has no trial of arm %q on %s / %s seed %d", sweep, arm, v.Scenario, v.Variant, seed)
		}
		return found, err
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
	a, err := replay.Artifact(r.Context(), s.src, id)
	if err != nil {
		return a, grade.Verdict{}, err
	}
	t, _, err := s.src.Trial(r.Context(), id)
	if err != nil {
		return a, grade.Verdict{}, err
	}
	var v grade.Verdict
	err = json.Unmarshal([]byte(t.Verdicts), &v)
	return a, v, err
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
