package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"rebound/activities"
	"rebound/fileerr"
	"rebound/redact"
	"rebound/runner"
	"rebound/storage"
	"rebound/telemetry"
)

var errHelp = errors.New("help shown")

// env returns the environment variable or a default.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// connection holds the flags that say where Temporal and ClickHouse are.
type connection struct {
	temporalAddress string
	namespace       string
	taskQueue       string
	clickhouseDSN   string
	dataDir         string
	chdbLib         string
	cluster         storage.Cluster
	security        runner.Security
}

func (c *connection) temporalFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.temporalAddress, "temporal-address", env("REBOUND_TEMPORAL_ADDRESS", ""), "Temporal frontend host:port (env REBOUND_TEMPORAL_ADDRESS)")
	fs.StringVar(&c.namespace, "namespace", env("REBOUND_NAMESPACE", "default"), "Temporal namespace (env REBOUND_NAMESPACE)")
	fs.StringVar(&c.taskQueue, "task-queue", env("REBOUND_TASK_QUEUE", runner.DefaultTaskQueue), "Temporal task queue the workers poll (env REBOUND_TASK_QUEUE)")
	tlsOn := strings.EqualFold(os.Getenv("REBOUND_TEMPORAL_TLS"), "true")
	fs.BoolVar(&c.security.TLS, "temporal-tls", tlsOn, "connect to --temporal-address over TLS, verified with the system roots (env REBOUND_TEMPORAL_TLS=true); implied by the other --temporal-tls-* flags and by --temporal-api-key-env")
	fs.StringVar(&c.security.CertFile, "temporal-tls-cert", env("REBOUND_TEMPORAL_TLS_CERT", ""), "client certificate (PEM) for mutual TLS, with --temporal-tls-key (env REBOUND_TEMPORAL_TLS_CERT)")
	fs.StringVar(&c.security.KeyFile, "temporal-tls-key", env("REBOUND_TEMPORAL_TLS_KEY", ""), "private key (PEM) of --temporal-tls-cert (env REBOUND_TEMPORAL_TLS_KEY)")
	fs.StringVar(&c.security.CAFile, "temporal-tls-ca", env("REBOUND_TEMPORAL_TLS_CA", ""), "CA certificates (PEM) that verify the Temporal server; default: the system roots (env REBOUND_TEMPORAL_TLS_CA)")
	fs.StringVar(&c.security.ServerName, "temporal-tls-server-name", env("REBOUND_TEMPORAL_TLS_SERVER_NAME", ""), "server name the Temporal certificate must carry; default: the host of --temporal-address (env REBOUND_TEMPORAL_TLS_SERVER_NAME)")
	fs.StringVar(&c.security.APIKeyEnv, "temporal-api-key-env", env("REBOUND_TEMPORAL_API_KEY_ENV", ""), "NAME of the environment variable holding a Temporal API key (Temporal Cloud); the key itself is never a flag (env REBOUND_TEMPORAL_API_KEY_ENV)")
}

func (c *connection) storageFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.clickhouseDSN, "clickhouse-dsn", env("REBOUND_CLICKHOUSE_DSN", ""), "ClickHouse server, Native protocol: clickhouse://user:pass@host:9000/db (env REBOUND_CLICKHOUSE_DSN); empty uses the embedded chDB under --data-dir")
	fs.StringVar(&c.dataDir, "data-dir", env("REBOUND_DATA_DIR", "data"), "directory for the embedded stack's state: chDB data and the Temporal SQLite file (env REBOUND_DATA_DIR)")
	fs.StringVar(&c.cluster.Name, "clickhouse-cluster", env("REBOUND_CLICKHOUSE_CLUSTER", ""), "ClickHouse cluster NAME (with --clickhouse-dsn): the schema is created ON CLUSTER, replicated, under Distributed tables sharded by sweep_id (env REBOUND_CLICKHOUSE_CLUSTER)")
	fs.StringVar(&c.cluster.ReplicationPath, "clickhouse-replication-path", env("REBOUND_CLICKHOUSE_REPLICATION_PATH", storage.DefaultReplicationPath), "Keeper path of each replicated table, with --clickhouse-cluster (env REBOUND_CLICKHOUSE_REPLICATION_PATH)")
	fs.StringVar(&c.cluster.ReplicaName, "clickhouse-replica", env("REBOUND_CLICKHOUSE_REPLICA", storage.DefaultReplicaName), "replica name of each replicated table, with --clickhouse-cluster (env REBOUND_CLICKHOUSE_REPLICA)")
	fs.StringVar(&c.chdbLib, "chdb-lib", env("REBOUND_CHDB_LIB", ""), "path of libchdb.so for the embedded ClickHouse (env REBOUND_CHDB_LIB; default: the repo's .cache, installed by make setup)")
}

// storageCluster is the cluster flags' value: none unless a name is given
// (the path and replica flags have defaults).
func (c *connection) storageCluster() storage.Cluster {
	if c.cluster.Name == "" {
		return storage.Cluster{}
	}
	return c.cluster
}

