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

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"rebound/activities"
	"rebound/fileerr"
	"rebound/redact"
	"rebound/runner"
	"rebound/storage"
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
}

func (c *connection) temporalFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.temporalAddress, "temporal-address", env("REBOUND_TEMPORAL_ADDRESS", ""), "Temporal frontend host:port (env REBOUND_TEMPORAL_ADDRESS)")
	fs.StringVar(&c.namespace, "namespace", env("REBOUND_NAMESPACE", "default"), "Temporal namespace (env REBOUND_NAMESPACE)")
	fs.StringVar(&c.taskQueue, "task-queue", env("REBOUND_TASK_QUEUE", runner.DefaultTaskQueue), "Temporal task queue the workers poll (env REBOUND_TASK_QUEUE)")
}

func (c *connection) storageFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.clickhouseDSN, "clickhouse-dsn", env("REBOUND_CLICKHOUSE_DSN", ""), "ClickHouse server, Native protocol: clickhouse://user:pass@host:9000/db (env REBOUND_CLICKHOUSE_DSN); empty uses the embedded chDB under --data-dir")
	fs.StringVar(&c.dataDir, "data-dir", env("REBOUND_DATA_DIR", "data"), "directory for the embedded stack's state: chDB data and the Temporal SQLite file (env REBOUND_DATA_DIR)")
	fs.StringVar(&c.chdbLib, "chdb-lib", env("REBOUND_CHDB_LIB", ""), "path of libchdb.so for the embedded ClickHouse (env REBOUND_CHDB_LIB; default: the repo's .cache, installed by make setup)")
}

// openStore connects to the ClickHouse server, or opens the embedded engine.
func (c *connection) openStore(ctx context.Context) (storage.Store, error) {
	cfg := storage.Config{DSN: c.clickhouseDSN, LibPath: c.chdbLib}
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
	cfg := storage.Config{DSN: c.clickhouseDSN, LibPath: c.chdbLib, ReadOnly: true}
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
