package devstack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Pinned versions installed by `make setup` (scripts/setup.sh).
const (
	TemporalCLIVersion = "1.5.1"
	ChDBVersion        = "26.5.3"
)

// Environment variables that override where the tools are found.
const (
	EnvTemporalBin = "REBOUND_TEMPORAL_BIN"
	EnvChDBLib     = "REBOUND_CHDB_LIB"
	// EnvRequireIntegration, set to 1 (as `make test` does), turns a missing
	// tool from a skipped integration test into a failed one.
	EnvRequireIntegration = "REBOUND_REQUIRE_INTEGRATION"
)

// ModulePath is the module path that identifies the repository root.
const ModulePath = "rebound"

// ErrNotFound is wrapped by the errors of Locate, LocateTemporal and
// LocateChDB when a tool is not installed anywhere they look. A path given
// explicitly through an environment variable that does not hold the tool is a
// configuration error instead, and does not wrap ErrNotFound.
var ErrNotFound = errors.New("not found")

// Tools holds the paths of the local tools.
type Tools struct {
	TemporalBin string // the Temporal CLI (`temporal server start-dev`)
	ChDBLib     string // libchdb.so, the embedded ClickHouse engine
}

// Locate finds both tools; see LocateTemporal and LocateChDB. The error
// names every tool that is missing.
func Locate() (Tools, error) {
	l := defaultLocator()
	t, errT := l.temporal()
	c, errC := l.chdb()
	return Tools{TemporalBin: t, ChDBLib: c}, errors.Join(errT, errC)
}

// LocateTemporal finds the Temporal CLI: $REBOUND_TEMPORAL_BIN if set, else
// <repo>/.cache/bin/temporal, where <repo> is the nearest directory at or
// above the working directory whose go.mod declares `module rebound`, else
// `temporal` next to the running executable.
func LocateTemporal() (string, error) { return defaultLocator().temporal() }

// LocateChDB finds libchdb.so: $REBOUND_CHDB_LIB if set, else
// <repo>/.cache/chdb/libchdb.so, else <exe dir>/../chdb/libchdb.so.
func LocateChDB() (string, error) { return defaultLocator().chdb() }

// RepoRoot returns the nearest directory at or above dir whose go.mod declares
// `module rebound`.
func RepoRoot(dir string) (string, bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for {
		if isReboundModule(filepath.Join(dir, "go.mod")) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func isReboundModule(gomod string) bool {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == ModulePath
		}
	}
	return false
}

// locator holds the inputs of the search so tests can fake them.
type locator struct {
	getenv func(string) string
	cwd    string // "" when unknown
	exe    string // "" when unknown
}

func defaultLocator() locator {
	l := locator{getenv: os.Getenv}
	l.cwd, _ = os.Getwd()
	if exe, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		l.exe = exe
	}
	return l
}

type tool struct {
	name       string // for messages
	env        string
	repoRel    string // path under the repository root
	exeRel     string // path relative to the executable's directory
	executable bool
}

var (
	temporalTool = tool{
		name:       "Temporal CLI " + TemporalCLIVersion,
		env:        EnvTemporalBin,
		repoRel:    filepath.Join(".cache", "bin", "temporal"),
		exeRel:     "temporal",
		executable: true,
	}
	chdbTool = tool{
		name:    "libchdb " + ChDBVersion,
		env:     EnvChDBLib,
		repoRel: filepath.Join(".cache", "chdb", "libchdb.so"),
		exeRel:  filepath.Join("..", "chdb", "libchdb.so"),
	}
)

func (l locator) temporal() (string, error) { return l.find(temporalTool) }
func (l locator) chdb() (string, error)     { return l.find(chdbTool) }

func (l locator) find(t tool) (string, error) {
	if p := l.getenv(t.env); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		if err := t.check(abs); err != nil {
			return "", fmt.Errorf("%s: $%s=%s: %w (fix or unset $%s, or run make setup)", t.name, t.env, p, err, t.env)
		}
		return abs, nil
	}
	var tried []string
	if l.cwd != "" {
		if root, ok := RepoRoot(l.cwd); ok {
			p := filepath.Join(root, t.repoRel)
			if t.check(p) == nil {
				return p, nil
			}
			tried = append(tried, p)
		}
	}
	if l.exe != "" {
		p := filepath.Clean(filepath.Join(filepath.Dir(l.exe), t.exeRel))
		if t.check(p) == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	where := "no rebound checkout above the working directory"
	if len(tried) > 0 {
		where = "looked in " + strings.Join(tried, ", ")
	}
	return "", fmt.Errorf("%s %w ($%s is unset; %s): run make setup at the repository root, or set $%s",
		t.name, ErrNotFound, t.env, where, t.env)
}

func (t tool) check(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", p)
	case fi.Size() == 0:
		return fmt.Errorf("%s is empty", p)
	case t.executable && fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable", p)
	}
	return nil
}
