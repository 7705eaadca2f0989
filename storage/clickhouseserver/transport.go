// Package clickhouseserver is rebound's ClickHouse server transport: the
// shared SQL of package storage, sent over the Native protocol with
// clickhouse-go. It registers itself with storage in its init, the way a
// database/sql driver does; import it for that side effect in every program
// that may open a server DSN (clickhouse://… or tcp://…):
//
//	import _ "rebound/storage/clickhouseserver"
//
// Without it, storage.Open refuses a DSN (storage.ErrNoServerTransport) and
// the program does not link the driver.
package clickhouseserver

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"rebound/storage"
	"rebound/storage/chdb"
)

func init() { storage.RegisterServer(open) }

// conn is the part of clickhouse-go's driver.Conn the transport uses (an
// interface so tests can record what is sent).
type conn interface {
	Exec(ctx context.Context, query string, args ...any) error
	Select(ctx context.Context, dest any, query string, args ...any) error
	Query(ctx context.Context, query string, args ...any) (driver.Rows, error)
	PrepareBatch(ctx context.Context, query string, opts ...driver.PrepareBatchOption) (driver.Batch, error)
	Ping(ctx context.Context) error
	Close() error
}

// dial opens a connection pool with opts (it does not connect yet); tests
// replace it with a recording fake.
var dial = func(opts *clickhouse.Options) (conn, error) { return clickhouse.Open(opts) }

// transport runs the shared SQL on a ClickHouse server over the Native
// protocol. Reads are scanned with ScanStruct (via Select) into the same row
// structs the embedded transport decodes from JSON; inserts are batches.
//
// No ClickHouse server recent enough runs here (Debian's is 18.16), so it
// meets the engine rebound ships instead: storage/served's
// TestServerTransportOnTheEngine serves chDB over ClickHouse's HTTP
// interface with full rights (in its tests only) and runs every migration,
// batch insert and read of this transport against it, comparing the answers
// with the embedded transport's. This package's tests hold what it hands
// clickhouse-go, statement by statement, to testdata/server_sql.golden, and
// that test fails if a statement of the golden never reached the engine.
type transport struct {
	conn conn
	// distributedSync makes every insert wait until a Distributed table has
	// written the rows to their shards (a cluster schema).
	distributedSync bool
}

// open is the registered storage.ServerOpener: it connects with a DSN and
// returns the transport and the database named in the DSN path ("" if
// none). The connection itself uses the user's default database, since
// rebound's may not exist before Migrate; every statement names its
// database.
func open(ctx context.Context, dsn string, o storage.ServerOptions) (storage.Transport, string, error) {
	red := storage.RedactDSN(dsn)
	opts, db, err := parseDSN(dsn)
	if err != nil {
		return nil, "", err
	}
	if o.ReadOnly {
		readOnlySettings(opts, o.Settings)
		// The read-only door resolves unqualified names in rebound's
		// database (CTE names and rebound's tables), so that is the
		// connection's current database.
		if db != "" {
			opts.Auth.Database = db
		}
	}
	c, err := dial(opts)
	if err != nil {
		return nil, "", fmt.Errorf("storage: open ClickHouse %s: %w", red, err)
	}
	if err := c.Ping(ctx); err != nil {
		_ = c.Close()
		return nil, "", fmt.Errorf("storage: connect to ClickHouse %s: %w", red, engineError(err))
	}
	if err := checkVersion(ctx, c); err != nil {
		_ = c.Close()
		return nil, "", fmt.Errorf("storage: ClickHouse %s: %w", red, err)
	}
	return &transport{conn: c, distributedSync: o.DistributedSync}, db, nil
}

// MinServerVersion is the oldest ClickHouse server rebound runs on: the
// read-only SQL door asks the engine for a statement's canonical form with
// formatQuerySingleLine, which appeared in 23.10; everything else the
// schema and the queries use (DateTime64, query parameters, bloom_filter
// indexes, ADD COLUMN IF NOT EXISTS, -ForEach and -If combinators) is
// older. Tested on chDB 26.5, the engine rebound ships.
var MinServerVersion = [2]int{23, 10}

// checkVersion asks the server its version (SELECT version()) and refuses
// one older than MinServerVersion, naming both, rather than failing later
// on a type or function it does not know (Unknown data type family).
func checkVersion(ctx context.Context, c conn) error {
	var rows []struct {
		V string `ch:"v"`
	}
	if err := c.Select(ctx, &rows, "SELECT version() AS v"); err != nil {
		return fmt.Errorf("ask the server's version: %w", engineError(err))
	}
	if len(rows) != 1 {
		return errors.New("ask the server's version: no answer to SELECT version()")
	}
	major, minor, ok := parseVersion(rows[0].V)
	if !ok {
		return fmt.Errorf("the server answers version %q, which is not major.minor.patch", rows[0].V)
	}
	want := MinServerVersion
	if major < want[0] || (major == want[0] && minor < want[1]) {
		return fmt.Errorf("the server is ClickHouse %s; rebound needs %d.%d or newer (its read-only SQL door uses formatQuerySingleLine; see docs/configuration.md)", rows[0].V, want[0], want[1])
	}
	return nil
}

