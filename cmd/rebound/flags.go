package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"rebound/internal/logging"
	"rebound/internal/runner"
	"rebound/storage"
)

// Flags shared by several commands, and flag types that check their value
// when it is parsed: a bad value is a usage error (exit 2) naming the flag,
// before anything starts.

// envAnnotation marks a flag whose default comes from an environment
// variable; applyEnv sets it before the command runs unless the flag was
// given. Help shows the variable's name, never its value (it may hold a
// password).
const envAnnotation = "rebound_env"

// fromEnv makes flag name of fs fall back to the environment variable env.
func fromEnv(fs *pflag.FlagSet, name, env string) {
	f := fs.Lookup(name)
	if f == nil {
		panic("fromEnv: no flag " + name)
	}
	f.Usage += " (env " + env + ")"
	if err := fs.SetAnnotation(name, envAnnotation, []string{env}); err != nil {
		panic(err)
	}
}

// applyEnv sets every flag of cmd that was not given from its environment
// variable, when that is set. A value the flag refuses is a usage error
// naming the variable.
func applyEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		env := f.Annotations[envAnnotation]
		if err != nil || len(env) == 0 || f.Changed {
			return
		}
		v := os.Getenv(env[0])
		if v == "" {
			return
		}
		if serr := f.Value.Set(v); serr != nil {
			err = usagef("%s (for --%s): %v", env[0], f.Name, serr)
		}
	})
	return err
}

// connection holds the flags that say where Temporal and ClickHouse are.
// temporalFlags and storageFlags add them to a command: a new connection
// flag goes here, and every command that talks to the cluster gets it.
type connection struct {
	temporalAddress string
	namespace       string
	taskQueue       string
	clickhouseDSN   string
	dataDir         string
	chdbLib         string
	temporalBin     string
	cluster         storage.Cluster
	security        runner.Security
	// limits bound the statements of a read-only store (rebound sql's
	// flags; zero: storage.DefaultLimits).
	limits storage.Limits
	// log is --log-format and --log-level: the worker's log, and the
	// embedded dev server's (temporal.log).
	log logging.Options
	// serveListen is --serve-listen: where a process that holds the
	// embedded store serves it (empty: 127.0.0.1, a free port).
	serveListen string
}

// serveFlags adds --serve-listen, for the commands that hold the embedded
// store (worker, run) and serve it to other processes.
func (c *connection) serveFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.serveListen, "serve-listen", "", "loopback HOST:PORT where the embedded store is served over ClickHouse's HTTP interface to read commands, Grafana and ClickHouse clients (default 127.0.0.1 and a free port, written to DATA_DIR/served.json)")
	fromEnv(fs, "serve-listen", "REBOUND_SERVE_LISTEN")
}

// logFlags adds --log-format and --log-level (default level def) for the
// log that what names.
func (c *connection) logFlags(fs *pflag.FlagSet, def, what string) {
	choiceFlag(fs, &c.log.Format, "log-format", what+": text (key=value lines) or json (one object a line)", logging.Formats...)
	fromEnv(fs, "log-format", "REBOUND_LOG_FORMAT")
	levels := append([]string{def}, slices.DeleteFunc(slices.Clone(logging.Levels), func(l string) bool { return l == def })...)
	choiceFlag(fs, &c.log.Level, "log-level", what+": the least severe level kept", levels...)
	fromEnv(fs, "log-level", "REBOUND_LOG_LEVEL")
}

