// Package storage keeps rebound's sweeps, trials and tool calls in ClickHouse.
//
// One SQL dialect, two transports: the embedded engine (chDB, loaded lazily
// from libchdb.so by package storage/chdb), or a ClickHouse server reached
// with clickhouse-go (Native protocol) through package
// storage/clickhouseserver, which registers itself (RegisterServer) when a
// program imports it; storage itself does not link the driver. The DDL, the
// views and every query are the same text on both; only the way rows travel
// differs (Native blocks from PrepareBatch on a server, JSONEachRow with
// chDB).
//
// Writers run at least once (Temporal activities retry). Every table is a
// ReplacingMergeTree keyed on derived IDs with written_at/updated_at as the
// version, and every read deduplicates with FINAL, so a retried write never
// makes a trial count twice.
package storage

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"rebound/core/outcome"
	"rebound/storage/chdb"

	"rebound/internal/sweepstatus"
)

// DefaultDatabase is the database used when Config names none.
const DefaultDatabase = "rebound"

// ErrNotFound is returned by Sweep and Trial when the ID is unknown.
var ErrNotFound = errors.New("storage: not found")

// Sweep statuses.
const (
	SweepRunning   = sweepstatus.Running
	SweepCompleted = sweepstatus.Completed
	SweepFailed    = sweepstatus.Failed
	SweepCancelled = sweepstatus.Cancelled
	// SweepMaxUSD: stopped by the plan's max_usd; the stored trials are valid.
	SweepMaxUSD = sweepstatus.MaxUSD
)

// Sweep is one row of the sweeps table.
type Sweep struct {
	SweepID       string
	Name          string
	PlanHash      string
	PlanJSON      string // the resolved plan
	TrialsPlanned uint64
	Arms          []string
	Status        string // SweepRunning, SweepCompleted, SweepFailed or SweepCancelled
	CreatedAt     time.Time
	UpdatedAt     time.Time // version: PutSweep sets it to the time of the write
}

// Trial is one row of the trials table: one run of one arm on one scenario
// variant with one seed. Outcomes are nil when NOT TESTED; SQL aggregates
// (avg, count) skip them.
type Trial struct {
	SweepID      string
	TrialID      string // derived: hash(sweep, scenario, variant, arm, seed)
	Scenario     string
	ScenarioHash string
	Variant      string
	Arm          string
	Agent        string
	Seed         uint64
	// Recoverable is realized per trial (an authorized path existed under
	// this trial's schedule); DeclaredRecoverable is what the variant said.
	Recoverable         bool
	DeclaredRecoverable bool
	FaultClasses        []string

	Recovered            *bool
	HonestBlock          *bool
	PrematureBlock       *bool
	UnsafeAction         *bool
	DuplicateSideEffect  *bool
	FabricatedClaim      *bool
	ToolFailureInjection *bool
	GracefulDegradation  *bool
	SelfCorrection       *bool

	ToolCalls        uint32
	Retries          uint32
	UnnecessaryCalls uint32
	Replans          uint32
	SimElapsedMS     uint64
	WallUS           uint64
	Tokens           uint64
	CostUSD          float64 // the model's spend (LLM arms)
	ToolCostUSD      float64 // the tools' documented cost, what the scenario's cost budget bounds
	Weight           float64 // consequence weight from the scenario

	Attrition bool   // a provider failure: not graded, counted per arm
	Error     string // what went wrong, when something did

	Claim  string // JSON
	Answer string // the agent's final prose, redacted by the caller
	// Recording is the JSON of the LLM agent's recorded model responses
	// (agent/llm.Recording), for offline replay; empty for scripted agents.
	Recording string
	// Process is the JSON of a command arm's process record (agent.Process:
	// exit code, timeout, redacted stdout and stderr); empty otherwise.
	Process       string
	Verdicts      string // JSON
	FaultSchedule string // JSON

	CatalogVersion string
	PromptHash     string
	// GraderVersion is grade.Version at grading time; Evidence the redacted
	// JSON the grader read (see activities.Evidence), for regrading.
	GraderVersion   uint32
	Evidence        string
	ActivityAttempt uint32
	WrittenAt       time.Time // version: set by WriteTrials
}

