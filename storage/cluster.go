package storage

import (
	"fmt"
	"regexp"
	"strings"
)

// Cluster DDL. On a ClickHouse cluster every table of the single-node schema
// becomes two:
//
//   - <table>_local, created ON CLUSTER with the Replicated* variant of the
//     table's engine (ReplacingMergeTree(v) → ReplicatedReplacingMergeTree(
//     path, replica, v)): the replicas of one shard hold the same rows;
//   - <table>, a Distributed table over <table>_local with a sharding key
//     that sends every version of one deduplication key to the same shard.
//
// Reads and writes keep using <table> (now the Distributed one), so the
// queries and the views are the same text as on one node. Deduplication
// stays correct because ReplacingMergeTree only merges, and FINAL only
// collapses, rows of one shard: ClickHouse runs FINAL on each shard and
// merges the results, it never collapses across shards. Every ORDER BY key
// of rebound's tables starts with sweep_id (or, for tables without one,
// contains the sharding columns), and all versions of one key share the
// sharding key's value, hence one shard: a retried trial write replaces its
// earlier version exactly as on a single node.
//
// Views are created ON CLUSTER over the Distributed tables, so a query on
// any node sees every shard. ALTERs run ON CLUSTER on both the local and the
// Distributed table (a Distributed table has its own column list), but for
// a data-skipping index, which only the local table has.

// Default replication paths: ClickHouse's standard macros, which every node
// defines in its <macros> section ({database} and {table} are built in).
const (
	DefaultReplicationPath = "/clickhouse/tables/{shard}/{database}/{table}"
	DefaultReplicaName     = "{replica}"
)

// localSuffix names the per-shard table under a Distributed one.
const localSuffix = "_local"

// Cluster selects the cluster schema (Config.Cluster). The zero value
// (empty Name) is a single node.
type Cluster struct {
	// Name is the cluster as named in the servers' remote_servers.
	Name string
	// ReplicationPath is the Keeper path of each replicated table;
	// DefaultReplicationPath when empty.
	ReplicationPath string
	// ReplicaName names this replica under the path; DefaultReplicaName
	// when empty.
	ReplicaName string
}

// Enabled reports whether a cluster is named.
func (c Cluster) Enabled() bool { return c.Name != "" }

func (c Cluster) path() string {
	if c.ReplicationPath == "" {
		return DefaultReplicationPath
	}
	return c.ReplicationPath
}

func (c Cluster) replica() string {
	if c.ReplicaName == "" {
		return DefaultReplicaName
	}
	return c.ReplicaName
}

// validate refuses names and paths that cannot be written into DDL as they
// are: the cluster is an identifier, the paths are string literals.
func (c Cluster) validate() error {
	if !c.Enabled() {
		if c.ReplicationPath != "" || c.ReplicaName != "" {
			return fmt.Errorf("storage: a replication path or replica name is set without a cluster name")
		}
		return nil
	}
	if !clusterNameRe.MatchString(c.Name) {
		return fmt.Errorf("storage: invalid ClickHouse cluster name %q (letters, digits, underscore, dash, dot)", c.Name)
	}
	for _, f := range []struct{ field, v string }{{"replication path", c.path()}, {"replica name", c.replica()}} {
		if f.v == "" || strings.ContainsAny(f.v, "'\\\n\r") {
			return fmt.Errorf("storage: invalid ClickHouse %s %q (no quotes, backslashes or newlines)", f.field, f.v)
		}
	}
	return nil
}

var clusterNameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// shardingKeys is the Distributed sharding key of every table. Each must be
// a function of columns of the table's ORDER BY key, so that all versions of
// one row land on one shard. A table missing here makes clusterStatements
// fail (and TestClusterDDLCoversEveryMigration with it): adding a table means
// choosing its key.
var shardingKeys = map[string]string{
	"schema_migrations": "version",
	"sweeps":            "cityHash64(sweep_id)",
	"trials":            "cityHash64(sweep_id)",
	"tool_calls":        "cityHash64(sweep_id)",
	"model_calls":       "cityHash64(sweep_id)",
	"model_requests":    "cityHash64(sweep_id)",
	"judgements":        "cityHash64(sweep_id)",
	"review_queue":      "cityHash64(sweep_id)",
	"reviews":           "cityHash64(sweep_id)",
	"judge_cache":       "cityHash64(scenario, trace_hash)",
}

var (
	reCreateTable = regexp.MustCompile(`^CREATE TABLE IF NOT EXISTS \{\{db\}\}\.(\w+)\n`)
	reEngine      = regexp.MustCompile(`(?m)^ENGINE = (\w*MergeTree)\(([^)]*)\)$`)
	reAlterTable  = regexp.MustCompile(`^ALTER TABLE \{\{db\}\}\.(\w+) `)
	reCreateView  = regexp.MustCompile(`^(CREATE VIEW IF NOT EXISTS|CREATE OR REPLACE VIEW) \{\{db\}\}\.(\w+) AS\n`)
	reCodec       = regexp.MustCompile(` CODEC\([^()]*(\([^()]*\))?[^()]*\)`)
)

