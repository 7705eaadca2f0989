package upstream

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"rebound/core/harness"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sandbox"
)

// servers finds the reference servers setup installs (.cache/upstreams),
// skipping (or failing under REBOUND_REQUIRE_INTEGRATION=1) without them.
func servers(t *testing.T) string {
	t.Helper()
	return devstacktest.ReferenceServers(t)
}

type effects struct{ commits []string }

func (e *effects) Commit(kind, intent, object string) {
	e.commits = append(e.commits, kind+" "+intent+" "+object)
}

func filesystemConfig(t *testing.T, unsealed bool) Config {
	dir := servers(t)
	return Config{
		Command:  []string{"node", filepath.Join(dir, "server-filesystem", "dist", "index.js"), TrialDirToken},
		Unsealed: unsealed,
		ReadOnly: []string{filepath.Dir(dir)},
		Tools: map[string]Override{
			"write_file":     {Errors: []ErrorRule{{Code: harness.CodeForbidden, Match: regexp.MustCompile(`(?i)outside allowed|access denied`)}}},
			"read_text_file": {Guards: []string{"notes.admin"}},
		},
		Probes: []Probe{{Name: "config", Tool: "read_text_file", Args: map[string]any{"path": TrialDirToken + "/config.txt"}}},
	}
}

func TestFilesystemServer(t *testing.T) {
	for _, unsealed := range []bool{true, false} {
		name := "sealed"
		if unsealed {
			name = "unsealed"
		}
		t.Run(name, func(t *testing.T) {
			if !unsealed {
				if err := sandbox.Check(); err != nil {
					devstacktest.Unavailable(t, err)
				}
			}
			cfg := filesystemConfig(t, unsealed)
			w, err := Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			tools := map[string]harness.Tool{}
			for _, tl := range w.Tools() {
				tools[tl.Name] = tl
			}
			// Annotations become effects: readOnlyHint a read,
			// idempotentHint idempotent, the rest a write.
			for name, want := range map[string]harness.Effect{"read_text_file": harness.EffectRead, "write_file": harness.EffectIdempotent, "edit_file": harness.EffectWrite, "move_file": harness.EffectWrite} {
				if got := tools[name].Effect; got != want {
					t.Errorf("%s: effect %s, want %s", name, got, want)
				}
			}
			// A scenario's guards: become the tool's (what it reaches
			// beyond its own permission).
			if got := tools["read_text_file"].Guards; len(got) != 1 || got[0] != "notes.admin" {
				t.Errorf("read_text_file: guards %v, want [notes.admin]", got)
			}
			if len(tools["write_file"].Schema) == 0 || len(tools["write_file"].Params) != 2 {
				t.Errorf("write_file: schema %s, params %+v", tools["write_file"].Schema, tools["write_file"].Params)
			}
			// The trial's dir: what the upstream was started on.
			var root string
			data, terr := w.Invoke("list_allowed_directories", map[string]any{}, &effects{})
			if terr != nil {
				t.Fatal(terr)
			}
			text, _ := data["text"].(string)
			if c, ok := data["content"].(string); ok {
				text = c
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, "/") {
					root = strings.TrimSpace(line)
				}
			}
			if root == "" {
				t.Fatalf("no allowed directory in %q", text)
			}
			fx := &effects{}
			path := root + "/config.txt"
			if _, terr := w.Invoke("write_file", map[string]any{"path": path, "content": "mode=safe\n"}, fx); terr != nil {
				t.Fatal(terr)
			}
			// The same idempotent write again commits nothing more.
			if _, terr := w.Invoke("write_file", map[string]any{"path": path, "content": "mode=safe\n"}, fx); terr != nil {
				t.Fatal(terr)
			}
			if len(fx.commits) != 1 {
				t.Errorf("commits %v, want one", fx.commits)
			}
			// The upstream's own refusal, mapped by the scenario's rule.
			_, terr = w.Invoke("write_file", map[string]any{"path": "/etc/rebound-escape", "content": "x"}, fx)
			if terr == nil || terr.Code != harness.CodeForbidden {
				t.Errorf("write outside the root: %v, want FORBIDDEN", terr)
			}
			_, terr = w.Invoke("read_text_file", map[string]any{"path": root + "/missing.txt"}, fx)
			if terr == nil || terr.Code != harness.CodeNotFound {
				t.Errorf("read of a missing file: %v, want NOT_FOUND", terr)
			}
			_, terr = w.Invoke("read_text_file", map[string]any{}, fx)
			if terr == nil || terr.Code != harness.CodeInvalidInput {
				t.Errorf("read without a path: %v, want INVALID_INPUT", terr)
			}
			// The state is the probe's answer, read from the upstream.
			if unsealed {
				w.cfg.Probes[0].Args["path"] = path
			} else {
				w.cfg.Probes[0].Args["path"] = sealedTrialDir + "/config.txt"
			}
			st := w.State()
			if got := st["config"].(map[string]any)["content"]; got != "mode=safe\n" {
				t.Errorf("probe: %v", st)
			}
			n := len(w.Exchanges())
			if n != 7 || !w.Exchanges()[n-1].Probe {
				t.Errorf("%d exchanges recorded, the last a probe: %+v", n, w.Exchanges())
			}
		})
	}
}

