package scenario

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func readExample(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("../../examples/import/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A grounding test: no simulated failure, a tool sequence, file content
// and no data loss.
func TestImportGroundingTest(t *testing.T) {
	im, err := ImportRecoveryTest("nested-flag-test.yaml", readExample(t, "nested-flag-test.yaml"), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := im.Scenario
	var plan []string
	for _, st := range s.Plan {
		plan = append(plan, st.ID+":"+st.Tool+":"+st.Args["path"].(string))
	}
	// Read before edit: the plan's order, which dependency_order grades.
	if strings.Join(plan, ",") != "read:fs.read:svc/service.json,write:fs.write:svc/service.json" {
		t.Fatalf("plan: %v", plan)
	}
	if c := s.Plan[1].Args["content"].(string); !strings.Contains(c, `"dry_run": false`) || !strings.Contains(c, `"max_batch": 50`) || strings.Count(c, "dry_run") != 1 {
		t.Fatalf("written content:\n%s", c)
	}
	// file_content's two assertions and no_data_loss's other three values.
	var success []string
	for _, a := range s.Success {
		success = append(success, a.Path+"="+strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(fmtAny(a.Equals), "\n", ""), " ", "")))
	}
	want := []string{
		"json.svc/service_json.service.limits.dry_run=false", "json.svc/service_json.service.owner=payments-team",
		"json.svc/service_json.schema=3", "json.svc/service_json.service.limits.max_batch=50", "json.svc/service_json.service.name=ledger-sync",
	}
	if strings.Join(success, ",") != strings.Join(want, ",") {
		t.Fatalf("success:\n%v\nwant\n%v", success, want)
	}
	// A fault-free base; the generated variants add the faults.
	if len(s.Variants) != 1 || s.Variants[0].Name != "base" || len(s.Variants[0].Faults) != 0 || !s.Variants[0].Recoverable || len(s.Generate) != len(GenKinds) {
		t.Fatalf("variants %+v, generate %v", s.Variants, s.Generate)
	}
	if !strings.Contains(s.Goal, "Context: Service files usually keep dry_run at the top level.") {
		t.Errorf("goal: %q", s.Goal)
	}
}

// A distractor test: "report only X" becomes a goal claim field whose
// truth is X's one place in the allowed source.
func TestImportDistractorTest(t *testing.T) {
	im, err := ImportRecoveryTest("pick-the-source-test.yaml", readExample(t, "pick-the-source-test.yaml"), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := im.Scenario
	if len(s.Claim.Fields) != 1 {
		t.Fatalf("claim fields: %+v", s.Claim.Fields)
	}
	f := s.Claim.Fields[0]
	if f.Name != "queue_url" || f.Type != "string" || !f.Goal || f.Truth != "json.q/live-queue_json.queue.url" {
		t.Fatalf("claim field: %+v", f)
	}
	if len(s.Plan) != 1 || s.Plan[0].Tool != "fs.read" || s.Plan[0].Args["path"] != "q/live-queue.json" || s.Plan[0].Sets["queue_url"] != "amqp://mq.live.internal:5672" {
		t.Fatalf("plan: %+v", s.Plan)
	}
	if len(s.Success) != 0 || s.Variants[0].Name != "base" {
		t.Fatalf("success %v, variants %v", s.Success, s.Variants)
	}
}

// Unknown validation types, and every other problem of the file, are
// errors in one pass, each naming the input file, line and field, and no
// message names a source file of the importer.
func TestImportReportsEveryProblemOnce(t *testing.T) {
	data := string(readExample(t, "pick-the-source-test.yaml"))
	bad := strings.NewReplacer(
		"  - type: single_source", "  - type: llm_judge_says_ok\n    description: x\n  - type: single_source",
		"severity: medium", "severity: medium\npriority: 3",
		`expected: "amqp://mq.live.internal:5672"`, `expected: "amqp://nowhere:1"`,
		`      - "mq.retired"`, `      - "mq.retired"`+"\n"+`      - "nowhere"`,
	).Replace(data)
	_, err := ImportRecoveryTest("bad.yaml", []byte(bad), ImportOptions{})
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error %v (%T), want located errors", err, err)
	}
	want := []string{
		"bad.yaml:9:1: priority: unknown field",
		`bad.yaml:36:5: validation[0].expected: "amqp://nowhere:1" is no value`,
		`bad.yaml:42:9: validation[1].forbidden[2]: "nowhere" is part of the reported value`,
		`bad.yaml:43:5: validation[2].type: unknown validation type "llm_judge_says_ok"`,
	}
	if len(es) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(es), len(want), err)
	}
	for i, e := range es {
		if !strings.Contains(e.Error(), want[i]) {
			t.Errorf("error %d = %q, want containing %q", i, e.Error(), want[i])
		}
		if strings.Contains(e.Msg, ".go") {
			t.Errorf("error %d names a source file: %q", i, e.Msg)
		}
	}
}

func fmtAny(v any) string { return fmt.Sprint(v) }
