package storage

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
)

// Engine error codes of a store that cannot take a write now but will once
// an operator acts or the server recovers (ClickHouse's ErrorCodes.cpp).
var unavailableCodes = map[int]bool{
	159: true, // TIMEOUT_EXCEEDED
	202: true, // TOO_MANY_SIMULTANEOUS_QUERIES
	209: true, // SOCKET_TIMEOUT
	210: true, // NETWORK_ERROR
	242: true, // TABLE_IS_READ_ONLY (a replica lost its keeper)
	243: true, // NOT_ENOUGH_SPACE
	252: true, // TOO_MANY_PARTS
	999: true, // KEEPER_EXCEPTION
}

// IsUnavailable reports whether err says the store is full or unreachable
// (no space left, connection refused or reset, a timeout, too many parts, a
// read-only replica) rather than refusing what was asked: waiting and
// trying again will succeed once the disk is freed or the server is back.
// A cancelled context is not unavailability.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if unavailableCodes[chdbOrEngineCode(err)] {
		return true
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	// Errors that crossed a process boundary (the engine's text) keep
	// only their words.
	msg := err.Error()
	for _, s := range []string{"NOT_ENOUGH_SPACE", "No space left on device", "connection refused", "connection reset", "TOO_MANY_PARTS", "TABLE_IS_READ_ONLY", "SOCKET_TIMEOUT", "NETWORK_ERROR"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