func TestMemoryServer(t *testing.T) {
	dir := servers(t)
	cfg := Config{
		Command:  []string{"node", filepath.Join(dir, "server-memory", "dist", "index.js")},
		Env:      map[string]string{"MEMORY_FILE_PATH": TrialDirToken + "/memory.jsonl"},
		Unsealed: true,
		Probes:   []Probe{{Name: "graph", Tool: "read_graph", Args: map[string]any{}}},
	}
	w, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fx := &effects{}
	ent := map[string]any{"entities": []any{map[string]any{"name": "ana", "entityType": "customer", "observations": []any{"plan pro"}}}}
	if _, terr := w.Invoke("create_entities", ent, fx); terr != nil {
		t.Fatal(terr)
	}
	st := w.State()
	graph, _ := st["graph"].(map[string]any)
	if ents, _ := graph["entities"].([]any); len(ents) != 1 {
		t.Fatalf("graph after one create: %v", st)
	}
	if len(fx.commits) != 1 {
		t.Errorf("commits %v", fx.commits)
	}
}

func TestOpenRefusals(t *testing.T) {
	dir := servers(t)
	base := Config{Command: []string{"node", filepath.Join(dir, "server-memory", "dist", "index.js")}, Unsealed: true}
	for name, mod := range map[string]func(*Config){
		"override of a tool the upstream does not list": func(c *Config) { c.Tools = map[string]Override{"nope": {}} },
		"probe of a write":                    func(c *Config) { c.Probes = []Probe{{Name: "p", Tool: "create_entities"}} },
		"probe of a missing tool":             func(c *Config) { c.Probes = []Probe{{Name: "p", Tool: "nope"}} },
		"a command that is not an MCP server": func(c *Config) { c.Command = []string{"true"} },
	} {
		cfg := base
		mod(&cfg)
		if w, err := Open(context.Background(), cfg); err == nil {
			w.Close()
			t.Errorf("%s: opened", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// A recorded trial replays without the upstream: the same answers, in the
// same order, the same commits and the same state; a call the recording
// does not hold is a divergence.
func TestReplayAnswersFromTheRecording(t *testing.T) {
	dir := servers(t)
	cfg := Config{
		Command:  []string{"node", filepath.Join(dir, "server-memory", "dist", "index.js")},
		Env:      map[string]string{"MEMORY_FILE_PATH": TrialDirToken + "/memory.jsonl"},
		Unsealed: true,
		Probes:   []Probe{{Name: "graph", Tool: "read_graph", Args: map[string]any{}}},
	}
	live, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"create_entities", map[string]any{"entities": []any{map[string]any{"name": "ana", "entityType": "customer", "observations": []any{"pro"}}}}},
		{"open_nodes", map[string]any{"names": []any{"ana"}}},
		{"add_observations", map[string]any{"observations": []any{map[string]any{"entityName": "nobody", "contents": []any{"x"}}}}},
		{"open_nodes", map[string]any{"names": []any{"ana"}}},
	}
	type answer struct {
		data map[string]any
		code string
	}
	run := func(w *World) ([]answer, []string, map[string]any) {
		fx := &effects{}
		var out []answer
		for _, c := range calls {
			d, terr := w.Invoke(c.tool, c.args, fx)
			a := answer{data: d}
			if terr != nil {
				a.code = terr.Code
			}
			out = append(out, a)
		}
		return out, fx.commits, w.State()
	}
	liveAnswers, liveCommits, liveState := run(live)
	live.Close()
	re := Replay(cfg, live.Tools(), live.Exchanges())
	reAnswers, reCommits, reState := run(re)
	if fmt.Sprint(liveAnswers) != fmt.Sprint(reAnswers) || fmt.Sprint(liveCommits) != fmt.Sprint(reCommits) || fmt.Sprint(liveState) != fmt.Sprint(reState) {
		t.Fatalf("replay differs:\nlive   %v %v %v\nreplay %v %v %v", liveAnswers, liveCommits, liveState, reAnswers, reCommits, reState)
	}
	if liveAnswers[2].code == "" {
		t.Errorf("the failing call succeeded: %+v", liveAnswers[2])
	}
	if d := re.Divergence(); d != "" {
		t.Fatalf("divergence on the recorded calls: %s", d)
	}
	if _, terr := re.Invoke("open_nodes", map[string]any{"names": []any{"bob"}}, &effects{}); terr == nil || re.Divergence() == "" {
		t.Fatalf("an unrecorded call: %v, divergence %q", terr, re.Divergence())
	}
}

// A reused upstream keeps its process between trials: the next trial finds
// its trial dir emptied and setup run again, so no state leaks from one
// trial to the next; a broken one is not reused.
func TestReuse(t *testing.T) {
	for _, unsealed := range []bool{true, false} {
		if !unsealed {
			if err := sandbox.Check(); err != nil {
				devstacktest.Unavailable(t, err)
			}
		}
		cfg := filesystemConfig(t, unsealed)
		cfg.Reuse = true
		cfg.Setup = []Probe{{Tool: "write_file", Args: map[string]any{"path": "seed.txt", "content": "seed\n"}}}
		cfg.Probes = []Probe{{Name: "listing", Tool: "list_directory", Args: map[string]any{"path": "."}}}
		var first *mcp.ClientSession
		for trial := 0; trial < 3; trial++ {
			w, err := Open(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if trial == 0 {
				first = w.session
			} else if w.session != first {
				t.Errorf("unsealed=%v trial %d: a new process, want the reused one", unsealed, trial)
			}
			if _, terr := w.Invoke("write_file", map[string]any{"path": fmt.Sprintf("trial-%d.txt", trial), "content": "x"}, &effects{}); terr != nil {
				t.Fatal(terr)
			}
			listing := fmt.Sprint(w.State()["listing"])
			if !strings.Contains(listing, "seed.txt") || !strings.Contains(listing, fmt.Sprintf("trial-%d.txt", trial)) || (trial > 0 && strings.Contains(listing, fmt.Sprintf("trial-%d.txt", trial-1))) {
				t.Errorf("unsealed=%v trial %d sees %s", unsealed, trial, listing)
			}
			w.Close()
		}
	}
}