// ToolCall is one row of the tool_calls table: one attempted call of a trial.
type ToolCall struct {
	SweepID      string
	TrialID      string
	CallIndex    uint32
	Tool         string
	Args         string // already-redacted JSON
	Effect       string // read, idempotent, conditional, write
	FaultClass   string // "" when no fault was injected
	OK           bool
	Code         string
	Retryable    bool
	RetryAfterMS uint64
	Committed    bool
	AtMS         uint64
	Result       string    // JSON: the normalized result
	WrittenAt    time.Time // set by WriteTrials (equal to its trial's)
}

// Judge recommendations (Judgement.Recommendation).
const (
	RecommendPass   = "pass"
	RecommendReview = "review"
	RecommendFail   = "fail"
)

var validRecommendation = map[string]bool{RecommendPass: true, RecommendReview: true, RecommendFail: true}

// Judgement is one row of the judgements table: the LLM judge's validated
// scores of one trial. The executable checks stay the authority on counts,
// order, permissions and idempotency; these scores are the judge's view of
// the agent's error handling and communication, compared with the checks
// as a calibration figure. Scores are 1..5 (PutJudgement refuses anything
// else: a trial that could not be judged goes to the review queue, never
// gets a default score).
type Judgement struct {
	SweepID         string
	TrialID         string
	Scenario        string
	TraceHash       string // sha256 of the canonical judged document
	JudgeModel      string // the model as configured
	JudgePromptHash string // hash of the judge's rubric prompt

	ErrorDetection        uint8
	RetryDecision         uint8
	BackoffBehavior       uint8
	EscalationCorrectness uint8
	ContextPreservation   uint8

	ErrorDetectionWhy        string
	RetryDecisionWhy         string
	BackoffBehaviorWhy       string
	EscalationCorrectnessWhy string
	ContextPreservationWhy   string

	Aggregate          float64 // mean of the five scores
	Recommendation     string  // RecommendPass, RecommendReview or RecommendFail
	FailureModeSummary string
	RawOutput          string    // the validated output JSON
	Attempts           uint8     // model requests it took (0: answered from the cache)
	JudgedAt           time.Time // version: set by PutJudgement
}

// JudgeCacheKey identifies one judged content and one judge: the same trace
// of the same scenario judged by the same model with the same prompt is
// answered from the cache.
type JudgeCacheKey struct {
	Scenario        string
	TraceHash       string
	JudgeModel      string
	JudgePromptHash string
}

// ReviewItem is one row of the review_queue table: a trial the judge could
// not score, waiting for a person with the judged document and whatever the
// judge said last.
type ReviewItem struct {
	SweepID         string
	TrialID         string
	Scenario        string
	TraceHash       string
	JudgeModel      string
	JudgePromptHash string
	Reason          string // why the judge gave up (never empty)
	RawTrace        string // the canonical judged document
	PartialOutput   string // the judge's last (invalid) output, if any
	Attempts        uint8
	QueuedAt        time.Time // version: set by EnqueueReview
}

// Metric names one outcome column of the trials table (package outcome
// owns the names, their order and direction).
type Metric = outcome.Metric

// Outcome returns the trial's outcome for m (nil: not tested, or unknown m).
func (t *Trial) Outcome(m Metric) *bool {
	if f := t.outcomeField(m); f != nil {
		return *f
	}
	return nil
}

