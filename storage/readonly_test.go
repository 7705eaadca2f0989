package storage

import (
	"errors"
	"fmt"
	"testing"

	"rebound/storage/chdb"
)

// The engine's READONLY refusal is recognized from either transport, and
// nothing else is taken for one.
func TestIsReadOnlyRefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"embedded", fmt.Errorf("query: %w", &chdb.QueryError{Code: 164, Message: "Cannot execute query in readonly mode"}), true},
		{"server", fmt.Errorf("query: %w", &EngineError{Code: 164, Err: errors.New("readonly")}), true},
		{"other embedded code", &chdb.QueryError{Code: 60, Message: "Unknown table"}, false},
		{"other server code", &EngineError{Code: 62, Err: errors.New("Syntax error")}, false},
		{"plain", errors.New("readonly"), false},
		{"nil", nil, false},
	} {
		if got := IsReadOnlyRefusal(tc.err); got != tc.want {
			t.Errorf("%s: IsReadOnlyRefusal = %t, want %t", tc.name, got, tc.want)
		}
	}
}