// parseVersion reads the major and minor numbers of "23.10.5.20".
func parseVersion(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(strings.TrimSpace(v), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	a, err1 := strconv.Atoi(parts[0])
	b, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return 0, 0, false
	}
	return a, b, true
}

// engineError wraps an error that carries a server exception in a
// storage.EngineError with its code (storage.IsReadOnlyRefusal reads it);
// the exception stays reachable with errors.As.
func engineError(err error) error {
	var ex *clickhouse.Exception
	if err == nil || !errors.As(err, &ex) {
		return err
	}
	return &storage.EngineError{Code: int(ex.Code), Err: err}
}

func (t *transport) Close() error { return t.conn.Close() }

// withParams binds {name:Type} parameters server-side. The server parses
// values in its Escaped format, exactly as chDB does, so both transports use
// the same encoding.
func withParams(ctx context.Context, params map[string]string) context.Context {
	if len(params) == 0 {
		return ctx
	}
	return clickhouse.Context(ctx, clickhouse.WithParameters(serverParams(params)))
}

func serverParams(params map[string]string) clickhouse.Parameters {
	p := make(clickhouse.Parameters, len(params))
	for k, v := range params {
		p[k] = chdb.EscapeParam(v)
	}
	return p
}

func (t *transport) Exec(ctx context.Context, q storage.Stmt) error {
	return engineError(t.conn.Exec(withParams(ctx, q.Params), q.SQL))
}

func (t *transport) Select(ctx context.Context, dest any, q storage.Stmt) error {
	return engineError(t.conn.Select(withParams(ctx, q.Params), dest, q.SQL))
}

func (t *transport) Query(ctx context.Context, sql string) (storage.Table, error) {
	tab, err := t.query(ctx, sql)
	return tab, engineError(err)
}

func (t *transport) query(ctx context.Context, sql string) (storage.Table, error) {
	rows, err := t.conn.Query(ctx, sql)
	if err != nil {
		return storage.Table{}, err
	}
	defer rows.Close()
	var tab storage.Table
	tab.Columns = rows.Columns()
	types := rows.ColumnTypes()
	for _, ct := range types {
		tab.Types = append(tab.Types, ct.DatabaseTypeName())
	}
	for rows.Next() {
		ptrs := make([]any, len(types))
		for i, ct := range types {
			ptrs[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(ptrs...); err != nil {
			return storage.Table{}, err
		}
		row := make([]any, len(ptrs))
		for i, p := range ptrs {
			row[i] = reflect.ValueOf(p).Elem().Interface()
		}
		tab.Rows = append(tab.Rows, row)
	}
	return tab, rows.Err()
}

// asyncInsertBelow: writes smaller than this many rows (a trial, a shard)
// go through the server's asynchronous insert buffer, so many workers
// writing small batches do not create a part each. wait_for_async_insert=1
// keeps the contract: the call returns once the rows are stored.
const asyncInsertBelow = 10_000

// insertSettings are the query settings of an insert of n rows: small
// batches go through the server's async-insert buffer (waited for), and on a
// cluster the Distributed table forwards the rows before answering
// (insert_distributed_sync; ClickHouse 23.x+ also calls it
// distributed_foreground_insert).
func (t *transport) insertSettings(n int) clickhouse.Settings {
	s := clickhouse.Settings{}
	if n < asyncInsertBelow {
		s["async_insert"] = 1
		s["wait_for_async_insert"] = 1
	}
	if t.distributedSync {
		s["insert_distributed_sync"] = 1
	}
	return s
}

func (t *transport) Insert(ctx context.Context, insertSQL string, cols []string, rows [][]any) error {
	return engineError(t.insert(ctx, insertSQL, cols, rows))
}

func (t *transport) insert(ctx context.Context, insertSQL string, cols []string, rows [][]any) error {
	if settings := t.insertSettings(len(rows)); len(settings) > 0 {
		ctx = clickhouse.Context(ctx, clickhouse.WithSettings(settings))
	}
	batch, err := t.conn.PrepareBatch(ctx, insertSQL)
	if err != nil {
		return err
	}
	// Batches hold a pooled connection until sent or released.
	defer func() { _ = batch.Close() }()
	for _, r := range rows {
		if len(r) != len(cols) {
			return fmt.Errorf("storage: insert: %d values for %d columns", len(r), len(cols))
		}
		if err := batch.Append(r...); err != nil {
			return err
		}
	}
	return batch.Send()
}
