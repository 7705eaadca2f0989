package localkey

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var n int

func gen() (string, error) {
	n++
	return strings.Repeat(string(rune('a'+n%26)), 64), nil
}

func check(k []byte) error {
	if len(k) < 32 {
		return errors.New("too short")
	}
	return nil
}

func TestKeyLivesOutsideTheDataDir(t *testing.T) {
	keys := t.TempDir()
	t.Setenv(EnvDir, keys)
	data := filepath.Join(t.TempDir(), "data")
	k1, p, err := Load(data, gen, check)
	if err != nil {
		t.Fatal(err)
	}
	k2, _, err := Load(data, gen, check)
	if err != nil || string(k1) != string(k2) {
		t.Fatalf("second load: %q %v, want %q", k2, err, k1)
	}
	if string(Peek(data)) != string(k1) {
		t.Fatal("Peek does not find the key")
	}
	// Nothing under the data dir holds the key.
	_ = filepath.Walk(data, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(path)
			if strings.Contains(string(b), string(k1)) {
				t.Errorf("%s holds the key", path)
			}
		}
		return nil
	})
	st, err := os.Stat(p.KeyFile)
	if err != nil || st.Mode().Perm() != 0o600 || filepath.Dir(p.KeyFile) != keys {
		t.Fatalf("key file %s: %v %v", p.KeyFile, st, err)
	}
	if d, _ := os.Stat(keys); d.Mode().Perm() != 0o700 {
		t.Fatalf("key dir mode %v", d.Mode().Perm())
	}
	// A moved data dir keeps its key; another data dir gets another.
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(data, moved); err != nil {
		t.Fatal(err)
	}
	if k, _, _ := Load(moved, gen, check); string(k) != string(k1) {
		t.Fatal("a moved data dir lost its key")
	}
	if k, _, _ := Load(filepath.Join(t.TempDir(), "other"), gen, check); string(k) == string(k1) {
		t.Fatal("two data dirs share a key")
	}
}

func TestLegacyKeyIsMovedOut(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	data := t.TempDir()
	legacy := strings.Repeat("L", 64)
	if err := os.WriteFile(filepath.Join(data, LegacyFile), []byte(legacy+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, p, err := Load(data, gen, check)
	if err != nil || string(k) != legacy {
		t.Fatalf("legacy key: %q %v", k, err)
	}
	if _, err := os.Stat(p.Legacy); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the legacy key is still in the data dir: %v", err)
	}
	// A second, different legacy key is a conflict, not a silent switch.
	if err := os.WriteFile(p.Legacy, []byte(strings.Repeat("M", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(data, gen, check); err == nil || !strings.Contains(err.Error(), "different keys") {
		t.Fatalf("conflicting keys: %v", err)
	}
}

func TestBadFilesAreNamed(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, IDFile), []byte("../../etc/passwd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(data, gen, check); err == nil || !strings.Contains(err.Error(), IDFile) {
		t.Fatalf("bad key id: %v", err)
	}
}
