package llm

import (
	"testing"

	"rebound/scenario"
)

// The plan loader hashes prompt files without importing this package; the
// two hashes must be the same function or a valid plan would be rejected.
func TestPlanPromptHashMatches(t *testing.T) {
	for _, p := range []string{"", "be careful", "línea 2\n"} {
		if scenario.PromptHash(p) != HashPrompt(p) {
			t.Errorf("%q: scenario %s, llm %s", p, scenario.PromptHash(p), HashPrompt(p))
		}
	}
}