func (c *connection) temporalFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.temporalAddress, "temporal-address", "", "Temporal frontend host:port")
	fromEnv(fs, "temporal-address", "REBOUND_TEMPORAL_ADDRESS")
	fs.StringVar(&c.namespace, "namespace", "default", "Temporal namespace")
	fromEnv(fs, "namespace", "REBOUND_NAMESPACE")
	fs.StringVar(&c.taskQueue, "task-queue", runner.DefaultTaskQueue, "Temporal task queue the workers poll")
	fromEnv(fs, "task-queue", "REBOUND_TASK_QUEUE")
	fs.BoolVar(&c.security.TLS, "temporal-tls", false, "connect to --temporal-address over TLS, verified with the system roots; implied by the other --temporal-tls-* flags and by --temporal-api-key-env")
	fromEnv(fs, "temporal-tls", "REBOUND_TEMPORAL_TLS")
	fs.StringVar(&c.security.CertFile, "temporal-tls-cert", "", "client certificate (PEM) for mutual TLS, with --temporal-tls-key")
	fromEnv(fs, "temporal-tls-cert", "REBOUND_TEMPORAL_TLS_CERT")
	fs.StringVar(&c.security.KeyFile, "temporal-tls-key", "", "private key (PEM) of --temporal-tls-cert")
	fromEnv(fs, "temporal-tls-key", "REBOUND_TEMPORAL_TLS_KEY")
	fs.StringVar(&c.security.CAFile, "temporal-tls-ca", "", "CA certificates (PEM) that verify the Temporal server; default: the system roots")
	fromEnv(fs, "temporal-tls-ca", "REBOUND_TEMPORAL_TLS_CA")
	fs.StringVar(&c.security.ServerName, "temporal-tls-server-name", "", "server name the Temporal certificate must carry; default: the host of --temporal-address")
	fromEnv(fs, "temporal-tls-server-name", "REBOUND_TEMPORAL_TLS_SERVER_NAME")
	fs.StringVar(&c.security.APIKeyEnv, "temporal-api-key-env", "", "NAME of the environment variable holding a Temporal API key (Temporal Cloud); the key itself is never a flag")
	fromEnv(fs, "temporal-api-key-env", "REBOUND_TEMPORAL_API_KEY_ENV")
}

func (c *connection) storageFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.clickhouseDSN, "clickhouse-dsn", "", "ClickHouse server: clickhouse://user:pass@host:9000/db (Native protocol) or http://user:pass@host:8123/db (HTTP interface); empty uses the embedded chDB under --data-dir")
	fromEnv(fs, "clickhouse-dsn", "REBOUND_CLICKHOUSE_DSN")
	fs.StringVar(&c.dataDir, "data-dir", "data", "directory for the embedded stack's state: chDB data and the Temporal SQLite file")
	fromEnv(fs, "data-dir", "REBOUND_DATA_DIR")
	fs.StringVar(&c.cluster.Name, "clickhouse-cluster", "", "ClickHouse cluster NAME (with --clickhouse-dsn): the schema is created ON CLUSTER, replicated, under Distributed tables sharded by sweep_id")
	fromEnv(fs, "clickhouse-cluster", "REBOUND_CLICKHOUSE_CLUSTER")
	fs.StringVar(&c.cluster.ReplicationPath, "clickhouse-replication-path", storage.DefaultReplicationPath, "Keeper path of each replicated table, with --clickhouse-cluster")
	fromEnv(fs, "clickhouse-replication-path", "REBOUND_CLICKHOUSE_REPLICATION_PATH")
	fs.StringVar(&c.cluster.ReplicaName, "clickhouse-replica", storage.DefaultReplicaName, "replica name of each replicated table, with --clickhouse-cluster")
	fromEnv(fs, "clickhouse-replica", "REBOUND_CLICKHOUSE_REPLICA")
	fs.StringVar(&c.chdbLib, "chdb-lib", "", "path of libchdb.so for the embedded ClickHouse (default: the repo's .cache, installed by make setup)")
	fromEnv(fs, "chdb-lib", "REBOUND_CHDB_LIB")
}

