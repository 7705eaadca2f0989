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
// The rows it writes and returns are package record's types
// (rebound/results/record): the results own the read model, declare the
// reads they make as interfaces over it, and Store implements them.
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

	"rebound/results/record"
	"rebound/storage/chdb"
)

// DefaultDatabase is the database used when Config names none.
const DefaultDatabase = "rebound"

// Table is the result of an ad-hoc query.
type Table struct {
	Columns []string `json:"columns"`
	Types   []string `json:"types"`
	Rows    [][]any  `json:"rows"`
}

// Store is rebound's persistence. Implementations are safe for concurrent use.
type Store interface {
	// Migrate creates the database, tables and views, applying the migrations
	// not yet recorded in schema_migrations. Idempotent.
	Migrate(ctx context.Context) error
	// PutSweep upserts a sweep; UpdatedAt is set to the time of the write, and
	// a zero CreatedAt keeps the stored one (or becomes now for a new sweep,
	// whose empty ReboundVersion becomes this process's build; a zero
	// CreatedAt also keeps the stored ReboundVersion when none is given).
	PutSweep(ctx context.Context, s record.Sweep) error
	// Sweep returns one sweep, record.ErrNotFound when absent.
	Sweep(ctx context.Context, id string) (record.Sweep, error)
	// Sweeps lists sweeps, newest (CreatedAt) first; limit <= 0 means all.
	Sweeps(ctx context.Context, limit int) ([]record.Sweep, error)
	// WriteTrials stores trials with their tool calls; it is idempotent under
	// retries (the latest write of a trial wins). Every call must belong to a
	// trial of the same invocation: a trial's calls are the calls written with
	// its latest version, so a retry that made fewer calls leaves no stale ones.
	WriteTrials(ctx context.Context, trials []record.Trial, calls []record.ToolCall) error
	// StoredTrials returns which of the given trials of a sweep are stored
	// (a retried shard skips them), found by their place in the trials
	// table's primary key.
	StoredTrials(ctx context.Context, sweepID string, trials []TrialKey) ([]StoredTrial, error)
	// PutModelCall stores one model response of a trial as it arrives; it
	// returns once the row is written.
	PutModelCall(ctx context.Context, m record.ModelCall) error
	// ModelCalls returns a trial's stored model responses, ordered by
	// (step, generation).
	ModelCalls(ctx context.Context, sweepID, trialID string) ([]record.ModelCall, error)
	// PutModelRequest journals one model request before it is sent; it
	// returns once the row is written.
	PutModelRequest(ctx context.Context, m record.ModelRequest) error
	// Spend is a sweep's model spend: exact, and estimated at an upper
	// bound for the requests sent whose answers were lost.
	Spend(ctx context.Context, sweepID string) (record.Spend, error)
	// CountTrials counts a sweep's distinct trials.
	CountTrials(ctx context.Context, sweepID string) (uint64, error)
	// Trials returns a sweep's trials, each once, ordered by
	// (arm, scenario, variant, seed, trial_id), all in memory: for small
	// sweeps and tests. Commands that read every trial use EachTrial.
	Trials(ctx context.Context, sweepID string) ([]record.Trial, error)
	// EachTrial calls fn with each trial of a sweep that sel selects, once,
	// in the order of Trials, reading one (arm, scenario) group at a time
	// (a range of the primary key): memory follows the largest group, not
	// the sweep. An error from fn stops the walk and is returned.
	EachTrial(ctx context.Context, sweepID string, sel record.TrialSelect, fn func(record.Trial) error) error
	// Trial returns one trial and its tool calls ordered by call index;
	// record.ErrNotFound when absent.
	Trial(ctx context.Context, trialID string) (record.Trial, []record.ToolCall, error)
	// SweepTrial is Trial for a trial of a sweep named by its place in the
	// primary key (a judge shard's read, once per trial): a point lookup
	// however large the sweep and the store grow.
	SweepTrial(ctx context.Context, sweepID string, key TrialKey) (record.Trial, []record.ToolCall, error)
	// Cells aggregates a sweep's outcomes in SQL per (arm, scenario, variant,
	// seed) and metric. Ordered by (arm, scenario, variant, seed).
	Cells(ctx context.Context, sweepID string) ([]record.Cell, error)
	// CaseFaults lists the fault classes of every case (scenario, variant,
	// seed) of a sweep, computed in SQL: the breakdown by fault class
	// without reading whole trial rows.
	CaseFaults(ctx context.Context, sweepID string) ([]record.CaseFaults, error)
	// ReportTotals computes a sweep's report statistics in SQL: per (arm,
	// scenario, metric) and per (arm, fault class, scenario, metric) the
	// sums of rates and clustered and weighted intervals, and per arm the
	// seed variation (see package report, BuildFromTotals). noFault names
	// the class of cases without a fault.
	ReportTotals(ctx context.Context, sweepID, noFault string) (record.ReportTotals, error)
	// CompareTotals computes in SQL the paired comparison of side b against
	// side a: per metric and case the sufficient statistics of the paired
	// estimators, overall and (withClasses) per fault class, the cases that
	// could not be paired, and the counts over cases (see package report,
	// CompareFromTotals).
	CompareTotals(ctx context.Context, a, b record.CompareSide, withClasses bool, noFault string) (record.CompareTotals, error)
	// Query runs one ad-hoc SQL statement (rebound sql): the way to reach
	// an embedded store, which no other client can open while rebound
	// holds it. The engine's own parser must read exactly one statement,
	// without INTO OUTFILE (ErrStatement otherwise). On a ReadOnly store
	// the engine runs the canonical text of that statement, in readonly=1.
	Query(ctx context.Context, sql string) (Table, error)
	// PutJudgement upserts the judge's scores of one trial (the latest write
	// of a (sweep, trial) wins; JudgedAt is set to the time of the write). It
	// refuses scores outside 1..5 and unknown recommendations.
	PutJudgement(ctx context.Context, j record.Judgement) error
	// Judgements returns a sweep's judgements, one per trial, ordered by
	// trial_id.
	Judgements(ctx context.Context, sweepID string) ([]record.Judgement, error)
	// CachedJudgement returns the judge output cached under key; found is
	// false when there is none.
	CachedJudgement(ctx context.Context, key record.JudgeCacheKey) (output string, found bool, err error)
	// PutCachedJudgement caches a validated judge output under key.
	PutCachedJudgement(ctx context.Context, key record.JudgeCacheKey, output string) error
	// EnqueueReview puts a trial the judge could not score in the review
	// queue (the latest write of a (sweep, trial) wins; QueuedAt is set to
	// the time of the write).
	EnqueueReview(ctx context.Context, item record.ReviewItem) error
	// ReviewQueue returns a sweep's open review items, one per trial, ordered
	// by trial_id. An item is closed by a judgement of its trial written
	// after it was queued (a later judge run that succeeded).
	ReviewQueue(ctx context.Context, sweepID string) ([]record.ReviewItem, error)
	// PutReview appends one change to a trial's human verdicts (reviews
	// table, append-only; ReviewedAt is set to the time of the write). It
	// refuses a review without a reviewer, a target or a known verdict.
	PutReview(ctx context.Context, r record.Review) error
	// HumanReviews returns the human verdicts in force in a sweep: per
	// (trial, target) the latest change, withdrawn ones left out, ordered
	// by (trial_id, target).
	HumanReviews(ctx context.Context, sweepID string) ([]record.Review, error)
	// ReviewHistory returns every change to one trial's human verdicts,
	// oldest first.
	ReviewHistory(ctx context.Context, trialID string) ([]record.Review, error)
	// ReviewReads are the review UI's reads (reviewreads.go).
	ReviewReads
	// Usage returns what the recent trials sel selects consumed (model
	// calls, tokens, recorded cost), newest first.
	Usage(ctx context.Context, sel record.UsageSelect) ([]record.Usage, error)
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
	// Limits bound every statement of a ReadOnly store (zero fields:
	// DefaultLimits). They are set before readonly=1, so no statement can
	// change them.
	Limits Limits
	// DoorAtServer: the server is a store served by the process that holds
	// it (package storage/served), which runs the read-only door itself;
	// Query sends the statement as given and reads the door's verdict from
	// the server's exception code (DoorCode). Set with ReadOnly, by the
	// function that finds a served store (the server refuses the door's own
	// EXPLAIN and system queries, as it refuses any client's).
	DoorAtServer bool
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
		opts := ServerOptions{
			ReadOnly: cfg.ReadOnly,
			// A write acknowledged by a Distributed table must be on its
			// shard, not queued on this node, before the activity that made
			// it completes.
			DistributedSync: cfg.Cluster.Enabled(),
		}
		if cfg.ReadOnly {
			opts.Settings = map[string]any{}
			for _, v := range cfg.Limits.readOnlySettings() {
				opts.Settings[v.Name] = v.Value
			}
		}
		t, dsnDB, err := openServer(ctx, cfg.DSN, opts)
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
		st.limits = cfg.Limits
		st.cluster = cfg.Cluster
		st.doorAtServer = cfg.DoorAtServer
		return st, nil
	}
	db := cfg.Database
	if db == "" {
		db = DefaultDatabase
	}
	if !identRe.MatchString(db) {
		return nil, fmt.Errorf("storage: invalid database name %q (letters, digits, underscore)", db)
	}
	var ro *readOnlySession
	if cfg.ReadOnly {
		ro = &readOnlySession{database: db, limits: cfg.Limits}
	}
	t, err := openCHDB(ctx, cfg.LibPath, cfg.DataDir, ro)
	if err != nil {
		return nil, err
	}
	st, err := newStore(t, db)
	if err != nil {
		_ = t.Close()
		return nil, err
	}
	st.readOnly = cfg.ReadOnly
	st.limits = cfg.Limits
	return st, nil
}

// CHDBLibPath resolves the libchdb.so to use when Config.LibPath is empty.
func CHDBLibPath() string { return chdb.LibPath("") }
