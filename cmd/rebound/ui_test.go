package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/storage"
)

func TestUIListenIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:80", "example.com:80", "nonsense"} {
		code, _, errOut := runCLI(t, "ui", "--listen", addr, "--data-dir", t.TempDir())
		if code != exitUsage || !strings.Contains(errOut, "--listen") {
			t.Errorf("ui --listen %s: exit %d, want 2 naming --listen\n%s", addr, code, errOut)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:8080", "localhost:1"} {
		if err := loopbackListen(addr); err != nil {
			t.Errorf("%s refused: %v", addr, err)
		}
	}
}

// TestUIServes: rebound ui on a real store prints a URL with a token,
// serves the sweeps page with it and refuses without it, and stops on
// Ctrl-C (exit 130).
func TestUIServes(t *testing.T) {
	lib := devstacktest.ChDBLib(t)
	t.Setenv("REBOUND_CHDB_LIB", lib)
	t.Setenv("REBOUND_CLICKHOUSE_DSN", "")
	data := t.TempDir()
	st, err := storage.Open(context.Background(), storage.Config{DataDir: filepath.Join(data, "chdb"), LibPath: lib})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errOut strings.Builder
		code := dispatch(ctx, []string{"ui", "--data-dir", data}, pw, &errOut)
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=([0-9a-f]{48})`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no URL with a token in %q", line)
	}
	base := strings.SplitN(m[0], "?", 2)[0]
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the token: %s", resp.Status)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err = c.Get(m[0])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "No sweep is stored yet") {
		t.Errorf("with the token: %s\n%s", resp.Status, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitInterrupted {
			t.Errorf("exit %d after Ctrl-C, want 130", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("rebound ui did not stop")
	}
}
