package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"rebound/internal/devstack/devstacktest"
)

// spanSeen is one span an OTLP export carried, with its process's
// service.name.
type spanSeen struct {
	service, name, trace string
}

// traceReceiver is an in-process OTLP/HTTP receiver of traces.
func traceReceiver(t *testing.T) (*httptest.Server, func() []spanSeen) {
	var (
		mu    sync.Mutex
		spans []spanSeen
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			w.WriteHeader(http.StatusOK) // metrics and logs: accepted, not read
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, kv := range rs.Resource.GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans = append(spans, spanSeen{service: service, name: s.Name, trace: fmt.Sprintf("%x", s.TraceId)})
				}
			}
		}
		mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []spanSeen {
		mu.Lock()
		defer mu.Unlock()
		return append([]spanSeen(nil), spans...)
	}
}

// `sweep start --wait`, the CI path, on a cluster: its process exports the
// span "sweep" and the workflow's start, and the worker's spans (the
// workflow run, shards, trials) join that trace, so CI and workers share
// one trace. Following the sweep queries its progress every second; no
// query is a span, in either process.
func TestSweepStartSharesTheWorkersTrace(t *testing.T) {
	srv := devstacktest.Temporal(t)
	lib := devstacktest.ChDBLib(t)
	otlp, received := traceReceiver(t)
	queue := "trace-e2e"
	env := func(service string) []string {
		return append(os.Environ(), envCLIChild+"=1", "REBOUND_CHDB_LIB="+lib, "REBOUND_CLICKHOUSE_DSN=",
			"REBOUND_REDACTION_KEY=cli-test-redaction-key-0123456789abcdef",
			"OTEL_EXPORTER_OTLP_ENDPOINT="+otlp.URL, "OTEL_METRICS_EXPORTER=none", "OTEL_SERVICE_NAME="+service,
			"OTEL_BSP_SCHEDULE_DELAY=200", "OTEL_TRACES_SAMPLER=", "REBOUND_TRACE_TRIALS=")
	}
	worker := exec.Command(os.Args[0], "worker", "--temporal-address", srv.Address(), "--task-queue", queue, "--data-dir", t.TempDir())
	worker.Env = env("rebound-worker")
	var workerErr devstacktest.Output
	worker.Stderr = &workerErr
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	defer worker.Process.Kill()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(workerErr.String(), "worker polling") {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not start:\n%s", workerErr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Enough trials that the sweep outlives a few progress polls.
	scenarios, err := filepath.Abs("../../examples/scenarios")
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(plan, []byte("name: trace-e2e\nseeds: 3\nshard_size: 100\nscenarios:\n  - "+filepath.Join(scenarios, "*.yaml")+
		"\narms:\n  - {name: careful, agent: careful}\n  - {name: naive, agent: naive_retrier}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ci := exec.Command(os.Args[0], "sweep", "start", "--wait", "--temporal-address", srv.Address(), "--task-queue", queue, plan)
	ci.Env = env("rebound-ci")
	out, err := ci.CombinedOutput()
	if err != nil {
		t.Fatalf("sweep start --wait: %v\n%s\nworker:\n%s", err, out, workerErr.String())
	}
	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := worker.Wait(); err != nil {
		t.Fatalf("worker: %v\n%s", err, workerErr.String())
	}
	spans := received()
	var sweepTrace string
	for _, s := range spans {
		if s.name == "sweep" && s.service == "rebound-ci" {
			sweepTrace = s.trace
		}
	}
	if sweepTrace == "" {
		t.Fatalf("sweep start --wait exported no sweep span; received %d spans", len(spans))
	}
	seen := map[string]bool{}
	for _, s := range spans {
		if strings.HasPrefix(s.name, "QueryWorkflow") || strings.HasPrefix(s.name, "HandleQuery") {
			t.Errorf("a progress query is a span: %s from %s", s.name, s.service)
		}
		if s.trace == sweepTrace {
			seen[s.service+" "+s.name] = true
		}
	}
	for _, want := range []string{
		"rebound-ci sweep", "rebound-ci StartWorkflow:rebound.Sweep",
		"rebound-worker RunWorkflow:rebound.Sweep", "rebound-worker shard", "rebound-worker trial",
	} {
		if !seen[want] {
			t.Errorf("the sweep's trace lacks %q; it has %v", want, seen)
		}
	}
}
