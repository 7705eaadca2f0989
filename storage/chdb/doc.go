// Package chdb is a small, lazy binding to libchdb (the ClickHouse engine as a
// shared library) written with purego, so no cgo toolchain is required and,
// above all, nothing is loaded until an embedded session is opened.
//
// Why not github.com/chdb-io/chdb-go: that module dlopens the library in an
// init() and panics when it is missing, which would crash every rebound binary
// that talks to a ClickHouse server instead. Here a missing library is an
// ordinary error (see LibraryError) returned by Open.
//
// The engine serves one data directory per process, so this package keeps a
// process-wide singleton session, reference-counted, and serializes every
// query through it. A statement whose context ends while it runs is stopped
// with KILL QUERY from a second connection on the same directory, which
// the session opens at the first such stop and uses for nothing else
// (Conn.Query says why not the streaming API).
//
// Signal handlers: when a connection is opened, libchdb either installs its
// own handlers for deadly signals (SIGSEGV, SIGBUS, ...) or, when asked not
// to (chdb_set_signal_handlers_enabled(0)), resets them to SIG_DFL. Both take
// them away from the Go runtime, which turns nil-pointer dereferences into
// recoverable panics through its SIGSEGV handler. Open therefore opts out of
// chDB's handlers and snapshots the process's signal dispositions around
// every call that changes them, putting back the ones Go relies on (see
// signals_linux.go). Embedded use is supported on Linux amd64/arm64.
package chdb
