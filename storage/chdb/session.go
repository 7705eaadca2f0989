package chdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// QueryError is an error reported by the engine for one query.
type QueryError struct {
	Code    int    // ClickHouse error code, 0 when the message carries none
	Message string // the engine's message, trimmed
}

func (e *QueryError) Error() string { return "chdb: " + e.Message }

var codeRe = regexp.MustCompile(`Code: (\d+)\.`)

func newQueryError(msg string) *QueryError {
	msg = strings.TrimSpace(msg)
	e := &QueryError{Message: msg}
	if m := codeRe.FindStringSubmatch(msg); m != nil {
		e.Code, _ = strconv.Atoi(m[1])
	}
	return e
}

// ErrClosed is returned by queries on a closed Conn.
var ErrClosed = errors.New("chdb: connection closed")

// session is the process-wide chDB connection.
type session struct {
	lib     *lib
	dataDir string
	connPtr unsafe.Pointer // chdb_connection * returned by chdb_connect
	conn    unsafe.Pointer // *connPtr: the chdb_connection passed to chdb_query
	sem     chan struct{}  // one slot: queries are serialized
	refs    int
	openDur time.Duration
	// readOnly is set by MakeReadOnly: the engine's readonly=1 holds for
	// the rest of the session and no query can lift it.
	readOnly atomic.Bool
	// ctlPtr/ctl: a second connection on the same directory, opened at the
	// first statement whose context ends while it runs, that only stops
	// statements (see callCancellable); used only by the slot's holder.
	ctlPtr unsafe.Pointer
	ctl    unsafe.Pointer
	// kills counts KILL QUERY statements sent (tests).
	kills atomic.Int64
}

var (
	sessMu  sync.Mutex
	current *session
)

// Conn is one user's handle on the process-wide session. It is safe for
// concurrent use; queries are serialized.
type Conn struct {
	s         *session
	closeOnce sync.Once
	closed    atomic.Bool
}

// Stats describes how long the library took to come up.
type Stats struct {
	LibPath  string
	LoadTime time.Duration // dlopen + symbol lookup (first Open in the process)
	OpenTime time.Duration // chdb_connect
}

// Open returns a handle on the process's chDB session, loading the library
// and connecting on first use. dataDir is the engine's --path; it is created
// if missing. Every Open must be paired with Close; the engine connection is
// closed with the last handle. Only one data directory can be open per
// process at a time: a second Open with another directory fails.
func Open(libPath, dataDir string) (*Conn, error) {
	if dataDir == "" {
		return nil, errors.New("chdb: a data directory is required")
	}
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("chdb: data dir %q: %w", dataDir, err)
	}
	sessMu.Lock()
	defer sessMu.Unlock()
	if current != nil {
		if current.dataDir != dir {
			return nil, fmt.Errorf("chdb: this process already has an embedded session on %s; only one chDB session per process is possible (requested %s)", current.dataDir, dir)
		}
		if current.readOnly.Load() {
			return nil, fmt.Errorf("chdb: this process's embedded session on %s is read-only (readonly=1 cannot be lifted); writes need another process", current.dataDir)
		}
		current.refs++
		return &Conn{s: current}, nil
	}
	l, err := loadLib(LibPath(libPath))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chdb: create data dir: %w", err)
	}
	if l.setSignalHandlersEnabled != nil {
		// Ask the engine not to install its own deadly-signal handlers. The
		// call also resets them to SIG_DFL, hence the guard.
		guardSignals(func() { l.setSignalHandlersEnabled(0) })
	}
	start := time.Now()
	connPtr, err := l.connectDir(dir)
	if err != nil {
		return nil, err
	}
	conn := *(*unsafe.Pointer)(connPtr)
	s := &session{
		lib:     l,
		dataDir: dir,
		connPtr: connPtr,
		conn:    conn,
		sem:     make(chan struct{}, 1),
		refs:    1,
		openDur: time.Since(start),
	}
	current = s
	return &Conn{s: s}, nil
}

