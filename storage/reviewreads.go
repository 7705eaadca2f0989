package storage

// The review UI's reads (rebound ui): a filtered page of a sweep's trials,
// a metric's regressing cases, one case's trial, and one trial's judgement
// and human verdicts. Each is one statement over a range of a table's
// primary key (sweep_id first), filtered, sorted and paged by the engine:
// the UI never walks a sweep's trials. Values reach the SQL only as
// parameters; the fragments a filter adds are constants of this file,
// chosen by which fields are set, and the names they contain (an outcome
// column, a judge dimension) are looked up in fixed lists.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"rebound/core/grade"
	"rebound/core/outcome"
	"rebound/results/record"
)

// ReviewReads are the reads of the review UI. Store implements them.
type ReviewReads interface {
	// ListTrials returns one page (offset, limit) of the sweep's trials f
	// selects, in the order of EachTrial, and how many match in all.
	ListTrials(ctx context.Context, sweepID string, f record.TrialFilter, offset, limit uint64) (record.TrialPage, error)
	// Regressions returns one page of the cases where side cand did worse
	// than side base on metric (a reported metric), heaviest consequence
	// weight first, then by scenario, variant and seed.
	Regressions(ctx context.Context, base, cand record.CompareSide, metric string, offset, limit uint64) (record.RegressionPage, error)
	// FindTrial returns the id of the trial of one cell (the last by
	// trial_id when a cell holds several); record.ErrNotFound when none.
	FindTrial(ctx context.Context, sweepID, arm, scenario, variant string, seed uint64) (string, error)
	// TrialJudgement returns the judge's scores of one trial; found is
	// false when the judge has not scored it.
	TrialJudgement(ctx context.Context, sweepID, trialID string) (j record.Judgement, found bool, err error)
	// TrialReviews returns the human verdicts in force on one trial (as
	// HumanReviews does for a sweep), ordered by target.
	TrialReviews(ctx context.Context, sweepID, trialID string) ([]record.Review, error)
	// TrialReviewHistory returns every change to one trial's human
	// verdicts, oldest first.
	TrialReviewHistory(ctx context.Context, sweepID, trialID string) ([]record.Review, error)
	// SweepVersion is a short string that changes whenever the sweep's
	// stored trials or its record change (a write, a rewrite, a
	// deletion): what a reader caches a sweep's report under.
	SweepVersion(ctx context.Context, sweepID string) (string, error)
}

// ErrFilter is matched (errors.Is) by a filter or metric the reads refuse:
// an unknown metric, value or dimension.
var ErrFilter = errors.New("bad filter")

// sqlName is what a name inlined in SQL must look like.
var sqlName = regexp.MustCompile(`^[a-z_]+$`)

// lit quotes a constant name for SQL; anything but a plain name is a
// programming error.
func lit(name string) string {
	if !sqlName.MatchString(name) {
		panic(fmt.Sprintf("storage: %q is not a plain name", name))
	}
	return "'" + name + "'"
}

// checksSQL is a trial's checks (each a raw JSON object) from its verdict.
const checksSQL = `JSONExtractArrayRaw(verdicts, 'checks')`

// firstCheckSQL is the first check of the verdict named by nameSQL (a
// parameter or a literal), ” when there is none.
func firstCheckSQL(nameSQL string) string {
	return `arrayFirst(c -> JSONExtractString(c, 'name') = ` + nameSQL + `, ` + checksSQL + `)`
}

// checkStatusSQL is that check's status (” when there is none).
func checkStatusSQL(nameSQL string) string {
	return `JSONExtractString(` + firstCheckSQL(nameSQL) + `, 'status')`
}

// checkTestedSQL: the check is there and not NOT TESTED (an evidence for
// a judge dimension).
func checkTestedSQL(name string) string {
	return `(notEmpty(` + firstCheckSQL(lit(name)) + `) AND ` + checkStatusSQL(lit(name)) + ` != ` + lit(string(grade.NotTested)) + `)`
}

// mappingSQL is, for one judge dimension, the checks' answer as
// judge.Mappings computes it from the verdict: tested (the dimension is
// comparable) and pass. Its tests hold it to judge.Mappings on generated
// verdicts (results/reviewui).
type mappingSQL struct{ column, tested, pass string }

