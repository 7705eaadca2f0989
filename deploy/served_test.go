package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"rebound/internal/devstack/devstacktest"
	"rebound/storage"
	_ "rebound/storage/clickhouseserver"
	"rebound/storage/served"
)

// The shipped dashboard, unchanged, on the embedded store a worker serves
// (storage/served): every panel's and variable's SQL, with the macros
// expanded as the datasource does, read by the official Node client
// (@clickhouse/client, installed by make setup from
// deploy/clickhouse-client/package-lock.json) and by clickhouse-go over HTTP
// (what Grafana's ClickHouse datasource uses), answers what the engine
// answers in process; and a parameterized query reads its parameter.
func TestDashboardThroughTheServedStore(t *testing.T) {
	conn := requireEngine(t)
	modules := devstacktest.ClickHouseClient(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("REBOUND_KEY_DIR", filepath.Join(t.TempDir(), "keys"))
	ctx := context.Background()
	door, err := storage.NewDoor(ctx, engine.st, storage.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	srv, err := served.Serve(door, served.Options{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(ctx)
	secret, err := served.Credential(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	ep := srv.Endpoint()

	type query struct {
		Name   string            `json:"name"`
		SQL    string            `json:"sql"`
		Params map[string]string `json:"params,omitempty"`
	}
	var qs []query
	for _, q := range dashboardQueries(t, loadDashboard(t)) {
		sql, err := expand(q.sql)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		qs = append(qs, query{Name: q.name, SQL: sql})
	}
	const paramName = "parameterized: trials per arm of a sweep"
	qs = append(qs, query{Name: paramName,
		SQL:    "SELECT arm, count() AS trials FROM rebound.trials FINAL WHERE sweep_id = {sweep:String} GROUP BY arm ORDER BY arm",
		Params: map[string]string{"sweep": newSweep}})

	// The Node client.
	work := t.TempDir()
	script, err := os.ReadFile("clickhouse-client/read.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "read.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]any{"url": "http://" + ep.Address, "username": ep.User, "password": secret, "database": ep.Database, "queries": qs})
	cmd := exec.Command(node, "read.mjs")
	cmd.Dir = work
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node read.mjs: %v\n%s", err, stderr.String())
	}
	var res struct {
		Ping    bool `json:"ping"`
		Results map[string]struct {
			Rows  []row  `json:"rows"`
			Error string `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output: %v\n%s", err, out)
	}
	if !res.Ping {
		t.Error("the Node client's ping failed")
	}

	// clickhouse-go over HTTP, as Grafana's datasource.
	gostore, err := storage.Open(ctx, storage.Config{DSN: ep.DSN(secret), ReadOnly: true, DoorAtServer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer gostore.Close()

	for _, q := range qs {
		got, ok := res.Results[q.Name]
		if !ok || got.Error != "" {
			t.Errorf("%s: the Node client: %s", q.Name, got.Error)
			continue
		}
		if q.Params != nil {
			want := fmt.Sprint([]row{{"arm": "careful", "trials": "6"}, {"arm": "naive", "trials": "5"}})
			if fmt.Sprint(got.Rows) != want {
				t.Errorf("%s: %v, want %s", q.Name, got.Rows, want)
			}
			continue
		}
		want := runSQL(t, conn, q.Name, q.SQL)
		if a, b := canonRows(got.Rows), canonRows(want); a != b {
			t.Errorf("%s: the Node client read\n%s\nthe engine answers\n%s", q.Name, a, b)
		}
		tab, err := gostore.Query(ctx, q.SQL)
		if err != nil {
			t.Errorf("%s: clickhouse-go over HTTP: %v", q.Name, err)
			continue
		}
		if len(tab.Rows) != len(want) {
			t.Errorf("%s: clickhouse-go over HTTP read %d rows, the engine answers %d", q.Name, len(tab.Rows), len(want))
		}
	}
}

// canonRows prints rows with every number as a number: a server quotes
// 64-bit integers in JSON (the served store does, as a server), the
// embedded session of the tests does not.
func canonRows(rows []row) string {
	var b bytes.Buffer
	for _, r := range rows {
		c := map[string]any{}
		for k, v := range r {
			c[k] = canonValue(v)
		}
		j, _ := json.Marshal(c)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func canonValue(v any) any {
	switch x := v.(type) {
	case string:
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return f
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonValue(e)
		}
		return out
	}
	return v
}
