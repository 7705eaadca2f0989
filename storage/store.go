package storage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"rebound/core/outcome"
	"rebound/internal/buildinfo"
	"rebound/internal/sweepstatus"
	"rebound/results/record"
)

type store struct {
	t        Transport
	db       string
	readOnly bool   // Config.ReadOnly: the engine runs in readonly=1
	limits   Limits // Config.Limits, for a ReadOnly store
	// doorAtServer is Config.DoorAtServer: the server runs the door.
	doorAtServer bool
	// cluster is Config.Cluster: Migrate builds the replicated, distributed
	// schema on it (cluster.go).
	cluster Cluster
	// now is the clock for version columns; tests replace it.
	now func() time.Time
}

func newStore(t Transport, db string) (*store, error) {
	if db == "" {
		db = DefaultDatabase
	}
	if !identRe.MatchString(db) {
		return nil, fmt.Errorf("storage: invalid database name %q (letters, digits, underscore)", db)
	}
	return &store{t: t, db: db, now: time.Now}, nil
}

// Database names the database holding rebound's tables (Config.Database,
// the DSN's, or DefaultDatabase), for callers that write their own SQL
// through Query.
func (s *store) Database() string { return s.db }

func (s *store) sql(text string) string { return render(text, s.db) }

func (s *store) insertSQL(table string, cols []string) string {
	return insertPrefix(s.db, table, cols)
}

func insertPrefix(db, table string, cols []string) string {
	q := "INSERT INTO " + quoteIdent(db) + "." + table + " ("
	for i, c := range cols {
		if i > 0 {
			q += ", "
		}
		q += c
	}
	return q + ")"
}

func (s *store) stamp() time.Time { return utcMilli(s.now()) }

func (s *store) Close() error { return s.t.Close() }

// ---- migrations ----

func (s *store) Migrate(ctx context.Context) error {
	return s.migrateTo(ctx, SchemaVersion())
}

// migrateTo applies the migrations up to and including version upTo (tests
// use it to build a database as an older binary left it).
func (s *store) migrateTo(ctx context.Context, upTo uint32) error {
	if err := s.t.Exec(ctx, Stmt{SQL: createDatabase(s.db, s.cluster)}); err != nil {
		return fmt.Errorf("storage: create database %s: %w", s.db, err)
	}
	if err := s.execDDL(ctx, ddlSchemaMigrations); err != nil {
		return fmt.Errorf("storage: create schema_migrations: %w", err)
	}
	var rows []versionRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qAppliedVersions)}); err != nil {
		return fmt.Errorf("storage: read schema_migrations: %w", err)
	}
	applied := map[uint32]bool{}
	var newest uint32
	for _, r := range rows {
		applied[r.Version] = true
		newest = max(newest, r.Version)
	}
	latest := migrations[len(migrations)-1].Version
	if newest > latest {
		return fmt.Errorf("storage: database %s is at schema version %d, newer than this binary knows (%d); upgrade rebound", s.db, newest, latest)
	}
	for _, m := range migrations {
		if applied[m.Version] || m.Version > upTo {
			continue
		}
		for i, q := range m.Statements {
			if err := s.execDDL(ctx, q); err != nil {
				return fmt.Errorf("storage: migration %d (%s), statement %d: %w", m.Version, m.Name, i+1, err)
			}
		}
		row := []any{m.Version, m.Name, s.stamp()}
		if err := s.t.Insert(ctx, s.insertSQL("schema_migrations", migrationCols), migrationCols, [][]any{row}); err != nil {
			return fmt.Errorf("storage: record migration %d: %w", m.Version, err)
		}
	}
	return nil
}

// execDDL runs one schema statement (a template with {{db}}): as it is on
// one node, or as the statements that build it on the cluster.
func (s *store) execDDL(ctx context.Context, tmpl string) error {
	if !s.cluster.Enabled() {
		return s.t.Exec(ctx, Stmt{SQL: s.sql(tmpl)})
	}
	qs, err := clusterStatements(tmpl, s.db, s.cluster)
	if err != nil {
		return err
	}
	for _, q := range qs {
		if err := s.t.Exec(ctx, Stmt{SQL: q}); err != nil {
			return err
		}
	}
	return nil
}

