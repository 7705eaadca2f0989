package devstack

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestRepoRoot(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), "// comment\nmodule rebound\n\ngo 1.26\n", 0o644)
	nested := filepath.Join(root, "a", "b")
	writeFile(t, filepath.Join(nested, "x.go"), "package b\n", 0o644)
	// A nested module that is not rebound does not stop the walk.
	writeFile(t, filepath.Join(root, "a", "go.mod"), "module example.com/other\n", 0o644)

	got, ok := RepoRoot(nested)
	if !ok || got != root {
		t.Fatalf("RepoRoot(%s) = %q, %v; want %q", nested, got, ok, root)
	}
	if got, ok := RepoRoot(t.TempDir()); ok {
		t.Fatalf("RepoRoot outside a checkout = %q, want none", got)
	}
}

func TestLocateOrder(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), "module rebound\n", 0o644)
	repoBin := filepath.Join(root, ".cache", "bin", "temporal")
	repoLib := filepath.Join(root, ".cache", "chdb", "libchdb.so")
	writeFile(t, repoBin, "#!/bin/sh\n", 0o755)
	writeFile(t, repoLib, "ELF", 0o644)
	cwd := filepath.Join(root, "storage")
	writeFile(t, filepath.Join(cwd, "x.go"), "package storage\n", 0o644)

	envBin := filepath.Join(t.TempDir(), "my-temporal")
	writeFile(t, envBin, "#!/bin/sh\n", 0o755)

	// Environment first.
	l := locator{getenv: env(map[string]string{EnvTemporalBin: envBin}), cwd: cwd}
	if got, err := l.temporal(); err != nil || got != envBin {
		t.Fatalf("temporal() with $%s = %q, %v; want %q", EnvTemporalBin, got, err, envBin)
	}
	// Then the repository's cache.
	l = locator{getenv: env(nil), cwd: cwd}
	if got, err := l.temporal(); err != nil || got != repoBin {
		t.Fatalf("temporal() = %q, %v; want %q", got, err, repoBin)
	}
	if got, err := l.chdb(); err != nil || got != repoLib {
		t.Fatalf("chdb() = %q, %v; want %q", got, err, repoLib)
	}
	// Then next to the executable: <exe dir>/temporal, <exe dir>/../chdb/libchdb.so.
	inst := t.TempDir()
	exe := filepath.Join(inst, "bin", "rebound")
	writeFile(t, exe, "x", 0o755)
	writeFile(t, filepath.Join(inst, "bin", "temporal"), "x", 0o755)
	writeFile(t, filepath.Join(inst, "chdb", "libchdb.so"), "x", 0o644)
	l = locator{getenv: env(nil), cwd: t.TempDir(), exe: exe}
	if got, err := l.temporal(); err != nil || got != filepath.Join(inst, "bin", "temporal") {
		t.Fatalf("temporal() next to exe = %q, %v", got, err)
	}
	if got, err := l.chdb(); err != nil || got != filepath.Join(inst, "chdb", "libchdb.so") {
		t.Fatalf("chdb() next to exe = %q, %v", got, err)
	}
}

func TestLocateErrors(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), "module rebound\n", 0o644)
	// Present but unusable files count as missing.
	writeFile(t, filepath.Join(root, ".cache", "bin", "temporal"), "#!/bin/sh\n", 0o644) // not executable
	writeFile(t, filepath.Join(root, ".cache", "chdb", "libchdb.so"), "", 0o644)         // empty

	l := locator{getenv: env(nil), cwd: root, exe: filepath.Join(t.TempDir(), "rebound")}
	for name, find := range map[string]func() (string, error){"temporal": l.temporal, "chdb": l.chdb} {
		_, err := find()
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: err = %v, want ErrNotFound", name, err)
		}
		msg := err.Error()
		for _, want := range []string{"run make setup", root, "is unset"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q does not mention %q", name, msg, want)
			}
		}
	}

	// An explicit path that is wrong is a configuration error, not "not found".
	l = locator{getenv: env(map[string]string{EnvChDBLib: "/nonexistent/libchdb.so"}), cwd: root}
	_, err := l.chdb()
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("chdb() with a wrong $%s: err = %v, want a configuration error", EnvChDBLib, err)
	}
	for _, want := range []string{"$" + EnvChDBLib, "/nonexistent/libchdb.so", "make setup"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	// Outside any checkout and with no executable to go by.
	l = locator{getenv: env(nil), cwd: t.TempDir()}
	if _, err := l.temporal(); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no rebound checkout") {
		t.Fatalf("temporal() outside a checkout: %v", err)
	}
}

func TestLogTail(t *testing.T) {
	l := newLogTail(16)
	l.Write([]byte("line one\nline two\n"))
	l.Write([]byte("line three\n"))
	if got := l.lines(10); got != " two\nline three" {
		t.Fatalf("lines = %q", got)
	}
	if got := l.lines(1); got != "line three" {
		t.Fatalf("lines(1) = %q", got)
	}
	if !l.containsAny("nope", "three") || l.containsAny("one") {
		t.Fatal("containsAny")
	}
}
