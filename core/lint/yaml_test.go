package lint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// Issue 25: files that cannot be read as rebound YAML (their encoding, a
// tab, a second document, an alias bomb, a misspelling reached through an
// alias) are each reported, located, and lose nothing: the good files
// around them are still checked and ok, and a UTF-16 or BOM file is read
// like UTF-8.
func TestFilesReportEveryUnreadableFile(t *testing.T) {
	good, err := os.ReadFile("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	utf16le := []byte{0xFF, 0xFE}
	for _, u := range utf16.Encode([]rune(string(good))) {
		utf16le = append(utf16le, byte(u), byte(u>>8))
	}
	bomb := "name: b\nworld: payments\ninitial:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 1; i < 7; i++ {
		prev := "*a" + string(rune('0'+i-1))
		bomb += "  a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n"
	}
	dir := t.TempDir()
	files := []struct {
		name string
		data []byte
		want string // "" for ok
	}{
		{"bom.yaml", append([]byte{0xEF, 0xBB, 0xBF}, good...), ""},
		{"utf16.yaml", utf16le, ""},
		{"alias.yaml", []byte("name: a\nworld: payments\ngoal: g\nplan:\n  - &s {id: a, tool: payments.charge}\n  - {<<: *s, id: b, needs_curent: true}\n"), ":6:21: needs_curent: unknown field"},
		{"latin1.yaml", []byte("name: caf\xe9\n"), ":1:10: invalid UTF-8: byte 0xE9"},
		{"utf32.yaml", []byte{0xFF, 0xFE, 0, 0, 'n', 0, 0, 0}, ":1:1: the file is UTF-32LE"},
		{"nul.yaml", []byte("name: a\x00\n"), ":1:8: a NUL byte"},
		{"tab.yaml", []byte("name: a\nplan:\n\t- id: a\n"), ":3:1: invalid YAML: a tab character in the indentation"},
		{"two.yaml", append(append(append([]byte(nil), good...), "---\n"...), good...), ":34:1: a second YAML document starts here"},
		{"bomb.yaml", []byte(bomb), ":8:47: aliases expand this document by more than 100000 nodes (an alias bomb?)"},
		{"plan.yaml", []byte("name: p\nscenarios: [bom.yaml]\narms:\n  - &a {name: a, agent: careful}\n  - {<<: *a, name: b, agnet: x}\nseeds: 1\n"), ":5:23: agnet: unknown field"},
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	res, err := Files(context.Background(), paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != len(files) {
		t.Fatalf("%d files checked, want %d", len(res.Files), len(files))
	}
	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		got := res.Files[i]
		if f.want == "" {
			if !got.OK {
				t.Errorf("%s: %+v", f.name, got.Problems)
			}
			continue
		}
		if got.OK || !strings.Contains(text.String(), paths[i]+f.want) {
			t.Errorf("%s: want %q in:\n%s", f.name, paths[i]+f.want, text.String())
		}
	}
}
