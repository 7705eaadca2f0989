package reviewui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/results/record"
	"rebound/results/report"
	"rebound/results/report/readbench"
	"rebound/storage"
)

// BenchmarkPages measures the review UI's pages over a sweep of 60,720
// trials (REVIEWUI_BENCH_TRIALS to change it) stored synthetically with
// readbench's generator, in the same embedded store as a real quickstart
// sweep whose trials have calls and verdicts: each page is one request
// through the whole server (token cookie, store reads, template), timed
// from request to the last byte. The bars: a sweep page under
// 1 s, a trial page under 200 ms.
//
//	go test -run '^$' -bench Pages -benchtime 3x ./results/reviewui/
func BenchmarkPages(b *testing.B) {
	lib := devstacktest.ChDBLib(b)
	n := 60_720
	if s := os.Getenv("REVIEWUI_BENCH_TRIALS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("REVIEWUI_BENCH_TRIALS=%q: want a positive number", s)
		}
		n = v
	}
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Config{DataDir: b.TempDir(), LibPath: lib}) // database "rebound": readbench's
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	for _, q := range readbench.InsertSQL(n) {
		if _, err := st.Query(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	// Its plan declares a metamorphic pair on every scenario, as most of
	// the shipped scenarios do: the report checks them (report.LoadPairs).
	var pairs []string
	for i := range readbench.Scenarios {
		pairs = append(pairs, fmt.Sprintf(`{"name":"scenario-%03d","metamorphic":[{"base":"v0","flipped":"v1","property":"other","expect":{"recovered":{"from":true,"to":true}}}]}`, i))
	}
	if _, err := st.Query(ctx, fmt.Sprintf(`INSERT INTO rebound.sweeps (sweep_id, name, plan_hash, plan_json, trials_planned, arms, status, created_at, updated_at)
SELECT sweep_id, name, plan_hash, '{"scenarios":[%s]}', trials_planned, arms, status, created_at, updated_at + INTERVAL 1 SECOND
FROM rebound.sweeps FINAL WHERE sweep_id = '%s'`, strings.Join(pairs, ","), readbench.SweepID)); err != nil {
		b.Fatal(err)
	}
	if got, err := st.CountTrials(ctx, readbench.SweepID); err != nil || got != uint64(n) {
		b.Fatalf("stored %d synthetic trials (%v), want %d", got, err, n)
	}
	storeSweep(b, st, sweepID, "examples/plans/quickstart.yaml", []uint64{1})
	trials, err := st.Trials(ctx, sweepID)
	if err != nil || len(trials) == 0 {
		b.Fatalf("quickstart trials: %v", err)
	}
	var trialID string
	for _, t := range trials {
		if t.Arm == "naive-retrier" && t.Scenario == "refund-timeout-after-send" {
			trialID = t.TrialID
		}
	}
	if err := st.PutReview(ctx, record.Review{SweepID: sweepID, TrialID: trialID, Target: "outcome:recovered", Verdict: record.ReviewFail, Reviewer: "bench"}); err != nil {
		b.Fatal(err)
	}
	// The trial's sweep holds as many judgements and human verdicts as the
	// synthetic sweep has trials: a trial page must read its own only.
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO rebound.judgements (sweep_id, trial_id, scenario, error_detection, retry_decision, backoff_behavior,
    escalation_correctness, context_preservation, aggregate, recommendation, judged_at)
SELECT '%s', concat('j-', toString(number)), 'refund', 4, 4, 2, 5, 3, 3.6, 'review', now64(3) FROM numbers(%d)`, sweepID, n),
		fmt.Sprintf(`INSERT INTO rebound.reviews (sweep_id, trial_id, target, verdict, reviewer, note, reviewed_at)
SELECT '%s', concat('j-', toString(number)), 'judge:backoff_behavior', 'fail', 'bench', 'too fast', now64(3) FROM numbers(%d)`, sweepID, n),
	} {
		if _, err := st.Query(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	ui, err := New(st, Options{Token: testToken, Writer: st})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(ui)
	defer srv.Close()
	c := client(b, srv)
	syn := "/sweeps/" + readbench.SweepID
	// A page marked cold is timed as on its first opening: the reports and
	// comparisons the server keeps are dropped before each request. The
	// same page again is timed as reopened.
	pages := []struct {
		name, path string
		cold       bool
	}{
		{"sweep", syn, true},
		{"sweep-reopened", syn, false},
		{"trial", "/trials/" + trialID, false},
		{"compare", syn + "/compare?" + q("baseline", readbench.Arms[0], "candidate", readbench.Arms[1]), true},
		{"compare-reopened", syn + "/compare?" + q("baseline", readbench.Arms[0], "candidate", readbench.Arms[1]), false},
		{"trials-filtered", syn + "/trials?" + q("arm", readbench.Arms[1], "metric", "recovered", "value", "false"), false},
		{"trials-filtered-page-50", syn + "/trials?" + q("metric", "harm", "value", "false", "page", "50"), false},
		{"regressions", syn + "/regressions?" + q("baseline", readbench.Arms[0], "candidate", readbench.Arms[1], "metric", "recovered"), false},
		{"side-by-side", "/sweeps/" + sweepID + "/case?" + q("scenario", "refund-timeout-after-send", "variant", "timeout-after-send", "seed", "1", "a", "naive-retrier", "b", "careful"), false},
	}
	if sum, err := report.Load(ctx, st, readbench.SweepID); err != nil || len(sum.Pairs) != 4*readbench.Scenarios {
		b.Fatalf("the synthetic sweep's report checks %d pairs (%v), want one per arm and scenario", len(sum.Pairs), err)
	}
	for _, p := range pages { // warm: the first read of a table loads its marks
		if code, body := get(b, c, srv.URL+p.path); code != http.StatusOK {
			b.Fatalf("%s: %d %.300s", p.name, code, body)
		}
	}
	b.ResetTimer()
	for _, p := range pages {
		var total time.Duration
		var worst time.Duration
		for range b.N {
			if p.cold {
				ui.summaries = newVersioned[string, report.Summary](16)
				ui.comparisons = newVersioned[report.CompareRequest, report.Comparison](16)
			}
			start := time.Now()
			if code, _ := get(b, c, srv.URL+p.path); code != http.StatusOK {
				b.Fatalf("%s: %d", p.name, code)
			}
			d := time.Since(start)
			total += d
			worst = max(worst, d)
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), p.name+"-ms")
		b.ReportMetric(float64(worst.Milliseconds()), p.name+"-max-ms")
	}
	// The reads behind the sweep and compare pages, called directly: what
	// rebound report and rebound compare spend on the same store in the
	// same run, so the page's own cost is the difference.
	for _, r := range []struct {
		name string
		read func() error
	}{
		{"report-load", func() error { _, err := report.Load(ctx, st, readbench.SweepID); return err }},
		{"compare-load", func() error {
			_, err := report.LoadComparison(ctx, st, report.CompareRequest{SweepID: readbench.SweepID, Baseline: readbench.Arms[0], Candidate: readbench.Arms[1],
				Confidence: report.Confidence, FaultClasses: true})
			return err
		}},
	} {
		var total time.Duration
		for range b.N {
			start := time.Now()
			if err := r.read(); err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), r.name+"-ms")
	}
}