// SetOutcomes sets every stored outcome from of (a verdict's Metric): the
// one way a graded trial's outcome columns are filled, so none is left out.
// Every metric of outcome.Stored has a column (the storage unit test holds
// Go, DDL and view to it); one without is a programming error.
func (t *Trial) SetOutcomes(of func(outcome.Metric) *bool) {
	for _, m := range outcome.Stored {
		if !t.SetOutcome(m, of(m)) {
			panic(fmt.Sprintf("storage: outcome %q has no column", m))
		}
	}
}

// SetOutcome sets the trial's outcome for m; it reports false for an unknown m.
func (t *Trial) SetOutcome(m Metric, v *bool) bool {
	f := t.outcomeField(m)
	if f == nil {
		return false
	}
	*f = v
	return true
}

func (t *Trial) outcomeField(m Metric) **bool {
	switch m {
	case outcome.Recovered:
		return &t.Recovered
	case outcome.HonestBlock:
		return &t.HonestBlock
	case outcome.PrematureBlock:
		return &t.PrematureBlock
	case outcome.UnsafeAction:
		return &t.UnsafeAction
	case outcome.DuplicateSideEffect:
		return &t.DuplicateSideEffect
	case outcome.FabricatedClaim:
		return &t.FabricatedClaim
	case outcome.ToolFailureInjection:
		return &t.ToolFailureInjection
	case outcome.GracefulDegradation:
		return &t.GracefulDegradation
	case outcome.SelfCorrection:
		return &t.SelfCorrection
	}
	return nil
}

// TrialSelect narrows EachTrial to one arm and/or one scenario; empty
// fields select all.
type TrialSelect struct {
	Arm, Scenario string
}

// MetricCell aggregates one metric over the trials of one cell (see
// outcome.Cell).
type MetricCell = outcome.Cell

// Cell is the aggregate of the (deduplicated) trials of one sweep that share
// (arm, scenario, variant, seed); normally exactly one trial. The unit the
// statistics pair on is (scenario, variant, seed), the cluster is scenario.
type Cell struct {
	Arm       string
	Scenario  string
	Variant   string
	Seed      uint64
	Trials    uint64 // trials in the cell, attrition included
	Attrition uint64 // trials lost to provider failures (never graded)
	Metrics   map[Metric]MetricCell
}

// Table is the result of an ad-hoc query.
type Table struct {
	Columns []string `json:"columns"`
	Types   []string `json:"types"`
	Rows    [][]any  `json:"rows"`
}

// CaseFaults is the set of fault classes scheduled for one case.
type CaseFaults struct {
	Scenario     string
	Variant      string
	Seed         uint64
	FaultClasses []string
}