// SchemaVersion is the newest migration this binary knows.
func SchemaVersion() uint32 { return migrations[len(migrations)-1].Version }

// ---- sweeps ----

func (s *store) PutSweep(ctx context.Context, sw record.Sweep) error {
	if sw.SweepID == "" {
		return errors.New("storage: PutSweep: empty sweep_id")
	}
	if !sweepstatus.Valid(sw.Status) {
		return fmt.Errorf("storage: PutSweep %s: invalid status %q (one of %s)", sw.SweepID, sw.Status, strings.Join(sweepstatus.All, ", "))
	}
	now := s.stamp()
	if sw.CreatedAt.IsZero() {
		old, err := s.Sweep(ctx, sw.SweepID)
		switch {
		case err == nil:
			sw.CreatedAt = old.CreatedAt
			if sw.ReboundVersion == "" {
				sw.ReboundVersion = old.ReboundVersion
			}
		case errors.Is(err, record.ErrNotFound):
			// A new sweep: stamped with this process's build (the worker
			// that registers it), unless the caller says otherwise.
			sw.CreatedAt = now
			if sw.ReboundVersion == "" {
				sw.ReboundVersion = buildinfo.Get().Short()
			}
		default:
			return err
		}
	}
	// A rewrite (a status, a retried register) keeps the first build: the
	// row read back carries it, and an empty one is written as it is.
	sw.UpdatedAt = now
	vals, err := sweepValues(sw)
	if err != nil {
		return err
	}
	if err := s.t.Insert(ctx, s.insertSQL("sweeps", sweepCols), sweepCols, [][]any{vals}); err != nil {
		return fmt.Errorf("storage: PutSweep %s: %w", sw.SweepID, err)
	}
	return nil
}

func (s *store) Sweep(ctx context.Context, id string) (record.Sweep, error) {
	var rows []sweepRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qSweep), Params: map[string]string{"sweep_id": id}}); err != nil {
		return record.Sweep{}, fmt.Errorf("storage: Sweep %s: %w", id, err)
	}
	if len(rows) == 0 {
		return record.Sweep{}, fmt.Errorf("sweep %s: %w", id, record.ErrNotFound)
	}
	return rows[0].sweep(), nil
}

func (s *store) Sweeps(ctx context.Context, limit int) ([]record.Sweep, error) {
	lim := uint64(1<<63 - 1)
	if limit > 0 {
		lim = uint64(limit)
	}
	var rows []sweepRow
	q := Stmt{SQL: s.sql(qSweeps), Params: map[string]string{"limit": strconv.FormatUint(lim, 10)}}
	if err := s.t.Select(ctx, &rows, q); err != nil {
		return nil, fmt.Errorf("storage: Sweeps: %w", err)
	}
	out := make([]record.Sweep, len(rows))
	for i, r := range rows {
		out[i] = r.sweep()
	}
	return out, nil
}

// ---- trials ----

