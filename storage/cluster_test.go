package storage

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

var testCluster = Cluster{Name: "rb_cluster"}

// clusterMigration is every statement Migrate sends on a cluster, in order
// (without the schema_migrations inserts and the version read).
func clusterMigration(t *testing.T, db string, c Cluster) []string {
	t.Helper()
	out := []string{createDatabase(db, c)}
	tmpls := []string{ddlSchemaMigrations}
	for _, m := range migrations {
		tmpls = append(tmpls, m.Statements...)
	}
	for _, q := range tmpls {
		qs, err := clusterStatements(q, db, c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, qs...)
	}
	return out
}

// TestClusterDDLGolden: the whole cluster schema, statement by statement,
// equals testdata/cluster_ddl.golden (go test ./storage/ -run ClusterDDLGolden
// -update rewrites it; review the diff).
func TestClusterDDLGolden(t *testing.T) {
	got := strings.Join(clusterMigration(t, "rebound", testCluster), ";\n\n") + ";\n"
	path := filepath.Join("testdata", "cluster_ddl.golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("cluster DDL differs from %s at line %d:\n got %q\nwant %q\n(run with -update after checking the change)", path, i+1, g, w)
			}
		}
	}
}

// TestClusterStatements pins the translation rules on one statement of each
// kind, written out in full.
func TestClusterStatements(t *testing.T) {
	custom := Cluster{Name: "prod-1", ReplicationPath: "/ch/{shard}/{table}", ReplicaName: "{host}"}
	tests := []struct {
		name string
		in   string
		c    Cluster
		want []string
	}{
		{
			name: "table: replicated local engine keeps the version argument, Distributed sharded by sweep_id",
			in: "CREATE TABLE IF NOT EXISTS {{db}}.sweeps\n(\n    sweep_id String,\n    updated_at DateTime64(3, 'UTC')\n)\n" +
				"ENGINE = ReplacingMergeTree(updated_at)\nORDER BY sweep_id",
			c: testCluster,
			want: []string{
				"CREATE TABLE IF NOT EXISTS `rebound`.sweeps_local ON CLUSTER `rb_cluster`\n(\n    sweep_id String,\n    updated_at DateTime64(3, 'UTC')\n)\n" +
					"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', updated_at)\nORDER BY sweep_id",
				"CREATE TABLE IF NOT EXISTS `rebound`.sweeps ON CLUSTER `rb_cluster` AS `rebound`.sweeps_local\n" +
					"ENGINE = Distributed('rb_cluster', 'rebound', 'sweeps_local', cityHash64(sweep_id))",
			},
		},
		{
			name: "configured paths, engine without arguments",
			in:   "CREATE TABLE IF NOT EXISTS {{db}}.judge_cache\n(\n    scenario String,\n    trace_hash String\n)\nENGINE = MergeTree()\nORDER BY (scenario, trace_hash)",
			c:    custom,
			want: []string{
				"CREATE TABLE IF NOT EXISTS `rebound`.judge_cache_local ON CLUSTER `prod-1`\n(\n    scenario String,\n    trace_hash String\n)\n" +
					"ENGINE = ReplicatedMergeTree('/ch/{shard}/{table}', '{host}')\nORDER BY (scenario, trace_hash)",
				"CREATE TABLE IF NOT EXISTS `rebound`.judge_cache ON CLUSTER `prod-1` AS `rebound`.judge_cache_local\n" +
					"ENGINE = Distributed('prod-1', 'rebound', 'judge_cache_local', cityHash64(scenario, trace_hash))",
			},
		},
		{
			name: "ALTER runs on the local and the Distributed table; the Distributed one takes no codec",
			in:   ddlTrialsRecording,
			c:    testCluster,
			want: []string{
				"ALTER TABLE `rebound`.trials_local ON CLUSTER `rb_cluster` ADD COLUMN IF NOT EXISTS recording String CODEC(ZSTD(3)) AFTER answer",
				"ALTER TABLE `rebound`.trials ON CLUSTER `rb_cluster` ADD COLUMN IF NOT EXISTS recording String AFTER answer",
			},
		},
		{
			name: "a data-skipping index is the local table's only",
			in:   ddlTrialsIDIndex[0],
			c:    testCluster,
			want: []string{
				"ALTER TABLE `rebound`.trials_local ON CLUSTER `rb_cluster` ADD INDEX IF NOT EXISTS idx_trial_id_set trial_id TYPE bloom_filter(0.00001) GRANULARITY 1",
			},
		},
		{
			name: "view ON CLUSTER over the Distributed table",
			in:   "CREATE OR REPLACE VIEW {{db}}.v AS\nSELECT sweep_id FROM {{db}}.trials FINAL",
			c:    testCluster,
			want: []string{"CREATE OR REPLACE VIEW `rebound`.v ON CLUSTER `rb_cluster` AS\nSELECT sweep_id FROM `rebound`.trials FINAL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clusterStatements(tt.in, "rebound", tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d statements, want %d: %q", len(got), len(tt.want), got)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("statement %d:\n got %s\nwant %s", i+1, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestClusterStatementsRefuse(t *testing.T) {
	for _, tt := range []struct{ name, in, wantErr string }{
		{"table without sharding key", "CREATE TABLE IF NOT EXISTS {{db}}.other\n(\n    x UInt8\n)\nENGINE = MergeTree()\nORDER BY x", "other has no sharding key"},
		{"table without engine line", "CREATE TABLE IF NOT EXISTS {{db}}.trials\n(\n    x UInt8\n)\nENGINE = Memory", "exactly one ENGINE"},
		{"ALTER other than ADD COLUMN", "ALTER TABLE {{db}}.trials DROP COLUMN IF EXISTS answer", "only ALTER TABLE ... ADD COLUMN"},
		{"unknown statement", "DROP TABLE {{db}}.trials", "not supported on a cluster"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := clusterStatements(tt.in, "rebound", testCluster)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestClusterDDLCoversEveryMigration: every statement of the schema has a
// cluster form, every cluster statement runs ON CLUSTER, every CREATE TABLE
// of a local table is replicated and every Distributed table is sharded by
// a column of its local table's ORDER BY key.
func TestClusterDDLCoversEveryMigration(t *testing.T) {
	for _, q := range clusterMigration(t, "rebound", testCluster) {
		if !strings.Contains(q, " ON CLUSTER `rb_cluster`") {
			t.Errorf("statement not ON CLUSTER:\n%s", q)
		}
		if strings.Contains(q, "{{db}}") {
			t.Errorf("unrendered template:\n%s", q)
		}
		if strings.Contains(q, "_local ON CLUSTER") && strings.HasPrefix(q, "CREATE TABLE") && !strings.Contains(q, "ENGINE = Replicated") {
			t.Errorf("local table not replicated:\n%s", q)
		}
	}
	for table, key := range shardingKeys {
		tmpl := ""
		for _, q := range append([]string{ddlSchemaMigrations}, allStatements()...) {
			if m := reCreateTable.FindStringSubmatch(q); m != nil && m[1] == table {
				tmpl = q
			}
		}
		if tmpl == "" {
			t.Errorf("sharding key for %s, which no migration creates", table)
			continue
		}
		order := tmpl[strings.LastIndex(tmpl, "ORDER BY "):]
		for _, col := range shardingColumns(key) {
			if !strings.Contains(order, col) {
				t.Errorf("%s: sharding key %s uses %s, not in its %s: versions of one row could land on two shards", table, key, col, order)
			}
		}
	}
}

func allStatements() []string {
	var out []string
	for _, m := range migrations {
		out = append(out, m.Statements...)
	}
	return out
}

// shardingColumns lists the columns a sharding key expression reads.
func shardingColumns(key string) []string {
	key = strings.TrimSuffix(strings.TrimPrefix(key, "cityHash64("), ")")
	var cols []string
	for _, c := range strings.Split(key, ",") {
		cols = append(cols, strings.TrimSpace(c))
	}
	return cols
}

// TestMigrateOnCluster: Migrate on a cluster sends the cluster DDL (and the
// migration rows go through the Distributed schema_migrations).
func TestMigrateOnCluster(t *testing.T) {
	st, fc := recordingStore(t, "rebound")
	st.cluster = testCluster
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	var execs []string
	for _, s := range fc.log {
		if s.kind == "exec" {
			execs = append(execs, s.sql)
		}
	}
	want := clusterMigration(t, "rebound", testCluster)
	if strings.Join(execs, "\n;\n") != strings.Join(want, "\n;\n") {
		t.Fatalf("Migrate sent %d DDL statements, want the %d of the cluster schema:\n%s", len(execs), len(want), strings.Join(execs, "\n;\n"))
	}
}

func TestOpenClusterNeedsServer(t *testing.T) {
	_, err := Open(context.Background(), Config{DataDir: t.TempDir(), Cluster: Cluster{Name: "c"}})
	if err == nil || !strings.Contains(err.Error(), "needs a server DSN") {
		t.Fatalf("err = %v", err)
	}
	// Refused before any server is reached (no transport is registered in
	// this test binary: a refusal for that reason would not count).
	for _, tc := range []struct {
		c       Cluster
		wantErr string
	}{
		{Cluster{Name: "a b"}, "invalid ClickHouse cluster name"},
		{Cluster{Name: "c", ReplicaName: "it's"}, "invalid ClickHouse replica name"},
		{Cluster{ReplicationPath: "/x"}, "without a cluster name"},
	} {
		_, err := Open(context.Background(), Config{DSN: "clickhouse://h:9000", Cluster: tc.c})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Open with cluster %+v: err = %v, want one containing %q", tc.c, err, tc.wantErr)
		}
	}
}

// TestClusterDDLParsesOnEngine: chDB has no clusters and no Keeper, so the
// cluster schema cannot run here; its parser still reads every statement,
// and the canonical form keeps ON CLUSTER and the replicated engine.
func TestClusterDDLParsesOnEngine(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	for _, q := range clusterMigration(t, "rebound", testCluster) {
		canonical, err := st.statement(ctx, q)
		if err != nil {
			t.Fatalf("the engine does not parse:\n%s\n%v", q, err)
		}
		if !strings.Contains(canonical, "ON CLUSTER rb_cluster") {
			t.Errorf("canonical form lost ON CLUSTER: %s", canonical)
		}
	}
}
