package logging

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNewAndLevels(t *testing.T) {
	var b strings.Builder
	l, err := New(&b, Options{Format: "json", Level: "warn"})
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown", "task_queue", "q")
	var rec map[string]any
	if err := json.Unmarshal([]byte(b.String()), &rec); err != nil || rec["msg"] != "shown" || rec["level"] != "WARN" || rec["task_queue"] != "q" {
		t.Fatalf("json at warn: %v %q", err, b.String())
	}
	b.Reset()
	l, _ = New(&b, Options{})
	l.Debug("hidden")
	l.Info("worker polling", "task_queue", "q")
	if !strings.Contains(b.String(), `level=INFO msg="worker polling" task_queue=q`) || strings.Contains(b.String(), "hidden") {
		t.Fatalf("text at info: %q", b.String())
	}
	for _, bad := range []Options{{Format: "xml"}, {Level: "loud"}} {
		if _, err := New(&b, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// The dev server's output relayed as JSON: its own JSON log lines as they
// are, a banner line as a record; every line of the result is one JSON
// object.
func TestLinesRelay(t *testing.T) {
	var out strings.Builder
	l, _ := New(&out, Options{Format: "json", Level: "debug"})
	w := NewLines(l, &out, "json", "source", "temporal-dev-server")
	server := `{"level":"warn","ts":"2026-12-02T00:17:23.042Z","msg":"Failed to poll for task."}`
	for _, chunk := range []string{"CLI 0.0.0-DEV (Server 1.29.1)\n\nServer:  local", "host:7233\n" + server + "\n", "Stopping server..."} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || lines[2] != server {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for i, want := range []string{"CLI 0.0.0-DEV (Server 1.29.1)", "Server:  localhost:7233", "", "Stopping server..."} {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatalf("line %d is not JSON: %q", i, lines[i])
		}
		if want != "" && (rec["msg"] != want || rec["source"] != "temporal-dev-server" || rec["level"] != "INFO") {
			t.Errorf("line %d: %v, want msg %q", i, rec, want)
		}
	}
	// Text: the server's text lines pass, the banner becomes a record.
	out.Reset()
	l, _ = New(&out, Options{})
	w = NewLines(l, &out, "text", "source", "temporal-dev-server")
	w.Write([]byte("Server:  localhost:7233\ntime=2026-12-02T00:17:23.042 level=WARN msg=x\n"))
	if !strings.Contains(out.String(), `msg="Server:  localhost:7233" source=temporal-dev-server`) || !strings.HasSuffix(out.String(), "time=2026-12-02T00:17:23.042 level=WARN msg=x\n") {
		t.Fatalf("text relay:\n%s", out.String())
	}
}