// openStore connects to the ClickHouse server, or opens the embedded engine.
func (c *connection) openStore(ctx context.Context) (storage.Store, error) {
	cfg := storage.Config{DSN: c.clickhouseDSN, LibPath: c.chdbLib, Cluster: c.storageCluster()}
	if c.clickhouseDSN == "" {
		cfg.DataDir = filepath.Join(c.dataDir, "chdb")
	}
	st, err := storage.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// openReadOnlyStore opens the store in the engine's readonly=1 mode (no
// migration: nothing may be written).
func (c *connection) openReadOnlyStore(ctx context.Context) (storage.Store, error) {
	cfg := storage.Config{DSN: c.clickhouseDSN, LibPath: c.chdbLib, ReadOnly: true, Cluster: c.storageCluster()}
	if c.clickhouseDSN == "" {
		cfg.DataDir = filepath.Join(c.dataDir, "chdb")
	}
	return storage.Open(ctx, cfg)
}

// dialTemporal connects with the payload codec keyed by the redaction key:
// nothing this process hands to Temporal is stored there in the clear.
func (c *connection) dialTemporal(ctx context.Context, address string, redactionKey []byte) (client.Client, error) {
	opts, err := runner.SecureClientOptions(client.Options{HostPort: address, Namespace: c.namespace, Logger: quietLogger{ctx}}, redactionKey)
	if err != nil {
		return nil, usageError{err}
	}
	if opts, err = runner.InstrumentClientOptions(opts); err != nil {
		return nil, err
	}
	// TLS and the API key are for a cluster; the embedded dev server
	// listens on loopback in plain text.
	if c.temporalAddress != "" {
		if opts, err = c.security.Apply(opts, os.Getenv); err != nil {
			return nil, usageError{err}
		}
	}
	cl, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", address, c.namespace, err)
	}
	return cl, nil
}

// parse parses flags; -h prints the command's help and stops it cleanly.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usageError{err}
	}
	return nil
}

// parseOneArg parses flags, checks --output and requires exactly one
// positional argument, or fails with the usage message format.
func parseOneArg(fs *flag.FlagSet, args []string, output *string, format string, a ...any) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef(format, a...)
	}
	return nil
}

// newFlags builds a flag set whose help starts with a teaching paragraph.
func newFlags(name, usage, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s\n\n%s\n\nFlags:\n", usage, strings.TrimSpace(about))
		fs.PrintDefaults()
	}
	return fs
}

// outputFlag adds --output text|json.
func outputFlag(fs *flag.FlagSet) *string {
	return fs.String("output", "text", "output format: text (for people) or json (for machines)")
}

func checkOutput(o string) error {
	if o != "text" && o != "json" {
		return usagef("--output must be text or json, got %q", o)
	}
	return nil
}

// quietLogger keeps the Temporal SDK's routine logs out of the terminal;
// warnings and errors still show, except once the command is interrupted,
// when every in-flight activity reports its cancellation.
type quietLogger struct{ ctx context.Context }

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (l quietLogger) Warn(msg string, kv ...any) {
	if l.ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, append([]any{"temporal warning:", msg}, kv...)...)
	}
}
func (l quietLogger) Error(msg string, kv ...any) {
	if l.ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, append([]any{"temporal error:", msg}, kv...)...)
	}
}

var _ log.Logger = quietLogger{}

// maxRedactFileBytes bounds REBOUND_REDACT_FILE.
const maxRedactFileBytes = 64 << 10

// redactPatterns reads extra secret patterns for redaction from the file
// named by REBOUND_REDACT_FILE: one regular expression per line, blank
// lines and lines starting with # ignored. Each is checked up front, so a
// typo fails the command with file:line instead of leaking later.
func redactPatterns() ([]string, error) {
	path := os.Getenv("REBOUND_REDACT_FILE")
	if path == "" {
		return nil, nil
	}
	data, err := fileerr.ReadRegular(path, maxRedactFileBytes, "redact file")
	if err != nil {
		return nil, usagef("REBOUND_REDACT_FILE: %v", err)
	}
	var out []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, err := regexp.Compile(line); err != nil {
			return nil, usagef("%s:%d: invalid pattern: %v", path, i+1, err)
		}
		out = append(out, line)
	}
	return out, nil
}

// newActivities builds the activities of a worker from the environment.
func newActivities(store storage.Store, redactionKey []byte) (*activities.Activities, error) {
	patterns, err := redactPatterns()
	if err != nil {
		return nil, err
	}
	return &activities.Activities{Store: store, RedactionKey: redactionKey, RedactPatterns: patterns}, nil
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

// localRedactionKey is $REBOUND_REDACTION_KEY when set; otherwise the key
// kept in the data dir (redaction.key, mode 0600), generated at random the
// first time. The embedded stack's processes are this one, so the key only
// has to outlive it for replays and later runs on the same data.
func localRedactionKey(dataDir string) ([]byte, error) {
	if os.Getenv(redactionKeyEnv) != "" {
		return envRedactionKey()
	}
	path := filepath.Join(dataDir, "redaction.key")
	if b, err := os.ReadFile(path); err == nil {
		key := []byte(strings.TrimSpace(string(b)))
		if err := redact.CheckKey(key); err != nil {
			return nil, usagef("%s: %v", path, err)
		}
		return key, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, usagef("redaction key: %v", err)
	}
	key, err := redact.GenerateKey()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // another process just made it
			return localRedactionKey(dataDir)
		}
		return nil, fmt.Errorf("redaction key: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("redaction key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("redaction key: %w", err)
	}
	return []byte(key), nil
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
