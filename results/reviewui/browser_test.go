package reviewui

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"rebound/internal/devstack/devstacktest"
	"rebound/results/judge/judgestore"
)

// browser starts the system Chromium headless with a fresh profile and no
// background traffic, and fails the test if any page opens a JavaScript
// dialog (the hostile strings call alert).
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := devstacktest.Chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	dialogs := chromedp.Events(ctx, cdppage.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			t.Errorf("a page opened a JavaScript dialog: %q (hostile content ran)", ev.Message)
			_, _ = chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return ctx
}

// do runs browser steps, failing the test on an error (each bounded to a
// minute).
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// submit clicks a form's submit button and waits until the browser has
// loaded the page the form led to (a new document: the old one is marked
// before the click), and returns its address.
func submit(t *testing.T, ctx context.Context, button string) string {
	t.Helper()
	val(t, ctx, "mark the page", chromedp.Evaluate[bool](`window.__before_submit = true`))
	do(t, ctx, "submit", chromedp.Click(chromedp.CSS(button)))
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		loaded, err := chromedp.Run(c, chromedp.Evaluate[bool](`window.__before_submit === undefined && document.readyState === "complete"`))
		cancel()
		if err == nil && loaded {
			return val(t, ctx, "location", chromedp.Location())
		}
	}
	t.Fatalf("no new page after submitting %s", button)
	return ""
}