// connectDir opens a connection on the engine with dir as its --path: the
// first one boots the engine, later ones (same directory) join it.
func (l *lib) connectDir(dir string) (unsafe.Pointer, error) {
	args := []string{"clickhouse", "--path=" + dir}
	cargs := make([][]byte, len(args))
	argv := make([]*byte, len(args)+1) // NULL-terminated like a real argv
	for i, a := range args {
		cargs[i] = append([]byte(a), 0)
		argv[i] = &cargs[i][0]
	}
	var connPtr unsafe.Pointer
	guardSignals(func() {
		connPtr = l.connect(int32(len(args)), unsafe.Pointer(&argv[0]))
	})
	runtime.KeepAlive(cargs)
	runtime.KeepAlive(argv)
	if connPtr == nil {
		return nil, fmt.Errorf("chdb: chdb_connect failed for data dir %s (is another process using it, or is it not writable?)", dir)
	}
	if *(*unsafe.Pointer)(connPtr) == nil {
		return nil, fmt.Errorf("chdb: chdb_connect returned an empty connection for data dir %s", dir)
	}
	return connPtr, nil
}

// MakeReadOnly puts the process's session in the engine's readonly=1 mode:
// from now on the engine refuses every statement that writes data or
// schema, changes a setting (so SETTINGS readonly=0 or SET readonly=0 fail),
// or uses a table function that needs more than read access (file, url,
// s3, remote, executable, mysql, ...). It cannot be undone: the session
// stays read-only until its last handle closes, and Open refuses new
// handles on it. Use it in a process that only reads (rebound sql).
func (c *Conn) MakeReadOnly(ctx context.Context) error {
	sessMu.Lock()
	refs := c.s.refs
	sessMu.Unlock()
	if refs > 1 {
		return fmt.Errorf("chdb: cannot make the session on %s read-only: %d other handles in this process use it for writing", c.s.dataDir, refs-1)
	}
	if _, err := c.Query(ctx, "SET readonly = 1", "TabSeparated"); err != nil {
		return fmt.Errorf("chdb: set readonly: %w", err)
	}
	out, err := c.Query(ctx, "SELECT getSetting('readonly')", "TabSeparated")
	if err != nil {
		return fmt.Errorf("chdb: check readonly: %w", err)
	}
	if strings.TrimSpace(string(out)) != "1" {
		return fmt.Errorf("chdb: readonly is %q after SET readonly = 1", strings.TrimSpace(string(out)))
	}
	c.s.readOnly.Store(true)
	return nil
}

// ReadOnly reports whether the session is in readonly mode (MakeReadOnly).
func (c *Conn) ReadOnly() bool { return c.s.readOnly.Load() }

// Stats reports load and connect times.
func (c *Conn) Stats() Stats {
	return Stats{LibPath: c.s.lib.path, LoadTime: c.s.lib.loadTime, OpenTime: c.s.openDur}
}

// DataDir is the engine's data directory.
func (c *Conn) DataDir() string { return c.s.dataDir }

// Close releases this handle; the last one closes the engine connection.
// The library itself stays mapped (unloading the engine is not safe), and a
// later Open reconnects.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		sessMu.Lock()
		defer sessMu.Unlock()
		s := c.s
		s.refs--
		if s.refs > 0 {
			return
		}
		// Last handle: wait for a query still running on it, then close
		// the connection; later queries on stale handles get ErrClosed.
		s.sem <- struct{}{}
		guardSignals(func() {
			if s.ctlPtr != nil {
				s.lib.closeConn(s.ctlPtr) // not the last: the engine stays up
				s.ctlPtr, s.ctl = nil, nil
			}
			s.lib.closeConn(s.connPtr)
		})
		s.conn = nil
		<-s.sem
		if current == s {
			current = nil
		}
	})
	return nil
}

// Query runs one statement and returns its output in the given format
// (e.g. "JSONEachRow", "CSV"). ctx bounds the wait for the session and the
// statement itself: when it ends while the statement runs, the engine stops
// the statement (KILL QUERY, see callCancellable) and Query returns an
// error matching ctx.Err() (errors.Is) as soon as the engine has let go,
// typically within 200 ms; the session then serves the next statement. A
// statement that completes before the stop takes effect returns its result.
func (c *Conn) Query(ctx context.Context, query, format string) ([]byte, error) {
	out, _, err := c.run(ctx, query, format, nil)
	return out, err
}

// ResultStats are what one query read and how long it took, as the engine
// counts them (zero when the library does not report them).
type ResultStats struct {
	RowsRead  uint64
	BytesRead uint64
	Elapsed   time.Duration
}