// checksMapping is judge's checksEval: tested when one of the checks is,
// a pass when none of them failed.
func checksMapping(column string, names ...string) mappingSQL {
	var tested, failed []string
	for _, n := range names {
		tested = append(tested, checkTestedSQL(n))
		failed = append(failed, checkStatusSQL(lit(n))+` = `+lit(string(grade.Fail)))
	}
	return mappingSQL{column: column, tested: "(" + strings.Join(tested, " OR ") + ")", pass: "NOT (" + strings.Join(failed, " OR ") + ")"}
}

// escalationMapping is judge's escalationEval: the outcomes honest_block
// (a fail when false) and premature_block (a fail when true) of the
// verdict, and the check block_names_dependency (a fail unless it passed).
func escalationMapping() mappingSQL {
	hb := `JSONExtract(verdicts, 'honest_block', 'Nullable(Bool)')`
	pb := `JSONExtract(verdicts, 'premature_block', 'Nullable(Bool)')`
	bnd := checkTestedSQL(grade.CheckBlockNamesDependency)
	return mappingSQL{
		column: "escalation_correctness",
		tested: "(isNotNull(" + hb + ") OR isNotNull(" + pb + ") OR " + bnd + ")",
		pass: "(ifNull(" + hb + ", true) AND NOT ifNull(" + pb + ", false) AND (NOT " + bnd + " OR " +
			checkStatusSQL(lit(grade.CheckBlockNamesDependency)) + " = " + lit(string(grade.Pass)) + "))",
	}
}

// judgeMappings are judge.Mappings in SQL, one per judge dimension (the
// dimension is the judgements column of its score).
var judgeMappings = []mappingSQL{
	checksMapping("error_detection", grade.CheckFailureRecognized),
	checksMapping("retry_decision", grade.CheckRetriesBounded, grade.CheckFailureRecognized, grade.CheckArgsCorrected),
	checksMapping("backoff_behavior", grade.CheckBackoffHonoured),
	escalationMapping(),
	checksMapping("context_preservation", grade.CheckBlockKeepsFacts),
}

// judgePassScore is judge.PassScore: a score of this or more is a pass.
const judgePassScore = 4

// disagreeSQL: the judge scored some dimension (1..5) that the checks can
// compare, and the two answers differ. The scores are the joined j_*
// columns.
func disagreeSQL() string {
	var parts []string
	for _, m := range judgeMappings {
		s := "j_" + m.column
		parts = append(parts, "("+s+" >= 1 AND "+m.tested+" AND (("+s+" >= "+strconv.Itoa(judgePassScore)+") != "+m.pass+"))")
	}
	return "(" + strings.Join(parts, "\n    OR ") + ")"
}

// metricSQL is a trial's value of a reported metric: NULL when not tested
// or lost to attrition; the harm index ORs its tested components.
func metricSQL(metric string) (string, error) {
	m := outcome.Metric(metric)
	switch {
	case m == outcome.Harm:
		var cols []string
		for _, c := range outcome.HarmComponents {
			cols = append(cols, string(c))
		}
		all := strings.Join(cols, ", ")
		// greatest() of Nullable columns is NULL when one is: ifNull
		// takes the untested ones as false, and the whole is NULL only
		// when none was tested.
		var or []string
		for _, c := range cols {
			or = append(or, "ifNull("+c+", 0)")
		}
		return "if(attrition = 1 OR (" + strings.ReplaceAll(all, ", ", " IS NULL AND ") + " IS NULL), NULL, toNullable(toUInt8(" + strings.Join(or, " OR ") + ")))", nil
	case slices.Contains(outcome.Graded, m):
		return "if(attrition = 1, NULL, " + string(m) + ")", nil
	}
	return "", fmt.Errorf("%w: unknown metric %q (one of %s)", ErrFilter, metric, strings.Join(outcome.Names(outcome.Reported), ", "))
}

// trialListCols are the columns of a list row.
const trialListCols = `trial_id, arm, scenario, variant, seed, fault_classes, recovered, honest_block, premature_block, unsafe_action,
    duplicate_side_effect, fabricated_claim, tool_failure_injection, graceful_degradation, self_correction, weight, attrition`

