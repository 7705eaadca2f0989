package storage

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"rebound/storage/chdb"
)

// serverConn is the part of clickhouse-go's driver.Conn the server transport
// uses (an interface so tests can record what is sent).
type serverConn interface {
	Exec(ctx context.Context, query string, args ...any) error
	Select(ctx context.Context, dest any, query string, args ...any) error
	Query(ctx context.Context, query string, args ...any) (driver.Rows, error)
	PrepareBatch(ctx context.Context, query string, opts ...driver.PrepareBatchOption) (driver.Batch, error)
	Ping(ctx context.Context) error
	Close() error
}

// serverTransport runs the shared SQL on a ClickHouse server over the Native
// protocol. Reads are scanned with ScanStruct (via Select) into the same row
// structs the embedded transport decodes from JSON; inserts are batches.
//
// It is not integration-tested here: the machine has no ClickHouse server
// recent enough for clickhouse-go v2 (Debian's is 18.16). The tests check
// that it sends exactly the shared statements (server_test.go).
type serverTransport struct {
	conn serverConn
	dsn  string // redacted, for messages
	// distributedSync makes every insert wait until a Distributed table has
	// written the rows to their shards (a cluster schema).
	distributedSync bool
}

// openServer connects with a DSN and returns the transport and the database
// named in the DSN path ("" if none). The connection itself uses the user's
// default database, since rebound's may not exist before Migrate; every
// statement names its database.
func openServer(ctx context.Context, dsn string, readOnly bool) (*serverTransport, string, error) {
	red := RedactDSN(dsn)
	opts, db, err := parseServerDSN(dsn)
	if err != nil {
		return nil, "", err
	}
	if readOnly {
		readOnlySettings(opts)
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, "", fmt.Errorf("storage: open ClickHouse %s: %w", red, err)
	}
	if err := conn.Ping(ctx); err != nil {
		_ = conn.Close()
		return nil, "", fmt.Errorf("storage: connect to ClickHouse %s: %w", red, err)
	}
	return &serverTransport{conn: conn, dsn: red}, db, nil
}

// parseServerDSN parses a Native-protocol DSN. It returns the options to
// connect with (database cleared: the connection uses the user's default)
// and the database named in the DSN, if any. Errors never contain the
// password.
func parseServerDSN(dsn string) (*clickhouse.Options, string, error) {
	red := RedactDSN(dsn)
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("storage: invalid ClickHouse DSN %s (URL-encode special characters in the user and password)", red)
	}
	switch u.Scheme {
	case "clickhouse", "tcp":
	default:
		return nil, "", fmt.Errorf("storage: ClickHouse DSN %s: scheme must be clickhouse:// (Native protocol, e.g. clickhouse://user:pass@host:9000/rebound)", red)
	}
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("storage: invalid ClickHouse DSN %s: %s", red, strings.ReplaceAll(err.Error(), dsn, red))
	}
	db := opts.Auth.Database
	opts.Auth.Database = ""
	if db != "" && !identRe.MatchString(db) {
		return nil, "", fmt.Errorf("storage: ClickHouse DSN %s: invalid database name %q", red, db)
	}
	return opts, db, nil
}

// readOnlySettings makes every query of the connection run with the
// server's readonly=1: clickhouse-go sends the setting with each query, and
// in readonly=1 the server refuses writes, DDL, any change of a setting
// (SETTINGS readonly=0 included) and table functions beyond read access.
func readOnlySettings(opts *clickhouse.Options) {
	if opts.Settings == nil {
		opts.Settings = clickhouse.Settings{}
	}
	opts.Settings["readonly"] = 1
}

func (t *serverTransport) name() string { return "server" }

func (t *serverTransport) close() error { return t.conn.Close() }

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

func (t *serverTransport) exec(ctx context.Context, q stmt) error {
	return t.conn.Exec(withParams(ctx, q.Params), q.SQL)
}

func (t *serverTransport) selectRows(ctx context.Context, dest any, q stmt) error {
	return t.conn.Select(withParams(ctx, q.Params), dest, q.SQL)
}

func (t *serverTransport) query(ctx context.Context, sql string) (Table, error) {
	rows, err := t.conn.Query(ctx, sql)
	if err != nil {
		return Table{}, err
	}
	defer rows.Close()
	var tab Table
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
			return Table{}, err
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
func (t *serverTransport) insertSettings(n int) clickhouse.Settings {
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

func (t *serverTransport) insert(ctx context.Context, insertSQL string, cols []string, rows [][]any) error {
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
