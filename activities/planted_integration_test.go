package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/internal/redact/redacttest"
	"rebound/internal/sweepstatus"
	"rebound/storage"
	"rebound/workflows"
)

// Places a plan and an agent can put a secret in, each stored somewhere:
// the plan (sweeps.plan_json), the trial row, its tool calls.
var plantPlaces = []string{
	"goal", "initial state", "plan arguments", "fault message", "tool arguments", "plan updates", "claim fields",
	"stdout", "stderr", "tool name", "answer", "process command", "scenario description", "attrition error", "plan description",
}

const (
	placeGoal = iota
	placeInitial
	placePlanArgs
	placeFault
	placeArgs
	placeReplan
	placeClaim
	placeStdout
	placeStderr
	placeToolName
	placeAnswer
	placeCommand
	placeDescription
	placeAttrition
	placePlanDescription
)

// plantedText is what one place holds of one planted secret: each piece
// between markers that name it, so the test can see the text around every
// secret survive.
type plantedText struct {
	place, shape int
	pieces       []string // with markers
	keep         []string // the markers with the text next to the secret
}

func (p plantedText) marker(j int, side string) string {
	return fmt.Sprintf("p%02d.%02d.%d%s", p.place, p.shape, j, side)
}

// Issue 25: secrets of every shape (random bodies, drawn at test time),
// planted in every place a plan and an agent can put them, run through real
// trials (RegisterSweep, RunShard: the worker's own path) into the
// embedded store, must be nowhere in any String column of any table, nor
// in the store's files; the text around each one must be there.
func TestPlantedSecretsNeverReachStorage(t *testing.T) {
	lib := devstacktest.ChDBLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	seed := uint64(time.Now().UnixNano())
	t.Logf("corpus seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>7))
	known := redacttest.NewKnown(rng)
	t.Setenv("REBOUND_TEST_PLANTED_A", known.A)
	t.Setenv("REBOUND_TEST_PLANTED_B", known.B)
	t.Setenv("REBOUND_TEST_PLANTED_C", known.C)
	corpora, texts := plantCorpora(rng, known)
	plan, faults := writePlantedPlan(t, texts)
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}

	// The agent's places: every arm runs the hostile agent; arm "lost"
	// fails as attrition with the secrets in its error.
	dataDir := t.TempDir()
	const database = "activities_planted"
	st, err := storage.Open(ctx, storage.Config{DataDir: dataDir, LibPath: lib, Database: database})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	acts := &Activities{Store: st, RedactionKey: []byte("planted-secrets-test-redaction-key-0123456789"),
		Agents: func(arm scenario.Arm) (agent.Agent, error) {
			return hostileAgent{texts: texts, faults: faults, attrition: arm.Name == "lost"}, nil
		}}
	const sweepID = "planted-20261201-000000-abcdef"
	if err := acts.RegisterSweep(ctx, workflows.RegisterSweepInput{SweepID: sweepID, PlanJSON: string(planJSON), Trials: plan.TrialCount()}); err != nil {
		t.Fatal(err)
	}
	res, err := acts.RunShard(ctx, workflows.ShardInput{SweepID: sweepID, From: 0, To: plan.TrialCount()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Trials != 3 || res.Attrition != 1 {
		t.Fatalf("shard result %+v, want 3 trials, 1 lost", res)
	}
	if err := acts.FinishSweep(ctx, workflows.FinishSweepInput{SweepID: sweepID, Status: sweepstatus.Completed}); err != nil {
		t.Fatal(err)
	}

	dump, files, nfiles := storedText(t, ctx, st, database, dataDir)
	// Controls: the search finds what is there (in the files, compression
	// leaves the first occurrences of strings readable).
	if !bytes.Contains(dump, []byte(sweepID)) || !bytes.Contains(dump, []byte("planted-secrets")) ||
		!bytes.Contains(files, []byte("planted-secrets")) || !bytes.Contains(files, []byte("inventory.lookup")) {
		t.Fatalf("controls failed: dump %d bytes, %d files (%d bytes)", len(dump), nfiles, len(files))
	}
	raw, lost := checkPlanted(t, corpora, texts, dump, files)
	t.Logf("planted %d secrets (%d shapes x %d places); found raw: %d; text around them lost: %d (tables %d bytes, %d files %d bytes)",
		len(corpora[0])*len(plantPlaces), len(corpora[0]), len(plantPlaces), raw, lost, len(dump), nfiles, len(files))
}

// plantCorpora draws one corpus per place (each with bodies of its own)
// and puts each piece between its markers.
func plantCorpora(rng *rand.Rand, known redacttest.Known) ([][]redacttest.Planted, [][]plantedText) {
	corpora := make([][]redacttest.Planted, len(plantPlaces))
	texts := make([][]plantedText, len(plantPlaces))
	for p := range plantPlaces {
		corpora[p] = redacttest.Corpus(rng, known)
		for i, c := range corpora[p] {
			pt := plantedText{place: p, shape: i}
			for j, piece := range c.Pieces {
				a, b := pt.marker(j, "a"), pt.marker(j, "b")
				pt.pieces = append(pt.pieces, a+" "+piece+" "+b)
				before, after := a+" ", " "+b
				if j == 0 {
					before += c.Before
				}
				if j == len(c.Pieces)-1 {
					after = c.After + after
				}
				pt.keep = append(pt.keep, before, after)
			}
			texts[p] = append(texts[p], pt)
		}
	}
	return corpora, texts
}

// piecesOf lists every piece a place holds.
func piecesOf(texts [][]plantedText, place int) []string {
	var all []string
	for _, pt := range texts[place] {
		all = append(all, pt.pieces...)
	}
	return all
}

// writePlantedPlan writes and loads the plan that holds the plan's own
// places (goal, initial state, plan arguments, fault messages, the
// descriptions) with three arms: a command arm with two env_from secrets,
// an LLM arm with an api_key_env secret, and one to be lost. It returns the
// plan and how many calls of inventory.lookup the faults need.
func writePlantedPlan(t *testing.T, texts [][]plantedText) (*scenario.Resolved, int) {
	t.Helper()
	skus := map[string]any{}
	var steps, faults, fields []map[string]any
	calls := 0
	for i, pt := range texts[placeInitial] {
		for j, piece := range pt.pieces {
			skus[piece] = map[string]any{"available": 10*i + j}
		}
	}
	for i, pt := range texts[placePlanArgs] {
		// The world knows the plan's SKUs: a sweep refuses a scenario whose
		// reference plan cannot reach its goal without faults.
		if _, ok := skus[pt.pieces[0]]; !ok {
			skus[pt.pieces[0]] = map[string]any{"available": 1}
		}
		args := map[string]any{"sku": pt.pieces[0]}
		for j, piece := range pt.pieces[1:] {
			args[fmt.Sprintf("sku%d", j+2)] = piece
		}
		steps = append(steps, map[string]any{"id": fmt.Sprintf("s%03d", i), "tool": "inventory.lookup", "args": args})
	}
	for _, piece := range piecesOf(texts, placeFault) {
		calls++
		faults = append(faults, map[string]any{"tool": "inventory.lookup", "class": "transient", "code": "TIMEOUT", "attempts": []int{calls}, "message": piece})
	}
	for i, pt := range texts[placeClaim] {
		for j := range pt.pieces {
			fields = append(fields, map[string]any{"name": fmt.Sprintf("c%03d_%d", i, j), "type": "string"})
		}
	}
	dir := t.TempDir()
	write := func(name string, v any) {
		b, ok := v.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(v); err != nil { // JSON is YAML
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("planted.yaml", map[string]any{
		"name": "planted-secrets", "description": strings.Join(piecesOf(texts, placeDescription), "\n"), "world": "inventory",
		"goal":  "Look up every SKU. " + strings.Join(piecesOf(texts, placeGoal), " | "),
		"tools": []string{"inventory.lookup"}, "permissions": []string{"inventory.read"},
		"budget":  map[string]any{"tool_calls": 4000, "replans": 2000},
		"initial": map[string]any{"skus": skus}, "plan": steps, "claim": map[string]any{"fields": fields},
		"variants": []any{map[string]any{"name": "faults", "recoverable": true, "faults": faults}},
	})
	write("prompt.md", []byte("Recover carefully.\n"))
	write("plan.yaml", map[string]any{
		"name": "planted", "description": strings.Join(piecesOf(texts, placePlanDescription), "\n"), "scenarios": []string{"planted.yaml"}, "seeds": []int{1},
		"arms": []any{
			map[string]any{"name": "hostile", "agent": "command", "command": []string{"./hostile-agent"}, "sandbox": "none",
				"env_from": map[string]string{"AGENT_KEY_A": "REBOUND_TEST_PLANTED_A", "AGENT_KEY_B": "REBOUND_TEST_PLANTED_B"}},
			map[string]any{"name": "model", "agent": "llm",
				"llm": map[string]any{"base_url": "http://127.0.0.1:9/v1", "api_key_env": "REBOUND_TEST_PLANTED_C", "model": "m", "prompt": "prompt.md"}},
			map[string]any{"name": "lost", "agent": "careful"},
		},
	})
	plan, err := scenario.LoadPlan(filepath.Join(dir, "plan.yaml"), world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	return plan, calls
}

// storedText returns every String column of every table of the database
// (as JSON and as plain text), then, after OPTIMIZE ... FINAL and SYSTEM
// FLUSH LOGS, every file of the engine's data directory.
func storedText(t *testing.T, ctx context.Context, st storage.Store, database, dataDir string) (dump, files []byte, nfiles int) {
	t.Helper()
	query := func(sql string) storage.Table {
		t.Helper()
		tab, err := st.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return tab
	}
	var out bytes.Buffer
	tables := query("SELECT name FROM system.tables WHERE database = '" + database + "' AND engine NOT LIKE '%View%' ORDER BY name")
	for _, row := range tables.Rows {
		name := fmt.Sprint(row[0])
		cols := query("SELECT name FROM system.columns WHERE database = '" + database + "' AND table = '" + name + "' AND type LIKE '%String%' ORDER BY position")
		var names []string
		for _, c := range cols.Rows {
			names = append(names, "`"+fmt.Sprint(c[0])+"`")
		}
		if len(names) == 0 {
			continue
		}
		tab := query("SELECT " + strings.Join(names, ", ") + " FROM " + database + "." + name)
		b, _ := json.Marshal(tab.Rows)
		fmt.Fprintf(&out, "== %s\n%s\n", name, b)
		for _, r := range tab.Rows {
			for _, v := range r {
				fmt.Fprintf(&out, "%v\n", v)
			}
		}
		query("OPTIMIZE TABLE " + database + "." + name + " FINAL")
	}
	query("SYSTEM FLUSH LOGS")
	var disk bytes.Buffer
	if err := filepath.Walk(dataDir, func(path string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil {
			disk.Write(b)
			nfiles++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), disk.Bytes(), nfiles
}

// checkPlanted reports each planted secret found in the tables or the
// files (raw or JSON-escaped), and each whose text around it was not
// stored.
func checkPlanted(t *testing.T, corpora [][]redacttest.Planted, texts [][]plantedText, dump, files []byte) (raw, lost int) {
	t.Helper()
	has := func(hay []byte, s string) bool {
		return bytes.Contains(hay, []byte(s)) || bytes.Contains(hay, []byte(jsonText(s)))
	}
	for p := range plantPlaces {
		for i, c := range corpora[p] {
			var where []string
			for _, s := range c.Secrets {
				if has(dump, s) {
					where = append(where, "tables")
				}
				if has(files, s) {
					where = append(where, "files")
				}
			}
			if len(where) > 0 {
				raw++
				t.Errorf("%s planted in the %s found raw in the %s: %q", c.Shape, plantPlaces[p], strings.Join(where, ", "), c.Secrets[0])
			}
			for _, k := range texts[p][i].keep {
				if !has(dump, k) {
					lost++
					t.Errorf("%s planted in the %s: the text around it was not stored: %q", c.Shape, plantPlaces[p], k)
					break
				}
			}
		}
	}
	return raw, lost
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// hostileAgent puts the agent's share of the corpus everywhere an agent
// can: tool arguments (a split secret in several arguments of one call),
// tool names, plan updates, the claim, the answer, its process's command
// line and output, and (arm "lost") an attrition error.
type hostileAgent struct {
	texts     [][]plantedText
	faults    int // calls of inventory.lookup the fault schedule needs
	attrition bool
}

func (h hostileAgent) Name() string { return "hostile" }

func (h hostileAgent) Run(ctx context.Context, env agent.Env, task agent.Task) (agent.Outcome, error) {
	all := func(p int) []string { return piecesOf(h.texts, p) }
	if h.attrition {
		return agent.Outcome{}, fmt.Errorf("%w: provider said %s", agent.ErrAttrition, strings.Join(all(placeAttrition), " | "))
	}
	lookups := 0
	for _, pt := range h.texts[placeArgs] {
		args := map[string]any{"sku": pt.pieces[0]}
		for j, piece := range pt.pieces[1:] {
			args[fmt.Sprintf("part%d", j+2)] = piece
		}
		env.Call(ctx, "inventory.lookup", args)
		lookups++
	}
	for ; lookups < h.faults; lookups++ {
		env.Call(ctx, "inventory.lookup", map[string]any{"sku": "KB-104"})
	}
	for _, name := range all(placeToolName) {
		env.Call(ctx, name, map[string]any{"q": 1})
	}
	for _, s := range all(placeReplan) {
		env.Replan(s)
	}
	claim := map[string]any{scenario.ClaimStatus: scenario.StatusDone, scenario.ClaimBlockedOn: nil}
	for i, pt := range h.texts[placeClaim] {
		for j, piece := range pt.pieces {
			claim[fmt.Sprintf("c%03d_%d", i, j)] = piece
		}
	}
	b, err := json.Marshal(claim)
	if err != nil {
		return agent.Outcome{}, err
	}
	return agent.Outcome{
		Claim:  string(b),
		Answer: "Done. " + strings.Join(all(placeAnswer), " | "),
		Process: &agent.Process{Command: append([]string{"./hostile-agent"}, all(placeCommand)...), ExitCode: 0, WallMs: 5,
			Stdout: strings.Join(all(placeStdout), "\n"), Stderr: strings.Join(all(placeStderr), " | "), Sandbox: agent.SandboxNone},
	}, nil
}
