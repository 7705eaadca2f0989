// Package localkey keeps the embedded stack's redaction key, and it keeps
// it outside the data dir.
//
// The key seals every stored plan and keys the hashes of idempotency keys,
// so whoever reads it reads the sealed plans. The data dir is what the
// store serves: chDB's files are there, and a query (or an agent that was
// given the data dir) must find no key beside them. So the data dir holds
// only a key id (random, not secret: the file key-id), and the key itself
// lives in a key directory of the user's (mode 0700), as <id>.key (mode
// 0600). Moving or copying a data dir keeps its id; to open its sealed
// plans elsewhere, copy the key file too (or set REBOUND_REDACTION_KEY).
//
// A key left in the data dir by an older rebound (redaction.key) is moved
// to the key directory the first time it is used.
package localkey

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// EnvDir names the variable that overrides the key directory.
const EnvDir = "REBOUND_KEY_DIR"

// IDFile is the file of the data dir that names its key.
const IDFile = "key-id"

// LegacyFile is where rebound kept the key before: inside the data dir.
const LegacyFile = "redaction.key"

var idRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Dir is the key directory: $REBOUND_KEY_DIR, else rebound/keys under the
// user's configuration directory ($XDG_CONFIG_HOME, ~/.config).
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("key directory: %w (set %s)", err, EnvDir)
	}
	return filepath.Join(base, "rebound", "keys"), nil
}

// Paths are where one data dir's key lives.
type Paths struct {
	IDFile  string // <data dir>/key-id
	KeyFile string // <key dir>/<id>.key ("" until the data dir has an id)
	Legacy  string // <data dir>/redaction.key
}

// Load returns the data dir's key, making one (and the id) the first time
// with generate, and moving a legacy key out of the data dir. check
// validates a key read from a file.
func Load(dataDir string, generate func() (string, error), check func([]byte) error) ([]byte, Paths, error) {
	keyDir, err := Dir()
	if err != nil {
		return nil, Paths{}, err
	}
	p := Paths{IDFile: filepath.Join(dataDir, IDFile), Legacy: filepath.Join(dataDir, LegacyFile)}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, p, fmt.Errorf("data dir: %w", err)
	}
	id, err := ensureID(p.IDFile)
	if err != nil {
		return nil, p, err
	}
	p.KeyFile = filepath.Join(keyDir, id+".key")
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return nil, p, fmt.Errorf("key directory: %w", err)
	}
	if err := os.Chmod(keyDir, 0o700); err != nil {
		return nil, p, fmt.Errorf("key directory: %w", err)
	}
	if err := moveLegacy(p, check); err != nil {
		return nil, p, err
	}
	for attempt := 0; attempt < 2; attempt++ {
		b, err := os.ReadFile(p.KeyFile)
		if err == nil {
			key := []byte(strings.TrimSpace(string(b)))
			if err := check(key); err != nil {
				return nil, p, fmt.Errorf("%s: %w", p.KeyFile, err)
			}
			return key, p, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, p, fmt.Errorf("redaction key: %w", err)
		}
		key, err := generate()
		if err != nil {
			return nil, p, err
		}
		switch err := writeExclusive(p.KeyFile, key+"\n"); {
		case err == nil:
			return []byte(key), p, nil
		case errors.Is(err, os.ErrExist): // another process just made it: read it
		default:
			return nil, p, fmt.Errorf("redaction key: %w", err)
		}
	}
	return nil, p, fmt.Errorf("redaction key: %s keeps changing", p.KeyFile)
}

// Peek returns the data dir's key if it has one, without making anything.
func Peek(dataDir string) []byte {
	if b, err := os.ReadFile(filepath.Join(dataDir, LegacyFile)); err == nil {
		return []byte(strings.TrimSpace(string(b)))
	}
	b, err := os.ReadFile(filepath.Join(dataDir, IDFile))
	if err != nil {
		return nil
	}
	id := strings.TrimSpace(string(b))
	keyDir, err := Dir()
	if err != nil || !idRe.MatchString(id) {
		return nil
	}
	k, err := os.ReadFile(filepath.Join(keyDir, id+".key"))
	if err != nil {
		return nil
	}
	return []byte(strings.TrimSpace(string(k)))
}

