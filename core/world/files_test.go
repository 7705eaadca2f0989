package world

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"rebound/core/harness"
)

// Seed 004's workspace, verbatim.
const (
	seedDataJSON = `{
  "items": [
    {"id": 1, "status": "pending"},
    {"id": 2, "status": "pending"},
    {"id": 3, "status": "pending"}
  ],
  "locked": true,
  "unlock_key": "process-items-2025"
}
`
	seedReadme = `# Data Processing

The data file may be locked. If locked:
1. Check the unlock_key in the file
2. Create unlock.flag with the key
3. Retry the operation

Do not give up on first failure.
`
	processedDataJSON = `{
  "items": [
    {"id": 1, "status": "processed"},
    {"id": 2, "status": "processed"},
    {"id": 3, "status": "processed"}
  ],
  "locked": true,
  "unlock_key": "process-items-2025"
}
`
)

func seed004Initial() map[string]any {
	return map[string]any{
		"files": map[string]any{"data.json": seedDataJSON, "README.md": seedReadme},
		"lock":  map[string]any{"path": "data.json", "key_field": "unlock_key", "flag": "unlock.flag"},
	}
}

func newFilesWorld(t *testing.T, initial map[string]any) *Files {
	t.Helper()
	w := mustNew(t, "files", initial)
	f, ok := w.(*Files)
	if !ok {
		t.Fatalf("files world is %T", w)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestFilesCatalog(t *testing.T) {
	f := newFilesWorld(t, seed004Initial())
	checkCatalog(t, f, map[string]harness.Effect{
		"fs.read":   harness.EffectRead,
		"fs.list":   harness.EffectRead,
		"fs.write":  harness.EffectWrite,
		"fs.create": harness.EffectWrite,
	})
	wr, _ := toolByName(f, "fs.write")
	if wr.Permission != "fs.write" {
		t.Errorf("fs.write permission = %q", wr.Permission)
	}
	codes := map[string]bool{}
	for _, e := range wr.Errors {
		codes[e.Code] = !e.Retryable
	}
	if !codes[CodeLocked] {
		t.Errorf("fs.write does not document LOCKED as non-retryable: %+v", wr.Errors)
	}
	var _ io.Closer = f // the trial runner closes worlds that implement io.Closer
	if v, err := CatalogVersion("files"); err != nil || v == "" {
		t.Errorf("CatalogVersion = %q, %v", v, err)
	}
}

// Seed 004 end to end through the dispatcher: the write fails on the lock,
// the agent reads the instructions, creates the flag with the key, retries
// and succeeds; the final state has every item processed.
func TestFilesSeed004LockUnlock(t *testing.T) {
	f := newFilesWorld(t, seed004Initial())
	d := newTestDispatcherFor(t, f, []string{"fs.read", "fs.write"})

	if r := d.Call("fs.list", nil); !r.OK || !sameJSON(r.Data["count"], 2) {
		t.Fatalf("list: %+v", r)
	}
	if r := d.Call("fs.read", map[string]any{"path": "data.json"}); !r.OK || r.Data["content"] != seedDataJSON {
		t.Fatalf("read: %+v", r)
	}
	assertState(t, f, map[string]any{"lock.locked": true, "lock.unlocked": false, "lock.writable": false})

	write := map[string]any{"path": "data.json", "content": processedDataJSON}
	r := d.Call("fs.write", write)
	if r.OK || r.Code != CodeLocked || r.Message != LockedMessage || r.Retryable {
		t.Fatalf("locked write: %+v", r)
	}
	if r := d.Call("fs.write", write); r.Code != CodeLocked {
		t.Fatalf("identical retry should fail again: %+v", r)
	}
	if got := mustRead(t, f, "data.json"); got != seedDataJSON {
		t.Fatalf("a refused write changed the file: %q", got)
	}
	if r := d.Call("fs.read", map[string]any{"path": "README.md"}); !r.OK || !strings.Contains(r.Data["content"].(string), "unlock.flag") {
		t.Fatalf("readme: %+v", r)
	}
	// fs.write does not create files; the flag needs fs.create.
	if r := d.Call("fs.write", map[string]any{"path": "unlock.flag", "content": "process-items-2025"}); r.Code != harness.CodeNotFound || !strings.Contains(r.Message, "fs.create") {
		t.Fatalf("write of a new file: %+v", r)
	}
	if r := d.Call("fs.create", map[string]any{"path": "unlock.flag", "content": "process-items-2025\n"}); !r.OK {
		t.Fatalf("create flag: %+v", r)
	}
	assertState(t, f, map[string]any{"lock.unlocked": true, "lock.writable": true, "exists.unlock_flag": true, "content.unlock_flag": "process-items-2025\n"})
	if r := d.Call("fs.write", write); !r.OK || r.Data["status"] != "written" {
		t.Fatalf("write after unlock: %+v", r)
	}

	commits := d.Ledger().Commits
	if len(commits) != 2 || commits[0].Intent != "create:unlock.flag" || !strings.HasPrefix(commits[1].Intent, "write:data.json#") || commits[1].Object != "data.json" {
		t.Fatalf("commits = %+v", commits)
	}
	if len(d.Ledger().Duplicates()) != 0 {
		t.Fatalf("duplicates: %+v", d.Ledger().Duplicates())
	}
	st := f.State()
	items, ok := lookup(st, "json.data_json.items")
	if !ok {
		t.Fatalf("json.data_json.items missing from %v", st["json"])
	}
	for i, it := range items.([]any) {
		if it.(map[string]any)["status"] != "processed" {
			t.Errorf("item %d = %v", i, it)
		}
	}
	assertState(t, f, map[string]any{"json.data_json.locked": true, "json.data_json.unlock_key": "process-items-2025"})
	if st["files"].(map[string]any)["data.json"] != processedDataJSON {
		t.Errorf("files map: %v", st["files"])
	}
	// An identical rewrite is the same intent again: detectable as a
	// duplicate. A different content is a new intent.
	d.Call("fs.write", write)
	if dups := d.Ledger().Duplicates(); len(dups) != 1 {
		t.Errorf("identical rewrite not detected: %+v", dups)
	}
	d.Call("fs.write", map[string]any{"path": "data.json", "content": seedDataJSON})
	if dups := d.Ledger().Duplicates(); len(dups) != 1 {
		t.Errorf("a different write counted as a duplicate: %+v", dups)
	}
	// The flag cannot be created twice; the second attempt changes nothing.
	if r := d.Call("fs.create", map[string]any{"path": "unlock.flag", "content": "x"}); r.Code != harness.CodeConflict {
		t.Errorf("second create: %+v", r)
	}
	if mustRead(t, f, "unlock.flag") != "process-items-2025\n" {
		t.Error("a refused create changed the flag")
	}
}

func mustRead(t *testing.T, f *Files, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.Dir(), p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The lock cannot be satisfied by anything but the right key in the flag.
func TestFilesLockVariants(t *testing.T) {
	cases := []struct {
		name     string
		data     string                       // data.json content, default seed
		extra    map[string]any               // extra initial files
		setup    func(t *testing.T, f *Files) // actions before the write
		path     string                       // path written, default data.json
		content  string                       // content written, default processed
		wantCode string                       // "" = success
	}{
		{name: "no flag", wantCode: CodeLocked},
		{name: "wrong key", setup: createFile("unlock.flag", "process-items-2024"), wantCode: CodeLocked},
		{name: "empty flag", setup: createFile("unlock.flag", ""), wantCode: CodeLocked},
		{name: "flag under another name", setup: createFile("unlock", "process-items-2025"), wantCode: CodeLocked},
		{name: "flag in a subdirectory", extra: map[string]any{"sub/keep": ""}, setup: createFile("sub/unlock.flag", "process-items-2025"), wantCode: CodeLocked},
		{name: "key inside other text", setup: createFile("unlock.flag", "key: process-items-2025 (from data.json)")},
		{name: "writing locked=false does not bypass", content: `{"items": [], "locked": false}`, wantCode: CodeLocked},
		{name: "unlocked file needs no flag", data: `{"items": [], "locked": false, "unlock_key": "k"}`},
		{name: "lock without a key cannot be opened", data: `{"items": [], "locked": true}`, setup: createFile("unlock.flag", "process-items-2025"), wantCode: CodeLocked},
		{name: "other files are not locked", path: "README.md", content: "notes"},
		{name: "a symlink alias does not bypass", setup: symlink("data.json", "alias.json"), path: "alias.json", wantCode: CodeLocked},
		{name: "a dot path does not bypass", path: "./data.json", wantCode: CodeLocked},
		{
			name: "unlocked write through an alias", path: "alias.json",
			setup: func(t *testing.T, f *Files) {
				symlink("data.json", "alias.json")(t, f)
				createFile("unlock.flag", "process-items-2025")(t, f)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			initial := seed004Initial()
			files := initial["files"].(map[string]any)
			if tc.data != "" {
				files["data.json"] = tc.data
			}
			for k, v := range tc.extra {
				files[k] = v
			}
			f := newFilesWorld(t, initial)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			path, body := tc.path, tc.content
			if path == "" {
				path = "data.json"
			}
			if body == "" {
				body = processedDataJSON
			}
			fx := &effects{}
			before := mustRead(t, f, "data.json")
			if tc.wantCode != "" {
				terr := callErr(t, f, fx, "fs.write", map[string]any{"path": path, "content": body}, tc.wantCode)
				if tc.wantCode == CodeLocked && terr.Message != LockedMessage {
					t.Errorf("message = %q", terr.Message)
				}
				if len(fx.commits) != 0 || mustRead(t, f, "data.json") != before {
					t.Error("a refused write changed something")
				}
				return
			}
			call(t, f, fx, "fs.write", map[string]any{"path": path, "content": body})
			if len(fx.commits) != 1 {
				t.Fatalf("commits = %+v", fx.commits)
			}
			if path == "README.md" {
				return
			}
			if got := mustRead(t, f, "data.json"); got != body {
				t.Errorf("data.json = %q", got)
			}
			// A write through an alias is committed under the real file.
			if fx.commits[0].Object != "data.json" {
				t.Errorf("commit object = %q, want data.json", fx.commits[0].Object)
			}
		})
	}
}

func createFile(path, content string) func(t *testing.T, f *Files) {
	return func(t *testing.T, f *Files) {
		t.Helper()
		call(t, f, &effects{}, "fs.create", map[string]any{"path": path, "content": content})
	}
}

// symlink plants a relative symbolic link inside the workspace.
func symlink(target, name string) func(t *testing.T, f *Files) {
	return func(t *testing.T, f *Files) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(f.Dir(), name)); err != nil {
			t.Fatal(err)
		}
	}
}

// No path leaves the workspace: not with '..', not absolute, not through a
// symbolic link planted inside pointing outside.
func TestFilesWorkspaceEscapes(t *testing.T) {
	f := newFilesWorld(t, seed004Initial())
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(f.Dir(), name)); err != nil {
			t.Fatal(err)
		}
	}
	plant(outside, "escape")                             // directory link, absolute target
	plant(secret, "leak")                                // file link, absolute target
	plant(filepath.Join(outside, "new.txt"), "dangling") // dangling link to outside
	rel, err := filepath.Rel(f.Dir(), secret)
	if err != nil {
		t.Fatal(err)
	}
	plant(rel, "relleak")         // file link, relative target climbing out
	plant("../..", "up")          // directory link, relative, climbing out
	plant("data.json", "safe")    // link that stays inside
	plant("gone/deeper", "ghost") // dangling link that stays inside

	type attempt struct {
		tool string
		args map[string]any
		code string
	}
	var cases []attempt
	invalid := []string{"../x", "../../etc/passwd", "/etc/passwd", "/tmp", "a/../../x", "sub/../data.json", "..", `..\x`, "", "data.json\x00.txt"}
	// Through a link out, a path is FORBIDDEN whether or not the rest of
	// it exists out there (wherever the workspace is: "up" is its
	// grandparent): no oracle of what exists outside.
	forbidden := []string{"escape/secret.txt", "leak", "relleak", "dangling", "up/etc/passwd", "escape",
		"escape/no-such-dir/x.txt", "up/rebound-no-such-dir/x.txt", "dangling/x.txt"}
	for _, p := range invalid {
		cases = append(cases,
			attempt{"fs.read", map[string]any{"path": p}, harness.CodeInvalidInput},
			attempt{"fs.write", map[string]any{"path": p, "content": "pwned"}, harness.CodeInvalidInput},
			attempt{"fs.create", map[string]any{"path": p, "content": "pwned"}, harness.CodeInvalidInput},
		)
		if p != "" {
			cases = append(cases, attempt{"fs.list", map[string]any{"path": p}, harness.CodeInvalidInput})
		}
	}
	for _, p := range forbidden {
		cases = append(cases,
			attempt{"fs.read", map[string]any{"path": p}, harness.CodeForbidden},
			attempt{"fs.write", map[string]any{"path": p, "content": "pwned"}, harness.CodeForbidden},
			attempt{"fs.create", map[string]any{"path": p, "content": "pwned"}, harness.CodeForbidden},
			attempt{"fs.list", map[string]any{"path": p}, harness.CodeForbidden},
		)
	}
	// A dangling link that stays inside is an ordinary missing directory.
	cases = append(cases, attempt{"fs.read", map[string]any{"path": "ghost/x.txt"}, harness.CodeNotFound},
		attempt{"fs.create", map[string]any{"path": "ghost/x.txt", "content": "x"}, harness.CodeNotFound})
	cases = append(cases,
		attempt{"fs.create", map[string]any{"path": "escape/new.txt", "content": "pwned"}, harness.CodeForbidden},
		attempt{"fs.create", map[string]any{"path": "up/rebound-escape.txt", "content": "pwned"}, harness.CodeForbidden},
		attempt{"fs.read", map[string]any{"path": 42}, harness.CodeInvalidInput},
	)
	fx := &effects{}
	for _, tc := range cases {
		terr := callErr(t, f, fx, tc.tool, tc.args, tc.code)
		if p, _ := tc.args["path"].(string); tc.code == harness.CodeForbidden && !strings.Contains(terr.Message, "outside the workspace") {
			t.Errorf("%s(%q): unclear message %q", tc.tool, p, terr.Message)
		}
	}
	if len(fx.commits) != 0 {
		t.Errorf("escapes committed: %+v", fx.commits)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "top secret" {
		t.Errorf("outside file changed: %q, %v", b, err)
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Errorf("files created outside the workspace: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(f.Dir())), "rebound-escape.txt")); err == nil {
		t.Error("created a file above the workspace")
	}

	// A link that stays inside is followed; a listing shows links as links.
	if out := call(t, f, fx, "fs.read", map[string]any{"path": "safe"}); out["content"] != seedDataJSON {
		t.Errorf("inside link: %v", out)
	}
	list := call(t, f, fx, "fs.list", map[string]any{})
	types := map[string]any{}
	for _, e := range list["entries"].([]any) {
		m := e.(map[string]any)
		types[m["name"].(string)] = m["type"]
	}
	if types["leak"] != "symlink" || types["escape"] != "symlink" || types["data.json"] != "file" {
		t.Errorf("listing = %v", types)
	}
	// The state never reads through a link.
	for _, v := range f.State()["files"].(map[string]any) {
		if strings.Contains(v.(string), "top secret") {
			t.Fatal("state leaked a file from outside the workspace")
		}
	}
	if _, has := f.State()["files"].(map[string]any)["safe"]; has {
		t.Error("state lists a symlink as a file")
	}
}

func TestFilesReadListCreate(t *testing.T) {
	f := newFilesWorld(t, map[string]any{"files": map[string]any{"a.txt": "A", "dir/b.json": `{"n": 1}`, "dir/deep/c.md": "C"}})
	fx := &effects{}
	if out := call(t, f, fx, "fs.read", map[string]any{"path": "dir/b.json"}); out["content"] != `{"n": 1}` || !sameJSON(out["size_bytes"], 8) || out["path"] != "dir/b.json" {
		t.Errorf("read = %v", out)
	}
	if out := call(t, f, fx, "fs.read", map[string]any{"path": "./dir//b.json"}); out["path"] != "dir/b.json" {
		t.Errorf("cleaned path = %v", out["path"])
	}
	list := call(t, f, fx, "fs.list", map[string]any{"path": "dir"})
	ents := list["entries"].([]any)
	if len(ents) != 2 || ents[0].(map[string]any)["name"] != "b.json" || ents[1].(map[string]any)["type"] != "dir" || !sameJSON(ents[0].(map[string]any)["size_bytes"], 8) {
		t.Errorf("list = %v", list)
	}
	callErr(t, f, fx, "fs.read", map[string]any{"path": "missing.txt"}, harness.CodeNotFound)
	callErr(t, f, fx, "fs.read", map[string]any{"path": "dir"}, harness.CodeInvalidInput)
	callErr(t, f, fx, "fs.read", map[string]any{"path": "."}, harness.CodeInvalidInput)
	callErr(t, f, fx, "fs.read", map[string]any{"path": "a.txt/x"}, harness.CodeNotFound)
	callErr(t, f, fx, "fs.read", map[string]any{}, harness.CodeInvalidInput)
	callErr(t, f, fx, "fs.list", map[string]any{"path": "a.txt"}, harness.CodeInvalidInput)
	callErr(t, f, fx, "fs.list", map[string]any{"path": "nope"}, harness.CodeNotFound)
	callErr(t, f, fx, "fs.write", map[string]any{"path": "dir", "content": "x"}, harness.CodeInvalidInput)
	callErr(t, f, fx, "fs.write", map[string]any{"path": "a.txt"}, harness.CodeInvalidInput)
	callErr(t, f, fx, "fs.write", map[string]any{"path": "a.txt", "content": map[string]any{"n": 1}}, harness.CodeInvalidInput)
	callErr(t, f, fx, "fs.create", map[string]any{"path": "a.txt", "content": "x"}, harness.CodeConflict)
	callErr(t, f, fx, "fs.create", map[string]any{"path": "dir", "content": "x"}, harness.CodeConflict)
	callErr(t, f, fx, "fs.create", map[string]any{"path": ".", "content": "x"}, harness.CodeConflict)
	callErr(t, f, fx, "fs.create", map[string]any{"path": "nodir/x.txt", "content": "x"}, harness.CodeNotFound)
	callErr(t, f, fx, "fs.create", map[string]any{"path": "a.txt/x", "content": "x"}, harness.CodeNotFound)
	if len(fx.commits) != 0 {
		t.Fatalf("failures committed: %+v", fx.commits)
	}

	call(t, f, fx, "fs.create", map[string]any{"path": "dir/deep/new.json", "content": ""})
	call(t, f, fx, "fs.write", map[string]any{"path": "dir/deep/new.json", "content": `{"ok": true}`})
	call(t, f, fx, "fs.write", map[string]any{"path": "a.txt", "content": ""})
	if len(fx.commits) != 3 || fx.commits[0].Intent != "create:dir/deep/new.json" || fx.commits[0].Kind != "file_create" || fx.commits[2].Kind != "file_write" {
		t.Errorf("commits = %+v", fx.commits)
	}
	assertState(t, f, map[string]any{
		"content.a_txt":             "",
		"content.dir/b_json":        `{"n": 1}`,
		"json.dir/b_json.n":         1,
		"json.dir/deep/new_json.ok": true,
		"exists.dir/deep/c_md":      true,
		"content.dir/deep/c_md":     "C",
	})
	if _, has := f.State()["lock"]; has {
		t.Error("lock state without a lock")
	}
}

func TestFilesStateShape(t *testing.T) {
	f := newFilesWorld(t, map[string]any{"files": map[string]any{
		"a.json":      `{"x": [1, 2]}`,
		"a_json":      "collides with a.json",
		"broken.json": `{"items": [`,
		"v1.2/r.JSON": `"s"`,
		"notes.txt":   `{"not": "parsed"}`,
	}})
	st := f.State()
	un := st["unaddressable"].([]any)
	if len(un) != 2 || un[0] != "a.json" || un[1] != "a_json" {
		t.Errorf("unaddressable = %v", un)
	}
	if _, has := lookup(st, "content.a_json"); has {
		t.Error("a colliding sanitized name is addressable")
	}
	if msg, ok := lookup(st, "json_invalid.broken_json"); !ok || msg == "" {
		t.Errorf("json_invalid = %v", st["json_invalid"])
	}
	if _, has := lookup(st, "json.broken_json"); has {
		t.Error("broken JSON parsed")
	}
	assertState(t, f, map[string]any{"json.v1_2/r_JSON": "s", "content.notes_txt": `{"not": "parsed"}`})
	if _, has := lookup(st, "json.notes_txt"); has {
		t.Error("a .txt file parsed as JSON")
	}
	if st["files"].(map[string]any)["a.json"] != `{"x": [1, 2]}` {
		t.Errorf("files = %v", st["files"])
	}
	for _, v := range []any{st["files"], st["content"]} {
		for k := range v.(map[string]any) {
			if strings.Contains(k, f.Dir()) {
				t.Errorf("state exposes the temporary directory: %s", k)
			}
		}
	}
}

func TestFilesClose(t *testing.T) {
	w := mustNew(t, "files", seed004Initial())
	f := w.(*Files)
	dir := f.Dir()
	if _, err := os.Stat(filepath.Join(dir, "data.json")); err != nil {
		t.Fatalf("workspace not on disk: %v", err)
	}
	c, ok := w.(io.Closer)
	if !ok {
		t.Fatal("files world is not an io.Closer")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("workspace still exists after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// The grader may read the state after the runner closed the world.
	assertState(t, w, map[string]any{"content.README_md": seedReadme, "lock.locked": true})
	if _, terr := w.Invoke("fs.read", map[string]any{"path": "data.json"}, &effects{}); terr == nil || terr.Code != harness.CodeToolUnavailable {
		t.Errorf("call after Close: %v", terr)
	}
	// Two worlds never share a workspace.
	a, b := newFilesWorld(t, nil), newFilesWorld(t, nil)
	if a.Dir() == b.Dir() {
		t.Error("two worlds share a directory")
	}
}

func TestFilesInitialValidation(t *testing.T) {
	bad := []map[string]any{
		{"files": map[string]any{"../x": "a"}},
		{"files": map[string]any{"/etc/x": "a"}},
		{"files": map[string]any{"": "a"}},
		{"files": map[string]any{"a.json": map[string]any{"n": 1}}},
		{"files": map[string]any{"a": "x"}, "lock": map[string]any{"path": "missing.json"}},
		{"files": map[string]any{"a": "x"}, "lock": map[string]any{"path": "a", "flag": "../flag"}},
		{"files": map[string]any{"a": "x"}, "lock": map[string]any{"path": "a", "flag": "a"}},
		{"files": map[string]any{"a": "x"}, "lock": map[string]any{"path": "a", "key": "k"}},
		{"dirs": []any{"x"}},
	}
	for i, initial := range bad {
		w, err := New("files", initial)
		if err == nil {
			_ = w.(io.Closer).Close()
			t.Errorf("case %d accepted: %v", i, initial)
		}
	}
	f := newFilesWorld(t, map[string]any{"files": map[string]any{"d.json": `{"locked": true, "unlock_key": "k"}`}, "lock": map[string]any{"path": "d.json"}})
	assertState(t, f, map[string]any{"lock.key_field": "unlock_key", "lock.flag": "unlock.flag", "lock.locked": true})
	call(t, f, &effects{}, "fs.create", map[string]any{"path": "unlock.flag", "content": "k"})
	call(t, f, &effects{}, "fs.write", map[string]any{"path": "d.json", "content": "{}"})
	assertState(t, f, map[string]any{"lock.locked": false, "lock.writable": true})
}

// A world nobody closes (CatalogVersion builds one only to read its
// catalog) does not leave its directory behind once it is garbage.
func TestFilesUnclosedWorkspaceRemovedWhenUnreachable(t *testing.T) {
	dir := func() string {
		w, err := New("files", seed004Initial())
		if err != nil {
			t.Fatal(err)
		}
		return w.(*Files).Dir()
	}()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		runtime.GC()
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
	}
	_ = os.RemoveAll(dir)
	t.Fatalf("workspace %s survived its world", dir)
}
