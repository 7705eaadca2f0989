package chdb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// EnvLib names the environment variable that points at libchdb.so.
const EnvLib = "REBOUND_CHDB_LIB"

// CacheRelPath is where `make setup` puts the library, relative to the
// repository root.
const CacheRelPath = ".cache/chdb/libchdb.so"

// ErrLibraryNotFound is matched (errors.Is) by the error Open returns when the
// library file does not exist.
var ErrLibraryNotFound = errors.New("libchdb not found")

// LibraryError reports a library that could not be found or loaded.
type LibraryError struct {
	Path string
	Err  error
}

func (e *LibraryError) Error() string {
	if errors.Is(e.Err, fs.ErrNotExist) {
		return fmt.Sprintf("libchdb not found at %s: run `make setup` or set %s", e.Path, EnvLib)
	}
	return fmt.Sprintf("cannot load libchdb from %s: %v (run `make setup` or set %s to a libchdb.so built for this platform)", e.Path, e.Err, EnvLib)
}

func (e *LibraryError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrLibraryNotFound) true for a missing file.
func (e *LibraryError) Is(target error) bool {
	return target == ErrLibraryNotFound && errors.Is(e.Err, fs.ErrNotExist)
}

// LibPath resolves the library to use: explicit wins, then $REBOUND_CHDB_LIB,
// then <dir>/.cache/chdb/libchdb.so for the nearest ancestor <dir> of the
// working directory that holds a go.mod (the repository root), and finally
// ./.cache/chdb/libchdb.so. The result may not exist; Open reports that.
func LibPath(explicit string) string {
	if explicit != "" {
		return explicit
	}
	if p := os.Getenv(EnvLib); p != "" {
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		return CacheRelPath
	}
	if root, ok := repoRoot(wd); ok {
		return filepath.Join(root, filepath.FromSlash(CacheRelPath))
	}
	return filepath.Join(wd, filepath.FromSlash(CacheRelPath))
}

// repoRoot walks up from dir to the first directory holding a go.mod.
func repoRoot(dir string) (string, bool) {
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !st.IsDir() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// lib holds the C entry points of the chDB "new API" (chdb.h).
type lib struct {
	path     string
	handle   uintptr
	loadTime time.Duration

	// chdb_connection * chdb_connect(int argc, char ** argv)
	connect func(argc int32, argv unsafe.Pointer) unsafe.Pointer
	// void chdb_close_conn(chdb_connection * conn)
	closeConn func(conn unsafe.Pointer)
	// chdb_result * chdb_query(chdb_connection conn, const char * query, const char * format)
	// conn is passed by value: the chdb_connection (itself a pointer) that
	// chdb_connect's result points at.
	query func(conn unsafe.Pointer, query string, format string) unsafe.Pointer
	// chdb_result * chdb_query_with_params(chdb_connection conn, const char * query,
	//   const char * format, const char * const * names, const char * const * values, size_t n)
	// Optional (chDB >= 26.5).
	queryWithParams func(conn unsafe.Pointer, query string, format string, names, values unsafe.Pointer, n uintptr) unsafe.Pointer
	// char * chdb_result_buffer(chdb_result *)
	resultBuffer func(r unsafe.Pointer) unsafe.Pointer
	// size_t chdb_result_length(chdb_result *)
	resultLength func(r unsafe.Pointer) uintptr
	// const char * chdb_result_error(chdb_result *); NULL when there is no error
	resultError func(r unsafe.Pointer) unsafe.Pointer
	// void chdb_destroy_query_result(chdb_result *)
	destroyResult func(r unsafe.Pointer)
	// uint64_t chdb_result_rows_read(chdb_result *), chdb_result_bytes_read,
	// double chdb_result_elapsed(chdb_result *): what a query read and how
	// long it took. Optional.
	resultRowsRead  func(r unsafe.Pointer) uint64
	resultBytesRead func(r unsafe.Pointer) uint64
	resultElapsed   func(r unsafe.Pointer) float64
	// void chdb_set_signal_handlers_enabled(int). Optional (chDB >= 26.3).
	setSignalHandlersEnabled func(enabled int32)
}

var (
	libMu     sync.Mutex
	loadedLib *lib
)

// loadLib dlopens libchdb once per process. A failed load is not cached, so a
// later call may try another path; a successful load pins the path.
func loadLib(path string) (*lib, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &LibraryError{Path: path, Err: err}
	}
	if err := platformSupported(); err != nil {
		return nil, &LibraryError{Path: abs, Err: err}
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, &LibraryError{Path: abs, Err: err}
	}
	if st.IsDir() {
		return nil, &LibraryError{Path: abs, Err: errors.New("is a directory")}
	}
	libMu.Lock()
	defer libMu.Unlock()
	if loadedLib != nil {
		if loadedLib.path != abs {
			return nil, fmt.Errorf("chdb: libchdb is already loaded from %s in this process; cannot also load %s", loadedLib.path, abs)
		}
		return loadedLib, nil
	}
	start := time.Now()
	var handle uintptr
	// dlopen runs the library's static constructors; guard the signal
	// dispositions in case one of them installs a handler.
	guardSignals(func() {
		handle, err = purego.Dlopen(abs, purego.RTLD_NOW|purego.RTLD_LOCAL)
	})
	if err != nil {
		return nil, &LibraryError{Path: abs, Err: err}
	}
	l := &lib{path: abs, handle: handle}
	required := []struct {
		fn   any
		name string
	}{
		{&l.connect, "chdb_connect"},
		{&l.closeConn, "chdb_close_conn"},
		{&l.query, "chdb_query"},
		{&l.resultBuffer, "chdb_result_buffer"},
		{&l.resultLength, "chdb_result_length"},
		{&l.resultError, "chdb_result_error"},
		{&l.destroyResult, "chdb_destroy_query_result"},
	}
	for _, r := range required {
		sym, err := purego.Dlsym(handle, r.name)
		if err != nil || sym == 0 {
			// Leave the library mapped: unloading the ClickHouse engine is not safe.
			return nil, &LibraryError{Path: abs, Err: fmt.Errorf("symbol %s not found (library too old? need chDB >= 3.x with the chdb_connect API)", r.name)}
		}
		purego.RegisterFunc(r.fn, sym)
	}
	if sym, err := purego.Dlsym(handle, "chdb_query_with_params"); err == nil && sym != 0 {
		purego.RegisterFunc(&l.queryWithParams, sym)
	}
	for _, o := range []struct {
		fn   any
		name string
	}{
		{&l.resultRowsRead, "chdb_result_rows_read"},
		{&l.resultBytesRead, "chdb_result_bytes_read"},
		{&l.resultElapsed, "chdb_result_elapsed"},
	} {
		if sym, err := purego.Dlsym(handle, o.name); err == nil && sym != 0 {
			purego.RegisterFunc(o.fn, sym)
		}
	}
	if sym, err := purego.Dlsym(handle, "chdb_set_signal_handlers_enabled"); err == nil && sym != 0 {
		purego.RegisterFunc(&l.setSignalHandlersEnabled, sym)
	}
	l.loadTime = time.Since(start)
	loadedLib = l
	return l, nil
}