// QueryStats is QueryWithParams (params may be nil) that also returns what
// the query read.
func (c *Conn) QueryStats(ctx context.Context, query, format string, params map[string]string) ([]byte, ResultStats, error) {
	if len(params) > 0 && c.s.lib.queryWithParams == nil {
		return nil, ResultStats{}, errors.New("chdb: this libchdb has no chdb_query_with_params (needs chDB >= 26.5)")
	}
	return c.run(ctx, query, format, params)
}

// QueryWithParams runs a statement with server-side parameters: {name:Type}
// placeholders in query, values in params. Values are parsed by the engine in
// its Escaped text format (backslash escapes, like TSV); EscapeParam encodes a
// raw string accordingly.
func (c *Conn) QueryWithParams(ctx context.Context, query, format string, params map[string]string) ([]byte, error) {
	if len(params) > 0 && c.s.lib.queryWithParams == nil {
		return nil, errors.New("chdb: this libchdb has no chdb_query_with_params (needs chDB >= 26.5)")
	}
	out, _, err := c.run(ctx, query, format, params)
	return out, err
}

// EscapeParam encodes s in ClickHouse's Escaped format, which is how query
// parameter values are parsed (by chDB and by a server alike).
func EscapeParam(s string) string {
	return paramEscaper.Replace(s)
}

