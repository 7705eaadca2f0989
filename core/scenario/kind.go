package scenario

import "gopkg.in/yaml.v3"

// Kinds of rebound YAML files, as KindOf tells them apart.
const (
	KindPlan     = "plan"
	KindScenario = "scenario"
	// KindWorld is a declared world's file (core/world/declared).
	KindWorld = "world"
)

// KindOf tells a plan (a top-level "arms" or "matrix" key) from a scenario
// (a top-level "world" or "goal" key) and from a declared world (top-level
// "state" and "tools", no "world" or "goal") by the keys of a YAML
// document; "" when it is none of them, or not YAML. Commands use it to say
// which file they expected when given another kind.
func KindOf(data []byte) string {
	if LooksLikePlan(data) {
		return KindPlan
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return ""
	}
	top := root.Content[0]
	keys := map[string]bool{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if k := top.Content[i].Value; k == "world" || k == "goal" {
			return KindScenario
		}
		keys[top.Content[i].Value] = true
	}
	if keys["state"] && keys["tools"] {
		return KindWorld
	}
	return ""
}