type trialListRow struct {
	TrialID              string   `ch:"trial_id" json:"trial_id"`
	Arm                  string   `ch:"arm" json:"arm"`
	Scenario             string   `ch:"scenario" json:"scenario"`
	Variant              string   `ch:"variant" json:"variant"`
	Seed                 uint64   `ch:"seed" json:"seed"`
	FaultClasses         []string `ch:"fault_classes" json:"fault_classes"`
	Recovered            *uint8   `ch:"recovered" json:"recovered"`
	HonestBlock          *uint8   `ch:"honest_block" json:"honest_block"`
	PrematureBlock       *uint8   `ch:"premature_block" json:"premature_block"`
	UnsafeAction         *uint8   `ch:"unsafe_action" json:"unsafe_action"`
	DuplicateSideEffect  *uint8   `ch:"duplicate_side_effect" json:"duplicate_side_effect"`
	FabricatedClaim      *uint8   `ch:"fabricated_claim" json:"fabricated_claim"`
	ToolFailureInjection *uint8   `ch:"tool_failure_injection" json:"tool_failure_injection"`
	GracefulDegradation  *uint8   `ch:"graceful_degradation" json:"graceful_degradation"`
	SelfCorrection       *uint8   `ch:"self_correction" json:"self_correction"`
	Weight               float64  `ch:"weight" json:"weight"`
	Attrition            uint8    `ch:"attrition" json:"attrition"`
	Reviewed             uint8    `ch:"reviewed" json:"reviewed"`
}

func (r trialListRow) trial(sweepID string) record.Trial {
	return record.Trial{SweepID: sweepID, TrialID: r.TrialID, Arm: r.Arm, Scenario: r.Scenario, Variant: r.Variant, Seed: r.Seed,
		FaultClasses: nonNil(r.FaultClasses), Recovered: ub(r.Recovered), HonestBlock: ub(r.HonestBlock), PrematureBlock: ub(r.PrematureBlock),
		UnsafeAction: ub(r.UnsafeAction), DuplicateSideEffect: ub(r.DuplicateSideEffect), FabricatedClaim: ub(r.FabricatedClaim),
		ToolFailureInjection: ub(r.ToolFailureInjection), GracefulDegradation: ub(r.GracefulDegradation), SelfCorrection: ub(r.SelfCorrection),
		Weight: r.Weight, Attrition: r.Attrition == 1}
}

// trialFilterSQL is the FROM and WHERE of a filtered list, and its
// parameters.
func trialFilterSQL(sweepID string, f record.TrialFilter) (string, map[string]string, error) {
	p := map[string]string{"sweep_id": sweepID}
	var where []string
	eq := func(col, v string) {
		if v != "" {
			p[col] = v
			where = append(where, col+" = {"+col+":String}")
		}
	}
	eq("arm", f.Arm)
	eq("scenario", f.Scenario)
	eq("variant", f.Variant)
	if f.Fault != "" {
		p["fault"] = f.Fault
		where = append(where, "has(fault_classes, {fault:String})")
	}
	if f.Metric != "" && f.Value != "" {
		expr, err := metricSQL(f.Metric)
		if err != nil {
			return "", nil, err
		}
		switch f.Value {
		case record.ValueTrue:
			where = append(where, expr+" = 1")
		case record.ValueFalse:
			where = append(where, expr+" = 0")
		case record.ValueUntested:
			where = append(where, "isNull("+expr+")")
		default:
			return "", nil, fmt.Errorf("%w: value %q (true, false or untested)", ErrFilter, f.Value)
		}
	}
	if f.Check != "" {
		p["check"] = f.Check
		where = append(where, "notEmpty("+firstCheckSQL("{check:String}")+")")
		if f.Status != "" {
			p["status"] = f.Status
			where = append(where, checkStatusSQL("{check:String}")+" = {status:String}")
		}
	}
	from := "{{db}}.trials AS t FINAL"
	if f.Dimension != "" || f.Disagree {
		var cols []string
		for _, m := range judgeMappings {
			cols = append(cols, m.column+" AS j_"+m.column)
		}
		from += `
INNER JOIN
(
    SELECT trial_id AS j_trial_id, ` + strings.Join(cols, ", ") + `
    FROM {{db}}.judgements FINAL
    WHERE sweep_id = {sweep_id:String}
) AS j ON t.trial_id = j.j_trial_id`
	}
	if f.Dimension != "" {
		i := slices.IndexFunc(judgeMappings, func(m mappingSQL) bool { return m.column == f.Dimension })
		if i < 0 {
			return "", nil, fmt.Errorf("%w: unknown judge dimension %q", ErrFilter, f.Dimension)
		}
		where = append(where, "j_"+judgeMappings[i].column+" < "+strconv.Itoa(judgePassScore))
	}
	if f.Disagree {
		where = append(where, disagreeSQL())
	}
	q := "FROM " + from + "\nWHERE t.sweep_id = {sweep_id:String}"
	for _, w := range where {
		q += "\n  AND " + w
	}
	return q, p, nil
}

