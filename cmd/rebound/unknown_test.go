package main

import (
	"path/filepath"
	"strings"
	"testing"

	"rebound/internal/devstack/devstacktest"
)

// Every command that takes a sweep or trial id exits 2 when storage (or
// Temporal) knows no such sweep or trial: the id is bad input, not a
// failure of the command.
func TestUnknownIDsExitTwo(t *testing.T) {
	srv := devstacktest.Temporal(t)
	t.Setenv("REBOUND_CHDB_LIB", devstacktest.ChDBLib(t))
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	t.Setenv("REBOUND_TEMPORAL_ADDRESS", "")
	t.Setenv("REBOUND_REDACTION_KEY", "cli-test-redaction-key-0123456789abcdef")
	data := filepath.Join(t.TempDir(), "data")
	gates, err := filepath.Abs("../../examples/gates/release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// An empty store (a data dir without one is refused before any id is
	// looked up: TestReadCommandsNeedAStore).
	if code, _, errOut := runCLI(t, "sql", "--write", "--data-dir", data, "SELECT 1"); code != exitOK {
		t.Fatalf("creating the store: exit %d\n%s", code, errOut)
	}
	const sweep = "no-such-sweep-20261130-000000-000000"
	const trial = "0123456789abcdef01234567"
	cluster := []string{"--temporal-address", srv.Address(), "--data-dir", data}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", sweep}, `no sweep "` + sweep + `" in storage`},
		{[]string{"report", sweep, "--output", "json"}, `no sweep "` + sweep + `" in storage`},
		{[]string{"trials", sweep, "--failing"}, `no sweep "` + sweep + `" in storage`},
		{[]string{"judge", "agreement", sweep}, `no sweep "` + sweep + `" in storage`},
		{[]string{"judge", "queue", sweep}, `no sweep "` + sweep + `" in storage`},
		{[]string{"review", "export", sweep}, `no sweep "` + sweep + `" in storage`},
		{[]string{"compare", "--baseline", "a", "--candidate", "b", sweep}, `no sweep "` + sweep + `" in storage`},
		{[]string{"compare", "--baseline", "a", "--candidate", "a", "--baseline-sweep", "previous", sweep}, `no sweep "` + sweep + `" in storage`},
		{[]string{"gate", "--baseline", "a", "--candidate", "b", "--thresholds", gates, sweep}, `no sweep "` + sweep + `" in storage`},
		{[]string{"regrade", sweep}, sweep},
		{append([]string{"sweep", "status", sweep}, cluster...), "sweep " + sweep + " is unknown to this Temporal"},
		{append([]string{"sweep", "cancel", sweep}, cluster...), `no sweep "` + sweep + `"`},
		{append([]string{"run", "--resume", sweep}, cluster...), "no sweep \"" + sweep + "\" in this store"},
		{[]string{"trial", "show", trial}, `no trial "` + trial + `" in storage`},
		{[]string{"replay", trial}, `no trial "` + trial + `" in storage`},
		{[]string{"trend", "no-such-schedule"}, `no completed run of schedule "no-such-schedule"`},
	} {
		args := tc.args
		if args[0] != "sweep" && args[0] != "run" {
			args = append(args, "--data-dir", data)
		}
		code, out, errOut := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q\nstdout: %s\nstderr: %s", tc.args, code, tc.want, out, errOut)
		}
	}
}
