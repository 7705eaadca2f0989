package declared

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"rebound/internal/fileerr"
)

// FuzzParse: whatever a world file holds, compiling it never panics, and
// it either compiles or says why at file:line:column; a world that
// compiles builds from no initial state and answers any call of each of
// its tools without panicking.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../../examples/scenarios/worlds/*.yaml")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(desk))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("f.yaml", data)
		if err != nil {
			var es fileerr.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("not located errors: %v", err)
			}
			for _, e := range es {
				if e.File != "f.yaml" {
					t.Fatalf("an error in file %q", e.File)
				}
			}
			return
		}
		w, err := d.New(nil)
		if err != nil {
			return // a required field without a default: the scenario must give it
		}
		args := []map[string]any{nil, {}, {"id": "x", "key": "k", "n": 1, "ticket_id": "T-1", "order_id": "A-1"}}
		for _, tl := range d.Tools() {
			for _, a := range args {
				var fx recorder
				w.Invoke(tl.Name, a, &fx)
			}
		}
		_ = w.State()
	})
}