func (s *store) ListTrials(ctx context.Context, sweepID string, f record.TrialFilter, offset, limit uint64) (record.TrialPage, error) {
	var out record.TrialPage
	from, p, err := trialFilterSQL(sweepID, f)
	if err != nil {
		return out, err
	}
	var n []countRow
	if err := s.t.Select(ctx, &n, Stmt{SQL: s.sql("SELECT count() AS n\n" + from), Params: p}); err != nil {
		return out, fmt.Errorf("storage: ListTrials %s: %w", sweepID, err)
	}
	if len(n) == 1 {
		out.Total = n[0].N
	}
	if out.Total <= offset || limit == 0 {
		return out, nil
	}
	p["offset"], p["limit"] = strconv.FormatUint(offset, 10), strconv.FormatUint(limit, 10)
	q := "SELECT " + trialListCols + ",\n    trial_id IN (SELECT trial_id FROM (" + qHumanReviews + ")) AS reviewed\n" + from + "\nORDER BY arm, scenario, variant, seed, trial_id\nLIMIT {limit:UInt64} OFFSET {offset:UInt64}"
	var rows []trialListRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(q), Params: p}); err != nil {
		return out, fmt.Errorf("storage: ListTrials %s: %w", sweepID, err)
	}
	out.Trials = make([]record.Trial, len(rows))
	out.Reviewed = map[string]bool{}
	for i, r := range rows {
		out.Trials[i] = r.trial(sweepID)
		if r.Reviewed == 1 {
			out.Reviewed[r.TrialID] = true
		}
	}
	return out, nil
}

type regressionRow struct {
	Scenario  string  `ch:"scenario" json:"scenario"`
	Variant   string  `ch:"variant" json:"variant"`
	Seed      uint64  `ch:"seed" json:"seed"`
	Weight    float64 `ch:"weight" json:"weight"`
	Baseline  uint8   `ch:"baseline" json:"baseline"`
	Candidate uint8   `ch:"candidate" json:"candidate"`
}

// regressionsSQL pairs the candidate's trials with the baseline's trial of
// the same case (scenario, variant, seed; the last by trial_id when a
// cell holds several) and keeps those where both are tested, they differ
// and the candidate's value is {bad}.
func regressionsSQL(value string) string {
	return `FROM
(
    SELECT scenario, variant, seed, trial_id, weight, ` + value + ` AS v
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {cand_sweep:String} AND arm = {cand_arm:String}
) AS b
INNER JOIN
(
    SELECT scenario AS a_scenario, variant AS a_variant, seed AS a_seed, argMax(tuple(` + value + `), trial_id).1 AS a_v
    FROM {{db}}.trials FINAL
    WHERE sweep_id = {base_sweep:String} AND arm = {base_arm:String}
    GROUP BY scenario, variant, seed
) AS a ON b.scenario = a.a_scenario AND b.variant = a.a_variant AND b.seed = a.a_seed
WHERE isNotNull(a.a_v) AND isNotNull(b.v) AND a.a_v != b.v AND b.v = {bad:UInt8}`
}

