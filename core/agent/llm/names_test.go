package llm

import (
	"strings"
	"testing"
)

func TestFunctionNameMapping(t *testing.T) {
	for tool, fn := range map[string]string{
		"payments.charge":        "payments__charge",
		"payments.charge_status": "payments__charge_status",
		"inventory.lookup":       "inventory__lookup",
		"a.b.c":                  "a__b__c",
		"deploy-v2.roll_back":    "deploy-v2__roll_back",
		"plain_name":             "plain_name",
	} {
		got, err := FunctionName(tool)
		if err != nil || got != fn {
			t.Errorf("FunctionName(%q) = %q, %v; want %q", tool, got, err, fn)
		}
		if back := ToolName(got); back != tool {
			t.Errorf("ToolName(%q) = %q, want %q", got, back, tool)
		}
	}
	for tool, why := range map[string]string{
		"a_.b":                         "underscore next to a dot",
		"a._b":                         "underscore next to a dot",
		"a__b":                         `contains "__"`,
		"files/read":                   "only letters",
		"":                             "only letters",
		"x." + strings.Repeat("y", 62): "longer than 64",
	} {
		if _, err := FunctionName(tool); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("FunctionName(%q) err = %v, want %q", tool, err, why)
		}
	}
	// The table is a bijection over an offered set; an unknown function
	// name still maps to a tool name for the harness to refuse.
	m, err := newNameMap([]string{"payments.charge", "payments.refund_status"})
	if err != nil {
		t.Fatal(err)
	}
	if m.tool("payments__refund_status") != "payments.refund_status" || m.tool("payments__void") != "payments.void" || m.tool("rm -rf") != "rm -rf" {
		t.Errorf("reverse lookup wrong")
	}
	if _, err := newNameMap([]string{"update_plan"}); err == nil {
		t.Errorf("a tool named like a built-in was accepted")
	}
}
