package world

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"rebound/core/bounds"
	"rebound/core/harness"
)

// A file an agent grew past the content cap (sparse or not) is recorded in
// the state by size and hash, streamed: the state stays small and taking it
// does not read the file into memory. fs.read refuses it.
func TestFilesStateBoundsLargeFiles(t *testing.T) {
	nulMiB := strings.Repeat("\x00", bounds.MiB) // 1 MiB raw, 6 MiB as JSON
	for _, tc := range []struct {
		name   string
		size   int64  // a sparse file of this size, or
		body   string // a file with this content
		sparse bool
	}{
		{name: "sparse 8 MiB", size: 8 * bounds.MiB, sparse: true},
		{name: "sparse 256 MiB", size: 256 * bounds.MiB, sparse: true},
		{name: "1 MiB of NUL bytes (6 MiB as JSON)", body: nulMiB},
		{name: "just over the cap", body: strings.Repeat("a", bounds.FileContent+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFilesWorld(t, seed004Initial())
			path := filepath.Join(f.Dir(), "big.json")
			if tc.sparse {
				fh, err := os.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := fh.Truncate(tc.size); err != nil {
					t.Fatal(err)
				}
				fh.Close()
			} else {
				if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
					t.Fatal(err)
				}
				tc.size = int64(len(tc.body))
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			st := f.State()
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*bounds.MiB {
				t.Errorf("taking the state allocated %d bytes for a %d-byte file", alloc, tc.size)
			}
			if n := bounds.SizeOf(st); n > 64*bounds.KiB {
				t.Fatalf("state is %d bytes", n)
			}
			m, ok := st["files"].(map[string]any)["big.json"].(map[string]any)
			if !ok || !bounds.IsMarker(m) || m["bytes"] != tc.size {
				t.Fatalf("files.big.json = %v", st["files"].(map[string]any)["big.json"])
			}
			if !tc.sparse {
				sum := sha256.Sum256([]byte(tc.body))
				if m["sha256"] != hex.EncodeToString(sum[:]) {
					t.Fatalf("sha256 %v", m["sha256"])
				}
			}
			assertState(t, f, map[string]any{"exists.big_json": true, "content.README_md": seedReadme, "lock.locked": true})
			if !bounds.IsMarker(st["content"].(map[string]any)["big_json"]) {
				t.Fatal("content.big_json is not the marker")
			}
			if _, ok := st["json_invalid"].(map[string]any)["big_json"]; !ok {
				t.Fatal("big.json not listed as not parsed")
			}
			// Reading it: a file over the cap is refused by the world before
			// it reads a byte; one under the cap whose result is over it as
			// JSON reaches the agent without its data (the harness's cap).
			d := newTestDispatcherFor(t, f, []string{"fs.read"})
			r := d.Call("fs.read", map[string]any{"path": "big.json"})
			if tc.size > bounds.FileContent {
				if r.Code != harness.CodeInvalidInput || !strings.Contains(r.Message, "at most 1048576 bytes") {
					t.Fatalf("fs.read of the big file: %+v", r)
				}
			} else if !r.OK || !bounds.IsMarker(r.Data) {
				t.Fatalf("fs.read of the file: %d bytes of result", len(r.JSON()))
			}
			// Closing snapshots the same bounded state.
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if n := bounds.SizeOf(f.State()); n > 64*bounds.KiB {
				t.Fatalf("state after Close is %d bytes", n)
			}
		})
	}
}

// Many files under the content cap still make a state within its budget:
// the first ones in lexical order are listed whole, the rest by size and
// hash.
func TestFilesStateBudget(t *testing.T) {
	f := newFilesWorld(t, seed004Initial())
	body := strings.Repeat("z", 900*bounds.KiB)
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(f.Dir(), "f"+string(rune('a'+i))+".txt"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := f.State()
	if n := bounds.SizeOf(st); n > bounds.WorldState {
		t.Fatalf("state is %d bytes", n)
	}
	files := st["files"].(map[string]any)
	if files["fa.txt"] != body || !bounds.IsMarker(files["ft.txt"]) {
		t.Fatalf("fa.txt whole: %v; ft.txt marker: %v", files["fa.txt"] == body, files["ft.txt"])
	}
	if files["data.json"] != seedDataJSON {
		t.Fatal("the seed's files must stay whole")
	}
}

// The harness refuses to write more than the call cap into the workspace:
// nothing reaches the disk.
func TestFilesOversizedWriteRefused(t *testing.T) {
	f := newFilesWorld(t, seed004Initial())
	d := newTestDispatcherFor(t, f, []string{"fs.read", "fs.write"})
	r := d.Call("fs.create", map[string]any{"path": "huge.bin", "content": strings.Repeat("\x00", 8*bounds.MiB)})
	if r.OK || r.Code != harness.CodeInvalidInput || !strings.Contains(r.Message, "nothing was sent") {
		t.Fatalf("result %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.Dir(), "huge.bin")); !os.IsNotExist(err) {
		t.Fatalf("the file was written: %v", err)
	}
}
