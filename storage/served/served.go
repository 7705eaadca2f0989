// Package served serves the store a process holds (the worker, or `rebound
// run` while it runs) to other processes over ClickHouse's own HTTP
// interface: the embedded engine allows one process per data dir, so the
// process that holds it answers for it. Read commands of the same data dir
// find it (Find) and read through the ClickHouse server transport
// (storage/clickhouseserver, over HTTP); Grafana's ClickHouse datasource,
// the official clients and curl read it as they read a server.
//
// What it answers, as a ClickHouse server does: GET and POST /?query=
// (the body of a POST is the statement, or its continuation), query
// parameters (param_name), default_format and a FORMAT clause (the formats
// storage.Door writes; Native framed for the client_protocol_version a
// client announces), the X-ClickHouse-* headers (Query-Id, Format,
// Timezone, Summary, Exception-Code), gzip when a client asks for it
// (enable_http_compression=1), and /ping.
//
// What it refuses: every statement is read through storage.Door, the
// read-only door of `rebound sql` with the same limits; writes stay inside
// the holding process. The one write it takes is a reviewer's verdict for
// `rebound ui`, at its own typed endpoint (reviews.go), when the holding
// process passes its store as Options.Reviews. A client authenticates as
// user "rebound" with the data dir's credential (localkey.Secret: kept in the user's key directory,
// mode 0600, never in the data dir), sent any of the ClickHouse ways: basic
// auth, X-ClickHouse-User/X-ClickHouse-Key, or user/password parameters.
// It listens on loopback only; a sealed agent (internal/sandbox) has a
// network namespace of its own, whose loopback is not this one.
//
// Where it listens is in the data dir's served.json (address and pid, no
// secret), written once it listens and removed when it stops; a file whose
// pid is gone is stale and ignored.
package served

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"rebound/internal/localkey"
	"rebound/storage"
)

// User is the user name clients of a served store authenticate as.
const User = "rebound"

// Options configure Serve.
type Options struct {
	// DataDir is the data dir whose store is served (where served.json is
	// written, and whose credential clients present).
	DataDir string
	// Addr is the loopback address to listen on; empty means 127.0.0.1
	// with a port the system picks. A host that is not a loopback address
	// is refused.
	Addr string
	// Log receives one record per failed request (nil: none).
	Log *slog.Logger
	// Reviews, when set, takes human verdicts at ReviewPath (reviews.go):
	// the one write the served store answers.
	Reviews Reviews
}

// Server is a store served over HTTP. Close stops it.
type Server struct {
	srv      *http.Server
	ln       net.Listener
	file     string
	done     chan struct{}
	endpoint Endpoint
}

// Serve serves door on a loopback port and writes the data dir's
// served.json. The credential is made the first time (localkey.Secret).
func Serve(door *storage.Door, o Options) (*Server, error) {
	addr, err := o.address()
	if err != nil {
		return nil, err
	}
	return listen(o.DataDir, addr, door.Database(), func(secret string) http.Handler {
		h := &handler{door: door, secret: secret, log: o.Log, timezone: serverTimezone(context.Background(), door)}
		if o.Reviews != nil {
			return withReviews(h, o.Reviews)
		}
		return h
	}, door.Limits().MaxExecutionTime)
}

// address is the loopback address to listen on, once the options are
// checked.
func (o Options) address() (string, error) {
	if o.DataDir == "" {
		return "", errors.New("served: a data dir is required")
	}
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	return addr, checkLoopback(addr)
}

// listen serves the handler newHandler makes with the data dir's
// credential on addr (loopback, checked by Options.address), and writes
// served.json. A statement runs at most maxExecution; the answer is written
// after it.
func listen(dataDir, addr, database string, newHandler func(secret string) http.Handler, maxExecution time.Duration) (*Server, error) {
	secret, err := localkey.Secret(dataDir)
	if err != nil {
		return nil, fmt.Errorf("served: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("served: listen on %s: %w", addr, err)
	}
	s := &Server{
		srv: &http.Server{
			Handler:           newHandler(secret),
			ReadHeaderTimeout: 10 * time.Second,
			WriteTimeout:      maxExecution + time.Minute,
			IdleTimeout:       2 * time.Minute,
		},
		ln:   ln,
		done: make(chan struct{}),
		endpoint: Endpoint{
			Address:  ln.Addr().String(),
			PID:      os.Getpid(),
			Database: database,
			User:     User,
		},
	}
	file, err := writeEndpoint(dataDir, s.endpoint)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s.file = file
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Endpoint is where the server listens.
func (s *Server) Endpoint() Endpoint { return s.endpoint }

// Close removes served.json, stops accepting, and waits (within ctx) for
// the statements being answered.
func (s *Server) Close(ctx context.Context) error {
	removeEndpoint(s.file, s.endpoint.PID)
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return err
}

// checkLoopback refuses an address whose host is not a loopback IP.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("served: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("served: address %q: the store is served on loopback only (127.0.0.1 or ::1)", addr)
	}
	return nil
}
