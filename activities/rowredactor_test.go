package activities

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rebound/core/agent"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/core/world"
	"rebound/internal/redact"
)

// A RowRedactor's rows are exactly Rows' rows: every example scenario's
// variants, run by every scripted agent at two seeds, converted twice by
// one RowRedactor (the second pass answered from its memo) and once by
// Rows with a redactor of its own, with a known secret and secret shapes
// planted in the answer, the claim and a tool call's arguments and result.
func TestRowRedactorRowsAreRows(t *testing.T) {
	files, err := filepath.Glob("../examples/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("example scenarios: %v %v", files, err)
	}
	const known = "opaque-provider-key-Qx7Lm2Vr9Tz4Wb8N"
	opts := redact.Options{Values: []string{known}, HashKey: []byte("row-redactor-test-key")}
	newRed := func() *redact.Redactor {
		red, err := redact.NewWith(opts)
		if err != nil {
			t.Fatal(err)
		}
		return red
	}
	rr := NewRowRedactor(newRed())
	var results []*trial.Result
	for _, f := range files {
		sc, err := scenario.LoadScenario(f, world.Catalog)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range sc.Variants {
			for _, name := range agent.ScriptedNames() {
				ag, err := agent.NewScripted(name)
				if err != nil {
					t.Fatal(err)
				}
				for seed := uint64(1); seed <= 2; seed++ {
					spec := trial.Spec{SweepID: "s", Scenario: sc, Variant: v, Arm: scenario.Arm{Name: name, Agent: name}, Seed: seed}
					r, err := trial.Run(context.Background(), spec, ag)
					if err != nil {
						t.Fatal(err)
					}
					results = append(results, r)
				}
			}
		}
	}
	// Secrets where the rows take text from the agent.
	for i, r := range results {
		if i%7 != 0 {
			continue
		}
		r.Outcome.Answer = "used " + known + " and sk-live-0123456789abcdefghij"
		r.Outcome.Claim = `{"done": true, "api_key": "` + known + `", "note": "Bearer abcdefghijklmnopqrstuvwxyz012345"}`
		if len(r.Ledger.Attempts) > 0 {
			a := &r.Ledger.Attempts[0]
			a.Args = map[string]any{"token": known, "idempotency_key": "k-1", "q": "x"}
			a.Result.Code = "leaked " + known
		}
	}
	plain := newRed()
	for pass := range 2 {
		for i, r := range results {
			gotT, gotC := rr.Rows(r)
			wantT, wantC := Rows(r, plain)
			if !reflect.DeepEqual(gotT, wantT) || !reflect.DeepEqual(gotC, wantC) {
				t.Fatalf("pass %d, trial %d (%s/%s %s seed %d): RowRedactor.Rows differs from Rows", pass+1, i, r.Scenario, r.Variant, r.Arm, r.Seed)
			}
			if pass == 0 && i%7 == 0 {
				row := strings.Join([]string{gotT.Answer, gotT.Claim, gotT.Evidence}, " ")
				for _, c := range gotC {
					row += " " + c.Args + " " + c.Result + " " + c.Code
				}
				if strings.Contains(row, known) || strings.Contains(row, "sk-live-0123") {
					t.Fatalf("trial %d: a planted secret is stored", i)
				}
			}
		}
	}
	if n := len(rr.docs.m); n == 0 || n >= 4*len(results) {
		t.Errorf("the memo holds %d documents for %d trials", n, len(results))
	}
}

func TestDocMemoIsBounded(t *testing.T) {
	red, err := redact.New(nil, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	d := newDocMemo()
	doc := strings.Repeat("x", 4<<10)
	for i := range 2 * docMemoMaxBytes / (8 << 10) {
		d.json(red, map[string]any{"i": i, "text": doc})
		if d.bytes > docMemoMaxBytes {
			t.Fatalf("after %d documents the memo holds %d bytes, cap %d", i+1, d.bytes, docMemoMaxBytes)
		}
	}
	big := map[string]any{"text": strings.Repeat("y", docMemoMaxLen)}
	before := len(d.m)
	if got, want := d.json(red, big), red.JSON(big); got != want {
		t.Fatal("a document over the memo's length is redacted differently")
	}
	if len(d.m) != before {
		t.Error("a document over the memo's length was remembered")
	}
	var nilMemo *docMemo
	if got, want := nilMemo.json(red, map[string]any{"a": 1}), red.JSON(map[string]any{"a": 1}); got != want {
		t.Errorf("nil memo: %s, want %s", got, want)
	}
}

// BenchmarkRowRedactor is BenchmarkRowsRedaction through a RowRedactor
// (one per sweep, as a worker keeps it): the same trials, the same rows.
func BenchmarkRowRedactor(b *testing.B) {
	results := benchTrials(b)
	red, err := redact.NewWith(redact.Options{Values: []string{"opaque-provider-key-Qx7Lm2Vr9Tz4Wb8N"}, HashKey: []byte("bench-key")})
	if err != nil {
		b.Fatal(err)
	}
	rr := NewRowRedactor(red)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rr.Rows(results[i%len(results)])
	}
}