// val runs one browser action that returns a value.
func val[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// screenshot saves the page as NAME.png among the test's artifacts
// (go test -artifacts -outputdir DIR keeps them).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := val(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowser drives the UI in a real browser: the main views open (and
// are kept as screenshots), the side-by-side view opens at its first
// divergence with the keyboard focus there, a verdict is set with the
// form, survives a restart of the server and the store and changes the
// agreement, deep links round-trip through the filter form, the first Tab
// reaches the skip link, and no hostile string runs.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	st := fixture(t, dir)
	closed := false
	t.Cleanup(func() {
		if !closed {
			st.Close()
		}
	})
	srv := serve(t, st, true)
	base := srv.URL
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	do(t, ctx, "log in", chromedp.Navigate(base+"/?token="+testToken), chromedp.WaitVisible(css("h1")))
	if title := val(t, ctx, "title", chromedp.Text(css("h1"))); title != "sweeps" {
		t.Fatalf("first page h1 %q, want sweeps", title)
	}
	if loc := val(t, ctx, "location", chromedp.Location()); strings.Contains(loc, "token") {
		t.Errorf("the token stayed in the address bar: %s", loc)
	}
	screenshot(t, ctx, "sweeps")

	views := []struct{ name, path, want string }{
		{"sweep", "/sweeps/" + sweepID, "Rates"},
		{"compare", "/sweeps/" + sweepID + "/compare?" + q("baseline", "careful", "candidate", "naive-retrier"), "Paired differences"},
		{"trials", "/sweeps/" + sweepID + "/trials", "trial(s) match"},
		{"trial-hostile", "/trials/" + hostileID, "Causal pivot"},
		{"queue", "/sweeps/" + sweepID + "/queue", "review queue"},
		{"agreement", "/sweeps/" + sweepID + "/agreement", "The judge against the checks"},
	}
	for _, v := range views {
		do(t, ctx, v.name, chromedp.Navigate(base+v.path), chromedp.WaitVisible(css("main")))
		if text := val(t, ctx, v.name, chromedp.Text(css("main"))); !strings.Contains(text, v.want) {
			t.Errorf("%s: no %q on the page", v.name, v.want)
		}
		screenshot(t, ctx, v.name)
	}

	t.Run("side by side opens at the first divergence", func(t *testing.T) {
		u := base + "/sweeps/" + sweepID + "/case?" + q("scenario", "refund-timeout-after-send", "variant", "timeout-after-send", "seed", "1", "a", "naive-retrier", "b", "careful")
		do(t, ctx, "case", chromedp.Navigate(u), chromedp.WaitVisible(css("#first-divergence")))
		val(t, ctx, "focus", chromedp.Poll[bool](`document.activeElement && document.activeElement.id === "first-divergence"`, chromedp.WithPollingTimeout(10*time.Second)))
		inView := val(t, ctx, "in view", chromedp.Evaluate[bool](`(function(){var r=document.getElementById("first-divergence").getBoundingClientRect();return r.top>=0&&r.bottom<=window.innerHeight;})()`))
		if !inView {
			t.Errorf("the first divergence is not in view")
		}
		if first := val(t, ctx, "differences", chromedp.Text(css("#verdict-differences + table tbody tr"))); first == "" {
			t.Errorf("no verdict difference listed first")
		}
		if tool := val(t, ctx, "new tool", chromedp.Text(css("td.newtool code"))); tool != "payments.refund_status" {
			t.Errorf("the tool only the careful arm called is %q, want payments.refund_status highlighted", tool)
		}
		screenshot(t, ctx, "side-by-side")
	})

	t.Run("keyboard and labels", func(t *testing.T) {
		do(t, ctx, "tab", chromedp.Navigate(base+"/sweeps/"+sweepID), chromedp.WaitVisible(css("main")), chromedp.KeyEvent("\t"))
		if cls := val(t, ctx, "focus", chromedp.Evaluate[string](`document.activeElement.className`)); cls != "skip" {
			t.Errorf("the first Tab reaches %q, want the skip link", cls)
		}
		for _, path := range []string{"/sweeps/" + sweepID + "/trials", "/trials/" + hostileID, "/sweeps/" + sweepID} {
			do(t, ctx, "labels", chromedp.Navigate(base+path), chromedp.WaitVisible(css("main")))
			n := val(t, ctx, "unlabeled", chromedp.Evaluate[int](`Array.from(document.querySelectorAll("input,select,textarea")).filter(function(e){return e.labels===null||e.labels.length===0;}).length`))
			if n != 0 {
				t.Errorf("%s: %d form controls without a label", path, n)
			}
		}
	})

	t.Run("deep links round-trip", func(t *testing.T) {
		path := "/sweeps/" + sweepID + "/trials?" + q("arm", "careful", "metric", "recovered", "value", "true")
		do(t, ctx, "filtered list", chromedp.Navigate(base+path), chromedp.WaitVisible(css("form.filters")))
		arm := val(t, ctx, "arm", chromedp.Value(css(`select[name="arm"]`)))
		metric := val(t, ctx, "metric", chromedp.Value(css(`select[name="metric"]`)))
		value := val(t, ctx, "value", chromedp.Value(css(`select[name="value"]`)))
		if arm != "careful" || metric != "recovered" || value != "true" {
			t.Errorf("the form does not show the link's filter: arm %q metric %q value %q", arm, metric, value)
		}
		arms := val(t, ctx, "rows", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("main table tbody tr td:nth-child(2)")).map(function(td){return td.textContent;})`))
		if len(arms) == 0 {
			t.Fatal("no careful trial recovered: the fixture changed")
		}
		for _, a := range arms {
			if a != "careful" {
				t.Errorf("a %q trial in a list filtered to careful", a)
			}
		}
		// Submitting the form unchanged gives the same filter back.
		loc := submit(t, ctx, `form.filters button[type="submit"]`)
		if got, want := filterOf(mustRequest(t, loc)), filterOf(mustRequest(t, base+path)); got != want {
			t.Errorf("round trip: %+v, want %+v (%s)", got, want, loc)
		}
		do(t, ctx, "preselected target", chromedp.Navigate(base+"/trials/"+hostileID+"?target=judge:backoff_behavior"), chromedp.WaitVisible(css("#target")))
		if sel := val(t, ctx, "target", chromedp.Value(css("#target"))); sel != "judge:backoff_behavior" {
			t.Errorf("a link to a trial's review of a target preselects %q", sel)
		}
	})

	t.Run("contrast and keyboard on every main view", func(t *testing.T) {
		main := append([]struct{ name, path, want string }{
			{"sweeps", "/", "sweeps"},
			{"side-by-side", "/sweeps/" + sweepID + "/case?" + q("scenario", "refund-timeout-after-send", "variant", "timeout-after-send", "seed", "1", "a", "naive-retrier", "b", "careful"), "first divergence"},
			{"regressions", "/sweeps/" + sweepID + "/regressions?" + q("baseline", "careful", "candidate", "naive-retrier", "metric", "recovered"), "did worse"},
		}, views...)
		for _, v := range main {
			do(t, ctx, v.name, chromedp.Navigate(base+v.path), chromedp.WaitVisible(css("main")))
			checkContrast(t, ctx, v.name)
			checkKeyboard(t, ctx, v.name)
		}
	})

	t.Run("a verdict survives a restart and changes the agreement", func(t *testing.T) {
		before, err := judgestore.LoadAgreement(context.Background(), st, sweepID)
		if err != nil {
			t.Fatal(err)
		}
		note := "the 502 was seen; " + hostile[0]
		do(t, ctx, "review", chromedp.Navigate(base+"/trials/"+hostileID+"?target=judge:error_detection"),
			chromedp.WaitVisible(css("form.review")),
			chromedp.Click(css(`input[name="verdict"][value="fail"]`)),
			chromedp.SendKeys(css("#reviewer"), "ana"),
			chromedp.SendKeys(css("#note"), note))
		// The form posts, and the server redirects back to the trial's
		// review section.
		if loc := submit(t, ctx, `form.review button[type="submit"]`); !strings.HasSuffix(loc, "/trials/"+hostileID+"#review") {
			t.Fatalf("after the post the page is %s", loc)
		}
		if h := val(t, ctx, "saved", chromedp.Text(css("#history"))); !strings.Contains(h, "History (1 changes") {
			t.Errorf("after saving: %q", h)
		}
		screenshot(t, ctx, "trial-reviewed")
		// Restart: the server and the store go away and come back on the
		// same data dir.
		srv.Close()
		st.Close()
		closed = true
		st2 := openStore(t, dir)
		t.Cleanup(func() { st2.Close() })
		ui, err := New(st2, Options{Token: testToken, Writer: st2})
		if err != nil {
			t.Fatal(err)
		}
		srv2 := httptest.NewServer(ui)
		t.Cleanup(srv2.Close)
		do(t, ctx, "after restart", chromedp.Navigate(srv2.URL+"/?token="+testToken), chromedp.WaitVisible(css("main")),
			chromedp.Navigate(srv2.URL+"/trials/"+hostileID), chromedp.WaitVisible(css("#history")))
		history := val(t, ctx, "history", chromedp.Text(css("#history + table")))
		if !strings.Contains(history, note) || !strings.Contains(history, "ana") || !strings.Contains(history, "judge error_detection") {
			t.Errorf("after a restart the history reads %q", history)
		}
		after, err := judgestore.LoadAgreement(context.Background(), st2, sweepID)
		if err != nil {
			t.Fatal(err)
		}
		if len(before.VsHumans) != 0 || len(after.VsHumans) != 2 {
			t.Fatalf("agreement with people: %d rows before, %d after; want 0 and 2 (judge and checks on error_detection)", len(before.VsHumans), len(after.VsHumans))
		}
		for _, h := range after.VsHumans {
			if h.Target != "judge:error_detection" {
				t.Errorf("row on %s", h.Target)
			}
			// The judge scored 5 (pass) and the person said fail.
			if h.Rater == "judge" && (h.N != 1 || h.RaterPassOnly != 1) {
				t.Errorf("judge vs human: %+v", h)
			}
		}
		do(t, ctx, "agreement page", chromedp.Navigate(srv2.URL+"/sweeps/"+sweepID+"/agreement"), chromedp.WaitVisible(css("main")))
		if text := val(t, ctx, "agreement", chromedp.Text(css("main"))); !strings.Contains(text, "judge error_detection") {
			t.Errorf("the agreement page does not show the person's verdict")
		}
		screenshot(t, ctx, "agreement-after-review")
	})
}
