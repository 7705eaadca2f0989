package storage

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"rebound/storage/chdb"
)

// The served door: the read-only SQL door of a ReadOnly store's Query, run
// for the clients of a store this process holds for writing (the worker,
// `rebound run`), which package storage/served answers over ClickHouse's
// HTTP interface. The embedded engine allows one session per process, and
// the holding process's session writes, so the door cannot lock the session
// in readonly=1 as `rebound sql` does. Each statement instead runs with
// readonly=1 and the limits as its own SETTINGS, which the engine applies
// to that statement's context (access rights included) before it runs;
// everything else is the door's: the engine's canonical form of exactly one
// statement, its EXPLAIN AST checked by package sqlpolicy, nothing but the
// canonical form run.

// DoorRequest is one statement a client of a served store sent.
type DoorRequest struct {
	// SQL is the statement, as the client sent it. A trailing FORMAT clause
	// names the output format.
	SQL string
	// Params are the values of the statement's {name:Type} parameters
	// (ClickHouse's param_name), raw: the engine parses each as its type.
	Params map[string]string
	// Format is the output format when the statement names none
	// (default_format); empty means TabSeparated, as on a server.
	Format string
	// Settings are output-format settings the client asked for
	// (output_format_*), applied to this statement only. Names and values
	// are checked (OutputSetting).
	Settings map[string]string
	// Limits are the client's limits for this statement (rebound sql's
	// --timeout, --max-memory, --max-rows, --max-result-bytes, sent as
	// max_execution_time, max_memory_usage, max_result_rows and
	// max_result_bytes): each nonzero field lowers the door's, none raises
	// it (LimitsFor).
	Limits Limits
}

// DoorResult is a statement's output, as the engine wrote it, with what
// it read.
type DoorResult struct {
	Body   []byte
	Format string
	Stats  chdb.ResultStats
}

// Door runs the statements of a served store's clients. It is safe for
// concurrent use (the engine runs one statement at a time).
type Door struct {
	st  *store
	raw rawQuerier
	lim Limits
}

// rawQuerier is a transport that returns the engine's output as it wrote it
// (the embedded engine's).
type rawQuerier interface {
	raw(ctx context.Context, sql, format string, params map[string]string) ([]byte, chdb.ResultStats, error)
}

// ErrNotServable is matched (errors.Is) by NewDoor's error for a store that
// is not an embedded one this process holds.
var ErrNotServable = errors.New("storage: only an embedded store (chDB) held by this process is served")

// NewDoor returns the served door of st, an embedded store this process
// opened for writing and migrated, with the limits of every statement (zero
// fields: DefaultLimits, as `rebound sql`). It makes rebound's database the
// session's current one, so unqualified names are rebound's tables, as in
// `rebound sql` (every statement of the store names its database).
func NewDoor(ctx context.Context, st Store, limits Limits) (*Door, error) {
	s, ok := st.(*store)
	if !ok {
		return nil, ErrNotServable
	}
	raw, ok := s.t.(rawQuerier)
	if !ok {
		return nil, ErrNotServable
	}
	if s.readOnly {
		return nil, fmt.Errorf("%w: the store is read-only (serve it from the process that writes it)", ErrNotServable)
	}
	if err := s.t.Exec(ctx, Stmt{SQL: "USE " + quoteIdent(s.db)}); err != nil {
		return nil, fmt.Errorf("storage: served door: use database %s: %w", s.db, err)
	}
	return &Door{st: s, raw: raw, lim: limits.withDefaults()}, nil
}

// Limits are the limits of every statement of the door.
func (d *Door) Limits() Limits { return d.lim }

// LimitsFor are the limits req runs under: the door's, each lowered to the
// client's where the client asks for less.
func (d *Door) LimitsFor(req DoorRequest) Limits { return d.lim.lowered(req.Limits) }

// lowered is l with each field lowered to c's where c's is set and less.
func (l Limits) lowered(c Limits) Limits {
	if c.MaxExecutionTime > 0 && c.MaxExecutionTime < l.MaxExecutionTime {
		l.MaxExecutionTime = c.MaxExecutionTime
	}
	if c.MaxMemoryBytes > 0 && c.MaxMemoryBytes < l.MaxMemoryBytes {
		l.MaxMemoryBytes = c.MaxMemoryBytes
	}
	if c.MaxResultRows > 0 && c.MaxResultRows < l.MaxResultRows {
		l.MaxResultRows = c.MaxResultRows
	}
	if c.MaxResultBytes > 0 && c.MaxResultBytes < l.MaxResultBytes {
		l.MaxResultBytes = c.MaxResultBytes
	}
	return l
}