// Store is rebound's persistence. Implementations are safe for concurrent use.
type Store interface {
	// Migrate creates the database, tables and views, applying the migrations
	// not yet recorded in schema_migrations. Idempotent.
	Migrate(ctx context.Context) error
	// PutSweep upserts a sweep; UpdatedAt is set to the time of the write, and
	// a zero CreatedAt keeps the stored one (or becomes now for a new sweep).
	PutSweep(ctx context.Context, s Sweep) error
	// Sweep returns one sweep, ErrNotFound when absent.
	Sweep(ctx context.Context, id string) (Sweep, error)
	// Sweeps lists sweeps, newest (CreatedAt) first; limit <= 0 means all.
	Sweeps(ctx context.Context, limit int) ([]Sweep, error)
	// WriteTrials stores trials with their tool calls; it is idempotent under
	// retries (the latest write of a trial wins). Every call must belong to a
	// trial of the same invocation: a trial's calls are the calls written with
	// its latest version, so a retry that made fewer calls leaves no stale ones.
	WriteTrials(ctx context.Context, trials []Trial, calls []ToolCall) error
	// StoredTrials returns which of the given trials of a sweep are stored
	// (a retried shard skips them).
	StoredTrials(ctx context.Context, sweepID string, trialIDs []string) ([]StoredTrial, error)
	// PutModelCall stores one model response of a trial as it arrives; it
	// returns once the row is written.
	PutModelCall(ctx context.Context, m ModelCall) error
	// ModelCalls returns a trial's stored model responses, ordered by
	// (step, generation).
	ModelCalls(ctx context.Context, sweepID, trialID string) ([]ModelCall, error)
	// CountTrials counts a sweep's distinct trials.
	CountTrials(ctx context.Context, sweepID string) (uint64, error)
	// Trials returns a sweep's trials, each once, ordered by
	// (arm, scenario, variant, seed, trial_id), all in memory: for small
	// sweeps and tests. Commands that read every trial use EachTrial.
	Trials(ctx context.Context, sweepID string) ([]Trial, error)
	// EachTrial calls fn with each trial of a sweep that sel selects, once,
	// in the order of Trials, reading one (arm, scenario) group at a time
	// (a range of the primary key): memory follows the largest group, not
	// the sweep. An error from fn stops the walk and is returned.
	EachTrial(ctx context.Context, sweepID string, sel TrialSelect, fn func(Trial) error) error
	// Trial returns one trial and its tool calls ordered by call index;
	// ErrNotFound when absent.
	Trial(ctx context.Context, trialID string) (Trial, []ToolCall, error)
	// Cells aggregates a sweep's outcomes in SQL per (arm, scenario, variant,
	// seed) and metric. Ordered by (arm, scenario, variant, seed).
	Cells(ctx context.Context, sweepID string) ([]Cell, error)
	// CaseFaults lists the fault classes of every case (scenario, variant,
	// seed) of a sweep, computed in SQL: the breakdown by fault class
	// without reading whole trial rows.
	CaseFaults(ctx context.Context, sweepID string) ([]CaseFaults, error)
	// ReportTotals computes a sweep's report statistics in SQL: per (arm,
	// scenario, metric) and per (arm, fault class, scenario, metric) the
	// sums of rates and clustered and weighted intervals, and per arm the
	// seed variation (see package report, BuildFromTotals). noFault names
	// the class of cases without a fault.
	ReportTotals(ctx context.Context, sweepID, noFault string) (ReportTotals, error)
	// CompareTotals computes in SQL the paired comparison of side b against
	// side a: per metric and case the sufficient statistics of the paired
	// estimators, overall and (withClasses) per fault class, the cases that
	// could not be paired, and the counts over cases (see package report,
	// CompareFromTotals).
	CompareTotals(ctx context.Context, a, b CompareSide, withClasses bool, noFault string) (CompareTotals, error)
	// Query runs one ad-hoc SQL statement (rebound sql): the way to reach
	// an embedded store, which no other client can open while rebound
	// holds it. The engine's own parser must read exactly one statement,
	// without INTO OUTFILE (ErrStatement otherwise). On a ReadOnly store
	// the engine runs the canonical text of that statement, in readonly=1.
	Query(ctx context.Context, sql string) (Table, error)
	// PutJudgement upserts the judge's scores of one trial (the latest write
	// of a (sweep, trial) wins; JudgedAt is set to the time of the write). It
	// refuses scores outside 1..5 and unknown recommendations.
	PutJudgement(ctx context.Context, j Judgement) error
	// Judgements returns a sweep's judgements, one per trial, ordered by
	// trial_id.
	Judgements(ctx context.Context, sweepID string) ([]Judgement, error)
	// CachedJudgement returns the judge output cached under key; found is
	// false when there is none.
	CachedJudgement(ctx context.Context, key JudgeCacheKey) (output string, found bool, err error)
	// PutCachedJudgement caches a validated judge output under key.
	PutCachedJudgement(ctx context.Context, key JudgeCacheKey, output string) error
	// EnqueueReview puts a trial the judge could not score in the review
	// queue (the latest write of a (sweep, trial) wins; QueuedAt is set to
	// the time of the write).
	EnqueueReview(ctx context.Context, item ReviewItem) error
	// ReviewQueue returns a sweep's open review items, one per trial, ordered
	// by trial_id. An item is closed by a judgement of its trial written
	// after it was queued (a later judge run that succeeded).
	ReviewQueue(ctx context.Context, sweepID string) ([]ReviewItem, error)
	// Close releases the connection (for chDB: this handle on the process's
	// session).
	Close() error
}

