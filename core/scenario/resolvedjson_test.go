package scenario

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A resolved plan's JSON carries each declared world's content once,
// however many scenarios name it, and reads back to the same plan; a plan
// without declared worlds encodes as before.
func TestResolvedJSONHoldsEachWorldOnce(t *testing.T) {
	world := strings.Repeat("name: w\n# a long world file\n", 200)
	r := &Resolved{Name: "p", Hash: "h", Seeds: []uint64{1}, Arms: []Arm{{Name: "a", Agent: "careful"}}}
	for _, n := range []string{"s1", "s2", "s3"} {
		r.Scenarios = append(r.Scenarios, &Scenario{Name: n, World: "./worlds/w.yaml", WorldFile: "x/worlds/w.yaml", WorldSource: world})
	}
	r.Scenarios = append(r.Scenarios, &Scenario{Name: "b", World: "payments"})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "a long world file"); n != 200 {
		t.Errorf("the world's content appears %d/200 times", n)
	}
	var back Resolved
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, *r)
	}
	if r.Scenarios[0].WorldSource != world {
		t.Error("encoding changed the plan")
	}
	// Without declared worlds the JSON is the plain struct's.
	plain := &Resolved{Name: "p", Scenarios: []*Scenario{{Name: "b", World: "payments"}}}
	pb, _ := json.Marshal(plain)
	ob, _ := json.Marshal(resolvedPlain(*plain))
	if string(pb) != string(ob) {
		t.Errorf("a plan without declared worlds encodes differently:\n%s\n%s", pb, ob)
	}
	// A plan whose scenario names content it does not hold is refused.
	bad := strings.Replace(string(b), `"world_sources":{`, `"world_sources":{"x":"y",`, 1)
	bad = strings.Replace(bad, `"world_source_of":{"s1":"`, `"world_source_of":{"s1":"z`, 1)
	if err := json.Unmarshal([]byte(bad), &back); err == nil {
		t.Error("a missing world content was accepted")
	}
}
