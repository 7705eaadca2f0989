package storage

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestElideQuotes(t *testing.T) {
	stmt := "SELECT " + strings.Repeat("x + ", 50_000) + "FROM"
	engine := fmt.Errorf("Syntax error: failed at position 8 (line 1, col 8): %s. Expected one of: ...", stmt[7:])
	err := elideErr(fmt.Errorf("%w: %w", ErrStatement, engine), stmt)
	if !errors.Is(err, ErrStatement) {
		t.Fatal("the elided error lost what it wrapped")
	}
	msg := err.Error()
	if len(msg) > 400 || !strings.Contains(msg, "more bytes of the statement]") || !strings.HasSuffix(msg, "Expected one of: ...") {
		t.Fatalf("elided message (%d bytes): %q", len(msg), msg)
	}
	// A short quotation, or a statement too short to matter, stays whole.
	short := errors.New("Unknown identifier 'arm' in SELECT arm FROM t")
	if got := elideErr(short, "SELECT arm FROM t"); got != short {
		t.Fatalf("short error changed: %v", got)
	}
	// Text the statement does not contain is kept, however long.
	other := errors.New(strings.Repeat("engine text ", 100))
	if got := elideErr(other, stmt); got != other {
		t.Fatal("an error that quotes nothing was changed")
	}
}