var paramEscaper = strings.NewReplacer(
	`\`, `\\`,
	"\t", `\t`,
	"\n", `\n`,
	"\r", `\r`,
	"\x00", `\0`,
	"\b", `\b`,
	"\f", `\f`,
)

func (c *Conn) run(ctx context.Context, query, format string, params map[string]string) ([]byte, ResultStats, error) {
	if strings.IndexByte(query, 0) >= 0 {
		return nil, ResultStats{}, errors.New("chdb: query text contains a NUL byte")
	}
	if c.closed.Load() {
		return nil, ResultStats{}, ErrClosed
	}
	s := c.s
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ResultStats{}, ctx.Err()
	}
	defer func() { <-s.sem }()
	if s.conn == nil {
		return nil, ResultStats{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, ResultStats{}, err // the slot and the context were both ready
	}
	var res unsafe.Pointer
	var stopped bool
	var stopErr error
	if ctx.Done() == nil {
		res = s.call(query, format, params) // nothing can end it: no stop to arrange
	} else {
		res, stopped, stopErr = s.callCancellable(ctx, query, format, params)
	}
	if res == nil {
		return nil, ResultStats{}, errors.New("chdb: query returned no result (connection closed?)")
	}
	defer s.lib.destroyResult(res)
	if e := s.lib.resultError(res); e != nil {
		qe := newQueryError(cString(e))
		s.drain()
		switch {
		case stopped && qe.Code == codeQueryWasCancelled:
			return nil, ResultStats{}, fmt.Errorf("chdb: statement stopped because its context ended: %w (%w)", ctx.Err(), qe)
		case stopErr != nil:
			return nil, ResultStats{}, errors.Join(qe, fmt.Errorf("its context ended (%w) but it could not be stopped: %w", ctx.Err(), stopErr))
		}
		return nil, ResultStats{}, qe
	}
	st := s.lib.stats(res)
	n := s.lib.resultLength(res)
	if n == 0 {
		return nil, st, nil
	}
	buf := s.lib.resultBuffer(res)
	if buf == nil {
		return nil, st, nil
	}
	out := make([]byte, n)
	copy(out, unsafe.Slice((*byte)(buf), n))
	return out, st, nil
}

// call runs one statement on the session's connection and returns the
// engine's result (nil when it has none). The caller holds the slot.
func (s *session) call(query, format string, params map[string]string) unsafe.Pointer {
	if len(params) == 0 {
		return s.lib.query(s.conn, query, format)
	}
	names := make([][]byte, 0, len(params))
	values := make([][]byte, 0, len(params))
	for k, v := range params {
		names = append(names, append([]byte(k), 0))
		values = append(values, append([]byte(EscapeParam(v)), 0))
	}
	np := make([]*byte, len(names))
	vp := make([]*byte, len(values))
	for i := range names {
		np[i] = &names[i][0]
		vp[i] = &values[i][0]
	}
	res := s.lib.queryWithParams(s.conn, query, format, unsafe.Pointer(&np[0]), unsafe.Pointer(&vp[0]), uintptr(len(np)))
	runtime.KeepAlive(names)
	runtime.KeepAlive(values)
	runtime.KeepAlive(np)
	runtime.KeepAlive(vp)
	return res
}

// codeQueryWasCancelled is the engine's QUERY_WAS_CANCELLED, what a
// statement stopped by KILL QUERY fails with.
const codeQueryWasCancelled = 394

// killRetry is how often a stop is repeated while the statement has not
// returned: a KILL that ran before the engine registered the statement
// (its context ended as it started) finds nothing to stop.
const killRetry = 100 * time.Millisecond

// callCancellable is call for a context that can end: when it does, the
// running statement is stopped with KILL QUERY from the session's control
// connection, and the engine fails it with QUERY_WAS_CANCELLED within a
// fraction of a second (it checks for cancellation between blocks).
// stopped reports that the context ended while the statement ran.
//
// Why not the streaming API: libchdb 26.5's chdb_stream_cancel_query takes
// the same lock as chdb_stream_fetch_result, so it waits for the fetch in
// progress, and a statement that returns nothing until it ends (a count, an
// aggregate) is not stopped at all (measured: still blocked after 5
// minutes). A second connection on the same data directory is allowed and
// its KILL QUERY reaches the first one's statement (measured: failed with
// QUERY_WAS_CANCELLED 20-220 ms after the KILL).
//
// The KILL matches every statement but itself, which is exactly the one
// this call runs: statements are serialized by the session's slot, which
// the caller holds until the stop has finished, and the control connection
// runs nothing else.
func (s *session) callCancellable(ctx context.Context, query, format string, params map[string]string) (res unsafe.Pointer, stopped bool, stopErr error) {
	returned := make(chan struct{})
	killed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(killed)
		stopErr = s.stopRunning(returned)
	})
	res = s.call(query, format, params)
	close(returned)
	if !stop() {
		// The stop started: let it finish while the slot is still held,
		// so it cannot reach the next statement.
		<-killed
		stopped = true
	}
	return res, stopped, stopErr
}

// stopRunning sends KILL QUERY for the running statement until it returns.
func (s *session) stopRunning(returned <-chan struct{}) error {
	for {
		if err := s.kill(); err != nil {
			return err
		}
		select {
		case <-returned:
			return nil
		case <-time.After(killRetry):
		}
	}
}

// killStatement stops every statement of the engine but its own.
const killStatement = "KILL QUERY WHERE query_id != queryID() ASYNC FORMAT Null"

// kill runs killStatement on the control connection, opening it on first
// use (a second chdb_connect on the same directory takes well under a
// millisecond). Only a caller holding the slot reaches here, so the
// control connection is never used concurrently.
func (s *session) kill() error {
	if s.ctl == nil {
		ptr, err := s.lib.connectDir(s.dataDir)
		if err != nil {
			return fmt.Errorf("chdb: open the connection that stops statements: %w", err)
		}
		s.ctlPtr, s.ctl = ptr, *(*unsafe.Pointer)(ptr)
	}
	res := s.lib.query(s.ctl, killStatement, "TabSeparated")
	if res == nil {
		return errors.New("chdb: KILL QUERY returned no result")
	}
	defer s.lib.destroyResult(res)
	if e := s.lib.resultError(res); e != nil {
		return fmt.Errorf("chdb: KILL QUERY: %w", newQueryError(cString(e)))
	}
	s.kills.Add(1)
	return nil
}

// stats reads a result's counters, those the library has.
func (l *lib) stats(res unsafe.Pointer) ResultStats {
	var st ResultStats
	if l.resultRowsRead != nil {
		st.RowsRead = l.resultRowsRead(res)
	}
	if l.resultBytesRead != nil {
		st.BytesRead = l.resultBytesRead(res)
	}
	if l.resultElapsed != nil {
		st.Elapsed = time.Duration(l.resultElapsed(res) * float64(time.Second))
	}
	return st
}

// drain runs a query whose output is thrown away, after a query that
// failed. libchdb 26.5 keeps what the failed query's output format had
// written before the error (a JSONCompact header, rows) and prepends it to
// the next query's result: a TIMEOUT_EXCEEDED in one statement made the
// next one's JSON undecodable (storage's read-only attack test found it).
// The caller holds the session's slot.
func (s *session) drain() {
	res := s.lib.query(s.conn, "SELECT 1", "Null")
	if res != nil {
		s.lib.destroyResult(res)
	}
}

func cString(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}
