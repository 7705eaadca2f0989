package redact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPatternsFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.txt")
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(good, []byte("# customer ids\ncus-[0-9]+\n\nacct_[a-z]{8}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("ok-[0-9]+\nbroken-[\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvPatternsFile, good)
	if p, err := PatternsFromEnv(); err != nil || len(p) != 2 || p[0] != "cus-[0-9]+" || p[1] != "acct_[a-z]{8}" {
		t.Fatalf("patterns = %v, %v", p, err)
	}
	t.Setenv(EnvPatternsFile, bad)
	if _, err := PatternsFromEnv(); err == nil || !strings.Contains(err.Error(), bad+":2: invalid pattern") || !strings.HasPrefix(err.Error(), EnvPatternsFile+": ") {
		t.Fatalf("error = %v", err)
	}
	t.Setenv(EnvPatternsFile, "/dev/zero")
	if _, err := PatternsFromEnv(); err == nil || !strings.Contains(err.Error(), "/dev/zero: is a device") {
		t.Fatalf("device: error = %v", err)
	}
	t.Setenv(EnvPatternsFile, "")
	if p, err := PatternsFromEnv(); err != nil || p != nil {
		t.Fatalf("unset: %v, %v", p, err)
	}
}
