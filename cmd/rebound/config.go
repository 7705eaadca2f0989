package main

// Connecting to the store and to Temporal, the redaction key, telemetry:
// what every command that talks to a deployment shares. The flags that
// configure it are in flags.go.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel"

	"rebound/activities"
	"rebound/internal/localkey"
	"rebound/internal/redact"
	"rebound/internal/runner"
	"rebound/internal/telemetry"
	"rebound/storage"
	"rebound/storage/served"

	// --clickhouse-dsn: the ClickHouse server transport registers itself.
	_ "rebound/storage/clickhouseserver"
)

// storeConfig is the store the storage flags name: a ClickHouse server, or
// the embedded engine under --data-dir. A new storage flag is set here.
func (c *connection) storeConfig() storage.Config {
	cfg := storage.Config{DSN: c.clickhouseDSN, LibPath: c.chdbLib, Cluster: c.storageCluster()}
	if c.clickhouseDSN == "" {
		cfg.DataDir = filepath.Join(c.dataDir, "chdb")
	}
	return cfg
}

// openStore connects to the ClickHouse server, or opens the embedded
// engine, and migrates its schema: for the commands that write. An
// embedded store another process holds (and serves) is refused with the
// process's pid, not with the engine's lock error.
func (c *connection) openStore(ctx context.Context) (storage.Store, error) {
	if c.clickhouseDSN == "" {
		if ep, found, _ := served.Find(c.dataDir); found && ep.PID != os.Getpid() {
			return nil, failure{fmt.Sprintf("the data dir %s is held by process %d (a worker or rebound run), which serves it read-only at %s; this command writes to the store: stop that process first, or use a ClickHouse server (--clickhouse-dsn)", c.dataDir, ep.PID, ep.Address)}
		}
	}
	st, err := storage.Open(ctx, c.storeConfig())
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// ErrNoStore is a read command's answer for a data dir that holds no
// embedded store (a typo in --data-dir): exit 2, and nothing is created.
var ErrNoStore = errors.New("no store")

// requireStore refuses a data dir without an embedded store when no
// ClickHouse server is named: commands that read what sweeps stored never
// create a store (nor the data dir) to find it empty.
func (c *connection) requireStore() error {
	if c.clickhouseDSN != "" {
		return nil
	}
	dir := filepath.Join(c.dataDir, "chdb")
	if _, err := os.Stat(dir); err != nil {
		return usageError{fmt.Errorf("%w in data dir %q (no %s): check --data-dir (or REBOUND_DATA_DIR), or run a sweep first with 'rebound run PLAN'", ErrNoStore, c.dataDir, dir)}
	}
	return nil
}

// openExistingStore is openStore for commands that write to what is
// stored (judge, regrade, sweep cancel): a data dir without a store is
// refused (requireStore), not created.
func (c *connection) openExistingStore(ctx context.Context) (storage.Store, error) {
	if err := c.requireStore(); err != nil {
		return nil, err
	}
	return c.openStore(ctx)
}

// openReadStore is how every command that reads what is stored opens the
// store (report, compare, gate, trend, sweeps, trials, trial, replay, ...):
// the one entry point, reusable by anything that reads. A ClickHouse server
// is opened as for writing (and migrated); an embedded data dir that
// another process holds (a worker, rebound run) is read through that
// process (openServedStore); otherwise the embedded engine is opened here.
// A data dir without a store is refused (requireStore), not created.
func (c *connection) openReadStore(ctx context.Context) (storage.Store, error) {
	if err := c.requireStore(); err != nil {
		return nil, err
	}
	if st, ok, err := c.openServedStore(ctx); ok || err != nil {
		return st, err
	}
	return c.openStore(ctx)
}

// openReadOnlyStore is openReadStore in the engine's readonly=1 mode with
// the read-only door on Query (rebound sql, completion, estimates): no
// migration, nothing may be written.
func (c *connection) openReadOnlyStore(ctx context.Context) (storage.Store, error) {
	if err := c.requireStore(); err != nil {
		return nil, err
	}
	if st, ok, err := c.openServedStore(ctx); ok || err != nil {
		return st, err
	}
	cfg := c.storeConfig()
	cfg.ReadOnly = true
	cfg.Limits = c.limits
	return storage.Open(ctx, cfg)
}

// servedElsewhere reports whether another process holds the embedded data
// dir and serves it (reads then go through it).
func (c *connection) servedElsewhere() bool {
	if c.clickhouseDSN != "" {
		return false
	}
	ep, found, _ := served.Find(c.dataDir)
	return found && ep.PID != os.Getpid()
}

// openServedStore opens the embedded store of the data dir through the
// process that holds and serves it (storage/served), when one does: over
// ClickHouse's HTTP interface with the ClickHouse server transport,
// read-only, the read-only door at the server. ok is false when no process
// serves the data dir (no served.json, or a stale one): the caller opens
// the engine itself.
func (c *connection) openServedStore(ctx context.Context) (storage.Store, bool, error) {
	if c.clickhouseDSN != "" {
		return nil, false, nil
	}
	ep, found, err := served.Find(c.dataDir)
	if !found {
		if err != nil && !errors.Is(err, served.ErrStale) {
			return nil, false, err
		}
		return nil, false, nil
	}
	secret, err := served.Credential(c.dataDir)
	if err != nil {
		return nil, false, usagef("served store: %v", err)
	}
	st, err := storage.Open(ctx, storage.Config{DSN: ep.DSN(secret), ReadOnly: true, DoorAtServer: true, Limits: c.limits})
	if err != nil {
		return nil, false, fmt.Errorf("the data dir %s is held by process %d (a worker or rebound run), which serves it at %s, and reading through it failed: %w", c.dataDir, ep.PID, ep.Address, err)
	}
	return st, true, nil
}

// serveStore serves the embedded store this process holds (a worker,
// rebound run) to other processes over ClickHouse's HTTP interface, on
// --serve-listen, read-only through the door of rebound sql with its
// default limits. It returns how to stop serving (it removes
// DATA_DIR/served.json). With a ClickHouse server there is nothing to
// serve: clients read the server.
func (c *connection) serveStore(ctx context.Context, store storage.Store, log *slog.Logger) (*served.Server, func(), error) {
	if c.clickhouseDSN != "" {
		return nil, func() {}, nil
	}
	door, err := storage.NewDoor(ctx, store, storage.Limits{})
	if err != nil {
		return nil, nil, err
	}
	srv, err := served.Serve(door, served.Options{DataDir: c.dataDir, Addr: c.serveListen, Log: log, Reviews: store})
	if err != nil {
		return nil, nil, usageError{err}
	}
	return srv, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	}, nil
}

