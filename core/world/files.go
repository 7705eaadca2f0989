package world

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"rebound/core/bounds"
	"rebound/core/harness"
)

func init() { register("files", newFiles) }

// CodeLocked is the domain error fs.write returns while the lock guards the
// file. It is not retryable: the identical call fails again until the lock
// is released (seed 004: create the flag file with the key, then retry).
const CodeLocked = "LOCKED"

// LockedMessage is the exact message of a LOCKED failure (seed 004).
const LockedMessage = "Error: File is locked. Cannot modify."

// Files is seed 004's workspace: a real per-trial temporary directory
// (in memory when the machine has a tmpfs: workspace.go), created when the
// world is built and removed by Close. Every path is
// relative to the workspace root; absolute paths and ".." components are
// INVALID_INPUT, and a path that resolves outside the workspace through a
// symbolic link is FORBIDDEN. All I/O also goes through an os.Root, so an
// escape is refused by the kernel-facing layer even if a check were missed.
//
// The optional lock guards one JSON file: while its JSON has "locked": true,
// fs.write to it fails with LOCKED unless the flag file exists and contains
// the value of the file's key field.
//
// Initial state (scenario `initial`):
//
//	files: {<path>: <content>}          # e.g. data.json, README.md
//	lock:  {path: data.json, key_field: unlock_key, flag: unlock.flag}
//
// State shape. grade.Lookup splits paths on '.', so a key such as
// "data.json" cannot be addressed by a dot path. Every file therefore also
// appears under its sanitized name: the relative path (with '/' separators)
// with each '.' replaced by '_' ("data.json" -> "data_json",
// "out/r.v1.json" -> "out/r_v1_json"):
//
//	files.<exact path>       content (for whole-map comparison; not dot-addressable when the path has a dot)
//	content.<sanitized>      content as a string, or the file's size and hash (see below)
//	exists.<sanitized>       true for every regular file
//	json.<sanitized>         parsed JSON of a *.json file that parses (e.g. json.data_json.items, json.data_json.locked)
//	json_invalid.<sanitized> parse error of a *.json file that does not parse (a corrupted file)
//	lock.path | key_field | flag
//	lock.locked              the guarded file's JSON has locked=true
//	lock.unlocked            the flag file exists and contains the key
//	lock.writable            !locked || unlocked
//	unaddressable            paths left out of content/exists/json because two paths sanitize to one name
//
// A file over bounds.FileContent (1 MiB as JSON), or one read after the
// contents already listed fill a third of bounds.WorldState, is recorded
// by size and hash instead of content, in files and content alike:
// {"_truncated": true, "bytes": <size>, "sha256": <hex of the file's bytes>}
// (bounds.MarkerOf); it is streamed through the hash, never held in memory,
// and a JSON one is listed in json_invalid as not parsed. fs.read refuses
// such a file (INVALID_INPUT), and the lock reads neither a guarded nor a
// flag file over the cap.
//
// Only regular files are listed; symbolic links and directories are not.
// The temporary directory's own path is never part of the state (it differs
// per trial). After Close, State returns the snapshot taken when closing.
type Files struct {
	dir    string // resolved absolute path of the workspace root
	root   *os.Root
	lock   *FileLock
	closed bool
	final  map[string]any // state snapshot taken by Close
	hashes map[fileKey]fileHash
}

// FileLock is the seed 004 lock on one JSON file.
type FileLock struct {
	// Path of the guarded JSON file, relative to the workspace root.
	Path string `json:"path"`
	// KeyField names the field of the guarded JSON holding the unlock key;
	// defaults to unlock_key.
	KeyField string `json:"key_field,omitempty"`
	// Flag is the file whose content must contain the key; defaults to
	// unlock.flag.
	Flag string `json:"flag,omitempty"`
}

type filesInitial struct {
	Files map[string]string `json:"files"`
	Lock  *FileLock         `json:"lock,omitempty"`
}

