package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel"

	"rebound/internal/buildinfo"
	"rebound/internal/logging"
	"rebound/internal/runner"
	"rebound/internal/telemetry"
	"rebound/storage"
)

const workerAbout = `Runs a worker: it polls the task queue of an existing Temporal cluster for
sweep workflows and trial activities, and writes trials to an existing
ClickHouse server. Start as many as you like; they share the work.

REBOUND_REDACTION_KEY is required (at least 32 characters, the same for every
worker and for 'rebound sweep'): it keys the hashes of idempotency keys and
encrypts the stored plan and every Temporal payload. Without it the worker
refuses to start.

Example:
  REBOUND_TEMPORAL_ADDRESS=temporal:7233 \
  REBOUND_CLICKHOUSE_DSN=clickhouse://rebound:secret@clickhouse:9000/rebound \
  REBOUND_REDACTION_KEY=$(cat /run/secrets/rebound-redaction-key) \
  rebound worker`

func newWorkerCmd() *cobra.Command {
	var (
		conn        connection
		concurrency int
		stopTimeout time.Duration
		listen      string
	)
	cmd := &cobra.Command{
		Use:   "worker [flags]",
		Short: "run a worker against an existing Temporal and ClickHouse",
		Long:  workerAbout,
		Args:  exactArgs(0, "worker takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if conn.temporalAddress == "" {
				return usagef("worker needs --temporal-address (or REBOUND_TEMPORAL_ADDRESS); for a self-contained run use 'rebound run'")
			}
			return runWorker(cmd.Context(), &conn, concurrency, stopTimeout, listen, cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	conn.temporalFlags(fs)
	conn.storageFlags(fs)
	conn.serveFlags(fs)
	intFlag(fs, &concurrency, "max-concurrent-shards", 0, 0, 4096, "shard activities this worker runs at once (0: two per CPU)")
	durationFlag(fs, &stopTimeout, "stop-timeout", runner.DefaultStopTimeout, 0, time.Hour, "on Ctrl-C, how long running shards may finish before they keep what they stored and hand the rest back")
	fs.StringVar(&listen, "listen", "", "serve /metrics (Prometheus), /healthz and /readyz on ADDR, e.g. :9090 (default off)")
	conn.logFlags(fs, "info", "the worker's log on stderr (its own records and the Temporal SDK's)")
	return cmd
}

// runWorker polls conn's task queue until ctx ends, then stops gracefully.
func runWorker(ctx context.Context, conn *connection, concurrency int, stopTimeout time.Duration, listen string, stderr io.Writer) error {
	key, err := envRedactionKey()
	if err != nil {
		return err
	}
	log, err := logging.New(stderr, conn.log)
	if err != nil {
		return usageError{err}
	}
	tel, err := setupTelemetry(ctx, listen != "", stderr)
	if err != nil {
		return err
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Error("telemetry", "err", err) }))
	defer shutdownTelemetry(tel, stderr)
	// ready holds the store and Temporal's health once the worker polls:
	// /readyz checks the store, and that the frontend answered within
	// runner.DefaultHealthGrace (the pollers themselves report nothing).
	var ready atomic.Pointer[workerReadiness]
	if listen != "" {
		srv, err := telemetry.Serve(listen, telemetry.Health{Metrics: tel.MetricsHandler(), Ready: func(ctx context.Context) error {
			r := ready.Load()
			if r == nil {
				return errors.New("worker not polling")
			}
			if err := r.temporal.Err(); err != nil {
				return err
			}
			if _, err := r.store.Query(ctx, "SELECT 1"); err != nil {
				return errors.New("store unreachable") // the error may name the DSN
			}
			return nil
		}}.Handler())
		if err != nil {
			return usageError{err}
		}
		defer srv.Close(context.Background())
		log.Info("serving /metrics, /healthz and /readyz on "+srv.Addr(), "listen", srv.Addr())
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	// The embedded store is this process's: read commands, Grafana and
	// ClickHouse clients read it through here while the worker runs.
	srv, stopServing, err := conn.serveStore(ctx, store, log)
	if err != nil {
		return err
	}
	defer stopServing()
	if srv != nil {
		ep := srv.Endpoint()
		log.Info("serving the embedded store read-only over ClickHouse's HTTP interface on "+ep.Address+" (user "+ep.User+", the data dir's credential)", "served_address", ep.Address)
	}
	c, err := conn.dialTemporalLogged(ctx, conn.temporalAddress, key, log)
	if err != nil {
		return err
	}
	defer c.Close()
	acts, err := newActivities(store, key)
	if err != nil {
		return err
	}
	w, err := runner.StartWorker(c, conn.taskQueue, acts, runner.WorkerOptions{MaxConcurrentShards: concurrency, StopTimeout: stopTimeout})
	if err != nil {
		return err
	}
	ready.Store(&workerReadiness{store: store, temporal: runner.WatchTemporal(ctx, c, 0, 0)})
	// Every worker of the queue paces its model requests at 1/W of each
	// provider's limits, W being the workers polling the queue.
	go runner.ShareProviderLimits(ctx, c, conn.taskQueue, 15*time.Second)
	log.Info(fmt.Sprintf("worker polling task queue %q on %s (namespace %s), storing to %s; Ctrl-C to stop", conn.taskQueue, conn.temporalAddress, conn.namespace, storeLabel(*conn)),
		"task_queue", conn.taskQueue, "temporal_address", conn.temporalAddress, "namespace", conn.namespace, "store", storeLabel(*conn),
		"version", buildinfo.Get().Short())
	<-ctx.Done()
	ready.Store(nil)
	log.Info(fmt.Sprintf("worker stopping: running shards get %s to finish, then hand the rest back", stopTimeout), "stop_timeout", stopTimeout.String())
	// The store (closed by the deferred Close) outlives the last write.
	if !w.Stop() {
		log.Warn("a shard was still writing 30s after the worker stopped")
	}
	log.Info("worker stopped")
	return nil
}

// workerReadiness is what /readyz checks once the worker polls.
type workerReadiness struct {
	store    storage.Store
	temporal *runner.TemporalHealth
}

// storeLabel names the store without its password.
func storeLabel(conn connection) string {
	if conn.clickhouseDSN != "" {
		return storage.RedactDSN(conn.clickhouseDSN)
	}
	return "embedded chDB in " + conn.dataDir
}