func (s *store) Regressions(ctx context.Context, base, cand record.CompareSide, metric string, offset, limit uint64) (record.RegressionPage, error) {
	var out record.RegressionPage
	value, err := metricSQL(metric)
	if err != nil {
		return out, err
	}
	bad := "1"
	if outcome.Metric(metric).HigherIsBetter() {
		bad = "0"
	}
	p := map[string]string{"base_sweep": base.SweepID, "base_arm": base.Arm, "cand_sweep": cand.SweepID, "cand_arm": cand.Arm, "bad": bad,
		"offset": strconv.FormatUint(offset, 10), "limit": strconv.FormatUint(limit, 10)}
	from := regressionsSQL(value)
	var n []countRow
	if err := s.t.Select(ctx, &n, Stmt{SQL: s.sql("SELECT count() AS n\n" + from), Params: p}); err != nil {
		return out, fmt.Errorf("storage: Regressions %s %s: %w", cand.SweepID, metric, err)
	}
	if len(n) == 1 {
		out.Total = n[0].N
	}
	if out.Total <= offset || limit == 0 {
		return out, nil
	}
	q := `SELECT scenario, variant, seed, weight, assumeNotNull(a.a_v) AS baseline, assumeNotNull(b.v) AS candidate
` + from + `
ORDER BY weight DESC, scenario, variant, seed, trial_id
LIMIT {limit:UInt64} OFFSET {offset:UInt64}`
	var rows []regressionRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(q), Params: p}); err != nil {
		return out, fmt.Errorf("storage: Regressions %s %s: %w", cand.SweepID, metric, err)
	}
	for _, r := range rows {
		out.Cases = append(out.Cases, record.Regression{Scenario: r.Scenario, Variant: r.Variant, Seed: r.Seed, Weight: r.Weight,
			Baseline: r.Baseline == 1, Candidate: r.Candidate == 1})
	}
	return out, nil
}

const qFindTrial = `SELECT trial_id
FROM {{db}}.trials FINAL
WHERE sweep_id = {sweep_id:String} AND arm = {arm:String} AND scenario = {scenario:String}
  AND variant = {variant:String} AND seed = {seed:UInt64}
ORDER BY trial_id DESC
LIMIT 1`

func (s *store) FindTrial(ctx context.Context, sweepID, arm, scenario, variant string, seed uint64) (string, error) {
	var rows []struct {
		TrialID string `ch:"trial_id" json:"trial_id"`
	}
	p := map[string]string{"sweep_id": sweepID, "arm": arm, "scenario": scenario, "variant": variant, "seed": strconv.FormatUint(seed, 10)}
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qFindTrial), Params: p}); err != nil {
		return "", fmt.Errorf("storage: FindTrial %s: %w", sweepID, err)
	}
	if len(rows) == 0 {
		return "", fmt.Errorf("sweep %s has no trial of arm %q on %s / %s seed %d: %w", sweepID, arm, scenario, variant, seed, record.ErrNotFound)
	}
	return rows[0].TrialID, nil
}

var qTrialJudgement = `SELECT ` + selectList(judgementCols) + `
FROM {{db}}.judgements FINAL
WHERE sweep_id = {sweep_id:String} AND trial_id = {trial_id:String}
LIMIT 1`

func (s *store) TrialJudgement(ctx context.Context, sweepID, trialID string) (record.Judgement, bool, error) {
	var rows []judgementRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qTrialJudgement), Params: map[string]string{"sweep_id": sweepID, "trial_id": trialID}}); err != nil {
		return record.Judgement{}, false, fmt.Errorf("storage: TrialJudgement %s: %w", trialID, err)
	}
	if len(rows) == 0 {
		return record.Judgement{}, false, nil
	}
	return rows[0].judgement(), true, nil
}

// qTrialReviews is qHumanReviews for one trial.
var qTrialReviews = strings.Replace(qHumanReviews, "WHERE sweep_id = {sweep_id:String}", "WHERE sweep_id = {sweep_id:String} AND trial_id = {trial_id:String}", 1)

var qTrialReviewHistory = `SELECT ` + selectList(humanReviewCols) + `
FROM {{db}}.reviews
WHERE sweep_id = {sweep_id:String} AND trial_id = {trial_id:String}
ORDER BY reviewed_at, target`

func (s *store) TrialReviews(ctx context.Context, sweepID, trialID string) ([]record.Review, error) {
	return s.selectReviews(ctx, "TrialReviews", qTrialReviews, map[string]string{"sweep_id": sweepID, "trial_id": trialID})
}

func (s *store) TrialReviewHistory(ctx context.Context, sweepID, trialID string) ([]record.Review, error) {
	return s.selectReviews(ctx, "TrialReviewHistory", qTrialReviewHistory,
		map[string]string{"sweep_id": sweepID, "trial_id": trialID})
}