// dialTemporal connects with the payload codec keyed by the redaction key
// (runner.Dial): nothing this process hands to Temporal is stored there in
// the clear. A bad key or TLS setting is the user's to fix (exit 2).
func (c *connection) dialTemporal(ctx context.Context, address string, redactionKey []byte) (runner.Client, error) {
	return c.dialTemporalLogged(ctx, address, redactionKey, nil)
}

// dialTemporalLogged is dialTemporal with the SDK's logs going to log (nil:
// kept quiet, warnings and errors on stderr).
func (c *connection) dialTemporalLogged(ctx context.Context, address string, redactionKey []byte, log *slog.Logger) (runner.Client, error) {
	o := runner.DialOptions{Address: address, Namespace: c.namespace, RedactionKey: redactionKey, Logger: log}
	// TLS and the API key are for a cluster; the embedded dev server
	// listens on loopback in plain text.
	if c.temporalAddress != "" {
		o.Security = &c.security
	}
	cl, err := runner.Dial(ctx, o)
	if runner.IsConfigError(err) {
		return nil, usageError{err}
	}
	return cl, err
}

// newActivities builds the activities of a worker from the environment.
func newActivities(store storage.Store, redactionKey []byte) (*activities.Activities, error) {
	patterns, err := redact.PatternsFromEnv()
	if err != nil {
		return nil, usageError{err}
	}
	wait, err := storeWaitFromEnv(os.Getenv)
	if err != nil {
		return nil, usageError{err}
	}
	return &activities.Activities{Store: store, RedactionKey: redactionKey, RedactPatterns: patterns, StoreWait: wait}, nil
}

