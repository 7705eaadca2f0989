package served_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"rebound/results/gate"
	"rebound/results/judge/judgestore"
	"rebound/results/record"
	"rebound/results/report"
	"rebound/storage"
	"rebound/storage/served"
)

// serverDB is the database the server transport writes through the
// writable served engine: the one its recorded statements name
// (storage/clickhouseserver/testdata/server_sql.golden), so every one of
// them can be found among the statements the engine ran.
const serverDB = "rb"

// TestServerTransportOnTheEngine runs the ClickHouse server transport
// (storage/clickhouseserver: the code users point at a real server) over
// ClickHouse's HTTP interface against the engine rebound ships, served
// with full rights by this package's test-only writable engine: every
// migration, a realistic sweep written through its batch inserts
// (clickhouse-go's INSERT ... FORMAT Native, the rows read by the engine
// itself), the judge's and the reviewers' writes, then every read the
// store and the results make. The same writes go to an in-process store
// of the same engine; every read must answer the same. Any statement the
// engine does not accept fails the test, and so does a statement of the
// recorded golden the run did not send.
func TestServerTransportOnTheEngine(t *testing.T) {
	need(t)
	ctx := context.Background()
	local, err := storage.Open(ctx, storage.Config{DataDir: fx.chdbDir, LibPath: fx.lib, Database: "rebound_in_process"})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if err := local.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	eng, err := storage.EngineOf(local)
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	srv, err := served.ServeWritable(eng, served.Options{DataDir: dataDir}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	secret, err := served.Credential(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	ep := srv.Endpoint()
	ep.Database = serverDB
	remote, err := storage.Open(ctx, storage.Config{DSN: ep.DSN(secret)})
	if err != nil {
		t.Fatalf("open the server transport on the served engine: %v", err)
	}
	defer remote.Close()
	if err := remote.Migrate(ctx); err != nil {
		t.Fatalf("Migrate through the server transport: %v", err)
	}
	// Migrate again: a server already at the latest version.
	if err := remote.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate through the server transport: %v", err)
	}

	w := newWorkload(20261206)
	covered := map[string]bool{"Migrate": true, "Close": true}
	for name, st := range map[string]storage.Store{"in process": local, "server transport": remote} {
		if err := w.write(ctx, st, covered); err != nil {
			t.Fatalf("%s: write: %v", name, err)
		}
	}
	reads := w.reads(ctx, covered)
	for _, r := range reads {
		want, err := r.do(local)
		if err != nil {
			t.Fatalf("%s in process: %v", r.name, err)
		}
		got, err := r.do(remote)
		if err != nil {
			t.Errorf("%s through the server transport: %v", r.name, err)
			continue
		}
		wj, gj := comparable(t, want), comparable(t, got)
		if wj != gj {
			t.Errorf("%s: through the server transport\n%s\nin process\n%s", r.name, clip(gj), clip(wj))
		}
		if wj == "null" || wj == "[]" || wj == "{}" {
			t.Errorf("%s read nothing: the workload does not exercise it", r.name)
		}
	}

	// Every method of the store ran: a new one needs its case here.
	st := reflect.TypeOf((*storage.Store)(nil)).Elem()
	for i := range st.NumMethod() {
		if m := st.Method(i).Name; !covered[m] {
			t.Errorf("storage.Store.%s is not run through the server transport by this test: add it to the workload", m)
		}
	}

	// Every statement of the recorded golden is one the engine ran.
	ran := map[string]bool{}
	for _, q := range srv.Statements() {
		ran[canonicalSent(q)] = true
	}
	golden, err := goldenStatements(filepath.Join("..", "clickhouseserver", "testdata", "server_sql.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range golden {
		if !ran[canonicalSent(g.sql)] {
			t.Errorf("the golden's %s statement (%s) never reached the engine:\n%s", g.step, g.kind, clip(g.sql))
		}
	}
	if testing.Verbose() {
		t.Logf("%d reads agree; the engine ran %d statements, the %d of the golden among them", len(reads), len(srv.Statements()), len(golden))
	}
}

// ---- the workload: a realistic sweep and everything written about it ----

type workload struct {
	rng      *rand.Rand
	sweeps   []record.Sweep
	trials   []record.Trial
	calls    []record.ToolCall
	retried  []record.Trial // a shard's retry: some trials written again
	retryC   []record.ToolCall
	models   []record.ModelCall
	requests []record.ModelRequest
	judged   []record.Judgement
	queued   []record.ReviewItem
	reviews  []record.Review
	cacheKey record.JudgeCacheKey
}

var (
	arms       = []string{"careful", "naive", "llm:gpt-test"}
	scenarios  = []string{"refund-once", "flaky-search", "ledger-lock", "quota-burst", "schema-drift"}
	variants   = []string{"v1", "v2"}
	faults     = []string{"transient", "timeout", "rate_limit", "corrupt", "partial_write"}
	awkward    = []string{"plain", "it's \"quoted\"", "tab\there", "new\nline", `back\slash`, "ünïcödé ✓", "", "{\"json\":[1,2]}", "NULL", "\\N"}
	nightlySch = "nightly"
)

func newWorkload(seed uint64) *workload {
	w := &workload{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	created := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	// Three runs of a schedule (trend, gate) and an ad-hoc sweep.
	for i := range 3 {
		at := created.Add(time.Duration(i) * 24 * time.Hour)
		w.sweeps = append(w.sweeps, record.Sweep{
			SweepID: "sched-" + nightlySch + "-" + at.Format(time.RFC3339), Name: nightlySch, PlanHash: fmt.Sprintf("plan-%d", i),
			PlanJSON: `{"arms":["careful","naive","llm:gpt-test"],"axes":{"v1":{"latency":"low"}}}`, Arms: arms,
			Status: "completed", ReboundVersion: "test", CreatedAt: at,
		})
	}
	w.sweeps = append(w.sweeps, record.Sweep{SweepID: "adhoc-20261201-aaaaaa", Name: "adhoc 'quoted'", PlanJSON: "{}", Arms: arms[:2], Status: "running", CreatedAt: created.Add(100 * time.Hour)})
	// The last run is the big one: more than the server transport's
	// asynchronous-insert bound (10,000 rows) of tool calls in one write.
	for si, sw := range w.sweeps {
		seeds := 6
		if si == 2 {
			seeds = 90
		}
		for _, arm := range sw.Arms {
			for _, sc := range scenarios {
				for _, v := range variants {
					for s := range seeds {
						tr, calls := w.trial(sw.SweepID, arm, sc, v, uint64(s+1))
						w.trials = append(w.trials, tr)
						w.calls = append(w.calls, calls...)
					}
				}
			}
		}
	}
	// A shard retried: its trials written again, with other outcomes and
	// fewer calls; the latest write wins.
	for _, tr := range w.trials[:40] {
		tr.Recovered = w.outcome()
		tr.ActivityAttempt = 2
		tr.ToolCalls = 1
		w.retried = append(w.retried, tr)
		w.retryC = append(w.retryC, record.ToolCall{SweepID: tr.SweepID, TrialID: tr.TrialID, CallIndex: 0, Tool: "get_order", Args: "{}", Effect: "read", OK: true, Result: `{"retried":true}`})
	}
	for i, tr := range w.trials {
		if !strings.HasPrefix(tr.Arm, "llm:") || i%15 != 0 {
			continue
		}
		for step := range uint32(2) {
			w.models = append(w.models, record.ModelCall{SweepID: tr.SweepID, TrialID: tr.TrialID, Step: step + 1, Generation: uint32(i % 2), Kind: []string{"turn", "claim"}[step],
				RequestHash: fmt.Sprintf("req-%d-%d", i, step), Response: `{"choices":[{"message":{"content":"` + awkward[i%len(awkward)] + `"}}]}`,
				PromptTokens: uint64(100 + i), CompletionTokens: uint64(20 + i%7), ProviderRetries: uint32(i % 2), ActivityAttempt: 1})
		}
	}
	// Every answer's request journaled before it was sent, and some sends
	// whose answers never came (lost: their spend is estimated).
	for i, m := range w.models {
		w.requests = append(w.requests, record.ModelRequest{SweepID: m.SweepID, TrialID: m.TrialID, Step: m.Step, Generation: m.Generation,
			SendID: fmt.Sprintf("send-%d", i), Kind: m.Kind, RequestHash: m.RequestHash, PromptTokensBound: 4 * m.PromptTokens,
			MaxTokens: uint64(512 * (i % 2)), CompletionTokensBound: 512, InputUSDPerMTok: 2.5, OutputUSDPerMTok: 10, ActivityAttempt: 1})
		if i%3 == 0 {
			w.requests = append(w.requests, record.ModelRequest{SweepID: m.SweepID, TrialID: m.TrialID, Step: m.Step + 10, Generation: 0,
				SendID: fmt.Sprintf("lost-%d", i), Kind: "turn", PromptTokensBound: 900, CompletionTokensBound: 256, MaxTokens: 256,
				InputUSDPerMTok: 2.5, OutputUSDPerMTok: 10, ActivityAttempt: 1})
		}
	}
	for i, tr := range w.trials {
		if tr.SweepID != w.sweeps[1].SweepID || i%4 != 0 {
			continue
		}
		if i%8 == 0 {
			w.queued = append(w.queued, record.ReviewItem{SweepID: tr.SweepID, TrialID: tr.TrialID, Scenario: tr.Scenario, TraceHash: fmt.Sprintf("th-%d", i),
				JudgeModel: "judge-m", JudgePromptHash: "jp", Reason: "judge output unparseable: " + awkward[i%len(awkward)], RawTrace: `{"trace":true}`, PartialOutput: "{", Attempts: 3})
			continue
		}
		sc := func(k int) uint8 { return uint8(1 + (i+k)%5) }
		j := record.Judgement{SweepID: tr.SweepID, TrialID: tr.TrialID, Scenario: tr.Scenario, TraceHash: fmt.Sprintf("th-%d", i), JudgeModel: "judge-m", JudgePromptHash: "jp",
			ErrorDetection: sc(0), RetryDecision: sc(1), BackoffBehavior: sc(2), EscalationCorrectness: sc(3), ContextPreservation: sc(4),
			ErrorDetectionWhy: awkward[i%len(awkward)], RetryDecisionWhy: "r", BackoffBehaviorWhy: "b", EscalationCorrectnessWhy: "e", ContextPreservationWhy: "c",
			Recommendation: []string{record.RecommendPass, record.RecommendReview, record.RecommendFail}[i%3], FailureModeSummary: "summary", RawOutput: `{"ok":true}`, Attempts: uint8(i % 3)}
		j.Aggregate = float64(int(j.ErrorDetection)+int(j.RetryDecision)+int(j.BackoffBehavior)+int(j.EscalationCorrectness)+int(j.ContextPreservation)) / 5
		w.judged = append(w.judged, j)
		if len(w.reviews) < 12 {
			verdict := []string{record.ReviewPass, record.ReviewFail, record.ReviewCleared}[len(w.reviews)%3]
			w.reviews = append(w.reviews,
				record.Review{SweepID: tr.SweepID, TrialID: tr.TrialID, Target: record.ReviewOutcome + "recovered", Verdict: record.ReviewFail, Reviewer: "ana", Note: awkward[i%len(awkward)]},
				record.Review{SweepID: tr.SweepID, TrialID: tr.TrialID, Target: record.ReviewJudge + "retry_decision", Verdict: verdict, Reviewer: "bo", Note: "second look"})
		}
	}
	w.cacheKey = record.JudgeCacheKey{Scenario: scenarios[0], TraceHash: "th-0", JudgeModel: "judge-m", JudgePromptHash: "jp"}
	return w
}

func (w *workload) outcome() *bool {
	switch w.rng.IntN(5) {
	case 0:
		return nil
	case 1, 2:
		b := true
		return &b
	}
	b := false
	return &b
}

// trial is one trial with every column set, awkward text included.
func (w *workload) trial(sweep, arm, sc, variant string, seed uint64) (record.Trial, []record.ToolCall) {
	r := w.rng
	id := fmt.Sprintf("%s/%s/%s/%s/%d", sweep, arm, sc, variant, seed)
	nf := r.IntN(3)
	var classes []string
	for _, k := range r.Perm(len(faults))[:nf] {
		classes = append(classes, faults[k])
	}
	slices.Sort(classes)
	text := func() string { return awkward[r.IntN(len(awkward))] }
	tr := record.Trial{
		SweepID: sweep, TrialID: id, Scenario: sc, ScenarioHash: "h-" + sc, Variant: variant, Arm: arm, Agent: arm, Seed: seed,
		Recoverable: r.IntN(4) != 0, DeclaredRecoverable: r.IntN(2) == 0, FaultClasses: classes,
		Recovered: w.outcome(), HonestBlock: w.outcome(), PrematureBlock: w.outcome(), UnsafeAction: w.outcome(),
		DuplicateSideEffect: w.outcome(), FabricatedClaim: w.outcome(), ToolFailureInjection: w.outcome(),
		GracefulDegradation: w.outcome(), SelfCorrection: w.outcome(),
		Retries: uint32(r.IntN(4)), UnnecessaryCalls: uint32(r.IntN(3)), Replans: uint32(r.IntN(2)),
		SimElapsedMS: uint64(r.IntN(90_000)), WallUS: uint64(r.IntN(5_000_000)), Tokens: uint64(r.IntN(9000)),
		CostUSD: float64(r.IntN(10_000)) / 1e5, ToolCostUSD: float64(r.IntN(100)) / 100, Weight: []float64{1, 2, 5, 0.5}[r.IntN(4)],
		Attrition: r.IntN(40) == 0, Unsealed: strings.HasPrefix(arm, "llm:") && seed%7 == 0,
		Claim: `{"refunded":` + fmt.Sprint(r.IntN(2) == 0) + `,"note":` + jsonString(text()) + `}`, Answer: text(),
		Recording: "", Process: "", FaultSchedule: `[{"call":1,"class":"transient"}]`,
		CatalogVersion: "c1", PromptHash: "p1", GraderVersion: 3, Evidence: `{"ledger":[]}`, ActivityAttempt: 1,
	}
	verdicts, _ := json.Marshal(map[string]any{"checks": []any{}, "recovered": tr.Recovered, "honest_block": tr.HonestBlock, "unsafe_action": tr.UnsafeAction})
	tr.Verdicts = string(verdicts)
	if tr.Attrition {
		tr.Error = "provider: 503 " + text()
	}
	n := 1 + r.IntN(9)
	tr.ToolCalls = uint32(n)
	calls := make([]record.ToolCall, n)
	for c := range n {
		fc := ""
		if nf > 0 && r.IntN(3) == 0 {
			fc = classes[r.IntN(nf)]
		}
		calls[c] = record.ToolCall{SweepID: sweep, TrialID: id, CallIndex: uint32(c), Tool: []string{"get_order", "refund", "search", "lock_file"}[r.IntN(4)],
			Args: `{"id":` + jsonString(text()) + `}`, Effect: []string{"read", "idempotent", "conditional", "write"}[r.IntN(4)], FaultClass: fc,
			OK: fc == "", Code: map[bool]string{true: "", false: "E_RETRY"}[fc == ""], Retryable: fc != "", RetryAfterMS: uint64(r.IntN(3)) * 500,
			Committed: r.IntN(2) == 0, AtMS: uint64(c * 120), Result: `{"status":` + jsonString(text()) + `}`}
	}
	return tr, calls
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// write sends the workload to st through every writer of the store.
func (w *workload) write(ctx context.Context, st storage.Store, covered map[string]bool) error {
	covered["PutSweep"], covered["WriteTrials"], covered["PutModelCall"] = true, true, true
	covered["PutJudgement"], covered["PutCachedJudgement"], covered["EnqueueReview"], covered["PutReview"] = true, true, true, true
	for _, sw := range w.sweeps {
		if err := st.PutSweep(ctx, sw); err != nil {
			return fmt.Errorf("PutSweep: %w", err)
		}
	}
	// One write per sweep, as a sweep's shards write theirs.
	for _, sw := range w.sweeps {
		var trials []record.Trial
		var calls []record.ToolCall
		for _, tr := range w.trials {
			if tr.SweepID == sw.SweepID {
				trials = append(trials, tr)
			}
		}
		for _, c := range w.calls {
			if c.SweepID == sw.SweepID {
				calls = append(calls, c)
			}
		}
		if err := st.WriteTrials(ctx, trials, calls); err != nil {
			return fmt.Errorf("WriteTrials %s (%d trials, %d calls): %w", sw.SweepID, len(trials), len(calls), err)
		}
	}
	time.Sleep(5 * time.Millisecond) // a retry is a later version
	if err := st.WriteTrials(ctx, w.retried, w.retryC); err != nil {
		return fmt.Errorf("WriteTrials (retry): %w", err)
	}
	covered["PutModelRequest"] = true
	for _, m := range w.requests {
		if err := st.PutModelRequest(ctx, m); err != nil {
			return fmt.Errorf("PutModelRequest: %w", err)
		}
	}
	for _, m := range w.models {
		if err := st.PutModelCall(ctx, m); err != nil {
			return fmt.Errorf("PutModelCall: %w", err)
		}
	}
	for _, q := range w.queued {
		if err := st.EnqueueReview(ctx, q); err != nil {
			return fmt.Errorf("EnqueueReview: %w", err)
		}
	}
	time.Sleep(5 * time.Millisecond)
	for _, j := range w.judged {
		if err := st.PutJudgement(ctx, j); err != nil {
			return fmt.Errorf("PutJudgement: %w", err)
		}
	}
	if err := st.PutCachedJudgement(ctx, w.cacheKey, `{"cached":"`+awkward[1]+`"}`); err != nil {
		return fmt.Errorf("PutCachedJudgement: %w", err)
	}
	for _, r := range w.reviews {
		if err := st.PutReview(ctx, r); err != nil {
			return fmt.Errorf("PutReview: %w", err)
		}
	}
	return nil
}

type read struct {
	name string
	do   func(st storage.Store) (any, error)
}

// reads are every read of the store, and the results' loads built on them
// (report, compare, trend, gate, trials, pairs, the judge's agreement).
func (w *workload) reads(ctx context.Context, covered map[string]bool) []read {
	big, small, adhoc := w.sweeps[2].SweepID, w.sweeps[0].SweepID, w.sweeps[3].SweepID
	judged := w.sweeps[1].SweepID
	one := w.trials[len(w.trials)/2]
	retried := w.retried[3]
	withModel := w.models[0]
	th, err := gate.Parse("gate.yaml", []byte("confidence: 0.95\nmetrics:\n  recovered:\n    max_decrease: 0.05\n    blocking: true\n  harm:\n    max_increase: 0.02\n    min_pairs: 5\n"))
	if err != nil {
		panic(err)
	}
	var rs []read
	add := func(method, name string, do func(st storage.Store) (any, error)) {
		if method != "" {
			covered[method] = true
		}
		rs = append(rs, read{name, do})
	}
	add("Sweep", "Sweep", func(st storage.Store) (any, error) { return st.Sweep(ctx, adhoc) })
	add("Sweeps", "Sweeps", func(st storage.Store) (any, error) { return st.Sweeps(ctx, 0) })
	add("", "Sweeps limited", func(st storage.Store) (any, error) { return st.Sweeps(ctx, 2) })
	add("CountTrials", "CountTrials", func(st storage.Store) (any, error) { return st.CountTrials(ctx, big) })
	add("Trials", "Trials", func(st storage.Store) (any, error) { return st.Trials(ctx, small) })
	add("EachTrial", "EachTrial", func(st storage.Store) (any, error) {
		var got []record.Trial
		err := st.EachTrial(ctx, big, record.TrialSelect{Arm: "naive"}, func(t record.Trial) error { got = append(got, t); return nil })
		return got, err
	})
	add("", "EachTrial by scenario", func(st storage.Store) (any, error) {
		var ids []string
		err := st.EachTrial(ctx, big, record.TrialSelect{Arm: arms[2], Scenario: scenarios[3]}, func(t record.Trial) error { ids = append(ids, t.TrialID); return nil })
		return ids, err
	})
	add("Trial", "Trial", func(st storage.Store) (any, error) {
		tr, calls, err := st.Trial(ctx, one.TrialID)
		return []any{tr, calls}, err
	})
	add("", "Trial retried", func(st storage.Store) (any, error) {
		tr, calls, err := st.Trial(ctx, retried.TrialID)
		return []any{tr, calls}, err
	})
	add("SweepTrial", "SweepTrial", func(st storage.Store) (any, error) {
		key := storage.TrialKey{Arm: one.Arm, Scenario: one.Scenario, Variant: one.Variant, Seed: one.Seed, TrialID: one.TrialID}
		tr, calls, err := st.SweepTrial(ctx, one.SweepID, key)
		return []any{tr, calls}, err
	})
	add("StoredTrials", "StoredTrials", func(st storage.Store) (any, error) {
		key := func(t record.Trial) storage.TrialKey {
			return storage.TrialKey{Arm: t.Arm, Scenario: t.Scenario, Variant: t.Variant, Seed: t.Seed, TrialID: t.TrialID}
		}
		missing := key(one)
		missing.Seed, missing.TrialID = 999, "nope"
		return st.StoredTrials(ctx, big, []storage.TrialKey{key(one), key(w.trials[len(w.trials)-1]), missing, key(w.trials[0])})
	})
	add("ModelCalls", "ModelCalls", func(st storage.Store) (any, error) { return st.ModelCalls(ctx, withModel.SweepID, withModel.TrialID) })
	add("Spend", "Spend", func(st storage.Store) (any, error) { return st.Spend(ctx, big) })
	add("Cells", "Cells", func(st storage.Store) (any, error) { return st.Cells(ctx, big) })
	add("CaseFaults", "CaseFaults", func(st storage.Store) (any, error) { return st.CaseFaults(ctx, big) })
	add("ReportTotals", "ReportTotals", func(st storage.Store) (any, error) { return st.ReportTotals(ctx, big, "none") })
	add("CompareTotals", "CompareTotals", func(st storage.Store) (any, error) {
		return st.CompareTotals(ctx, record.CompareSide{SweepID: big, Arm: "naive"}, record.CompareSide{SweepID: big, Arm: "careful"}, true, "none")
	})
	add("", "CompareTotals across sweeps", func(st storage.Store) (any, error) {
		return st.CompareTotals(ctx, record.CompareSide{SweepID: small, Arm: arms[2]}, record.CompareSide{SweepID: judged, Arm: arms[2]}, false, "none")
	})
	add("Query", "Query", func(st storage.Store) (any, error) {
		return st.Query(ctx, "SELECT arm, count() AS n, sum(weight) AS w FROM `"+st.(interface{ Database() string }).Database()+"`.trials FINAL GROUP BY arm ORDER BY arm")
	})
	add("Judgements", "Judgements", func(st storage.Store) (any, error) { return st.Judgements(ctx, judged) })
	add("CachedJudgement", "CachedJudgement", func(st storage.Store) (any, error) {
		out, found, err := st.CachedJudgement(ctx, w.cacheKey)
		return []any{out, found}, err
	})
	add("", "CachedJudgement missing", func(st storage.Store) (any, error) {
		k := w.cacheKey
		k.TraceHash = "other"
		out, found, err := st.CachedJudgement(ctx, k)
		return []any{out, found, "asked"}, err
	})
	add("ReviewQueue", "ReviewQueue", func(st storage.Store) (any, error) { return st.ReviewQueue(ctx, judged) })
	add("HumanReviews", "HumanReviews", func(st storage.Store) (any, error) { return st.HumanReviews(ctx, judged) })
	add("ReviewHistory", "ReviewHistory", func(st storage.Store) (any, error) { return st.ReviewHistory(ctx, w.reviews[0].TrialID) })
	// The review UI's reads (storage.ReviewReads).
	add("ListTrials", "ListTrials", func(st storage.Store) (any, error) {
		return st.ListTrials(ctx, big, record.TrialFilter{Arm: "naive", Metric: "harm", Value: "false"}, 3, 20)
	})
	add("", "ListTrials judged", func(st storage.Store) (any, error) {
		return st.ListTrials(ctx, judged, record.TrialFilter{Disagree: true, Fault: faults[0]}, 0, 50)
	})
	add("Regressions", "Regressions", func(st storage.Store) (any, error) {
		return st.Regressions(ctx, record.CompareSide{SweepID: big, Arm: "careful"}, record.CompareSide{SweepID: big, Arm: "naive"}, "recovered", 0, 50)
	})
	add("FindTrial", "FindTrial", func(st storage.Store) (any, error) {
		return st.FindTrial(ctx, one.SweepID, one.Arm, one.Scenario, one.Variant, one.Seed)
	})
	add("TrialJudgement", "TrialJudgement", func(st storage.Store) (any, error) {
		j, found, err := st.TrialJudgement(ctx, w.judged[0].SweepID, w.judged[0].TrialID)
		return []any{j, found}, err
	})
	add("TrialReviews", "TrialReviews", func(st storage.Store) (any, error) {
		return st.TrialReviews(ctx, w.reviews[0].SweepID, w.reviews[0].TrialID)
	})
	add("TrialReviewHistory", "TrialReviewHistory", func(st storage.Store) (any, error) {
		return st.TrialReviewHistory(ctx, w.reviews[0].SweepID, w.reviews[0].TrialID)
	})
	add("SweepVersion", "SweepVersion", func(st storage.Store) (any, error) {
		// The rows' count; their write times are each store's own.
		v, err := st.SweepVersion(ctx, big)
		n, _, _ := strings.Cut(v, "/")
		return n, err
	})
	add("Usage", "Usage", func(st storage.Store) (any, error) {
		return st.Usage(ctx, record.UsageSelect{Agent: "llm:", AgentPrefix: true, Scenarios: scenarios[:3], Limit: 50})
	})
	add("", "Usage exact", func(st storage.Store) (any, error) {
		return st.Usage(ctx, record.UsageSelect{Agent: arms[2], Scenarios: scenarios, Limit: 5})
	})
	// The results' reads: what report, compare, trend, gate, trials and
	// the judge's commands load.
	add("", "report", func(st storage.Store) (any, error) { return report.Load(ctx, st, big) })
	add("", "compare", func(st storage.Store) (any, error) {
		return report.LoadComparison(ctx, st, report.CompareRequest{SweepID: big, Baseline: "naive", Candidate: "careful", Confidence: 0.95, BootstrapReps: 200, FaultClasses: true})
	})
	add("", "compare across sweeps", func(st storage.Store) (any, error) {
		return report.LoadComparison(ctx, st, report.CompareRequest{SweepID: judged, BaselineSweep: small, Baseline: arms[2], Candidate: arms[2], Confidence: 0.9})
	})
	add("", "gate", func(st storage.Store) (any, error) {
		c, err := report.LoadComparison(ctx, st, report.CompareRequest{SweepID: big, Baseline: "careful", Candidate: arms[2], Confidence: th.Confidence})
		if err != nil {
			return nil, err
		}
		return gate.Evaluate(c, th)
	})
	add("", "trend", func(st storage.Store) (any, error) {
		all, err := st.Sweeps(ctx, 0)
		if err != nil {
			return nil, err
		}
		var runs []record.Sweep
		for _, sw := range all {
			if strings.HasPrefix(sw.SweepID, "sched-"+nightlySch+"-") {
				runs = append(runs, sw)
			}
		}
		return report.LoadTrend(ctx, st, runs, []string{"recovered", "harm"})
	})
	add("", "trials", func(st storage.Store) (any, error) {
		return report.ListTrials(ctx, st, big, report.TrialFilter{Arm: "naive", Failing: true})
	})
	add("", "judge pairs", func(st storage.Store) (any, error) { return judgestore.PairsFromStore(ctx, st, judged) })
	add("", "judge agreement", func(st storage.Store) (any, error) { return judgestore.LoadAgreement(ctx, st, judged) })
	add("", "reviews export", func(st storage.Store) (any, error) { return judgestore.ExportReviews(ctx, st, judged) })
	return rs
}

// comparable is a read's answer as JSON, without the times the store sets
// at the time of a write (UpdatedAt, WrittenAt, JudgedAt, QueuedAt,
// ReviewedAt, SentAt): the two stores were written moments apart.
func comparable(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(dropWriteTimes(x))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var writeTimes = map[string]bool{"UpdatedAt": true, "WrittenAt": true, "JudgedAt": true, "QueuedAt": true, "ReviewedAt": true, "SentAt": true,
	"updated_at": true, "written_at": true, "judged_at": true, "queued_at": true, "reviewed_at": true, "sent_at": true}

func dropWriteTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if writeTimes[k] {
				delete(x, k)
				continue
			}
			x[k] = dropWriteTimes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropWriteTimes(e)
		}
	}
	return v
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// ---- the recorded golden ----

type goldenStatement struct{ step, kind, sql string }

// goldenStatements reads the statements of the server transport's
// recorded golden (=== step, --- kind, then the statement).
func goldenStatements(path string) ([]goldenStatement, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []goldenStatement
	var step string
	var cur *goldenStatement
	flush := func() {
		if cur != nil {
			cur.sql = strings.TrimSpace(cur.sql)
			out = append(out, *cur)
			cur = nil
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "=== "):
			flush()
			step = strings.TrimPrefix(line, "=== ")
		case strings.HasPrefix(line, "--- "):
			flush()
			cur = &goldenStatement{step: step, kind: strings.TrimPrefix(line, "--- ")}
		case cur != nil:
			cur.sql += line + "\n"
		}
	}
	flush()
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no statements", path)
	}
	return out, sc.Err()
}

var (
	spaceRe        = regexp.MustCompile(`\s+`)
	nativeFormatRe = regexp.MustCompile(`\s*FORMAT Native$`)
)

// canonicalSent is a statement as sent, to match the golden's: white space
// collapsed, and a batch's INSERT without the FORMAT Native clickhouse-go
// appends.
func canonicalSent(q string) string {
	q = strings.TrimSpace(spaceRe.ReplaceAllString(q, " "))
	return nativeFormatRe.ReplaceAllString(q, "")
}
