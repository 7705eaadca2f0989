package workflows_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"

	"rebound/workflows"
	"rebound/workflows/internal/histories"
)

// historiesDir holds the committed histories, one directory per recording.
const historiesDir = "testdata/histories"

// EnvReplay names extra history files to replay (globs, separated by ':'),
// for instance histories of running sweeps downloaded from a cluster with
// `temporal workflow show --workflow-id sweep/ID --output json > FILE`
// before a deploy.
const EnvReplay = "REBOUND_REPLAY_HISTORIES"

// TestReplayHistories replays every committed history against the current
// workflow code: a change to the sweep's sequence of commands that is not
// guarded by workflow.GetVersion fails here, before a deployed worker
// fails on a running sweep (see doc.go).
func TestReplayHistories(t *testing.T) {
	sets, err := histories.LoadSets(historiesDir)
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, set := range sets {
		for _, name := range set.CaseNames() {
			runs := set.Cases[name]
			t.Run(set.Name+"/"+name, func(t *testing.T) {
				cs, ok := histories.CaseByName(name)
				if !ok {
					t.Fatalf("%s: unknown case %q (histories.Cases lists the known ones)", set.Dir, name)
				}
				if err := cs.Check(histories.Histories(runs)); err != nil {
					t.Fatalf("%s: %v", set.Dir, err)
				}
				for _, r := range runs {
					if err := histories.CheckPortable(r.Raw, r.History); err != nil {
						t.Errorf("%s: %v", r.Path, err)
					}
					if err := histories.Replay(r.History); err != nil {
						t.Errorf("%s: %v", r.Path, err)
					}
				}
			})
			recorded[name] = true
		}
	}
	for _, cs := range histories.Cases {
		if !recorded[cs.Name] {
			t.Errorf("no committed history of case %s (%s): record a set with `make histories`", cs.Name, cs.Description)
		}
	}
}

// TestReplayExternalHistories replays the files named by
// REBOUND_REPLAY_HISTORIES; it is skipped when the variable is unset.
func TestReplayExternalHistories(t *testing.T) {
	patterns := os.Getenv(EnvReplay)
	if patterns == "" {
		t.Skipf("set %s=FILE[:FILE...] (globs allowed) to replay downloaded histories", EnvReplay)
	}
	var files []string
	for _, p := range filepath.SplitList(patterns) {
		m, err := filepath.Glob(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) == 0 {
			t.Errorf("%s: no file matches %q", EnvReplay, p)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		r, err := histories.ReadRun(f)
		if err != nil {
			t.Error(err)
			continue
		}
		// A cluster's history is encrypted with its deployment's key.
		key := []byte(histories.Key)
		if k := os.Getenv("REBOUND_REDACTION_KEY"); k != "" {
			key = []byte(k)
		}
		if err := histories.ReplayKeyed(key, workflows.Sweep, r.History); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The replay is only worth something if it catches a change of the
// command sequence. A sweep that schedules one more activity first fails to
// replay every committed history; the same change behind workflow.GetVersion
// replays them all. This is the convention of doc.go, proven.
func TestReplayCatchesUnguardedChange(t *testing.T) {
	sets, err := histories.LoadSets(historiesDir)
	if err != nil {
		t.Fatal(err)
	}
	extraStep := func(guarded bool) func(workflow.Context, workflows.SweepInput) (workflows.Progress, error) {
		return func(ctx workflow.Context, in workflows.SweepInput) (workflows.Progress, error) {
			run := true
			if guarded {
				run = workflow.GetVersion(ctx, "replay-test-extra-step", workflow.DefaultVersion, 1) == 1
			}
			if run {
				actx := workflow.WithActivityOptions(ctx, workflows.ActivityOptions())
				if err := workflow.ExecuteActivity(actx, "ExtraStep").Get(ctx, nil); err != nil {
					return workflows.Progress{}, err
				}
			}
			return workflows.Sweep(ctx, in)
		}
	}
	n := 0
	for _, set := range sets {
		for _, runs := range set.Cases {
			for _, r := range runs {
				n++
				err := histories.ReplayWith(extraStep(false), r.History)
				if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
					t.Errorf("%s: an unguarded extra activity replayed with %v, want a non-determinism error", r.Path, err)
				}
				if err := histories.ReplayWith(extraStep(true), r.History); err != nil {
					t.Errorf("%s: the change behind workflow.GetVersion does not replay: %v", r.Path, err)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no committed histories")
	}
}
