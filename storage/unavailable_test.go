package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"rebound/storage/chdb"
)

func TestIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a full disk (engine)", &chdb.QueryError{Code: 243, Message: "NOT_ENOUGH_SPACE: cannot reserve 1.00 MiB"}, true},
		{"a full disk (server)", fmt.Errorf("insert: %w", &EngineError{Code: 243, Err: errors.New("code: 243")}), true},
		{"too many parts", &EngineError{Code: 252, Err: errors.New("code: 252")}, true},
		{"a full disk (os)", fmt.Errorf("write: %w", syscall.ENOSPC), true},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"a timeout", fmt.Errorf("query: %w", context.DeadlineExceeded), true},
		{"the engine's text", errors.New("code: 243, NOT_ENOUGH_SPACE: cannot reserve 1.00 MiB (injected)"), true},
		{"cancelled", fmt.Errorf("query: %w", context.Canceled), false},
		{"a syntax error", &chdb.QueryError{Code: 62, Message: "SYNTAX_ERROR"}, false},
		{"a type mismatch", &EngineError{Code: 53, Err: errors.New("code: 53, TYPE_MISMATCH")}, false},
		{"anything else", errors.New("storage: WriteTrials: bad row"), false},
	} {
		if got := IsUnavailable(tc.err); got != tc.want {
			t.Errorf("%s: IsUnavailable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
