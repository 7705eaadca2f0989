package storage

import (
	"errors"

	"github.com/ClickHouse/clickhouse-go/v2"

	"rebound/storage/chdb"
)

// ErrReadOnly is matched (errors.Is) by the error of a ReadOnly store's
// Query when the engine refused the statement because it writes: data,
// schema, settings, or a table function reaching outside the store.
var ErrReadOnly = errors.New("storage: refused by the read-only session")

// readOnlyCode is the engine's READONLY error code.
const readOnlyCode = 164

// IsReadOnlyRefusal reports whether err is the engine's READONLY error,
// from the embedded engine or from a server.
func IsReadOnlyRefusal(err error) bool {
	var qe *chdb.QueryError
	if errors.As(err, &qe) && qe.Code == readOnlyCode {
		return true
	}
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && ex.Code == readOnlyCode
}
