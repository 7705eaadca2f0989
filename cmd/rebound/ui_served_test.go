package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/storage/served"
)

// TestUIWhileAWorkerHoldsTheDataDir: a worker runs a sweep and holds the
// data dir; rebound ui on the same data dir reads the sweep through the
// store the worker serves, and a verdict saved with its form is stored by
// the worker (its review endpoint). Once the worker has stopped, the
// verdict is in the data dir: review export, opening the store itself,
// reads it.
func TestUIWhileAWorkerHoldsTheDataDir(t *testing.T) {
	h := startHeldDataDir(t, "ui-served", 1)
	data, plan, cluster, workerErr := h.data, h.plan, h.cluster, h.stderr
	cli := func(want int, args ...string) string {
		t.Helper()
		return h.cli(t, want, args...)
	}
	var started struct {
		SweepID string `json:"sweep_id"`
	}
	if err := json.Unmarshal([]byte(cli(exitOK, append([]string{"sweep", "start", "--wait", "--output", "json", plan}, cluster...)...)), &started); err != nil || started.SweepID == "" {
		t.Fatalf("sweep start: %+v %v", started, err)
	}
	sweep := started.SweepID
	ids := regexp.MustCompile(`"trial_id":\s*"([^"]+)"`).FindStringSubmatch(cli(exitOK, "trials", "--output", "json", "--arm", "naive", "--data-dir", data, sweep))
	if ids == nil {
		t.Fatal("no naive trial listed")
	}
	trial := ids[1]

	// rebound ui on the held data dir.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var uiErr devstacktest.Output
	go func() {
		code := dispatch(ctx, []string{"ui", "--data-dir", data}, pw, &uiErr)
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("rebound ui printed no URL: %v\n%s", err, uiErr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	login := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]+`).FindString(line)
	if login == "" {
		t.Fatalf("no URL in %q", line)
	}
	base := strings.SplitN(login, "/?", 2)[0]
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: time.Minute}
	get := func(path string) string {
		t.Helper()
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s\nui: %s", path, resp.Status, b, uiErr.String())
		}
		return string(b)
	}
	get(strings.TrimPrefix(login, base))
	if page := get("/sweeps/" + url.PathEscape(sweep)); !strings.Contains(page, "Rates") {
		t.Errorf("the sweep page through the served store:\n%s", page)
	}
	if page := get("/sweeps/" + url.PathEscape(sweep) + "/trials?arm=naive"); !strings.Contains(page, trial) {
		t.Errorf("the filtered list does not show %s", trial)
	}
	trialPath := "/trials/" + url.PathEscape(trial)
	if page := get(trialPath); strings.Contains(page, "cannot be saved") {
		t.Fatalf("the trial page is read-only:\n%s", page)
	}
	note := "blind retry after a 502 <b>"
	form := url.Values{"target": {"outcome:recovered"}, "verdict": {"fail"}, "reviewer": {"ana"}, "note": {note}}
	req, _ := http.NewRequest("POST", base+trialPath+"/review", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	noFollow := &http.Client{Jar: jar, Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving a verdict: %s\n%s\nui: %s\nworker: %s", resp.Status, body, uiErr.String(), workerErr.String())
	}
	if page := get(trialPath); !strings.Contains(page, "blind retry after a 502 &lt;b&gt;") || !strings.Contains(page, "History (1 changes") {
		t.Errorf("the trial page after saving does not show the verdict")
	}
	cancel()
	select {
	case code := <-done:
		if code != exitInterrupted {
			t.Errorf("rebound ui: exit %d after Ctrl-C\n%s", code, uiErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("rebound ui did not stop")
	}

	// The worker stops; the verdict is in the data dir.
	h.stop(t)
	if _, found, _ := served.Find(data); found {
		t.Fatal("served.json outlived the worker")
	}
	var export []map[string]any
	if err := json.Unmarshal([]byte(cli(exitOK, "review", "export", "--output", "json", "--data-dir", data, sweep)), &export); err != nil {
		t.Fatal(err)
	}
	if len(export) != 1 || export[0]["trial_id"] != trial || export[0]["note"] != note || export[0]["reviewer"] != "ana" {
		t.Errorf("after the worker stopped, review export: %v", export)
	}
}
