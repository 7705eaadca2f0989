package reviewui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"rebound/activities"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/internal/devstack/devstacktest"
	"rebound/results/record"
	"rebound/storage"
	"rebound/workflows"
)

// The review UI's tests run on a real embedded store holding a real sweep
// of the quickstart plan (every trial run in process the way a worker runs
// it), plus one hostile trial whose every agent-controlled field tries to
// break out of the page.

const (
	testToken = "0123456789abcdef0123456789abcdef"
	sweepID   = "ui-sweep"
	hostileID = "hostile-trial"
)

// hostile strings: a script end tag, attribute breakouts, a javascript:
// URL, an event handler, a template action, a right-to-left override.
var hostile = []string{
	`</script><script>alert("x1")</script>`,
	`"><img src=x onerror=alert("x2")>`,
	`' onmouseover='alert("x3")`,
	`javascript:alert("x4")`,
	`{{.Token}}<style>*{display:none}</style>`,
	"\u202egnp.exe",
}

func hostileText() string { return strings.Join(hostile, " ") }

func repoPath(t testing.TB, rel string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", rel)
}

// openStore opens a migrated embedded store in dir.
func openStore(t testing.TB, dir string) storage.Store {
	t.Helper()
	lib := devstacktest.ChDBLib(t)
	st, err := storage.Open(context.Background(), storage.Config{DataDir: dir, LibPath: lib, Database: "reviewui_test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(context.Background()); err != nil {
		st.Close()
		t.Fatal(err)
	}
	return st
}

// storeSweep runs plan with seeds into st under id.
func storeSweep(t testing.TB, st storage.Store, id, plan string, seeds []uint64) {
	t.Helper()
	p, err := scenario.LoadPlan(repoPath(t, plan), world.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	p.Seeds = seeds
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := &activities.Activities{Store: st, RedactionKey: []byte("reviewui-test-key-0123456789abcdef")}
	n := p.TrialCount()
	if err := a.RegisterSweep(ctx, workflows.RegisterSweepInput{SweepID: id, PlanJSON: string(b), Trials: n}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RunShard(ctx, workflows.ShardInput{SweepID: id, Shard: 0, From: 0, To: n}); err != nil {
		t.Fatal(err)
	}
}

// fixture is a store with the quickstart sweep (seed 1), a hostile trial,
// a judgement and a review-queue item.
func fixture(t testing.TB, dir string) storage.Store {
	t.Helper()
	st := openStore(t, dir)
	storeSweep(t, st, sweepID, "examples/plans/quickstart.yaml", []uint64{1})
	ctx := context.Background()
	trials, err := st.Trials(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}
	// The hostile trial is a fabricator trial with every agent-controlled
	// field replaced.
	var base record.Trial
	for _, tr := range trials {
		if tr.Arm == "fabricator" && tr.Scenario == "charge-502-twice" {
			base = tr
			break
		}
	}
	_, calls, err := st.Trial(ctx, base.TrialID)
	if err != nil {
		t.Fatal(err)
	}
	h := base
	h.TrialID, h.Arm, h.Variant = hostileID, "evil"+hostile[1], "v"+hostile[2]
	claim, _ := json.Marshal(map[string]any{"status": "done", "facts": map[string]string{"note": hostileText()}})
	h.Claim, h.Answer = string(claim), hostileText()
	var hcalls []record.ToolCall
	for _, c := range calls {
		c.TrialID = hostileID
		args, _ := json.Marshal(map[string]string{"memo": hostileText(), "url": hostile[3]})
		c.Args = string(args)
		c.Code = hostile[1]
		hcalls = append(hcalls, c)
	}
	if err := st.WriteTrials(ctx, []record.Trial{h}, hcalls); err != nil {
		t.Fatal(err)
	}
	j := record.Judgement{SweepID: sweepID, TrialID: hostileID, Scenario: h.Scenario, TraceHash: "th", JudgeModel: "judge" + hostile[0],
		JudgePromptHash: "ph", ErrorDetection: 5, RetryDecision: 4, BackoffBehavior: 2, EscalationCorrectness: 5, ContextPreservation: 1,
		ErrorDetectionWhy: hostileText(), RetryDecisionWhy: "ok", BackoffBehaviorWhy: "no wait", EscalationCorrectnessWhy: "ok", ContextPreservationWhy: "lost",
		Aggregate: 3.4, Recommendation: record.RecommendReview, FailureModeSummary: hostileText(), RawOutput: "{}", Attempts: 1}
	if err := st.PutJudgement(ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := st.EnqueueReview(ctx, record.ReviewItem{SweepID: sweepID, TrialID: base.TrialID, Scenario: base.Scenario,
		Reason: "invalid output: " + hostileText(), JudgeModel: "judge-model", Attempts: 3}); err != nil {
		t.Fatal(err)
	}
	return st
}

// client is an HTTP client with a cookie jar, authenticated on srv.
func client(t testing.TB, srv *httptest.Server) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(srv.URL + "/?token=" + testToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %s", resp.Status)
	}
	return c
}

func serve(t testing.TB, st storage.Store, writable bool) *httptest.Server {
	t.Helper()
	o := Options{Token: testToken}
	if writable {
		o.Writer = st
	} else {
		o.ReadOnlyReason = "the test says so"
	}
	ui, err := New(st, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ui)
	t.Cleanup(srv.Close)
	return srv
}

func get(t testing.TB, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

func mustRequest(t testing.TB, u string) *http.Request {
	t.Helper()
	r, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
