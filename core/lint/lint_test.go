package lint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFiles(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nworld: payments\ngoal: g\ntools: [payments.charge]\ngaol: typo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := "../../examples/scenarios/charge-502-twice.yaml"
	plan := "../../examples/plans/quickstart.yaml"
	res, err := Files(context.Background(), []string{good, bad, plan})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 3 || !res.Files[0].OK || res.Files[1].OK || !res.Files[2].OK || res.Files[2].Kind != "plan" || res.Files[0].Kind != "scenario" {
		t.Fatalf("%+v", res)
	}
	if res.Problems != len(res.Files[1].Problems) || res.Problems == 0 {
		t.Fatalf("problems %d, file's %d", res.Problems, len(res.Files[1].Problems))
	}
	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ok    " + good + "\n", bad + ":5:1: gaol: unknown field", "ok    " + plan + "\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Files(ctx, []string{plan}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
}

// What lint refuses on its own, it refuses in a plan too (as run does): a
// scenario whose reference plan cannot reach the goal without faults.
func TestPlanRefusesAnUnreachableScenario(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "success:\n", "success:\n  - {path: orders.NOPE.captured, equals: true}\n", 1)
	if text == string(src) {
		t.Fatal("the example has no success: list to extend")
	}
	sc := filepath.Join(dir, "unreachable.yaml")
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(sc, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plan, []byte("name: p\nscenarios: [unreachable.yaml]\narms:\n  - {name: careful, agent: careful}\nseeds: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Files(context.Background(), []string{sc, plan})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if f.OK || len(f.Problems) == 0 || !strings.Contains(f.Problems[0].Message, "does not reach the goal even without faults") {
			t.Errorf("%s: %+v, want the unreachable plan refused", f.Path, f.Problems)
		}
	}
}