func ensureID(path string) (string, error) {
	for attempt := 0; attempt < 2; attempt++ {
		if b, err := os.ReadFile(path); err == nil {
			id := strings.TrimSpace(string(b))
			if !idRe.MatchString(id) {
				return "", fmt.Errorf("%s: not a key id (32 hex digits); remove it to start a new key, which cannot open what the old one sealed", path)
			}
			return id, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("key id: %w", err)
		}
		var raw [16]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", err
		}
		id := hex.EncodeToString(raw[:])
		switch err := writeExclusive(path, id+"\n"); {
		case err == nil:
			return id, nil
		case errors.Is(err, os.ErrExist):
		default:
			return "", fmt.Errorf("key id: %w", err)
		}
	}
	return "", fmt.Errorf("key id: %s keeps changing", path)
}

// moveLegacy moves <data dir>/redaction.key to the key directory. A legacy
// key that differs from a key already there is an error: one of them
// sealed plans the other cannot open.
func moveLegacy(p Paths, check func([]byte) error) error {
	b, err := os.ReadFile(p.Legacy)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("redaction key: %w", err)
	}
	legacy := strings.TrimSpace(string(b))
	if err := check([]byte(legacy)); err != nil {
		return fmt.Errorf("%s: %w", p.Legacy, err)
	}
	if cur, err := os.ReadFile(p.KeyFile); err == nil {
		if strings.TrimSpace(string(cur)) != legacy {
			return fmt.Errorf("%s and %s hold different keys; keep the one the stored sweeps were sealed with and remove the other", p.Legacy, p.KeyFile)
		}
	} else if err := writeExclusive(p.KeyFile, legacy+"\n"); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("redaction key: move out of the data dir: %w", err)
	}
	if err := os.Remove(p.Legacy); err != nil {
		return fmt.Errorf("redaction key: remove %s after moving it: %w", p.Legacy, err)
	}
	return nil
}

// writeExclusive creates path (mode 0600) with data, failing with
// os.ErrExist if it is there; the content appears whole (written to a
// temporary file, then linked).
func writeExclusive(path, data string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}

// SecretExt is the extension of a data dir's served-store credential in the
// key directory (<id>.served).
const SecretExt = ".served"

// Secret returns the credential clients of the data dir's served store
// present (package storage/served), making it the first time: 32 random
// bytes, hex, kept beside the redaction key as <id>.served (mode 0600, in
// the 0700 key directory), never in the data dir the store serves. A
// process of the same user (a read command) reads the same one.
func Secret(dataDir string) (string, error) {
	keyDir, err := Dir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	id, err := ensureID(filepath.Join(dataDir, IDFile))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return "", fmt.Errorf("key directory: %w", err)
	}
	if err := os.Chmod(keyDir, 0o700); err != nil {
		return "", fmt.Errorf("key directory: %w", err)
	}
	path := filepath.Join(keyDir, id+SecretExt)
	for attempt := 0; attempt < 2; attempt++ {
		b, err := os.ReadFile(path)
		if err == nil {
			s := strings.TrimSpace(string(b))
			if !secretRe.MatchString(s) {
				return "", fmt.Errorf("%s: not a served-store credential (64 hex digits); remove it and restart the process that serves the store to make a new one", path)
			}
			return s, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("served-store credential: %w", err)
		}
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", err
		}
		s := hex.EncodeToString(raw[:])
		switch err := writeExclusive(path, s+"\n"); {
		case err == nil:
			return s, nil
		case errors.Is(err, os.ErrExist): // another process just made it
		default:
			return "", fmt.Errorf("served-store credential: %w", err)
		}
	}
	return "", fmt.Errorf("served-store credential: %s keeps changing", path)
}

var secretRe = regexp.MustCompile(`^[0-9a-f]{64}$`)
