package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"rebound/core/harness"
)

// A shared streamable-HTTP upstream: reset before each trial, and trials
// against it one at a time unless it isolates them.
func TestURLUpstream(t *testing.T) {
	var mu sync.Mutex
	count := 0
	srv := mcp.NewServer(&mcp.Implementation{Name: "counter", Version: "1"}, nil)
	type none struct{}
	type value struct {
		Count int `json:"count"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "increment", Annotations: &mcp.ToolAnnotations{}}, func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, value, error) {
		mu.Lock()
		defer mu.Unlock()
		count++
		return nil, value{count}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "get", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, value, error) {
		mu.Lock()
		defer mu.Unlock()
		return nil, value{count}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	// The reset command: here it writes a marker the test reads; a real
	// one would restore the server's data.
	dir := t.TempDir()
	marker := filepath.Join(dir, "resets")
	cfg := Config{URL: hs.URL, Reset: []string{"sh", "-c", "echo x >> " + marker}, Dir: dir,
		Probes: []Probe{{Name: "counter", Tool: "get", Args: map[string]any{}}}}
	w1, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, terr := w1.Invoke("increment", map[string]any{}, &effects{}); terr != nil {
		t.Fatal(terr)
	}
	if got := w1.State()["counter"].(map[string]any)["count"]; got != float64(1) {
		t.Fatalf("state %v", w1.State())
	}
	// A second trial waits for the first to close.
	var opened atomic.Bool
	done := make(chan *World)
	go func() {
		w2, err := Open(context.Background(), cfg)
		if err != nil {
			t.Error(err)
		}
		opened.Store(true)
		done <- w2
	}()
	time.Sleep(300 * time.Millisecond)
	if opened.Load() {
		t.Fatal("a second trial reached the shared upstream while the first held it")
	}
	w1.Close()
	w2 := <-done
	defer w2.Close()
	b, _ := os.ReadFile(marker)
	if string(b) != "x\nx\n" {
		t.Errorf("reset ran %q, want once per trial", b)
	}
	tools := map[string]harness.Tool{}
	for _, tl := range w2.Tools() {
		tools[tl.Name] = tl
	}
	if tools["increment"].Effect != harness.EffectWrite || tools["get"].Effect != harness.EffectRead {
		t.Errorf("effects %+v", tools)
	}
	// Isolated: no waiting.
	iso := cfg
	iso.Isolated = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w3, err := Open(ctx, iso)
	if err != nil {
		t.Fatalf("isolated upstream while another trial holds it: %v", err)
	}
	w3.Close()
}