// storeWaitEnv names how long shards wait for a full or unreachable store
// (activities.DefaultStoreWait when unset).
const storeWaitEnv = "REBOUND_STORE_WAIT"

// storeWaitFromEnv reads $REBOUND_STORE_WAIT: a duration from 1s to
// activities.MaxStoreWait; unset is 0 (the default).
func storeWaitFromEnv(getenv func(string) string) (time.Duration, error) {
	v := getenv(storeWaitEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second || d > activities.MaxStoreWait {
		return 0, fmt.Errorf("%s=%q: want a duration from 1s to %s (e.g. 2h30m)", storeWaitEnv, v, activities.MaxStoreWait)
	}
	return d, nil
}

// redactionKeyEnv names the deployment's redaction key (redact.EnvKey).
const redactionKeyEnv = "REBOUND_REDACTION_KEY"

// envRedactionKey is $REBOUND_REDACTION_KEY, which workers and clients of a
// deployment share; without it they refuse to start (exit 2).
func envRedactionKey() ([]byte, error) {
	key := []byte(os.Getenv(redactionKeyEnv))
	if err := redact.CheckKey(key); err != nil {
		return nil, usageError{err}
	}
	return key, nil
}

// redactionKey is the key of the deployment this command talks to: the
// environment's for a cluster (--temporal-address), the data dir's for the
// embedded stack.
func (c *connection) redactionKey() ([]byte, error) {
	if c.temporalAddress == "" {
		return localRedactionKey(c.dataDir)
	}
	return envRedactionKey()
}

// localRedactionKey is $REBOUND_REDACTION_KEY when set; otherwise the
// embedded stack's key, generated at random the first time and kept outside
// the data dir (internal/localkey: the data dir names it by a key id, the
// key is in the user's key directory, mode 0600), so that nothing that reads
// the data dir (a query, an agent) reads the key. The embedded stack's
// processes are this one, so the key only has to outlive it for replays
// and later runs on the same data.
func localRedactionKey(dataDir string) ([]byte, error) {
	if os.Getenv(redactionKeyEnv) != "" {
		return envRedactionKey()
	}
	key, _, err := localkey.Load(dataDir, redact.GenerateKey, redact.CheckKey)
	if err != nil {
		return nil, usagef("redaction key: %v", err)
	}
	return key, nil
}

// setupTelemetry installs the OpenTelemetry exporters the OTEL_* variables
// ask for (none by default), plus the Prometheus registry of --listen.
func setupTelemetry(ctx context.Context, prometheus bool, stderr io.Writer) (*telemetry.Provider, error) {
	p, err := telemetry.Setup(ctx, telemetry.Options{Prometheus: prometheus})
	if err != nil {
		return nil, usageError{err}
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		fmt.Fprintf(stderr, "telemetry: %v\n", err)
	}))
	return p, nil
}

// shutdownTelemetry flushes what is buffered, within 10 seconds.
func shutdownTelemetry(p *telemetry.Provider, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "telemetry: flush: %v\n", err)
	}
}

// storedKey is the key that sealed a stored plan: $REBOUND_REDACTION_KEY,
// or the embedded stack's key (none for a server without
// the variable: what needs it then says so).
func (c *connection) storedKey() []byte {
	if k := os.Getenv(redactionKeyEnv); k != "" || c.clickhouseDSN != "" {
		return []byte(k)
	}
	return localkey.Peek(c.dataDir)
}

// storageCluster is the cluster flags' value: none unless a name is given
// (the path and replica flags have defaults).
func (c *connection) storageCluster() storage.Cluster {
	if c.cluster.Name == "" {
		return storage.Cluster{}
	}
	return c.cluster
}