func newFiles(initial map[string]any) (harness.World, error) {
	var in filesInitial
	if err := decodeInitial("files", initial, &in); err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("world files: initial state: %s", fmt.Sprintf(format, args...))
	}
	paths := orderedKeys(in.Files)
	for _, p := range paths {
		if terr := lexicalPath(p); terr != nil {
			return nil, bad("%s", terr.Message)
		}
	}
	if l := in.Lock; l != nil {
		if l.KeyField == "" {
			l.KeyField = "unlock_key"
		}
		if l.Flag == "" {
			l.Flag = "unlock.flag"
		}
		if terr := lexicalPath(l.Path); terr != nil {
			return nil, bad("lock.path: %s", terr.Message)
		}
		if terr := lexicalPath(l.Flag); terr != nil {
			return nil, bad("lock.flag: %s", terr.Message)
		}
		if _, ok := in.Files[l.Path]; !ok {
			return nil, bad("lock.path %q is not one of the initial files", l.Path)
		}
		if filepath.Clean(l.Path) == filepath.Clean(l.Flag) {
			return nil, bad("lock.flag must differ from lock.path")
		}
	}

	tmp, err := os.MkdirTemp(workspaceBase(), "rebound-files-")
	if err != nil {
		return nil, fmt.Errorf("world files: workspace: %w", err)
	}
	dir, err := filepath.EvalSymlinks(tmp)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("world files: workspace: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("world files: workspace: %w", err)
	}
	f := &Files{dir: dir, root: root, lock: in.Lock}
	for _, p := range paths {
		clean := filepath.Clean(p)
		if parent := filepath.Dir(clean); parent != "." {
			if err := root.MkdirAll(parent, 0o755); err != nil {
				_ = f.Close()
				return nil, bad("file %q: %v", p, err)
			}
		}
		if err := root.WriteFile(clean, []byte(in.Files[p]), 0o644); err != nil {
			_ = f.Close()
			return nil, bad("file %q: %v", p, err)
		}
	}
	// A safety net for worlds nobody closes (CatalogVersion builds one just
	// to read its catalog): remove the directory once the world is garbage.
	runtime.AddCleanup(f, func(dir string) { _ = os.RemoveAll(dir) }, dir)
	return f, nil
}

// Dir returns the workspace's absolute path on disk.
func (f *Files) Dir() string { return f.dir }

// Close implements io.Closer: it snapshots the state and removes the
// workspace directory. Calls after the first do nothing.
func (f *Files) Close() error {
	if f.closed {
		return nil
	}
	f.final = f.state()
	f.closed = true
	return errors.Join(f.root.Close(), os.RemoveAll(f.dir))
}

var (
	fsTransient = []harness.DocumentedError{
		{Code: harness.CodeTimeout, Retryable: true},
		{Code: harness.CodeUnavailable, Retryable: true},
		{Code: harness.CodeUnauthorized, Retryable: false},
		{Code: harness.CodeForbidden, Retryable: false},
		{Code: harness.CodeInvalidInput, Retryable: false},
		{Code: harness.CodeNotFound, Retryable: false},
	}
	fsPathParam = harness.Param{Name: "path", Type: "string", Required: true, Description: "path relative to the workspace root, e.g. data.json; no absolute paths, no '..'"}
)