func (s *store) WriteTrials(ctx context.Context, trials []record.Trial, calls []record.ToolCall) error {
	if len(trials) == 0 && len(calls) == 0 {
		return nil
	}
	type key struct{ sweep, trial string }
	inBatch := make(map[key]bool, len(trials))
	for _, t := range trials {
		inBatch[key{t.SweepID, t.TrialID}] = true
	}
	for _, c := range calls {
		if !inBatch[key{c.SweepID, c.TrialID}] {
			return fmt.Errorf("storage: WriteTrials: tool call %d of trial %s (sweep %s) has no trial in this write; write a trial and its calls together", c.CallIndex, c.TrialID, c.SweepID)
		}
	}
	// One version for the whole write: a trial and its calls share
	// written_at, which is how readers pick the calls of a trial's latest
	// write.
	writtenAt := s.stamp()
	callRows := make([][]any, 0, len(calls))
	for _, c := range calls {
		v, err := toolCallValues(c, writtenAt)
		if err != nil {
			return err
		}
		callRows = append(callRows, v)
	}
	trialRows := make([][]any, 0, len(trials))
	for _, t := range trials {
		v, err := trialValues(t, writtenAt)
		if err != nil {
			return err
		}
		trialRows = append(trialRows, v)
	}
	// Calls first: once a trial row is visible, its calls are stored.
	if len(callRows) > 0 {
		if err := s.t.Insert(ctx, s.insertSQL("tool_calls", toolCallCols), toolCallCols, callRows); err != nil {
			return fmt.Errorf("storage: WriteTrials: tool_calls: %w", err)
		}
	}
	if len(trialRows) > 0 {
		if err := s.t.Insert(ctx, s.insertSQL("trials", trialCols), trialCols, trialRows); err != nil {
			return fmt.Errorf("storage: WriteTrials: trials: %w", err)
		}
	}
	return nil
}

func (s *store) CountTrials(ctx context.Context, sweepID string) (uint64, error) {
	var rows []countRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qCountTrials), Params: map[string]string{"sweep_id": sweepID}}); err != nil {
		return 0, fmt.Errorf("storage: CountTrials %s: %w", sweepID, err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	return rows[0].N, nil
}

func (s *store) EachTrial(ctx context.Context, sweepID string, sel record.TrialSelect, fn func(record.Trial) error) error {
	var groups []trialGroupRow
	q := Stmt{SQL: s.sql(qTrialGroups), Params: map[string]string{"sweep_id": sweepID, "arm": sel.Arm, "scenario": sel.Scenario}}
	if err := s.t.Select(ctx, &groups, q); err != nil {
		return fmt.Errorf("storage: EachTrial %s: %w", sweepID, err)
	}
	of := qTrialsOfGroup
	if sel.Outcomes {
		of = qTrialOutcomesOfGroup
	}
	for _, g := range groups {
		var rows []trialRow
		q := Stmt{SQL: s.sql(of), Params: map[string]string{"sweep_id": sweepID, "arm": g.Arm, "scenario": g.Scenario}}
		if err := s.t.Select(ctx, &rows, q); err != nil {
			return fmt.Errorf("storage: EachTrial %s (arm %s, scenario %s): %w", sweepID, g.Arm, g.Scenario, err)
		}
		for _, r := range rows {
			t := r.trial()
			if sel.Outcomes {
				t.WrittenAt = time.Time{} // not read
			}
			if err := fn(t); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *store) Trials(ctx context.Context, sweepID string) ([]record.Trial, error) {
	var rows []trialRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qTrials), Params: map[string]string{"sweep_id": sweepID}}); err != nil {
		return nil, fmt.Errorf("storage: Trials %s: %w", sweepID, err)
	}
	out := make([]record.Trial, len(rows))
	for i, r := range rows {
		out[i] = r.trial()
	}
	return out, nil
}

func (s *store) Trial(ctx context.Context, trialID string) (record.Trial, []record.ToolCall, error) {
	var rows []trialRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qTrial), Params: map[string]string{"trial_id": trialID}}); err != nil {
		return record.Trial{}, nil, fmt.Errorf("storage: Trial %s: %w", trialID, err)
	}
	if len(rows) == 0 {
		return record.Trial{}, nil, fmt.Errorf("trial %s: %w", trialID, record.ErrNotFound)
	}
	return s.withCalls(ctx, rows[0].trial())
}

// SweepTrial returns a trial of a sweep found by its key, and its calls.
func (s *store) SweepTrial(ctx context.Context, sweepID string, key TrialKey) (record.Trial, []record.ToolCall, error) {
	var rows []trialRow
	q := Stmt{SQL: s.sql(qSweepTrial), Params: map[string]string{
		"sweep_id": sweepID, "arm": key.Arm, "scenario": key.Scenario, "variant": key.Variant,
		"seed": strconv.FormatUint(key.Seed, 10), "trial_id": key.TrialID,
	}}
	if err := s.t.Select(ctx, &rows, q); err != nil {
		return record.Trial{}, nil, fmt.Errorf("storage: SweepTrial %s: %w", key.TrialID, err)
	}
	if len(rows) == 0 {
		return record.Trial{}, nil, fmt.Errorf("trial %s of sweep %s: %w", key.TrialID, sweepID, record.ErrNotFound)
	}
	return s.withCalls(ctx, rows[0].trial())
}