// Database is the served database.
func (d *Door) Database() string { return d.st.db }

// outputFormats are the formats the door writes: the engine's text and
// binary output formats that need no schema file or setting beyond the
// output_format_* ones (Template, CapnProto, Protobuf, ... need files).
var outputFormats = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(`
		TabSeparated TabSeparatedRaw TabSeparatedWithNames TabSeparatedWithNamesAndTypes
		TabSeparatedRawWithNames TabSeparatedRawWithNamesAndTypes
		TSV TSVRaw TSVWithNames TSVWithNamesAndTypes TSVRawWithNames TSVRawWithNamesAndTypes
		CSV CSVWithNames CSVWithNamesAndTypes
		JSON JSONStrings JSONCompact JSONCompactStrings JSONColumns JSONCompactColumns
		JSONEachRow JSONStringsEachRow JSONCompactEachRow JSONCompactEachRowWithNames
		JSONCompactEachRowWithNamesAndTypes JSONCompactStringsEachRow
		JSONCompactStringsEachRowWithNames JSONCompactStringsEachRowWithNamesAndTypes
		JSONEachRowWithProgress JSONStringsEachRowWithProgress NDJSON JSONLines JSONObjectEachRow
		Native RowBinary RowBinaryWithNames RowBinaryWithNamesAndTypes
		Values Vertical Pretty PrettyCompact PrettyCompactMonoBlock PrettyNoEscapes
		PrettySpace PrettyMonoBlock PrettySpaceNoEscapes Markdown XML
		Parquet Arrow ArrowStream ORC Avro Null`) {
		m[f] = true
	}
	return m
}()

// ErrFormat is matched (errors.Is) by the door's error for an output format
// it does not write.
var ErrFormat = errors.New("storage: an output format the served door does not write")

// formatClauseRe is a canonical statement's trailing FORMAT clause.
var formatClauseRe = regexp.MustCompile(`^(.+) FORMAT ([A-Za-z][A-Za-z0-9]*)$`)

// outputSettingRe names the settings a client may pass: how a format writes
// its output, nothing else.
var outputSettingRe = regexp.MustCompile(`^(output_format_[a-z0-9_]+|date_time_output_format)$`)

// settingValueRe is a setting value the door passes on (as a string
// literal): words, numbers, nothing to quote.
var settingValueRe = regexp.MustCompile(`^[A-Za-z0-9_.+-]{0,64}$`)

// OutputSetting reports whether a client may set name = value for its
// statement: an output_format_* setting (or date_time_output_format) with a
// plain value.
func OutputSetting(name, value string) bool {
	return outputSettingRe.MatchString(name) && settingValueRe.MatchString(value)
}

// serverOutputDefaults are a ClickHouse server's defaults for the settings
// the embedded session changes (chdbSessionSettings): a client of the
// served store reads what a server would write.
var serverOutputDefaults = []settingValue{
	{"output_format_json_quote_64bit_integers", int64(1)},
	{"output_format_json_quote_64bit_floats", int64(0)},
	{"output_format_json_quote_denormals", int64(0)},
}

// Run runs one statement of a client through the door. Its errors match
// what a ReadOnly store's Query returns (ErrStatement, ErrRefused,
// ErrReadOnly, ErrLimit), plus ErrFormat.
func (d *Door) Run(ctx context.Context, req DoorRequest) (DoorResult, error) {
	s := d.st
	sql := req.SQL
	if len(sql) > MaxStatementBytes {
		return DoorResult{}, fmt.Errorf("%w: the statement is %d bytes; at most %d are taken", ErrStatement, len(sql), MaxStatementBytes)
	}
	format := req.Format
	if format == "" {
		format = "TabSeparated"
	}
	canonical, err := s.statement(ctx, sql)
	if err != nil {
		return DoorResult{}, elideErr(err, sql)
	}
	// A FORMAT clause becomes the format the engine writes: the statement
	// the policy checks and the engine runs is the rest, as `rebound sql`
	// checks it.
	if m := formatClauseRe.FindStringSubmatch(canonical); m != nil {
		canonical, format = m[1], m[2]
	}
	if !outputFormats[format] {
		return DoorResult{}, fmt.Errorf("%w: %q (the door writes %s)", ErrFormat, clipName(format), "TabSeparated, CSV, JSON*, Native, RowBinary*, Values, Pretty*, Parquet, Arrow, ORC, Avro and their variants")
	}
	for k, v := range req.Settings {
		if !OutputSetting(k, v) {
			return DoorResult{}, fmt.Errorf("%w: setting %s (the door's settings and limits are fixed; a client may set output_format_* settings)", ErrRefused, clipName(k))
		}
	}
	if err := s.admitWith(ctx, canonical, req.Params); err != nil {
		return DoorResult{}, elideErr(err, sql)
	}
	lim := d.LimitsFor(req)
	out, stats, err := d.raw.raw(ctx, canonical+" SETTINGS "+settingsFor(lim, req.Settings), format, req.Params)
	if err != nil {
		return DoorResult{}, elideErr(runError(err), sql)
	}
	// The engine applies max_result_bytes to what it reads from tables; a
	// result computed without one passes it, so the door measures too.
	if uint64(len(out)) > lim.MaxResultBytes {
		return DoorResult{}, fmt.Errorf("%w: the result is %d bytes, more than max_result_bytes = %d", ErrLimit, len(out), lim.MaxResultBytes)
	}
	return DoorResult{Body: out, Format: format, Stats: stats}, nil
}

