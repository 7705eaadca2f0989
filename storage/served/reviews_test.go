package served_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"rebound/results/record"
	"rebound/storage"
	"rebound/storage/served"
)

// The review UI's reads answer through the served store as in process:
// their statements pass the read-only door.
func TestReviewReadsThroughTheServerTransport(t *testing.T) {
	need(t)
	ctx := context.Background()
	remote := client(t)
	first := sweepA + "/careful/s1/1"
	reads := []read{
		{"ListTrials", func(st storage.Store) (any, error) {
			return st.ListTrials(ctx, sweepA, record.TrialFilter{Arm: "naive", Metric: "harm", Value: "false", Fault: "transient"}, 1, 3)
		}},
		{"ListTrials judged", func(st storage.Store) (any, error) {
			return st.ListTrials(ctx, sweepA, record.TrialFilter{Disagree: true, Dimension: "retry_decision", Check: "x", Status: "pass"}, 0, 10)
		}},
		{"Regressions", func(st storage.Store) (any, error) {
			return st.Regressions(ctx, record.CompareSide{SweepID: sweepA, Arm: "careful"}, record.CompareSide{SweepID: sweepB, Arm: "naive"}, "recovered", 0, 10)
		}},
		{"FindTrial", func(st storage.Store) (any, error) { return st.FindTrial(ctx, sweepA, "careful", "s1", "v1", 1) }},
		{"TrialJudgement", func(st storage.Store) (any, error) {
			j, found, err := st.TrialJudgement(ctx, sweepA, first)
			return []any{j, found}, err
		}},
		{"TrialReviews", func(st storage.Store) (any, error) { return st.TrialReviews(ctx, sweepA, first) }},
		{"TrialReviewHistory", func(st storage.Store) (any, error) { return st.TrialReviewHistory(ctx, sweepA, first) }},
		{"SweepVersion", func(st storage.Store) (any, error) { return st.SweepVersion(ctx, sweepA) }},
		{"PairOutcomes", func(st storage.Store) (any, error) {
			return st.(interface {
				PairOutcomes(ctx context.Context, sweepID string, variants map[string][]string) ([]record.Trial, error)
			}).PairOutcomes(ctx, sweepB, map[string][]string{"s2": {"v1", "v1"}, "s1": {"v1"}, "none'": {"x"}})
		}},
	}
	sameReads(t, reads, fx.st, remote)
}

// The review endpoint takes one valid review of a stored trial, with the
// data dir's credential, and refuses everything else; the SQL door stays
// read-only.
func TestReviewEndpoint(t *testing.T) {
	need(t)
	ctx := context.Background()
	door, err := storage.NewDoor(ctx, fx.st, storage.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// Its own key directory: the fixture's holds one credential.
	t.Setenv("REBOUND_KEY_DIR", filepath.Join(t.TempDir(), "keys"))
	data := filepath.Join(t.TempDir(), "data")
	srv, err := served.Serve(door, served.Options{DataDir: data, Reviews: fx.st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	secret, err := served.Credential(data)
	if err != nil {
		t.Fatal(err)
	}
	ep := srv.Endpoint()
	trial := sweepB + "/naive/s2/3"
	valid := `{"sweep_id":"` + sweepB + `","trial_id":"` + trial + `","target":"outcome:recovered","verdict":"fail","reviewer":"ana","note":"the retry was blind"}`
	do := func(method, body, ctype string, auth bool) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+ep.Address+served.ReviewPath, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if auth {
			req.SetBasicAuth(served.User, secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	refused := []struct {
		name, method, body, ctype string
		auth                      bool
		code                      int
		says                      string
	}{
		{"no credential", "POST", valid, "application/json", false, 401, "authentication"},
		{"GET", "GET", "", "", true, 405, "POST"},
		{"a form", "POST", "target=outcome:recovered", "application/x-www-form-urlencoded", true, 415, "application/json"},
		{"unknown field", "POST", strings.Replace(valid, `"note"`, `"sql":"DROP","note"`, 1), "application/json", true, 400, "unknown field"},
		{"two objects", "POST", valid + valid, "application/json", true, 400, "one JSON object"},
		{"unknown target", "POST", strings.Replace(valid, "outcome:recovered", "outcome:weight", 1), "application/json", true, 400, "unknown target"},
		{"unknown verdict", "POST", strings.Replace(valid, `"fail"`, `"maybe"`, 1), "application/json", true, 400, "verdict"},
		{"no reviewer", "POST", strings.Replace(valid, `"ana"`, `"  "`, 1), "application/json", true, 400, "reviewer"},
		{"long note", "POST", strings.Replace(valid, "the retry was blind", strings.Repeat("x", record.MaxReviewNote+1), 1), "application/json", true, 400, "limited"},
		{"unknown trial", "POST", strings.Replace(valid, trial, "nope", 1), "application/json", true, 404, "no trial"},
		{"another sweep's trial", "POST", strings.Replace(valid, `"sweep_id":"`+sweepB, `"sweep_id":"`+sweepA, 1), "application/json", true, 400, "is of sweep"},
	}
	for _, c := range refused {
		code, body := do(c.method, c.body, c.ctype, c.auth)
		if code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, code, body, c.code, c.says)
		}
	}
	if got, err := fx.st.TrialReviewHistory(ctx, sweepB, trial); err != nil || len(got) != 0 {
		t.Fatalf("refused reviews were stored: %v %v", got, err)
	}
	w := served.NewReviewWriter(ep, secret)
	if err := w.PutReview(ctx, record.Review{SweepID: sweepB, TrialID: trial, Target: "outcome:recovered", Verdict: record.ReviewFail, Reviewer: "ana", Note: "the retry was blind"}); err != nil {
		t.Fatal(err)
	}
	got, err := fx.st.TrialReviews(ctx, sweepB, trial)
	if err != nil || len(got) != 1 || got[0].Reviewer != "ana" || got[0].Note != "the retry was blind" || got[0].Verdict != record.ReviewFail {
		t.Fatalf("the review in force: %+v %v", got, err)
	}
	// The writer names the endpoint's reason for a refusal.
	if err := served.NewReviewWriter(ep, "wrong").PutReview(ctx, got[0]); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong credential: %v", err)
	}
	// The SQL door takes no write, to the reviews table or any other.
	q := url.Values{"query": {"INSERT INTO reviews (sweep_id, trial_id, target, verdict, reviewer) VALUES ('a', 'b', 'outcome:recovered', 'pass', 'eve')"}}
	req, _ := http.NewRequest("POST", "http://"+ep.Address+"/?"+q.Encode(), nil)
	req.SetBasicAuth(served.User, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Error("an INSERT through the SQL door succeeded")
	}
}