// Tools implements harness.World.
func (f *Files) Tools() []harness.Tool {
	writeErrs := append(append([]harness.DocumentedError{}, fsTransient...),
		harness.DocumentedError{Code: CodeLocked, Retryable: false},
		harness.DocumentedError{Code: harness.CodeTimeoutAfterSend, Retryable: true})
	createErrs := append(append([]harness.DocumentedError{}, fsTransient...),
		harness.DocumentedError{Code: harness.CodeConflict, Retryable: false},
		harness.DocumentedError{Code: harness.CodeTimeoutAfterSend, Retryable: true})
	pathRules := "Paths are relative to the workspace root: an absolute path or a '..' component is INVALID_INPUT, and a path that leads outside the workspace through a symbolic link is FORBIDDEN."
	return []harness.Tool{
		{
			Name:        "fs.read",
			Description: "Read a file of the workspace as text. Read-only. NOT_FOUND when the file does not exist; INVALID_INPUT for a directory or a file over 1 MiB (nothing is read). " + pathRules,
			Effect:      harness.EffectRead, Permission: "fs.read", Errors: fsTransient, LatencyMs: 20, DeadlineMs: 1000,
			Params: []harness.Param{fsPathParam},
		},
		{
			Name:        "fs.list",
			Description: "List a directory of the workspace (default: the root): name, type (file, dir or symlink) and size of each entry. Read-only; not recursive. " + pathRules,
			Effect:      harness.EffectRead, Permission: "fs.read", Errors: fsTransient, LatencyMs: 20, DeadlineMs: 1000,
			Params: []harness.Param{{Name: "path", Type: "string", Description: "directory relative to the workspace root; default ."}},
		},
		{
			Name: "fs.write",
			Description: "Replace the whole content of an existing file (NOT_FOUND if it does not exist: use fs.create). Not idempotent by contract: every call that reaches the disk commits a write. " +
				"A file guarded by a lock fails with LOCKED (not retryable: the identical call fails again until the lock is released); nothing is written. " +
				"An ambiguous result (TIMEOUT_AFTER_SEND) may have written: check with fs.read before writing again. " + pathRules,
			Effect: harness.EffectWrite, Permission: "fs.write", ReconciledBy: "fs.read", Errors: writeErrs, LatencyMs: 30, DeadlineMs: 1000,
			Params: []harness.Param{fsPathParam, {Name: "content", Type: "string", Required: true, Description: "the complete new content of the file"}},
		},
		{
			Name: "fs.create",
			Description: "Create a new file with the given content. CONFLICT if the path already exists (nothing is changed: use fs.write to modify an existing file); NOT_FOUND if its directory does not exist. " +
				"An ambiguous result (TIMEOUT_AFTER_SEND) may have created the file: check with fs.read. " + pathRules,
			Effect: harness.EffectWrite, Permission: "fs.write", ReconciledBy: "fs.read", Errors: createErrs, LatencyMs: 30, DeadlineMs: 1000,
			Params: []harness.Param{fsPathParam, {Name: "content", Type: "string", Required: true, Description: "content of the new file (may be empty)"}},
		},
	}
}

// Invoke implements harness.World.
func (f *Files) Invoke(tool string, args map[string]any, fx harness.Effects) (map[string]any, *harness.ToolError) {
	if f.closed {
		return nil, harness.Errorf(harness.CodeToolUnavailable, "the workspace was closed")
	}
	switch tool {
	case "fs.read":
		return f.read(args)
	case "fs.list":
		return f.list(args)
	case "fs.write":
		return f.write(args, fx)
	case "fs.create":
		return f.create(args, fx)
	}
	return nil, harness.Errorf(harness.CodeToolUnavailable, "files has no method %q", tool)
}

// lexicalPath rejects what no workspace path may look like, before touching
// the disk.
func lexicalPath(p string) *harness.ToolError {
	switch {
	case p == "":
		return harness.Errorf(harness.CodeInvalidInput, "path must not be empty")
	case strings.ContainsRune(p, 0):
		return harness.Errorf(harness.CodeInvalidInput, "path %q contains a NUL byte", p)
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.VolumeName(p) != "":
		return harness.Errorf(harness.CodeInvalidInput, "path %q is absolute; paths are relative to the workspace root (e.g. data.json)", p)
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return harness.Errorf(harness.CodeInvalidInput, "path %q contains '..'; paths cannot leave the workspace", p)
		}
	}
	return nil
}

// wsPath is a path resolved inside the workspace.
type wsPath struct {
	path   string      // as the caller named it, cleaned, '/'-separated
	real   string      // resolved path relative to the root, symlinks followed
	info   fs.FileInfo // of the resolved target; nil when it does not exist
	exists bool
}