// devServerFlag adds --temporal-bin, and the dev server's --log-format and
// --log-level, for commands that start the embedded dev server when no
// --temporal-address is given.
func (c *connection) devServerFlag(fs *pflag.FlagSet) {
	fs.StringVar(&c.temporalBin, "temporal-bin", "", "Temporal CLI for the embedded dev server, used without --temporal-address (default: the repo's .cache, installed by make setup)")
	fromEnv(fs, "temporal-bin", "REBOUND_TEMPORAL_BIN")
	c.logFlags(fs, "warn", "the embedded dev server's log, DATA_DIR/temporal.log (its banner relayed as records)")
}

// choice is a string flag restricted to a list of values.
type choice struct {
	v       *string
	allowed []string
}

func (c choice) String() string { return *c.v }
func (c choice) Type() string   { return "string" }
func (c choice) Set(s string) error {
	if !slices.Contains(c.allowed, s) {
		if len(c.allowed) == 2 {
			return fmt.Errorf("must be %s or %s, got %q", c.allowed[0], c.allowed[1], s)
		}
		return fmt.Errorf("must be one of %s, got %q", strings.Join(c.allowed, ", "), s)
	}
	*c.v = s
	return nil
}

// choiceFlag adds a string flag that accepts only allowed (the first is
// the default).
func choiceFlag(fs *pflag.FlagSet, p *string, name, usage string, allowed ...string) {
	*p = allowed[0]
	fs.Var(choice{p, allowed}, name, usage+" ("+strings.Join(allowed, ", ")+")")
}

// outputFlag adds --output text|json.
func outputFlag(fs *pflag.FlagSet, p *string) {
	choiceFlag(fs, p, "output", "output format: text for people, json for machines", "text", "json")
}

// boundedInt is an int flag within [min, max].
type boundedInt struct {
	v        *int
	min, max int
}

func (b boundedInt) String() string { return strconv.Itoa(*b.v) }
func (b boundedInt) Type() string   { return "int" }
func (b boundedInt) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not a whole number: %q", s)
	}
	if n < b.min || n > b.max {
		return fmt.Errorf("must be between %d and %d, got %d", b.min, b.max, n)
	}
	*b.v = n
	return nil
}

// intFlag adds an int flag that refuses values outside [min, max].
func intFlag(fs *pflag.FlagSet, p *int, name string, def, min, max int, usage string) {
	*p = def
	fs.Var(boundedInt{p, min, max}, name, fmt.Sprintf("%s (%d..%d)", usage, min, max))
}

// boundedDuration is a duration flag within [min, max].
type boundedDuration struct {
	v        *time.Duration
	min, max time.Duration
}

func (b boundedDuration) String() string { return shortDuration(*b.v) }
func (b boundedDuration) Type() string   { return "duration" }
func (b boundedDuration) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not a duration (e.g. 90s, 5m, 24h): %q", s)
	}
	if d < b.min || d > b.max {
		return fmt.Errorf("must be between %s and %s, got %s", shortDuration(b.min), shortDuration(b.max), shortDuration(d))
	}
	*b.v = d
	return nil
}

// durationFlag adds a duration flag that refuses values outside [min, max].
func durationFlag(fs *pflag.FlagSet, p *time.Duration, name string, def, min, max time.Duration, usage string) {
	*p = def
	fs.Var(boundedDuration{p, min, max}, name, fmt.Sprintf("%s (%s..%s)", usage, shortDuration(min), shortDuration(max)))
}

// shortDuration prints 24h rather than 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// byteSize is a flag of a byte count: a number with an optional unit (KiB,
// MiB, GiB, TiB; KB, MB, GB, TB; B).
type byteSize struct{ v *uint64 }

var byteUnits = []struct {
	suffix string
	mult   uint64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

func (b byteSize) String() string {
	if b.v == nil {
		return ""
	}
	n := *b.v
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatUint(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatUint(n, 10)
}

func (b byteSize) Type() string { return "size" }

func (b byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || n > math.MaxUint64/mult {
		return fmt.Errorf("%q is not a positive size (e.g. 512MiB, 4GiB, 1000000)", s)
	}
	*b.v = n * mult
	return nil
}
