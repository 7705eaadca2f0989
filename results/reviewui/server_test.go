package reviewui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"rebound/results/judge"
	"rebound/results/judge/judgestore"
	"rebound/results/record"
	"rebound/results/report"
)

// TestUI runs the server over a real store: the token is required, every
// page carries the security headers, every view opens, hostile content is
// escaped everywhere, a verdict is stored and changes the agreement, and
// the compare page shows the numbers of rebound compare.
func TestUI(t *testing.T) {
	st := fixture(t, t.TempDir())
	t.Cleanup(func() { st.Close() })
	srv := serve(t, st, true)
	c := client(t, srv)
	ctx := context.Background()
	trials, err := st.Trials(ctx, sweepID)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("token", func(t *testing.T) {
		plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, u := range []string{"/", "/sweeps/" + sweepID, "/trials/" + hostileID, "/static/app.js", "/?token=wrong-token-0123456789"} {
			resp, err := plain.Get(srv.URL + u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s without the token: %s, want 403", u, resp.Status)
			}
		}
		resp, err := plain.Get(srv.URL + "/trials/" + hostileID + "?token=" + testToken + "&target=outcome:recovered")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || strings.Contains(loc, "token") || !strings.Contains(loc, "target=outcome") {
			t.Errorf("token URL: %s to %q, want 303 to the page without the token", resp.Status, loc)
		}
		ck := resp.Cookies()
		if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
			t.Errorf("cookie %+v, want one HttpOnly SameSite=Strict", ck)
		}
		// Another host name (DNS rebinding) is refused even with the token.
		req, _ := http.NewRequest("GET", srv.URL+"/?token="+testToken, nil)
		req.Host = "evil.example:80"
		resp, err = plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("foreign Host: %s, want 421", resp.Status)
		}
		// A cross-origin POST is refused even with the cookie.
		req, _ = http.NewRequest("POST", srv.URL+"/trials/"+hostileID+"/review", strings.NewReader(q("target", "outcome:recovered", "verdict", "pass", "reviewer", "x")))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://evil.example")
		resp, err = c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-origin POST: %s, want 403", resp.Status)
		}
	})

	var someTrial record.Trial
	for _, tr := range trials {
		if tr.Arm == "naive-retrier" && tr.Scenario == "charge-502-twice" {
			someTrial = tr
		}
	}
	views := map[string][]string{
		"/":                                 {sweepID},
		"/sweeps/" + sweepID:                {"Rates", "recovered", "harm"},
		"/sweeps/" + sweepID + "/trials":    {"trial(s) match", someTrial.TrialID},
		"/sweeps/" + sweepID + "/queue":     {"invalid output"},
		"/sweeps/" + sweepID + "/agreement": {"The judge against the checks"},
		"/trials/" + someTrial.TrialID:      {"Causal pivot", "Checks, with the calls that prove them", "charge"},
		"/trials/" + hostileID:              {"The judge (", "Your verdict"},
		"/sweeps/" + sweepID + "/compare?" + q("baseline", "careful", "candidate", "naive-retrier"):                            {"Paired differences", "forest"},
		"/sweeps/" + sweepID + "/regressions?" + q("baseline", "careful", "candidate", "naive-retrier", "metric", "recovered"): {"paired case(s)"},
		"/sweeps/" + sweepID + "/case?" + q("scenario", "refund-timeout-after-send", "variant", "timeout-after-send", "seed", "1", "a", "naive-retrier", "b", "careful"): {
			"Verdict differences", `id="first-divergence"`, `<tr class="differs"><td>`, "careful: <strong>payments.refund_status</strong>", `class="newtool"`},
	}
	t.Run("views", func(t *testing.T) {
		for u, wants := range views {
			code, body := get(t, c, srv.URL+u)
			if code != http.StatusOK {
				t.Errorf("%s: %d %s", u, code, body)
				continue
			}
			for _, w := range wants {
				if !strings.Contains(body, w) {
					t.Errorf("%s: no %q in the page", u, w)
				}
			}
		}
		for u, want := range map[string]int{
			"/sweeps/nope":                    404,
			"/trials/nope":                    404,
			"/sweeps/" + sweepID + "/compare": 400,
			"/sweeps/" + sweepID + "/compare?" + q("baseline", "careful", "candidate", "nope"): 500,
			"/sweeps/" + sweepID + "/case?seed=x":                                              400,
		} {
			if code, _ := get(t, c, srv.URL+u); code != want {
				t.Errorf("%s: %d, want %d", u, code, want)
			}
		}
	})

	t.Run("headers", func(t *testing.T) {
		resp, err := c.Get(srv.URL + "/trials/" + hostileID)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		for _, w := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, w) {
				t.Errorf("CSP %q lacks %q", csp, w)
			}
		}
		if strings.Contains(csp, "script-src 'self' 'unsafe") {
			t.Errorf("CSP allows inline scripts: %q", csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("headers %v", resp.Header)
		}
	})

	t.Run("hostile", func(t *testing.T) {
		pages := []string{"/trials/" + hostileID, "/sweeps/" + sweepID + "/trials", "/sweeps/" + sweepID + "/queue",
			"/sweeps/" + sweepID + "/case?" + q("scenario", "charge-502-twice", "variant", "v"+hostile[2], "seed", "1", "a", "evil"+hostile[1], "b", "evil"+hostile[1]),
			"/sweeps/" + sweepID + "/trials?" + q("arm", "evil"+hostile[1], "scenario", hostile[0], "check", hostile[1])}
		for _, u := range pages {
			code, body := get(t, c, srv.URL+u)
			if code != http.StatusOK {
				t.Errorf("%s: %d", u, code)
				continue
			}
			assertNoBreakout(t, u, body)
		}
		// The hostile text is shown (escaped), not dropped.
		_, body := get(t, c, srv.URL+"/trials/"+hostileID)
		if !strings.Contains(body, "&lt;/script&gt;&lt;script&gt;alert(&#34;x1&#34;)&lt;/script&gt;") {
			t.Errorf("the hostile claim is not shown escaped")
		}
	})

	t.Run("review", func(t *testing.T) {
		before, err := judgestore.LoadAgreement(ctx, st, sweepID)
		if err != nil {
			t.Fatal(err)
		}
		if len(before.VsHumans) != 0 {
			t.Fatalf("agreement with people before any review: %+v", before.VsHumans)
		}
		post := func(form url.Values) int {
			t.Helper()
			nr := &http.Client{Jar: c.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := nr.PostForm(srv.URL+"/trials/"+hostileID+"/review", form)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		for _, bad := range []url.Values{
			{"target": {"outcome:nope"}, "verdict": {"pass"}, "reviewer": {"ana"}},
			{"target": {"outcome:recovered"}, "verdict": {"maybe"}, "reviewer": {"ana"}},
			{"target": {"outcome:recovered"}, "verdict": {"pass"}, "reviewer": {" "}},
			{"target": {"judge:recovered"}, "verdict": {"pass"}, "reviewer": {"ana"}},
			{"target": {"outcome:recovered"}, "verdict": {"pass"}, "reviewer": {"ana"}, "note": {strings.Repeat("x", MaxNote+1)}},
		} {
			if code := post(bad); code != http.StatusBadRequest {
				t.Errorf("bad review %v: %d, want 400", bad, code)
			}
		}
		note := hostileText()
		for _, f := range []url.Values{
			{"target": {"judge:error_detection"}, "verdict": {"fail"}, "reviewer": {"ana" + hostile[1]}, "note": {note}},
			{"target": {"judge:backoff_behavior"}, "verdict": {"fail"}, "reviewer": {"ana"}},
			{"target": {"outcome:recovered"}, "verdict": {"fail"}, "reviewer": {"ana"}},
		} {
			if code := post(f); code != http.StatusSeeOther {
				t.Fatalf("review %v: %d, want 303", f, code)
			}
		}
		after, err := judgestore.LoadAgreement(ctx, st, sweepID)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]judge.HumanAgreement{}
		for _, h := range after.VsHumans {
			rows[h.Target+"/"+h.Rater] = h
		}
		// The judge scored error_detection 5 (pass) and backoff 2 (fail); the
		// person failed both: one disagreement, one agreement.
		if h := rows["judge:error_detection/judge"]; h.N != 1 || h.RaterPassOnly != 1 {
			t.Errorf("judge vs human on error_detection: %+v", h)
		}
		if h := rows["judge:backoff_behavior/judge"]; h.N != 1 || h.BothFail != 1 {
			t.Errorf("judge vs human on backoff_behavior: %+v", h)
		}
		if _, ok := rows["outcome:recovered/checks"]; !ok {
			t.Errorf("no checks-vs-human row for recovered: %v", after.VsHumans)
		}
		exported, err := judgestore.ExportReviews(ctx, st, sweepID)
		if err != nil {
			t.Fatal(err)
		}
		if len(exported) != 3 {
			t.Fatalf("export: %d rows, want 3", len(exported))
		}
		for _, e := range exported {
			switch e.Target {
			case "judge:error_detection":
				if e.JudgeScore != 5 || e.Human != "fail" || e.Note != note || e.Reviewer != "ana"+hostile[1] || e.JudgeWhy != hostileText() || e.Arm != "evil"+hostile[1] {
					t.Errorf("export row %+v", e)
				}
			case "judge:backoff_behavior":
				if e.JudgeScore != 2 || e.Checks == "" && e.JudgeModel == "" {
					t.Errorf("export row %+v", e)
				}
			case "outcome:recovered":
				if e.JudgeScore != 0 || e.Human != "fail" {
					t.Errorf("export row %+v", e)
				}
			default:
				t.Errorf("export row on %s", e.Target)
			}
		}
		_, body := get(t, c, srv.URL+"/trials/"+hostileID)
		assertNoBreakout(t, "trial after review", body)
		if !strings.Contains(body, "History (3 changes") {
			t.Errorf("the trial page does not list the three changes")
		}
		_, body = get(t, c, srv.URL+"/sweeps/"+sweepID+"/agreement")
		if !strings.Contains(body, "judge error_detection") {
			t.Errorf("the agreement page does not show the human rows")
		}
		// Read-only: the form says why and a POST is refused.
		ro := serve(t, st, false)
		rc := client(t, ro)
		_, body = get(t, rc, ro.URL+"/trials/"+hostileID)
		if !strings.Contains(body, "Verdicts cannot be saved: the test says so") {
			t.Errorf("a read-only UI does not say why")
		}
		resp, err := rc.PostForm(ro.URL+"/trials/"+hostileID+"/review", url.Values{"target": {"outcome:recovered"}, "verdict": {"pass"}, "reviewer": {"x"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			t.Errorf("read-only POST: %s", resp.Status)
		}
	})

	t.Run("compare numbers", func(t *testing.T) {
		cmp, err := report.LoadComparison(ctx, st, report.CompareRequest{SweepID: sweepID, Baseline: "careful", Candidate: "fabricator",
			Confidence: report.Confidence, FaultClasses: true})
		if err != nil {
			t.Fatal(err)
		}
		_, body := get(t, c, srv.URL+"/sweeps/"+sweepID+"/compare?"+q("baseline", "careful", "candidate", "fabricator"))
		if !strings.Contains(body, cmp.HTMLBody()) {
			t.Errorf("the compare page does not hold rebound compare's HTML body")
		}
		for _, d := range cmp.Metrics {
			if !strings.Contains(body, fmt.Sprintf("metric=%s", d.Metric)) {
				t.Errorf("no regressing-cases link for %s", d.Metric)
			}
		}
	})
}

// assertNoBreakout parses the page as a browser would and fails on
// anything the hostile strings would create had they broken out: a script
// element other than the app's own, an img or a style element in the
// body other than the comparison's, an inline event handler, a
// javascript: URL; and on the token appearing in the page.
func assertNoBreakout(t *testing.T, where, body string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	scripts := 0
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script":
				scripts++
				if attr(n, "src") != "/static/app.js" || n.FirstChild != nil {
					t.Errorf("%s: a script element that is not the app's: %v", where, n.Attr)
				}
			case "img", "iframe", "object", "embed", "base", "meta", "link":
				if !(n.Data == "meta" || (n.Data == "link" && attr(n, "href") == "/static/app.css")) {
					t.Errorf("%s: a %s element: %v", where, n.Data, n.Attr)
				}
			case "style":
				if c := n.FirstChild; c != nil && !strings.HasPrefix(strings.TrimSpace(c.Data), "body{") {
					t.Errorf("%s: a style element that is not the report's: %.60q", where, c.Data)
				}
			}
			for _, a := range n.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				if strings.HasPrefix(a.Key, "on") || ((a.Key == "href" || a.Key == "src" || a.Key == "action") && strings.HasPrefix(v, "javascript:")) {
					t.Errorf("%s: hostile attribute %s=%q on <%s>", where, a.Key, a.Val, n.Data)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if scripts != 1 {
		t.Errorf("%s: %d script elements, want the app's one", where, scripts)
	}
	if strings.Contains(body, testToken) {
		t.Errorf("%s: the token is in the page", where)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