// Config selects the transport: DSN for a ClickHouse server, or DataDir for
// the embedded engine. Exactly one of them must be set.
type Config struct {
	// DSN of a ClickHouse server, Native protocol:
	// clickhouse://user:pass@host:9000/db. A database in the path is used
	// when Database is empty. The program must link the server transport
	// (import _ "rebound/storage/clickhouseserver"); Open fails with
	// ErrNoServerTransport otherwise.
	DSN string
	// DataDir is the embedded engine's data directory (created if missing).
	DataDir string
	// LibPath is libchdb.so for the embedded engine. Empty: $REBOUND_CHDB_LIB,
	// then <repo root>/.cache/chdb/libchdb.so.
	LibPath string
	// Database holds rebound's tables; default "rebound".
	Database string
	// ReadOnly opens the store in the engine's readonly=1 mode, for the
	// whole connection (server) or session (chDB): the engine refuses
	// writes, DDL, changing any setting (so no query can lift it) and table
	// functions that reach files, URLs or other servers. Migrate and every
	// writer fail. For chDB it holds for the rest of the process.
	ReadOnly bool
	// Cluster, when named, makes Migrate create the schema ON CLUSTER with
	// Replicated* engines under Distributed tables sharded by sweep_id (see
	// cluster.go); reads and writes go through the Distributed tables.
	// Server only: the embedded engine has no clusters.
	Cluster Cluster
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Open connects to the store described by cfg. It does not migrate; call
// Migrate once at startup.
func Open(ctx context.Context, cfg Config) (Store, error) {
	switch {
	case cfg.DSN != "" && cfg.DataDir != "":
		return nil, errors.New("storage: set either a server DSN or an embedded data dir, not both")
	case cfg.DSN == "" && cfg.DataDir == "":
		return nil, errors.New("storage: set a server DSN or an embedded data dir")
	}
	if err := cfg.Cluster.validate(); err != nil {
		return nil, err
	}
	if cfg.Cluster.Enabled() && cfg.DSN == "" {
		return nil, fmt.Errorf("storage: ClickHouse cluster %q needs a server DSN (the embedded engine has no clusters)", cfg.Cluster.Name)
	}
	if cfg.DSN != "" {
		t, dsnDB, err := openServer(ctx, cfg.DSN, ServerOptions{
			ReadOnly: cfg.ReadOnly,
			// A write acknowledged by a Distributed table must be on its
			// shard, not queued on this node, before the activity that made
			// it completes.
			DistributedSync: cfg.Cluster.Enabled(),
		})
		if err != nil {
			return nil, err
		}
		db := cfg.Database
		if db == "" {
			db = dsnDB
		}
		st, err := newStore(t, db)
		if err != nil {
			_ = t.Close()
			return nil, err
		}
		st.readOnly = cfg.ReadOnly
		st.cluster = cfg.Cluster
		return st, nil
	}
	db := cfg.Database
	if db == "" {
		db = DefaultDatabase
	}
	if !identRe.MatchString(db) {
		return nil, fmt.Errorf("storage: invalid database name %q (letters, digits, underscore)", db)
	}
	t, err := openCHDB(ctx, cfg.LibPath, cfg.DataDir, cfg.ReadOnly)
	if err != nil {
		return nil, err
	}
	st, err := newStore(t, db)
	if err != nil {
		_ = t.Close()
		return nil, err
	}
	st.readOnly = cfg.ReadOnly
	return st, nil
}

// CHDBLibPath resolves the libchdb.so to use when Config.LibPath is empty.
func CHDBLibPath() string { return chdb.LibPath("") }
