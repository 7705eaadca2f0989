package scenario

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

func readSeed004(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../../examples/import/recovery-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestImportRecoveryTest(t *testing.T) {
	data := readSeed004(t)
	im, err := ImportRecoveryTest("recovery-test.yaml", data, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := im.Scenario
	l := DefaultFilesLayout
	if s.World != l.World || s.Name != "recovery-test" || s.Weight != 10 || s.RetryLimit != 3 {
		t.Fatalf("scenario: %+v", s)
	}
	if got := s.Initial["lock"].(map[string]any); got["key_field"] != "unlock_key" || got["flag"] != "test-workspace/unlock.flag" || got["path"] != "test-workspace/data.json" {
		t.Fatalf("lock: %v", got)
	}
	var plan []string
	for _, st := range s.Plan {
		plan = append(plan, st.ID+":"+st.Tool)
	}
	if strings.Join(plan, ",") != "write:fs.write" {
		t.Fatalf("plan: %v", plan)
	}
	// The seed's recovery path: inspect the file, then create the flag.
	if rc := s.Plan[0].Recover; len(rc) != 2 || rc[0].Tool != "fs.read" || rc[1].Tool != "fs.create" || rc[1].Args["content"] != "process-items-2025" {
		t.Fatalf("recover: %+v", rc)
	}
	if c := s.Plan[0].Args["content"].(string); strings.Count(c, `"processed"`) != 3 || strings.Contains(c, "pending") || !strings.Contains(c, `"unlock_key": "process-items-2025"`) {
		t.Fatalf("written content:\n%s", c)
	}
	if len(s.Success) != 3 || s.Success[2].Path != "json.test-workspace/data_json.items.2.status" || s.Success[2].Equals != "processed" {
		t.Fatalf("success: %+v", s.Success)
	}
	if len(s.Variants) != 2 || !s.Variants[0].Recoverable || s.Variants[1].Recoverable ||
		s.Variants[0].Faults[0].Code != "LOCKED" || *s.Variants[0].Faults[0].Retryable || !s.Variants[1].Faults[0].Always {
		t.Fatalf("variants: %+v", s.Variants)
	}
	// Every construct that did not map one to one is noted, with its line.
	wantNotes := []string{
		`recovery-test.yaml:12:1: name: world "files" is not in this build`,
		"14:1: category:", "19:3: setup.description:", "50:5: setup.failure_simulation.recovery_hint:",
		"56:3: expected_behavior:", "69:5: validation[0]: error_detected", "76:5: validation[1]: recovery_attempted",
		"84:5: validation[2].min_attempts:", "85:5: validation[2].max_attempts: max_attempts 4 becomes retry_limit 3",
		"98:5: validation[4]: no_escalation_needed", "103:3: scoring:",
		"114:7: alternative_success.conditions[0].max_retries_reached:", "115:7: alternative_success.conditions[1].escalation_issued:",
		"117:9: alternative_success.conditions[2].escalation_contains: not carried over", "122:3: cleanup:",
	}
	if len(im.Notes) != len(wantNotes) {
		t.Errorf("%d notes, want %d:\n%v", len(im.Notes), len(wantNotes), im.Notes)
	}
	for i, n := range im.Notes {
		if i < len(wantNotes) && !strings.Contains(n.String(), wantNotes[i]) {
			t.Errorf("note %d = %q, want containing %q", i, n, wantNotes[i])
		}
	}
	// The notes are in the output too, and the output is deterministic.
	if !bytes.Contains(im.YAML, []byte("#   line 98: validation[4]: no_escalation_needed")) {
		t.Errorf("notes missing from the output:\n%s", im.YAML)
	}
	for i := 0; i < 3; i++ {
		again, err := ImportRecoveryTest("recovery-test.yaml", data, ImportOptions{})
		if err != nil || !bytes.Equal(again.YAML, im.YAML) {
			t.Fatal("import is not deterministic")
		}
	}
}

// Constructs the importer cannot carry over are errors at file:line.
func TestImportRecoveryTestErrors(t *testing.T) {
	data := string(readSeed004(t))
	cases := []struct {
		name, old, new, want string
	}{
		{"unknown top-level key", "task: |", "timeout: 5\ntask: |", "bad.yaml:52:1: timeout: unknown field: the importer does not know it"},
		{"unknown nested key", "    trigger: first_write_attempt", "    trigger: first_write_attempt\n    delay_ms: 5", "bad.yaml:49:5: delay_ms: unknown field: the importer does not know it"},
		{"unsupported trigger", "trigger: first_write_attempt", "trigger: random_failure", `bad.yaml:48:5: setup.failure_simulation.trigger: unsupported trigger "random_failure"`},
		{"wildcard json_path", `"$.items[0].status"`, `"$.items[*].status"`, `setup.failure_simulation`},
		{"json_path into nothing", `"$.items[0].status"`, `"$.records[0].status"`, `bad.yaml:91:9: validation[3].assertions[0].json_path: no field "records" in test-workspace/data.json`},
		{"index out of range", `"$.items[2].status"`, `"$.items[7].status"`, `validation[3].assertions[2].json_path: no item "items.7"`},
		{"final state of a non-JSON file", "    path: test-workspace/data.json\n    assertions:", "    path: test-workspace/README.md\n    assertions:", `validation[3].path: "test-workspace/README.md" is not JSON`},
		{"final state of an unknown file", "    path: test-workspace/data.json\n    assertions:", "    path: other.json\n    assertions:", `validation[3].path: "other.json" is not a setup file`},
		{"evidence of another kind", "      - file_created: test-workspace/unlock.flag", "      - file_deleted: test-workspace/unlock.flag", `file_deleted: unknown field`},
		{"no success criterion", "  - type: final_state_correct", "  - type: final_state_checked", `bad.yaml:69:3: validation: a file_content (or final_state_correct) or an output_contains validation is required`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(data, tc.old) {
				t.Fatalf("fixture lacks %q", tc.old)
			}
			_, err := ImportRecoveryTest("bad.yaml", []byte(strings.Replace(data, tc.old, tc.new, 1)), ImportOptions{})
			if tc.name == "wildcard json_path" {
				tc.want = `validation[3].assertions[0].json_path: json_path "$.items[*].status": unsupported at "[*].status"`
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant containing %q", err, tc.want)
			}
		})
	}
	// An unknown validation type is an error: a graded check is never
	// dropped silently.
	_, err := ImportRecoveryTest("x.yaml", []byte(strings.Replace(data, "type: no_escalation_needed", "type: judge_says_ok", 1)), ImportOptions{})
	if err == nil || !strings.Contains(err.Error(), `x.yaml:98:5: validation[4].type: unknown validation type "judge_says_ok"`) {
		t.Fatalf("error = %v", err)
	}
}

func TestParseJSONPath(t *testing.T) {
	cases := []struct {
		in   string
		want string // joined segments, or "error"
	}{
		{"$.items[0].status", "items.0.status"},
		{"$['a'].b", "a.b"},
		{"$.a_b-c", "a_b-c"},
		{"$", "error"},
		{"items", "error"},
		{"$..status", "error"},
		{"$.items[?(@.id==1)]", "error"},
		{"$['a.b']", "error"},
	}
	for _, tc := range cases {
		segs, err := parseJSONPath(tc.in)
		got := strings.Join(segs, ".")
		if err != nil {
			got = "error"
		}
		if got != tc.want {
			t.Errorf("parseJSONPath(%q) = %q (%v), want %q", tc.in, got, err, tc.want)
		}
	}
}

// lockOf, one stage of the conversion: the lock's key field is the one
// top-level field of the target file that holds the flag's key.
func TestImporterLockOf(t *testing.T) {
	flag := flagEvidence{file: "unlock.flag", key: "K-1", at: "validation[1].evidence[0]"}
	fs := func(content any) finalState { return finalState{target: "config.json", content: content} }
	cases := []struct {
		name    string
		flag    flagEvidence
		fs      finalState
		want    *lock
		wantErr string
	}{
		{"no flag", flagEvidence{}, fs(map[string]any{"key": "K-1"}), nil, ""},
		{"no target", flag, finalState{}, nil, ""},
		{"not an object", flag, fs([]any{"K-1"}), nil, ""},
		{"one field", flag, fs(map[string]any{"key": "K-1", "other": "x"}), &lock{path: "config.json", keyField: "key", key: "K-1", flag: "unlock.flag"}, ""},
		{"two fields", flag, fs(map[string]any{"a": "K-1", "b": "K-1"}), nil, `validation[1].evidence[0].content_contains: cannot tell the lock's key field: 2 top-level fields of config.json hold "K-1"`},
		{"none", flag, fs(map[string]any{"a": "x"}), nil, "0 top-level fields"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			im := &importer{file: "rt.yaml", l: DefaultFilesLayout}
			got := im.lockOf(tc.flag, tc.fs)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("lock = %+v, want %+v", got, tc.want)
			}
			if tc.wantErr == "" && len(im.errs) > 0 || tc.wantErr != "" && (len(im.errs) != 1 || !strings.Contains(im.errs.Error(), tc.wantErr)) {
				t.Fatalf("errors %v, want %q", im.errs, tc.wantErr)
			}
		})
	}
}
