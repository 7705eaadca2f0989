package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// The server transport is a package of its own, registered the way a
// database/sql driver is: storage holds the shared SQL and the embedded
// engine, and only a program that imports ServerPackage links the ClickHouse
// server driver. A program that only reads the embedded engine (a report, a
// gate, a test) builds without it.

// ServerPackage is the package that registers the ClickHouse server
// transport in its init. Import it for its side effect in every program that
// may open a server DSN:
//
//	import _ "rebound/storage/clickhouseserver"
const ServerPackage = "rebound/storage/clickhouseserver"

// Stmt is one SQL statement of the shared dialect with its ClickHouse query
// parameters ({name:Type} placeholders in SQL; raw values here, which the
// transport encodes and binds server-side). A transport sends SQL exactly as
// given.
type Stmt struct {
	SQL    string
	Params map[string]string
	// Threads, above 1, lets a read use up to that many threads where the
	// transport otherwise holds its engine to one: the embedded engine
	// (chdbSessionSettings says why) in a session that may change settings.
	// A server, and a read-only embedded session, use their own setting.
	// For reads whose per-thread hash tables are small (ReportTotals).
	Threads int
	// ReleaseMemory: once the statement has run, the embedded engine
	// returns the memory it freed to the system instead of keeping it for
	// its next statements, so that a command's peak resident set is its
	// big read's or what it does with the rows, not their sum. For the
	// one big read of a command; a server, and a read-only embedded
	// session, ignore it.
	ReleaseMemory bool
}

// Transport carries the shared SQL to one engine: what differs between a
// ClickHouse server and the embedded chDB. A Transport is safe for
// concurrent use. Errors the engine reports carry its code as an
// EngineError (errors.As), so the store can tell a read-only refusal from a
// failure.
type Transport interface {
	// Exec runs a statement without a result (DDL).
	Exec(ctx context.Context, q Stmt) error
	// Select runs a query and appends one element per row to dest, a
	// pointer to a slice of a row struct whose fields are tagged with their
	// column names (ch:"name" and json:"name") and have the columns' exact
	// Go types.
	Select(ctx context.Context, dest any, q Stmt) error
	// Insert writes rows in one batch: insertSQL is
	// "INSERT INTO <db>.<table> (<cols>)" and each row has one value per
	// column, of the types the row structs' values methods produce (string,
	// uint8, uint32, uint64, int64, float64, *uint8, []string, time.Time in
	// UTC). It returns once the rows are stored.
	Insert(ctx context.Context, insertSQL string, cols []string, rows [][]any) error
	// Query runs an ad-hoc statement and returns its columns and rows as
	// plain Go values (for people and dashboards, not for the row structs).
	Query(ctx context.Context, sql string) (Table, error)
	// Close releases the connection.
	Close() error
}

// ServerOptions are what a store asks of a server connection beyond its DSN.
type ServerOptions struct {
	// ReadOnly: every statement of the connection runs in the engine's
	// readonly=1, whatever the DSN says (Config.ReadOnly).
	ReadOnly bool
	// DistributedSync: an insert returns only once a Distributed table has
	// written the rows to their shards (set when Config.Cluster is named).
	DistributedSync bool
	// Settings are sent with every query of the connection, besides
	// readonly (a ReadOnly store's limits and introspection off; see the
	// settings profile in docs/security.md for what the server should
	// enforce on its side).
	Settings map[string]any
}

// ServerOpener connects to the ClickHouse server dsn names (and checks that
// it answers). It returns the transport and the database named in the DSN
// ("" if none); the connection itself must not depend on that database
// existing, since Migrate creates it. Errors never contain the DSN's
// credentials (see RedactDSN).
type ServerOpener func(ctx context.Context, dsn string, opts ServerOptions) (t Transport, database string, err error)

var server struct {
	mu   sync.Mutex
	open ServerOpener
}

// RegisterServer makes open the way Open reaches a server DSN. It is called
// once, from the init of ServerPackage; a second registration, or a nil
// opener, is a programming error and panics (as database/sql.Register does).
func RegisterServer(open ServerOpener) {
	server.mu.Lock()
	defer server.mu.Unlock()
	if open == nil {
		panic("storage: RegisterServer with a nil opener")
	}
	if server.open != nil {
		panic("storage: RegisterServer called twice")
	}
	server.open = open
}

func registeredServer() ServerOpener {
	server.mu.Lock()
	defer server.mu.Unlock()
	return server.open
}

// ErrNoServerTransport is matched (errors.Is) by Open's error for a server
// DSN in a program that does not link the server transport.
var ErrNoServerTransport = errors.New("storage: no ClickHouse server transport in this program")

// openServer opens the registered server transport for dsn and returns it
// with the database the DSN names.
func openServer(ctx context.Context, dsn string, opts ServerOptions) (Transport, string, error) {
	open := registeredServer()
	if open == nil {
		return nil, "", fmt.Errorf("%w: %s names a server; import _ %q in the program's main package to link it (the rebound binary does)",
			ErrNoServerTransport, RedactDSN(dsn), ServerPackage)
	}
	t, db, err := open(ctx, dsn, opts)
	if err != nil {
		return nil, "", err
	}
	if t == nil {
		return nil, "", fmt.Errorf("storage: the server transport returned no connection for %s", RedactDSN(dsn))
	}
	if db != "" {
		if err := ValidateDatabase(db); err != nil {
			_ = t.Close()
			return nil, "", fmt.Errorf("storage: ClickHouse DSN %s: %w", RedactDSN(dsn), err)
		}
	}
	return t, db, nil
}

// ValidateDatabase checks that name can be a database of rebound's
// (letters, digits, underscore; not starting with a digit): every statement
// names its database, so the name must be an identifier. A transport that
// reads a database from its DSN checks it before connecting.
func ValidateDatabase(name string) error {
	if !identRe.MatchString(name) {
		return fmt.Errorf("invalid database name %q (letters, digits, underscore)", name)
	}
	return nil
}