// settingsFor is the SETTINGS clause of every statement: a server's output
// defaults, the client's output settings, the statement's limits, and
// readonly=1 last.
func settingsFor(lim Limits, client map[string]string) string {
	var parts []string
	for _, v := range serverOutputDefaults {
		if _, set := client[v.Name]; !set {
			parts = append(parts, fmt.Sprintf("%s = %v", v.Name, v.Value))
		}
	}
	for k, v := range client {
		parts = append(parts, fmt.Sprintf("%s = '%s'", k, v))
	}
	for _, v := range lim.readOnlySettings() {
		parts = append(parts, strings.TrimPrefix(v.setStatement(), "SET "))
	}
	parts = append(parts, "readonly = 1")
	return strings.Join(parts, ", ")
}

func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// admitWith is admit for a statement with parameters: the engine's parse
// with the values bound (an Identifier parameter becomes the name it
// holds), so the policy checks what will run.
func (s *store) admitWith(ctx context.Context, canonical string, params map[string]string) error {
	if len(params) == 0 {
		return s.admit(ctx, canonical)
	}
	r, ok := s.t.(rawQuerier)
	if !ok {
		return ErrNotServable
	}
	out, _, err := r.raw(ctx, "EXPLAIN AST "+canonical, "TabSeparatedRaw", params)
	if err != nil {
		if IsReadOnlyRefusal(err) {
			return fmt.Errorf("%w: %w", ErrReadOnly, err)
		}
		return fmt.Errorf("%w: the engine could not describe the statement: %w", ErrRefused, err)
	}
	return s.check(ctx, canonical, string(out))
}

// The exception codes a served store answers the door's decisions with
// (ClickHouse's codes of the same meaning), and how a client store reads
// them back.
const (
	// CodeStatement: not exactly one statement (SYNTAX_ERROR).
	CodeStatement = 62
	// CodeRefused: the allowlist refused the statement (ACCESS_DENIED).
	CodeRefused = 497
	// CodeFormat: an output format the door does not write (UNKNOWN_FORMAT).
	CodeFormat = 73
	// codeLimitDefault: a limit the door measured itself
	// (TOO_MANY_ROWS_OR_BYTES); the engine's own limit errors keep their
	// codes.
	codeLimitDefault = codeTooManyRowsBytes
)

// DoorCode is the exception code a served store answers err with: the
// engine's code when it has one, else the code of the door's decision
// (0 when err is neither).
func DoorCode(err error) int {
	switch {
	case errors.Is(err, ErrReadOnly):
		return ReadOnlyCode
	case errors.Is(err, ErrRefused):
		return CodeRefused
	case errors.Is(err, ErrFormat):
		return CodeFormat
	case errors.Is(err, ErrLimit):
		if c := chdbOrEngineCode(err); c != 0 {
			return c
		}
		return codeLimitDefault
	case errors.Is(err, ErrStatement):
		return CodeStatement
	}
	return chdbOrEngineCode(err)
}

// queryServedDoor is Query on a store whose server runs the door: the
// statement goes as given, and the server's code says what the door
// decided.
func (s *store) queryServedDoor(ctx context.Context, sql string) (Table, error) {
	t, err := s.t.Query(ctx, sql)
	if err == nil {
		return s.countResult(t)
	}
	switch code := chdbOrEngineCode(err); {
	case code == ReadOnlyCode:
		err = fmt.Errorf("%w: %w", ErrReadOnly, err)
	case code == CodeRefused, code == CodeFormat:
		err = fmt.Errorf("%w: %w", ErrRefused, err)
	case code == CodeStatement:
		err = fmt.Errorf("%w: %w", ErrStatement, err)
	case isLimit(err):
		err = fmt.Errorf("%w: %w", ErrLimit, err)
	default:
		err = fmt.Errorf("storage: query: %w", err)
	}
	return Table{}, elideErr(err, sql)
}
