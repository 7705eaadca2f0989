package devstacktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"rebound/internal/devstack"
)

func TestMain(m *testing.M) { Main(m) }

func TestSharedTemporal(t *testing.T) {
	a := Temporal(t)
	b := Temporal(t)
	if a != b {
		t.Fatal("Temporal(t) started a second server")
	}
	c, err := client.Dial(a.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CheckHealth(context.Background(), &client.CheckHealthRequest{}); err != nil {
		t.Fatal(err)
	}
}

func TestChDBLib(t *testing.T) {
	p := ChDBLib(t)
	if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
		t.Fatalf("ChDBLib = %s: %v", p, err)
	}
}

// recorder stands in for *testing.T to see whether need skips or fails.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestSkipOrFail(t *testing.T) {
	missing := fmt.Errorf("libchdb %w: run make setup", devstack.ErrNotFound)
	misconfigured := errors.New("$REBOUND_CHDB_LIB=/x: no such file")

	t.Setenv(devstack.EnvRequireIntegration, "")
	r := &recorder{TB: t}
	need(r, missing)
	if r.failed != "" || !strings.Contains(r.skipped, "make setup") || !strings.Contains(r.skipped, devstack.EnvRequireIntegration) {
		t.Errorf("missing tool, not required: skipped %q, failed %q", r.skipped, r.failed)
	}
	r = &recorder{TB: t}
	need(r, misconfigured)
	if r.failed == "" {
		t.Errorf("a wrong explicit path must fail, not skip: skipped %q", r.skipped)
	}

	t.Setenv(devstack.EnvRequireIntegration, "1")
	r = &recorder{TB: t}
	need(r, missing)
	if r.skipped != "" || !strings.Contains(r.failed, "make setup") {
		t.Errorf("missing tool, required: skipped %q, failed %q", r.skipped, r.failed)
	}
}
