package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every declared world of the examples validates against
// schema/world.schema.json, and broken ones do not. (That the schema
// lists exactly the compiler's fields is core/world/declared's
// TestSchemaListsTheLanguage.)
func TestWorldsValidateAgainstSchema(t *testing.T) {
	ws := loadSchema(t, "world.schema.json")
	checkClosed(t, ws, "world.schema.json#")
	files, _ := filepath.Glob("../../examples/scenarios/worlds/*.yaml")
	if len(files) < 4 {
		t.Fatalf("declared worlds: %v", files)
	}
	var desk string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if KindOf(data) != KindWorld {
			t.Errorf("%s: KindOf = %q", f, KindOf(data))
		}
		if errs := validate(ws, ws, yamlValue(t, data), f); len(errs) > 0 {
			t.Errorf("%s does not validate:\n  %s", f, strings.Join(errs, "\n  "))
		}
		if strings.HasSuffix(f, "support-desk.yaml") {
			desk = string(data)
		}
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"unknown tool field", "    effect: read\n", "    effect: read\n    colour: red\n", "unknown field colour"},
		{"bad effect", "effect: conditional", "effect: sometimes", "sometimes is not one of"},
		{"bad type", "      on_shift: boolean", "      on_shift: bool", "matches 0 of the oneOf"},
		{"bad error code", "errors: [BAD_GATEWAY,", "errors: [bad-gateway,", "matches 0 of the oneOf"},
		{"change of no kind", "      - increment: ticket.escalations", "      - incremnt: ticket.escalations", "unknown field incremnt"},
		{"commit without intent", `commit: {kind: note, intent: "note:{ticket_id}:{text}"}`, "commit: {kind: note}", "intent is required"},
		{"landed word", "    status:\n      of: desk.escalate", "    status:\n      landed: done\n      of: desk.escalate", "done is not one of"},
	} {
		doc := strings.Replace(desk, tc.old, tc.new, 1)
		if doc == desk {
			t.Fatalf("%s: fixture lacks %q", tc.name, tc.old)
		}
		errs := validate(ws, ws, yamlValue(t, []byte(doc)), "doc")
		if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
			t.Errorf("%s: errors %v, want one containing %q", tc.name, errs, tc.want)
		}
	}
}
