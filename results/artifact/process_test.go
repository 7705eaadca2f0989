package artifact

import (
	"strings"
	"testing"

	"rebound/core/agent"
)

// trial show prints a command arm's refused claims: a refusal records
// nothing, so this is its one trace.
func TestProcessShowsRefusedClaims(t *testing.T) {
	var b strings.Builder
	writeProcess(&b, &agent.Process{Command: []string{"agent"}, ClaimsRefused: 2, LastClaimRefusal: "the claim does not match submit_claim's schema"})
	if !strings.Contains(b.String(), "claims refused: 2 (nothing recorded); the last: the claim does not match submit_claim's schema") {
		t.Errorf("process section:\n%s", b.String())
	}
	b.Reset()
	writeProcess(&b, &agent.Process{Command: []string{"agent"}})
	if strings.Contains(b.String(), "refused") {
		t.Errorf("no refusal, yet:\n%s", b.String())
	}
}