// withCalls returns t with the tool calls of its latest write.
func (s *store) withCalls(ctx context.Context, t record.Trial) (record.Trial, []record.ToolCall, error) {
	trialID := t.TrialID
	var crows []toolCallRow
	q := Stmt{SQL: s.sql(qTrialCalls), Params: map[string]string{
		"sweep_id":      t.SweepID,
		"trial_id":      t.TrialID,
		"written_at_ms": strconv.FormatInt(t.WrittenAt.UnixMilli(), 10),
	}}
	if err := s.t.Select(ctx, &crows, q); err != nil {
		return record.Trial{}, nil, fmt.Errorf("storage: Trial %s: tool calls: %w", trialID, err)
	}
	calls := make([]record.ToolCall, len(crows))
	for i, r := range crows {
		calls[i] = r.toolCall()
	}
	return t, calls, nil
}

func (s *store) CaseFaults(ctx context.Context, sweepID string) ([]record.CaseFaults, error) {
	var rows []caseFaultsRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qCaseFaults), Params: map[string]string{"sweep_id": sweepID}}); err != nil {
		return nil, fmt.Errorf("storage: CaseFaults %s: %w", sweepID, err)
	}
	out := make([]record.CaseFaults, len(rows))
	for i, r := range rows {
		out[i] = record.CaseFaults(r)
	}
	return out, nil
}

func (s *store) Cells(ctx context.Context, sweepID string) ([]record.Cell, error) {
	var rows []cellRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qCells), Params: map[string]string{"sweep_id": sweepID}}); err != nil {
		return nil, fmt.Errorf("storage: Cells %s: %w", sweepID, err)
	}
	type key struct {
		arm, scenario, variant string
		seed                   uint64
	}
	idx := map[key]int{}
	var cells []record.Cell
	for _, r := range rows {
		k := key{r.Arm, r.Scenario, r.Variant, r.Seed}
		i, ok := idx[k]
		if !ok {
			i = len(cells)
			idx[k] = i
			cells = append(cells, record.Cell{
				Arm: r.Arm, Scenario: r.Scenario, Variant: r.Variant, Seed: r.Seed,
				Trials: r.Trials, Attrition: r.Attrition, Unsealed: r.Unsealed,
				Metrics: make(map[outcome.Metric]outcome.Cell, len(outcome.Stored)),
			})
		}
		cells[i].Metrics[outcome.Metric(r.Metric)] = outcome.Cell{
			N: r.N, Successes: r.Successes, SumWeight: r.SumWeight, SumWeightY: r.SumWeightY,
		}
	}
	// The SQL orders rows already; keep the contract explicit anyway.
	sort.SliceStable(cells, func(i, j int) bool {
		a, b := cells[i], cells[j]
		if a.Arm != b.Arm {
			return a.Arm < b.Arm
		}
		if a.Scenario != b.Scenario {
			return a.Scenario < b.Scenario
		}
		if a.Variant != b.Variant {
			return a.Variant < b.Variant
		}
		return a.Seed < b.Seed
	})
	return cells, nil
}

// ---- the LLM judge ----

func (s *store) PutJudgement(ctx context.Context, j record.Judgement) error {
	vals, err := judgementValues(j, s.stamp())
	if err != nil {
		return err
	}
	if err := s.t.Insert(ctx, s.insertSQL("judgements", judgementCols), judgementCols, [][]any{vals}); err != nil {
		return fmt.Errorf("storage: PutJudgement %s: %w", j.TrialID, err)
	}
	return nil
}