// resolve validates a caller's path and resolves it inside the workspace.
// A path whose existing part resolves outside the root is FORBIDDEN.
func (f *Files) resolve(p string) (wsPath, *harness.ToolError) {
	if terr := lexicalPath(p); terr != nil {
		return wsPath{}, terr
	}
	clean := filepath.Clean(p)
	t := wsPath{path: filepath.ToSlash(clean)}
	full := filepath.Join(f.dir, clean)
	outside := harness.Errorf(harness.CodeForbidden, "path %q resolves outside the workspace through a symbolic link", p)
	var real string
	switch _, err := os.Lstat(full); {
	case err == nil:
		r, err := filepath.EvalSymlinks(full)
		if err != nil {
			return wsPath{}, harness.Errorf(harness.CodeForbidden, "path %q is a symbolic link whose target does not exist or is outside the workspace", p)
		}
		if !f.within(r) {
			return wsPath{}, outside
		}
		info, err := os.Stat(r)
		if err != nil {
			return wsPath{}, fsUnavailable("stat %q: %v", p, err)
		}
		real, t.info, t.exists = r, info, true
	case errors.Is(err, fs.ErrNotExist):
		parent, err := filepath.EvalSymlinks(filepath.Dir(full))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if !f.existingWithin(filepath.Dir(full)) {
					// Through a link out of the workspace: FORBIDDEN whether
					// or not the rest exists there (no oracle of what does).
					return wsPath{}, outside
				}
				return wsPath{}, harness.Errorf(harness.CodeNotFound, "directory %q does not exist", filepath.ToSlash(filepath.Dir(clean)))
			}
			if errors.Is(err, syscall.ENOTDIR) {
				return wsPath{}, harness.Errorf(harness.CodeNotFound, "no file %q: a parent is a file, not a directory", t.path)
			}
			return wsPath{}, fsUnavailable("resolve %q: %v", p, err)
		}
		if !f.within(parent) {
			return wsPath{}, outside
		}
		if pi, err := os.Stat(parent); err != nil || !pi.IsDir() {
			return wsPath{}, harness.Errorf(harness.CodeNotFound, "no file %q: a parent is a file, not a directory", t.path)
		}
		real = filepath.Join(parent, filepath.Base(full))
	case errors.Is(err, syscall.ENOTDIR):
		return wsPath{}, harness.Errorf(harness.CodeNotFound, "no file %q: a parent is a file, not a directory", t.path)
	default:
		return wsPath{}, fsUnavailable("stat %q: %v", p, err)
	}
	rel, err := filepath.Rel(f.dir, real)
	if err != nil {
		return wsPath{}, outside
	}
	t.real = rel
	return t, nil
}

// existingWithin says whether the longest existing prefix of the path p (in
// the workspace, lexically) resolves inside the workspace.
// A dangling link is followed to its target's own existing prefix.
func (f *Files) existingWithin(p string) bool {
	for hops := 0; hops < 40; hops++ { // the kernel's bound on links in a path
		for ; p != f.dir && f.within(p); p = filepath.Dir(p) {
			if _, err := os.Lstat(p); err == nil {
				break
			}
		}
		if p == f.dir || !f.within(p) {
			return p == f.dir
		}
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return f.within(r)
		}
		target, lerr := os.Readlink(p)
		if lerr != nil {
			return false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = filepath.Clean(target)
	}
	return false
}

