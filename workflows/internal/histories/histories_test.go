package histories_test

import (
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/proto"

	"rebound/workflows/internal/histories"
)

func committed(t *testing.T) histories.Set {
	t.Helper()
	sets, err := histories.LoadSets("../../testdata/histories")
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) == 0 {
		t.Fatal("no committed set")
	}
	return sets[len(sets)-1]
}

func TestFileNames(t *testing.T) {
	name := histories.FileName("continued-as-new", 2)
	c, run, err := histories.ParseFileName(name)
	if err != nil || c != "continued-as-new" || run != 2 {
		t.Fatalf("ParseFileName(%q) = %q, %d, %v", name, c, run, err)
	}
	for _, bad := range []string{"cancelled.json", "cancelled.run0.json", "Cancelled.run1.json", "cancelled.run1.json.bak"} {
		if _, _, err := histories.ParseFileName(bad); err == nil {
			t.Errorf("ParseFileName(%q) accepted", bad)
		}
	}
	for name, ok := range map[string]bool{"2026-11-30": true, "v1.2_rc": true, "": false, "../x": false, ".hidden": false} {
		if histories.ValidSetName(name) != ok {
			t.Errorf("ValidSetName(%q) = %v", name, !ok)
		}
	}
}

// A history recorded for one case does not pass for another: the checks
// tell a completed, a cancelled, a failed and a continued sweep apart.
func TestCaseChecksTellCasesApart(t *testing.T) {
	set := committed(t)
	for _, recorded := range histories.Cases {
		runs, ok := set.Cases[recorded.Name]
		if !ok {
			continue
		}
		hs := histories.Histories(runs)
		for _, cs := range histories.Cases {
			err := cs.Check(hs)
			switch {
			case cs.Name == recorded.Name && err != nil:
				t.Errorf("%s does not pass its own check: %v", recorded.Name, err)
			case cs.Name != recorded.Name && err == nil:
				t.Errorf("the history of %s passes the check of %s", recorded.Name, cs.Name)
			}
		}
	}
	if err := histories.Cases[0].Check(nil); err == nil {
		t.Error("a case with no runs passed")
	}
}

// The portability check looks inside payloads, which the file holds in
// base64, as well as at the file.
func TestCheckPortable(t *testing.T) {
	runs := committed(t).Cases["quickstart-completed"]
	if len(runs) == 0 {
		t.Fatal("no quickstart history committed")
	}
	h := runs[0].History
	if err := histories.CheckPortable(runs[0].Raw, h); err != nil {
		t.Fatalf("committed history: %v", err)
	}

	leaky := proto.Clone(h).(*historypb.History)
	start := leaky.Events[0].GetWorkflowExecutionStartedEventAttributes()
	start.Input = &commonpb.Payloads{Payloads: []*commonpb.Payload{{
		Metadata: map[string][]byte{"encoding": []byte("json/plain")},
		Data:     []byte(`{"PlanJSON":"{\"file\":\"/home/alice/rebound/examples/plans/quickstart.yaml\"}"}`),
	}}}
	raw, err := histories.Marshal(leaky)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "/home/alice") {
		t.Fatal("the payload is not base64 in the file: the test proves nothing")
	}
	if err := histories.CheckPortable(raw, leaky); err == nil || !strings.Contains(err.Error(), "/home/") {
		t.Errorf("an absolute path inside a payload: %v", err)
	}
	if err := histories.CheckPortable(runs[0].Raw, h, "rebound-histories"); err == nil {
		t.Error("a forbidden string in the file passed")
	}
	if err := histories.CheckPortable(make([]byte, histories.MaxFileBytes+1), h); err == nil {
		t.Error("an oversized file passed")
	}
}

// Marshal writes what Unmarshal (the SDK's reader of CLI output) reads.
func TestMarshalRoundTrip(t *testing.T) {
	for _, runs := range committed(t).Cases {
		for _, r := range runs {
			raw, err := histories.Marshal(r.History)
			if err != nil {
				t.Fatal(err)
			}
			back, err := histories.Unmarshal(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(back, r.History) {
				t.Errorf("%s: the history changed in a round trip", r.Path)
			}
		}
	}
}
