package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"rebound/storage/chdb"
	"rebound/storage/sqlpolicy"
)

// The SQL door: Query on a ReadOnly store, the way people (rebound sql) and
// programs read the store with SQL of their own. Three layers, each enough
// on its own for what it covers:
//   - the allowlist (package sqlpolicy), decided on the engine's own parse:
//     one SELECT, DESCRIBE or SHOW of rebound's tables, allowlisted
//     functions, no SETTINGS clause anywhere;
//   - the engine's readonly=1 mode with introspection off, for the whole
//     session (chDB) or connection (server);
//   - limits on time, memory and result size (Limits), set before readonly
//     so no statement can change them.

// ErrStatement is matched (errors.Is) by Query's error for text that is
// not exactly one statement, or that writes its result to a file.
var ErrStatement = errors.New("storage: not a single statement without INTO OUTFILE")

// ErrRefused is matched (errors.Is) by the error of a ReadOnly store's
// Query for a statement the door's allowlist does not accept; the error
// also holds a *sqlpolicy.Refusal naming the construct.
var ErrRefused = errors.New("storage: refused by the read-only SQL door")

// ErrLimit is matched (errors.Is) by Query's error when the statement ran
// into one of Limits (time, memory, result rows or bytes).
var ErrLimit = errors.New("storage: the statement ran into a limit")

// MaxStatementBytes bounds the text of one ad-hoc statement.
const MaxStatementBytes = 1 << 20

// Limits bound every statement of a ReadOnly store. Zero fields take the
// defaults (DefaultLimits).
type Limits struct {
	MaxExecutionTime time.Duration // max_execution_time
	MaxMemoryBytes   uint64        // max_memory_usage
	MaxResultRows    uint64        // max_result_rows
	MaxResultBytes   uint64        // max_result_bytes
}

// DefaultLimits are the limits of a ReadOnly store unless Config.Limits
// says otherwise.
var DefaultLimits = Limits{
	MaxExecutionTime: 60 * time.Second,
	MaxMemoryBytes:   4 << 30,
	MaxResultRows:    1_000_000,
	MaxResultBytes:   256 << 20,
}

func (l Limits) withDefaults() Limits {
	if l.MaxExecutionTime <= 0 {
		l.MaxExecutionTime = DefaultLimits.MaxExecutionTime
	}
	if l.MaxMemoryBytes == 0 {
		l.MaxMemoryBytes = DefaultLimits.MaxMemoryBytes
	}
	if l.MaxResultRows == 0 {
		l.MaxResultRows = DefaultLimits.MaxResultRows
	}
	if l.MaxResultBytes == 0 {
		l.MaxResultBytes = DefaultLimits.MaxResultBytes
	}
	return l
}

// settingValue is one engine setting with its SQL literal.
type settingValue struct {
	Name  string
	Value any // int64, uint64 or string
}

// readOnlySettings are the settings a ReadOnly session or connection runs
// with, besides readonly=1 itself: the limits, throwing when they are hit,
// and no introspection functions.
func (l Limits) readOnlySettings() []settingValue {
	l = l.withDefaults()
	secs := int64((l.MaxExecutionTime + time.Second - 1) / time.Second)
	return []settingValue{
		{"allow_introspection_functions", int64(0)},
		{"allow_ddl", int64(0)},
		{"max_execution_time", secs},
		{"timeout_overflow_mode", "throw"},
		{"max_memory_usage", l.MaxMemoryBytes},
		{"max_result_rows", l.MaxResultRows},
		{"max_result_bytes", l.MaxResultBytes},
		{"result_overflow_mode", "throw"},
	}
}

// setStatement is "SET name = value".
func (v settingValue) setStatement() string {
	switch x := v.Value.(type) {
	case string:
		return fmt.Sprintf("SET %s = '%s'", v.Name, strings.ReplaceAll(x, "'", "\\'"))
	default:
		return fmt.Sprintf("SET %s = %v", v.Name, x)
	}
}

// The engine's error codes the door tells apart.
const (
	codeTimeoutExceeded  = 159
	codeTooManyRows      = 158
	codeTooManyBytes     = 307
	codeMemoryLimit      = 241
	codeTooManyRowsBytes = 396 // TOO_MANY_ROWS_OR_BYTES: max_result_rows/bytes
)

// chdbOrEngineCode is the engine's error code in err, from the embedded
// engine or a server; 0 when err carries none.
func chdbOrEngineCode(err error) int {
	var qe *chdb.QueryError
	if errors.As(err, &qe) {
		return qe.Code
	}
	var ee *EngineError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 0
}

func (s *store) Query(ctx context.Context, sql string) (Table, error) {
	if len(sql) > MaxStatementBytes {
		return Table{}, fmt.Errorf("%w: the statement is %d bytes; at most %d are taken", ErrStatement, len(sql), MaxStatementBytes)
	}
	if s.doorAtServer {
		return s.queryServedDoor(ctx, sql)
	}
	canonical, err := s.statement(ctx, sql)
	if err != nil {
		return Table{}, elideErr(err, sql)
	}
	if !s.readOnly {
		// A writable store runs the text as given: an INSERT's inline data
		// is not part of the canonical form.
		t, err := s.t.Query(ctx, sql)
		if err != nil {
			return Table{}, elideErr(fmt.Errorf("storage: query: %w", err), sql)
		}
		return t, nil
	}
	if err := s.admit(ctx, canonical); err != nil {
		return Table{}, elideErr(err, sql)
	}
	// What runs is exactly what the engine's parser checked and the policy
	// accepted: one statement, single line, comments gone.
	t, err := s.t.Query(ctx, canonical)
	if err != nil {
		return Table{}, elideErr(runError(err), sql)
	}
	return s.countResult(t)
}