func (f *Files) within(p string) bool {
	rel, err := filepath.Rel(f.dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// fileTarget resolves a path that must name an existing regular file.
func (f *Files) fileTarget(args map[string]any) (wsPath, *harness.ToolError) {
	p, terr := str(args, "path", true)
	if terr != nil {
		return wsPath{}, terr
	}
	t, terr := f.resolve(p)
	if terr != nil {
		return wsPath{}, terr
	}
	if !t.exists {
		return wsPath{}, harness.Errorf(harness.CodeNotFound, "no file %q", t.path)
	}
	if t.info.IsDir() {
		return wsPath{}, harness.Errorf(harness.CodeInvalidInput, "%q is a directory, not a file", t.path)
	}
	if !t.info.Mode().IsRegular() {
		return wsPath{}, harness.Errorf(harness.CodeInvalidInput, "%q is not a regular file", t.path)
	}
	return t, nil
}

func contentArg(args map[string]any) (string, *harness.ToolError) {
	v, ok := args["content"]
	if !ok || v == nil {
		return "", harness.Errorf(harness.CodeInvalidInput, "missing required argument %q", "content")
	}
	s, ok := v.(string)
	if !ok {
		return "", harness.Errorf(harness.CodeInvalidInput, "argument %q must be a string (serialize JSON yourself)", "content")
	}
	return s, nil
}

func fsError(op, path string, err error) *harness.ToolError {
	if strings.Contains(err.Error(), "path escapes") {
		return harness.Errorf(harness.CodeForbidden, "path %q resolves outside the workspace", path)
	}
	return fsUnavailable("%s %q: %v", op, path, err)
}

func (f *Files) read(args map[string]any) (map[string]any, *harness.ToolError) {
	t, terr := f.fileTarget(args)
	if terr != nil {
		return nil, terr
	}
	if size := t.info.Size(); size > bounds.FileContent {
		return nil, harness.Errorf(harness.CodeInvalidInput, "%q is %d bytes; fs.read returns files of at most %d bytes, nothing was read", t.path, size, bounds.FileContent)
	}
	b, over, err := f.readAtMost(t.real, bounds.FileContent)
	if err != nil {
		return nil, fsError("read", t.path, err)
	}
	if over {
		return nil, harness.Errorf(harness.CodeInvalidInput, "%q is over %d bytes; fs.read returns files of at most %d bytes, nothing was read", t.path, bounds.FileContent, bounds.FileContent)
	}
	return map[string]any{"path": t.path, "content": string(b), "size_bytes": len(b)}, nil
}

// readAtMost reads a file of the workspace if it holds at most limit bytes;
// over reports a larger one (nothing more than limit+1 bytes is read).
func (f *Files) readAtMost(rel string, limit int64) (b []byte, over bool, err error) {
	file, err := f.root.Open(rel)
	if err != nil {
		return nil, false, err
	}
	defer file.Close()
	b, err = io.ReadAll(io.LimitReader(file, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > limit {
		return nil, true, nil
	}
	return b, false, nil
}

// hashFile streams a file of the workspace through SHA-256 (never holding
// it in memory), at most bounds.HashedFile bytes of it; hashed is how many
// bytes the digest covers.
func (f *Files) hashFile(rel string) (sum []byte, hashed int64, err error) {
	file, err := f.root.Open(rel)
	if err != nil {
		return nil, 0, err
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(file, bounds.HashedFile))
	if err != nil {
		return nil, 0, err
	}
	return h.Sum(nil), n, nil
}

func (f *Files) list(args map[string]any) (map[string]any, *harness.ToolError) {
	p, terr := str(args, "path", false)
	if terr != nil {
		return nil, terr
	}
	if p == "" {
		p = "."
	}
	t, terr := f.resolve(p)
	if terr != nil {
		return nil, terr
	}
	if !t.exists {
		return nil, harness.Errorf(harness.CodeNotFound, "no directory %q", t.path)
	}
	if !t.info.IsDir() {
		return nil, harness.Errorf(harness.CodeInvalidInput, "%q is a file, not a directory: read it with fs.read", t.path)
	}
	d, err := f.root.Open(t.real)
	if err != nil {
		return nil, fsError("list", t.path, err)
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil, fsError("list", t.path, err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	out := make([]any, 0, len(ents))
	for _, e := range ents {
		entry := map[string]any{"name": e.Name()}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			entry["type"] = "symlink"
		case e.IsDir():
			entry["type"] = "dir"
		case e.Type().IsRegular():
			entry["type"] = "file"
			if info, err := e.Info(); err == nil {
				entry["size_bytes"] = info.Size()
			}
		default:
			entry["type"] = "other"
		}
		out = append(out, entry)
	}
	return map[string]any{"path": t.path, "entries": out, "count": len(out)}, nil
}

// contentCall reads the arguments of a call that writes a file's content
// (fs.write, fs.create): the path, resolved in the workspace, and the
// content.
func (f *Files) contentCall(args map[string]any) (wsPath, string, *harness.ToolError) {
	p, terr := str(args, "path", true)
	if terr != nil {
		return wsPath{}, "", terr
	}
	body, terr := contentArg(args)
	if terr != nil {
		return wsPath{}, "", terr
	}
	t, terr := f.resolve(p)
	return t, body, terr
}

func (f *Files) write(args map[string]any, fx harness.Effects) (map[string]any, *harness.ToolError) {
	t, body, terr := f.contentCall(args)
	if terr != nil {
		return nil, terr
	}
	if !t.exists {
		return nil, harness.Errorf(harness.CodeNotFound, "no file %q; fs.write only replaces existing files, use fs.create to create one", t.path)
	}
	if t.info.IsDir() || !t.info.Mode().IsRegular() {
		return nil, harness.Errorf(harness.CodeInvalidInput, "%q is not a regular file", t.path)
	}
	if f.guarded(t.real) {
		if st := f.lockStatus(); st.locked && !st.unlocked {
			return nil, harness.Errorf(CodeLocked, "%s", LockedMessage)
		}
	}
	wf, err := f.root.OpenFile(t.real, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return nil, fsError("write", t.path, err)
	}
	_, werr := wf.WriteString(body)
	if cerr := wf.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fsError("write", t.path, werr)
	}
	sum := contentHash(body)
	name := filepath.ToSlash(t.real)
	fx.Commit("file_write", "write:"+name+"#"+sum, name)
	return map[string]any{"path": t.path, "status": "written", "size_bytes": len(body), "sha256": sum}, nil
}

func (f *Files) create(args map[string]any, fx harness.Effects) (map[string]any, *harness.ToolError) {
	t, body, terr := f.contentCall(args)
	if terr != nil {
		return nil, terr
	}
	if t.exists || t.path == "." {
		return nil, harness.Errorf(harness.CodeConflict, "%q already exists; nothing was changed (use fs.write to replace a file's content)", t.path)
	}
	// O_EXCL also refuses a dangling symbolic link planted at the path.
	cf, err := f.root.OpenFile(t.real, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, harness.Errorf(harness.CodeConflict, "%q already exists; nothing was changed", t.path)
		}
		return nil, fsError("create", t.path, err)
	}
	_, werr := cf.WriteString(body)
	if cerr := cf.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fsError("create", t.path, werr)
	}
	name := filepath.ToSlash(t.real)
	fx.Commit("file_create", "create:"+name, name)
	return map[string]any{"path": t.path, "status": "created", "size_bytes": len(body), "sha256": contentHash(body)}, nil
}

// fsUnavailable reports an unexpected disk error, retryable as documented.
func fsUnavailable(format string, args ...any) *harness.ToolError {
	return &harness.ToolError{Code: harness.CodeUnavailable, Retryable: true, Message: fmt.Sprintf(format, args...)}
}

func contentHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

// guarded reports whether a resolved path is the locked file.
func (f *Files) guarded(real string) bool {
	if f.lock == nil {
		return false
	}
	t, terr := f.resolve(f.lock.Path)
	return terr == nil && t.exists && t.real == real
}

type lockState struct{ locked, unlocked bool }

// lockStatus reads the lock from disk: the guarded file's locked flag and
// key, and whether the flag file holds that key.
func (f *Files) lockStatus() lockState {
	var st lockState
	if f.lock == nil {
		return st
	}
	guarded, ok := f.readRegular(f.lock.Path)
	if !ok {
		return st
	}
	var doc map[string]any
	if json.Unmarshal([]byte(guarded), &doc) != nil {
		return st
	}
	st.locked = doc["locked"] == true
	key, _ := doc[f.lock.KeyField].(string)
	if flag, ok := f.readRegular(f.lock.Flag); ok && key != "" {
		st.unlocked = strings.Contains(flag, key)
	}
	return st
}

// readRegular reads a regular file inside the workspace by path.
func (f *Files) readRegular(p string) (string, bool) {
	t, terr := f.resolve(p)
	if terr != nil || !t.exists || !t.info.Mode().IsRegular() {
		return "", false
	}
	// A file over the content cap is not read (a lock or flag file the
	// agent grew past it counts as unreadable).
	b, over, err := f.readAtMost(t.real, bounds.FileContent)
	return string(b), err == nil && !over
}

// State implements harness.World.
func (f *Files) State() map[string]any {
	if f.closed {
		return f.final
	}
	return f.state()
}

// fileMarker records a file by size and hash instead of content; the
// digest of an unchanged file (same size and modification time) is
// remembered, so a state taken twice hashes it once.
func (f *Files) fileMarker(rel string, info fs.FileInfo) map[string]any {
	key := fileKey{rel: rel, size: info.Size(), mod: info.ModTime().UnixNano()}
	h, ok := f.hashes[key]
	if !ok {
		sum, n, err := f.hashFile(rel)
		if err != nil {
			return nil
		}
		h = fileHash{sum: sum, hashed: n}
		if f.hashes == nil {
			f.hashes = map[fileKey]fileHash{}
		}
		f.hashes[key] = h
	}
	m := bounds.MarkerOf(info.Size(), h.sum)
	if h.hashed < info.Size() {
		m["sha256_of_first_bytes"] = h.hashed // the digest covers only the first bounds.HashedFile bytes
	}
	return m
}

type fileKey struct {
	rel       string
	size, mod int64
}

type fileHash struct {
	sum    []byte
	hashed int64
}

// sanitizeStateKey makes a workspace path addressable by a dot path.
func sanitizeStateKey(p string) string { return strings.ReplaceAll(p, ".", "_") }

func (f *Files) state() map[string]any {
	files := map[string]any{}
	// Files are read in lexical order while their contents fit the state's
	// budget (each content appears in files, content and json: a third of
	// bounds.WorldState); a file over bounds.FileContent, or past the
	// budget, is recorded by size and hash (bounds.MarkerOf), streamed.
	budget := bounds.WorldState / 3
	_ = filepath.WalkDir(f.dir, func(full string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(f.dir, full)
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if size := info.Size(); size <= bounds.FileContent && size <= int64(budget) {
			b, over, err := f.readAtMost(rel, bounds.FileContent)
			if err != nil {
				return nil
			}
			if n := bounds.EscapedLen(string(b)); !over && n <= bounds.FileContent && n <= budget {
				budget -= n
				files[filepath.ToSlash(rel)] = string(b)
				return nil
			}
		}
		if m := f.fileMarker(rel, info); m != nil {
			files[filepath.ToSlash(rel)] = m
		}
		return nil
	})

	bySan := map[string][]string{}
	for p := range files {
		k := sanitizeStateKey(p)
		bySan[k] = append(bySan[k], p)
	}
	contents, exists, parsed, invalid := map[string]any{}, map[string]any{}, map[string]any{}, map[string]any{}
	unaddressable := []any{}
	for _, k := range orderedKeys(bySan) {
		ps := bySan[k]
		if len(ps) > 1 {
			sort.Strings(ps)
			for _, p := range ps {
				unaddressable = append(unaddressable, p)
			}
			continue
		}
		p := ps[0]
		exists[k] = true
		body, ok := files[p].(string)
		if !ok { // recorded by size and hash
			contents[k] = files[p]
			if strings.EqualFold(filepath.Ext(p), ".json") {
				invalid[k] = fmt.Sprintf("not parsed: the file is over the %d bytes the state holds", bounds.FileContent)
			}
			continue
		}
		contents[k] = body
		if strings.EqualFold(filepath.Ext(p), ".json") {
			var v any
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				invalid[k] = err.Error()
			} else {
				parsed[k] = v
			}
		}
	}
	out := map[string]any{
		"files":         files,
		"content":       contents,
		"exists":        exists,
		"json":          parsed,
		"json_invalid":  invalid,
		"unaddressable": unaddressable,
	}
	if f.lock != nil {
		st := f.lockStatus()
		out["lock"] = map[string]any{
			"path":      f.lock.Path,
			"key_field": f.lock.KeyField,
			"flag":      f.lock.Flag,
			"locked":    st.locked,
			"unlocked":  st.unlocked,
			"writable":  !st.locked || st.unlocked,
		}
	}
	return out
}