// clusterStatements turns one statement of the single-node schema (a
// template with {{db}}) into the statements that build the same thing on
// cluster c, rendered for database db. It fails on a statement it does not
// know how to distribute, rather than running it on one node only.
func clusterStatements(tmpl, db string, c Cluster) ([]string, error) {
	on := " ON CLUSTER " + quoteIdent(c.Name)
	switch {
	case reCreateTable.MatchString(tmpl):
		table := reCreateTable.FindStringSubmatch(tmpl)[1]
		key, ok := shardingKeys[table]
		if !ok {
			return nil, fmt.Errorf("storage: table %s has no sharding key for a cluster", table)
		}
		m := reEngine.FindStringSubmatchIndex(tmpl)
		if m == nil || len(reEngine.FindAllStringIndex(tmpl, -1)) != 1 {
			return nil, fmt.Errorf("storage: table %s: want exactly one ENGINE = ...MergeTree(...) line to replicate", table)
		}
		engine, args := tmpl[m[2]:m[3]], tmpl[m[4]:m[5]]
		repl := "ENGINE = Replicated" + engine + "('" + c.path() + "', '" + c.replica() + "'"
		if args != "" {
			repl += ", " + args
		}
		repl += ")"
		local := tmpl[:m[0]] + repl + tmpl[m[1]:]
		local = reCreateTable.ReplaceAllLiteralString(local,
			"CREATE TABLE IF NOT EXISTS {{db}}."+table+localSuffix+on+"\n")
		dist := "CREATE TABLE IF NOT EXISTS {{db}}." + table + on + " AS {{db}}." + table + localSuffix +
			"\nENGINE = Distributed(" + quoteString(c.Name) + ", " + quoteString(db) + ", " +
			quoteString(table+localSuffix) + ", " + key + ")"
		return []string{render(local, db), render(dist, db)}, nil

	case reAlterTable.MatchString(tmpl):
		table := reAlterTable.FindStringSubmatch(tmpl)[1]
		if _, ok := shardingKeys[table]; !ok {
			return nil, fmt.Errorf("storage: ALTER of table %s, which has no sharding key for a cluster", table)
		}
		rest := tmpl[len(reAlterTable.FindString(tmpl)):]
		if isPartsAlter(rest) {
			// A data-skipping index lives in the parts, and materializing
			// a column rewrites them: only the local (replicated) table has
			// parts; the Distributed table stores nothing.
			return []string{render("ALTER TABLE {{db}}."+table+localSuffix+on+" "+rest, db)}, nil
		}
		if !strings.HasPrefix(rest, "ADD COLUMN IF NOT EXISTS ") && !strings.HasPrefix(rest, "MODIFY COLUMN ") {
			return nil, fmt.Errorf("storage: only ALTER TABLE ... ADD COLUMN IF NOT EXISTS, MODIFY COLUMN, ADD INDEX IF NOT EXISTS, MATERIALIZE INDEX and MATERIALIZE COLUMN are distributed to a cluster, not:\n%s", tmpl)
		}
		// A column's type is the local table's and the Distributed table's
		// alike (a MODIFY COLUMN rewrites the local parts and changes the
		// Distributed table's metadata only).
		local := "ALTER TABLE {{db}}." + table + localSuffix + on + " " + rest
		// A Distributed table stores nothing: the column needs no codec.
		dist := "ALTER TABLE {{db}}." + table + on + " " + reCodec.ReplaceAllLiteralString(rest, "")
		return []string{render(local, db), render(dist, db)}, nil

	case reCreateView.MatchString(tmpl):
		m := reCreateView.FindStringSubmatch(tmpl)
		head := m[1] + " {{db}}." + m[2] + on + " AS\n"
		return []string{render(head+tmpl[len(m[0]):], db)}, nil
	}
	return nil, fmt.Errorf("storage: statement not supported on a cluster (CREATE TABLE/VIEW or ALTER TABLE ... ADD COLUMN or ... INDEX expected):\n%s", tmpl)
}

// isPartsAlter reports whether an ALTER TABLE's action changes only the
// parts: it adds or materializes a data-skipping index, or materializes a
// column.
func isPartsAlter(action string) bool {
	for _, p := range []string{"ADD INDEX IF NOT EXISTS ", "MATERIALIZE INDEX ", "MATERIALIZE COLUMN "} {
		if strings.HasPrefix(action, p) {
			return true
		}
	}
	return false
}

// quoteString writes s as a ClickHouse string literal.
func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// createDatabase is the statement that creates the database.
func createDatabase(db string, c Cluster) string {
	q := "CREATE DATABASE IF NOT EXISTS " + quoteIdent(db)
	if c.Enabled() {
		q += " ON CLUSTER " + quoteIdent(c.Name)
	}
	return q
}
