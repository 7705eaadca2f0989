package clickhouseserver

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"rebound/storage"
)

func TestParseDSN(t *testing.T) {
	opts, db, err := parseDSN("clickhouse://alice:s3cret@ch1:9000,ch2:9000/analytics?dial_timeout=3s&compress=lz4")
	if err != nil {
		t.Fatal(err)
	}
	if db != "analytics" || opts.Auth.Database != "" || opts.Auth.Username != "alice" || opts.Auth.Password != "s3cret" {
		t.Fatalf("db %q, auth %+v", db, opts.Auth)
	}
	if !reflect.DeepEqual(opts.Addr, []string{"ch1:9000", "ch2:9000"}) || opts.DialTimeout != 3*time.Second || opts.Compression == nil {
		t.Fatalf("options %+v", opts)
	}
	// The HTTP interface (a served embedded store, or a server's port 8123).
	hopts, hdb, err := parseDSN("http://rebound:s3cret@127.0.0.1:8123/rebound")
	if err != nil || hdb != "rebound" || hopts.Protocol != clickhouse.HTTP || hopts.Auth.Password != "s3cret" {
		t.Fatalf("http DSN: %+v %q %v", hopts, hdb, err)
	}
	for _, ok := range []string{"clickhouse://localhost:9000", "tcp://localhost:9000"} {
		if _, db, err := parseDSN(ok); err != nil || db != "" {
			t.Fatalf("%s: no database: %q, %v", ok, db, err)
		}
	}
	for _, bad := range []string{
		"ftp://u:s3cret@host:8123/db",         // neither the Native protocol nor HTTP
		"clickhouse://u:s3cret@host:9000/a-b", // not an identifier
		"clickhouse://u:s3/cret@host:9000/db", // unescaped slash in the password
		"clickhouse://u:s3cret@/db",           // no host
		"clickhouse://u:s3cret@host:9000/db?dial_timeout=soon",
	} {
		_, _, err := parseDSN(bad)
		if err == nil {
			t.Errorf("parseDSN(%q) accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "s3/cret") {
			t.Errorf("error for %q leaks the password: %v", bad, err)
		}
	}
}

// A DSN that does not parse fails Open before anything is dialed, without
// leaking.
func TestOpenBadDSNDialsNothing(t *testing.T) {
	old := dial
	dial = func(opts *clickhouse.Options) (conn, error) {
		t.Fatalf("dialed %v for a bad DSN", opts.Addr)
		return nil, nil
	}
	t.Cleanup(func() { dial = old })
	for _, dsn := range []string{
		"clickhouse://u:s3cret@host:9000/bad-db",
		"http://u:s3cret@host:8123/bad-db",
		"ftp://u:s3cret@host:8123/db",
	} {
		_, err := storage.Open(context.Background(), storage.Config{DSN: dsn})
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "ClickHouse DSN") {
			t.Errorf("Open(%s): %v", dsn, err)
		}
	}
}

// A connection opened read-only sends readonly=1 with every query,
// whatever the DSN says.
func TestReadOnlySettings(t *testing.T) {
	opts, _, err := parseDSN("clickhouse://u:p@127.0.0.1:9000/rebound?readonly=0")
	if err != nil {
		t.Fatal(err)
	}
	readOnlySettings(opts, nil)
	if v := opts.Settings["readonly"]; v != 1 {
		t.Fatalf("readonly = %#v, want 1", v)
	}
	opts = &clickhouse.Options{}
	readOnlySettings(opts, nil)
	if opts.Settings["readonly"] != 1 {
		t.Fatalf("settings %v", opts.Settings)
	}
}