// countResult holds a result to max_result_rows and max_result_bytes.
func (s *store) countResult(t Table) (Table, error) {
	// The engine applies max_result_rows to what it reads from tables; a
	// result computed without a table (SELECT arrayJoin(range(n))) passes
	// it, so the door counts too.
	lim := s.limits.withDefaults()
	if uint64(len(t.Rows)) > lim.MaxResultRows {
		return Table{}, fmt.Errorf("%w: the result has %d rows, more than max_result_rows = %d", ErrLimit, len(t.Rows), lim.MaxResultRows)
	}
	if n := tableBytes(t); n > lim.MaxResultBytes {
		return Table{}, fmt.Errorf("%w: the result holds about %d bytes, more than max_result_bytes = %d", ErrLimit, n, lim.MaxResultBytes)
	}
	return t, nil
}

// runError names what the engine's error on a statement the door let
// through means: a read-only refusal, a limit, or a failure.
func runError(err error) error {
	switch {
	case IsReadOnlyRefusal(err):
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	case isLimit(err):
		return fmt.Errorf("%w: %w", ErrLimit, err)
	}
	return fmt.Errorf("storage: query: %w", err)
}

// tableBytes estimates a result's size as the engine counts it: the bytes
// of its strings, 8 per other value.
func tableBytes(t Table) uint64 {
	var n uint64
	for _, row := range t.Rows {
		for _, v := range row {
			n += valueBytes(v)
		}
	}
	return n
}

func valueBytes(v any) uint64 {
	switch x := v.(type) {
	case string:
		return uint64(len(x))
	case []any:
		var n uint64
		for _, e := range x {
			n += valueBytes(e)
		}
		return n
	case map[string]any:
		var n uint64
		for k, e := range x {
			n += uint64(len(k)) + valueBytes(e)
		}
		return n
	}
	return 8
}

func isLimit(err error) bool {
	switch chdbOrEngineCode(err) {
	case codeTimeoutExceeded, codeTooManyRows, codeTooManyBytes, codeMemoryLimit, codeTooManyRowsBytes:
		return true
	}
	return false
}

// admit asks the engine for the syntax tree of the canonical statement and
// the policy for its verdict.
func (s *store) admit(ctx context.Context, canonical string) error {
	tab, err := s.t.Query(ctx, "EXPLAIN AST "+canonical)
	if err != nil {
		if IsReadOnlyRefusal(err) {
			return fmt.Errorf("%w: %w", ErrReadOnly, err)
		}
		return fmt.Errorf("%w: the engine could not describe the statement: %w", ErrRefused, err)
	}
	var ast strings.Builder
	for _, row := range tab.Rows {
		if len(row) != 1 {
			return fmt.Errorf("%w: unexpected EXPLAIN AST result", ErrRefused)
		}
		line, ok := row[0].(string)
		if !ok {
			return fmt.Errorf("%w: unexpected EXPLAIN AST result", ErrRefused)
		}
		ast.WriteString(line)
		ast.WriteByte('\n')
	}
	return s.check(ctx, canonical, ast.String())
}

// check gives the policy's verdict on a canonical statement and its
// EXPLAIN AST.
func (s *store) check(ctx context.Context, canonical, ast string) error {
	p, err := s.policy(ctx)
	if err != nil {
		return err
	}
	if err := p.Check(canonical, ast); err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return nil
}

// policy is the door's view of the engine: rebound's database, the other
// databases, and whether unqualified names resolve in rebound's.
func (s *store) policy(ctx context.Context) (sqlpolicy.Policy, error) {
	var rows []struct {
		Name    string `ch:"name" json:"name"`
		Current uint8  `ch:"current" json:"current"`
	}
	err := s.t.Select(ctx, &rows, Stmt{SQL: "SELECT name, toUInt8(name = currentDatabase()) AS current FROM system.databases"})
	if err != nil {
		return sqlpolicy.Policy{}, fmt.Errorf("storage: read-only door: list databases: %w", err)
	}
	p := sqlpolicy.Policy{Database: s.db}
	for _, r := range rows {
		p.Databases = append(p.Databases, r.Name)
		if r.Current == 1 && r.Name == s.db {
			p.Unqualified = true
		}
	}
	return p, nil
}

// statement asks the engine's own parser (formatQuerySingleLine, with the
// text passed as a bound parameter, never spliced into SQL) whether sql is
// exactly one statement, and returns its canonical form. The engine's parser
// refuses multi-statements; the canonical form names an INTO OUTFILE clause
// (which chDB would execute by writing a file on this host) in one way only.
func (s *store) statement(ctx context.Context, sql string) (string, error) {
	var rows []struct {
		Q string `ch:"q" json:"q"`
	}
	err := s.t.Select(ctx, &rows, Stmt{SQL: "SELECT formatQuerySingleLine({q:String}) AS q", Params: map[string]string{"q": sql}})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrStatement, err)
	}
	if len(rows) != 1 || strings.TrimSpace(rows[0].Q) == "" {
		return "", fmt.Errorf("%w: the engine found no statement", ErrStatement)
	}
	canonical := rows[0].Q
	if strings.Contains(canonical, " INTO OUTFILE ") {
		return "", fmt.Errorf("%w: INTO OUTFILE is not allowed (the result is printed; redirect it instead)", ErrStatement)
	}
	return canonical, nil
}
