package storage

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"rebound/storage/chdb"
)

// Engine is the embedded engine of a store this process opened for
// writing, without the door: a statement runs as given, with the session's
// full rights, and answers in the format asked. That is no more than the
// holding process can already do (a writable store's Query runs any text
// as given); what it adds is the engine's own output, and inserts whose
// rows are in a file. storage/served's tests serve it over ClickHouse's
// HTTP interface to run the server transport's whole schema, its batch
// inserts and every read it sends against the engine rebound ships; no
// program serves it (the worker and `rebound run` serve a Door).
type Engine struct {
	st  *store
	raw rawQuerier
}

// EngineOf returns the engine of st, an embedded store this process opened
// for writing (ErrNotServable otherwise).
func EngineOf(st Store) (*Engine, error) {
	s, ok := st.(*store)
	if !ok {
		return nil, ErrNotServable
	}
	raw, ok := s.t.(rawQuerier)
	if !ok || s.readOnly {
		return nil, ErrNotServable
	}
	return &Engine{st: s, raw: raw}, nil
}

// Database is the store's database.
func (e *Engine) Database() string { return e.st.db }

// settingNameRe is a setting's name; its value is passed as a string
// literal (the engine converts it to the setting's type).
var settingNameRe = regexp.MustCompile(`^[a-z][a-z0-9_]{0,127}$`)

// settingsClause is " SETTINGS a = 'x', b = 'y'" (sorted by name), or ""
// for none.
func settingsClause(settings map[string]string) (string, error) {
	if len(settings) == 0 {
		return "", nil
	}
	names := make([]string, 0, len(settings))
	for k := range settings {
		if !settingNameRe.MatchString(k) {
			return "", fmt.Errorf("%w: setting %q is not a setting's name", ErrStatement, clipName(k))
		}
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + " = " + quoteString(settings[k])
	}
	return " SETTINGS " + strings.Join(parts, ", "), nil
}

// Run runs exactly one statement (the engine's parser decides) with its
// {name:Type} parameters bound. A trailing FORMAT clause names the output
// format, else format does (empty: TabSeparated); the format the engine
// wrote is returned. Settings apply to a query (SELECT, WITH, DESCRIBE) as
// its SETTINGS clause, the way a server applies a request's settings; any
// other statement (DDL) runs as given, and takes only the settings that do
// not concern it (passOverSettings). A statement
// that does not parse as one is ErrStatement; the engine's own errors keep
// their codes.
func (e *Engine) Run(ctx context.Context, sql, format string, params, settings map[string]string) ([]byte, chdb.ResultStats, string, error) {
	canonical, err := e.st.statement(ctx, sql)
	if err != nil {
		return nil, chdb.ResultStats{}, "", elideErr(err, sql)
	}
	if format == "" {
		format = "TabSeparated"
	}
	body := canonical
	if m := formatClauseRe.FindStringSubmatch(canonical); m != nil {
		body, format = m[1], m[2]
	}
	run := sql
	if len(settings) > 0 {
		if strings.HasPrefix(body, "SELECT ") || strings.HasPrefix(body, "WITH ") || strings.HasPrefix(body, "DESCRIBE ") {
			set, err := settingsClause(settings)
			if err != nil {
				return nil, chdb.ResultStats{}, "", err
			}
			run = body + set
		} else {
			for k := range settings {
				if !passOverSettings[k] {
					return nil, chdb.ResultStats{}, "", fmt.Errorf("%w: setting %s on a statement that is neither a query nor an insert", ErrStatement, clipName(k))
				}
			}
		}
	}
	out, stats, err := e.raw.raw(ctx, run, format, params)
	if err != nil {
		return nil, stats, "", elideErr(fmt.Errorf("storage: engine: %w", err), sql)
	}
	return out, stats, format, nil
}

// passOverSettings are the settings a statement other than a query or an
// insert runs without: a client's deadline (DDL here takes milliseconds)
// and how an insert is buffered (clickhouse-go sends an insert's settings
// with the DESCRIBE TABLE it asks first).
var passOverSettings = map[string]bool{"max_execution_time": true, "async_insert": true, "wait_for_async_insert": true}

// insertFormatRe is the canonical form of an INSERT whose rows follow in
// a format: "INSERT INTO t (a, b) FORMAT Native", the statement of a
// ClickHouse client's batch (the rows are the request's body).
var insertFormatRe = regexp.MustCompile(`^(INSERT INTO .+?) FORMAT ([A-Za-z][A-Za-z0-9]*)$`)

// ErrNotInsert is matched (errors.Is) by InsertFrom's error for a statement
// that is not an INSERT naming the format of its rows.
var ErrNotInsert = errors.New("storage: not an INSERT ... FORMAT statement")

// InsertFrom runs insert, an "INSERT INTO t (cols) FORMAT F" whose rows are
// the file at path in format F, as the engine's own client does: the
// statement gains FROM INFILE 'path' and the settings, so the engine reads
// and checks the rows in the format the statement names; nothing here
// decodes them.
func (e *Engine) InsertFrom(ctx context.Context, insert, path string, settings map[string]string) (chdb.ResultStats, error) {
	canonical, err := e.st.statement(ctx, insert)
	if err != nil {
		return chdb.ResultStats{}, elideErr(err, insert)
	}
	m := insertFormatRe.FindStringSubmatch(canonical)
	if m == nil || strings.Contains(m[1], " SETTINGS ") || strings.Contains(m[1], " FROM INFILE ") || strings.Contains(m[1], " SELECT ") || strings.Contains(m[1], " VALUES") {
		return chdb.ResultStats{}, fmt.Errorf("%w: %s", ErrNotInsert, clipName(canonical))
	}
	set, err := settingsClause(settings)
	if err != nil {
		return chdb.ResultStats{}, err
	}
	q := m[1] + " FROM INFILE " + quoteString(path) + set + " FORMAT " + m[2]
	_, stats, err := e.raw.raw(ctx, q, "TabSeparated", nil)
	if err != nil {
		return stats, elideErr(fmt.Errorf("storage: engine: %w", err), insert)
	}
	return stats, nil
}