func (s *store) Judgements(ctx context.Context, sweepID string) ([]record.Judgement, error) {
	var rows []judgementRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qJudgements), Params: map[string]string{"sweep_id": sweepID}}); err != nil {
		return nil, fmt.Errorf("storage: Judgements %s: %w", sweepID, err)
	}
	out := make([]record.Judgement, len(rows))
	for i, r := range rows {
		out[i] = r.judgement()
	}
	return out, nil
}

func (s *store) CachedJudgement(ctx context.Context, key record.JudgeCacheKey) (string, bool, error) {
	if err := key.Validate(); err != nil {
		return "", false, fmt.Errorf("storage: %w", err)
	}
	var rows []judgeCacheRow
	q := Stmt{SQL: s.sql(qJudgeCache), Params: map[string]string{
		"scenario":          key.Scenario,
		"trace_hash":        key.TraceHash,
		"judge_model":       key.JudgeModel,
		"judge_prompt_hash": key.JudgePromptHash,
	}}
	if err := s.t.Select(ctx, &rows, q); err != nil {
		return "", false, fmt.Errorf("storage: CachedJudgement %s/%s: %w", key.Scenario, key.TraceHash, err)
	}
	if len(rows) == 0 {
		return "", false, nil
	}
	return rows[0].Output, true, nil
}

func (s *store) PutCachedJudgement(ctx context.Context, key record.JudgeCacheKey, output string) error {
	vals, err := judgeCacheValues(key, output, s.stamp())
	if err != nil {
		return err
	}
	if err := s.t.Insert(ctx, s.insertSQL("judge_cache", judgeCacheCols), judgeCacheCols, [][]any{vals}); err != nil {
		return fmt.Errorf("storage: PutCachedJudgement %s/%s: %w", key.Scenario, key.TraceHash, err)
	}
	return nil
}

func (s *store) EnqueueReview(ctx context.Context, item record.ReviewItem) error {
	vals, err := reviewItemValues(item, s.stamp())
	if err != nil {
		return err
	}
	if err := s.t.Insert(ctx, s.insertSQL("review_queue", reviewCols), reviewCols, [][]any{vals}); err != nil {
		return fmt.Errorf("storage: EnqueueReview %s: %w", item.TrialID, err)
	}
	return nil
}

func (s *store) PutReview(ctx context.Context, r record.Review) error {
	vals, err := humanReviewValues(r, s.stamp())
	if err != nil {
		return err
	}
	if err := s.t.Insert(ctx, s.insertSQL("reviews", humanReviewCols), humanReviewCols, [][]any{vals}); err != nil {
		return fmt.Errorf("storage: PutReview %s %s: %w", r.TrialID, r.Target, err)
	}
	return nil
}

func (s *store) HumanReviews(ctx context.Context, sweepID string) ([]record.Review, error) {
	return s.selectReviews(ctx, "HumanReviews", qHumanReviews, map[string]string{"sweep_id": sweepID})
}

func (s *store) ReviewHistory(ctx context.Context, trialID string) ([]record.Review, error) {
	return s.selectReviews(ctx, "ReviewHistory", qReviewHistory, map[string]string{"trial_id": trialID})
}

func (s *store) selectReviews(ctx context.Context, what, q string, params map[string]string) ([]record.Review, error) {
	var rows []humanReviewRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(q), Params: params}); err != nil {
		return nil, fmt.Errorf("storage: %s: %w", what, err)
	}
	out := make([]record.Review, len(rows))
	for i, r := range rows {
		out[i] = r.review()
	}
	return out, nil
}

func (s *store) ReviewQueue(ctx context.Context, sweepID string) ([]record.ReviewItem, error) {
	var rows []reviewRow
	if err := s.t.Select(ctx, &rows, Stmt{SQL: s.sql(qReviewQueue), Params: map[string]string{"sweep_id": sweepID}}); err != nil {
		return nil, fmt.Errorf("storage: ReviewQueue %s: %w", sweepID, err)
	}
	out := make([]record.ReviewItem, len(rows))
	for i, r := range rows {
		out[i] = r.reviewItem()
	}
	return out, nil
}
