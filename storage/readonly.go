package storage

import (
	"errors"
)

// ErrReadOnly is matched (errors.Is) by the error of a ReadOnly store's
// Query when the engine refused the statement because it writes: data,
// schema, settings, or a table function reaching outside the store.
var ErrReadOnly = errors.New("storage: refused by the read-only session")

// ReadOnlyCode is the engine's READONLY error code (the same on a server
// and in chDB).
const ReadOnlyCode = 164

// EngineError is an error the engine reported, with its numeric code
// (ClickHouse's error codes). A registered Transport returns the engine's
// errors wrapped in one, so the store tells a refusal from a failure
// without knowing the driver's error types; Err stays reachable
// (errors.As) for callers that do.
type EngineError struct {
	Code int
	Err  error
}

func (e *EngineError) Error() string { return e.Err.Error() }

func (e *EngineError) Unwrap() error { return e.Err }

// IsReadOnlyRefusal reports whether err is the engine's READONLY error,
// from the embedded engine or from a server.
func IsReadOnlyRefusal(err error) bool { return chdbOrEngineCode(err) == ReadOnlyCode }
