package runner

import (
	"strings"
	"testing"
	"time"
)

// The sweep id is the workflow id, stored by Temporal in the clear: a
// secret in a plan's name does not reach it.
func TestSweepIDCarriesNoSecret(t *testing.T) {
	id := NewSweepID("nightly npm_abcdefghijklmnopqrstuvwxyz0123456789", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	if strings.Contains(id, "abcdefghijklmnopqrstuvwxyz0123456789") || !strings.HasPrefix(id, "nightly-redacted-20261130-120000-") {
		t.Fatalf("sweep id %q", id)
	}
}