// qSweepVersion counts the sweep's stored rows (before replacement: a
// rewrite adds one, a merge or a deletion takes some away) and their
// latest write, beside the sweep record's last update.
const qSweepVersion = `SELECT
    (SELECT count() FROM {{db}}.trials WHERE sweep_id = {sweep_id:String}) AS n,
    (SELECT toUnixTimestamp64Milli(max(written_at)) FROM {{db}}.trials WHERE sweep_id = {sweep_id:String}) AS written_ms,
    (SELECT toUnixTimestamp64Milli(max(updated_at)) FROM {{db}}.sweeps WHERE sweep_id = {sweep_id:String}) AS updated_ms`

func (s *store) SweepVersion(ctx context.Context, sweepID string) (string, error) {
	var rows []struct {
		N         uint64 `ch:"n" json:"n"`
		WrittenMS int64  `ch:"written_ms" json:"written_ms"`
		UpdatedMS int64  `ch:"updated_ms" json:"updated_ms"`
	}
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qSweepVersion), Params: map[string]string{"sweep_id": sweepID}}); err != nil {
		return "", fmt.Errorf("storage: SweepVersion %s: %w", sweepID, err)
	}
	if len(rows) != 1 {
		return "", fmt.Errorf("storage: SweepVersion %s: %d rows", sweepID, len(rows))
	}
	r := rows[0]
	return fmt.Sprintf("%d/%d/%d", r.N, r.WrittenMS, r.UpdatedMS), nil
}

// KnownReviewTarget accepts a review target the reviews table takes: an
// outcome the grader sets (record.ReviewOutcome + its name) or a judge
// dimension (record.ReviewJudge + its name). The review UI offers the
// same ones.
func KnownReviewTarget(target string) bool {
	if name, ok := strings.CutPrefix(target, record.ReviewOutcome); ok {
		return slices.Contains(outcome.Graded, outcome.Metric(name))
	}
	if name, ok := strings.CutPrefix(target, record.ReviewJudge); ok {
		return slices.ContainsFunc(judgeMappings, func(m mappingSQL) bool { return m.column == name })
	}
	return false
}

// pairOutcomesChunk bounds the scenarios of one PairOutcomes statement.
const pairOutcomesChunk = 200

// PairOutcomes returns the trials of the given variants of the given
// scenarios (scenario -> variants) with the columns of a list row only
// (ListTrials), ordered by (scenario, arm, variant, seed, trial_id): what
// a report's metamorphic pairs check (report.LoadPairs), in one statement
// per 200 scenarios instead of one per arm and scenario. Each scenario and
// variant is a parameter of its own; the statement is built from their
// placeholders only.
func (s *store) PairOutcomes(ctx context.Context, sweepID string, variants map[string][]string) ([]record.Trial, error) {
	names := slices.Sorted(maps.Keys(variants))
	var out []record.Trial
	for len(names) > 0 {
		chunk := names[:min(len(names), pairOutcomesChunk)]
		names = names[len(chunk):]
		p := map[string]string{"sweep_id": sweepID}
		var or []string
		for i, name := range chunk {
			sp := "s" + strconv.Itoa(i)
			p[sp] = name
			var in []string
			for j, v := range slices.Compact(slices.Sorted(slices.Values(variants[name]))) {
				vp := sp + "v" + strconv.Itoa(j)
				p[vp] = v
				in = append(in, "{"+vp+":String}")
			}
			if len(in) > 0 {
				or = append(or, "(scenario = {"+sp+":String} AND variant IN ("+strings.Join(in, ", ")+"))")
			}
		}
		if len(or) == 0 {
			continue
		}
		q := "SELECT " + trialListCols + "\nFROM {{db}}.trials FINAL\nWHERE sweep_id = {sweep_id:String}\n  AND (" + strings.Join(or, "\n    OR ") + ")\nORDER BY scenario, arm, variant, seed, trial_id"
		var rows []trialListRow
		if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(q), Params: p}); err != nil {
			return nil, fmt.Errorf("storage: PairOutcomes %s: %w", sweepID, err)
		}
		for _, r := range rows {
			out = append(out, r.trial(sweepID))
		}
	}
	return out, nil
}
