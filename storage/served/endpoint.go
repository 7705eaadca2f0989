package served

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"

	"rebound/internal/localkey"
)

// File is the data dir's file that says where its store is served.
const File = "served.json"

// Endpoint is what served.json holds: where a data dir's store is served,
// by which process. No secret: the credential is in the key directory.
type Endpoint struct {
	Address  string `json:"address"` // host:port on loopback
	PID      int    `json:"pid"`
	Database string `json:"database"`
	User     string `json:"user"`
}

// DSN is the ClickHouse DSN a client opens the served store with (HTTP
// interface, the credential as the password).
func (e Endpoint) DSN(secret string) string {
	u := url.URL{Scheme: "http", User: url.UserPassword(e.User, secret), Host: e.Address, Path: "/" + e.Database}
	return u.String()
}

// ErrStale is matched (errors.Is) by Find's error for a served.json whose
// process is gone (it was killed before it could remove the file).
var ErrStale = errors.New("served: stale served.json")

// Find reads dataDir's served.json. found is false when there is none; a
// file whose process is gone is reported as ErrStale (and left alone: the
// next process to serve the data dir replaces it).
func Find(dataDir string) (e Endpoint, found bool, err error) {
	path := filepath.Join(dataDir, File)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Endpoint{}, false, nil
	}
	if err != nil {
		return Endpoint{}, false, fmt.Errorf("served: %w", err)
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Address == "" || e.PID <= 0 || e.Database == "" || e.User == "" {
		return Endpoint{}, false, fmt.Errorf("served: %s: not a served-store endpoint (address, pid, database, user); remove it", path)
	}
	if !alive(e.PID) {
		return e, false, fmt.Errorf("%w: %s names process %d, which is gone", ErrStale, path, e.PID)
	}
	return e, true, nil
}

// Credential is the data dir's served-store credential (made the first
// time, by whichever process asks first).
func Credential(dataDir string) (string, error) { return localkey.Secret(dataDir) }

// alive reports whether a process of that pid exists (signal 0).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// writeEndpoint writes served.json whole (a temporary file renamed over
// it): a stale one from a killed process is replaced.
func writeEndpoint(dataDir string, e Endpoint) (string, error) {
	path := filepath.Join(dataDir, File)
	b, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dataDir, ".served-*")
	if err != nil {
		return "", fmt.Errorf("served: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return "", fmt.Errorf("served: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", fmt.Errorf("served: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("served: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("served: %w", err)
	}
	return path, nil
}

// removeEndpoint removes served.json if it is still this process's.
func removeEndpoint(path string, pid int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var e Endpoint
	if json.Unmarshal(b, &e) == nil && e.PID == pid {
		_ = os.Remove(path)
	}
}
