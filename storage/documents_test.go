package storage

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"rebound/results/record"
)

// TestDocumentsDictionaryKeepsEveryValue: migration 15 stores the trials'
// verdicts and evidence as LowCardinality(String). A store taken through it
// with trials in it, then written to again by the same process (whose
// column types it described before the migration), holds exactly the
// values of a store that never had it: every column of every row, compared
// as the engine prints them. The documents are generated (any bytes, empty,
// 70 KB long), half drawn from a small pool so that parts hold repeated
// documents as well as distinct ones.
func TestDocumentsDictionaryKeepsEveryValue(t *testing.T) {
	migrated, oracle := openTestStoreAt(t, 14), openTestStoreAt(t, 14)
	fakeClock(migrated)
	fakeClock(oracle)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(15, 35))
	const sweep = "documents"
	trials, calls := genTrials(r, sweep, 300)
	pool := make([]string, 7)
	for i := range pool {
		pool[i] = genString(r)
	}
	doc := func(s string) string {
		if r.IntN(2) == 0 {
			return pool[r.IntN(len(pool))]
		}
		return s
	}
	for i := range trials {
		trials[i].Verdicts, trials[i].Evidence = doc(trials[i].Verdicts), doc(trials[i].Evidence)
	}
	callsOf := func(part []record.Trial) []record.ToolCall {
		in := map[string]bool{}
		for _, tr := range part {
			in[tr.TrialID] = true
		}
		var out []record.ToolCall
		for _, c := range calls {
			if in[c.TrialID] {
				out = append(out, c)
			}
		}
		return out
	}
	write := func(st *store, part []record.Trial) {
		t.Helper()
		// Several inserts: several parts, merged or not.
		for i := 0; i < len(part); i += 50 {
			p := part[i:min(i+50, len(part))]
			if err := st.WriteTrials(ctx, p, callsOf(p)); err != nil {
				t.Fatalf("write: %v", err)
			}
		}
	}
	before, after := trials[:200], trials[200:]
	write(migrated, before)
	write(oracle, before)
	if err := migrated.migrateTo(ctx, 15); err != nil {
		t.Fatal(err)
	}
	oracle.stamp() // the migration's record took one tick of the clock
	write(migrated, after)
	write(oracle, after)

	types := func(st *store) map[string]string {
		var rows []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		}
		q := Stmt{SQL: "SELECT name, type FROM system.columns WHERE database = {db:String} AND table = 'trials' AND name IN ('verdicts', 'evidence')",
			Params: map[string]string{"db": st.db}}
		if err := st.t.Select(ctx, &rows, q); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, row := range rows {
			m[row.Name] = row.Type
		}
		return m
	}
	for col, typ := range map[string]string{"verdicts": "LowCardinality(String)", "evidence": "LowCardinality(String)"} {
		if got := types(migrated)[col]; got != typ {
			t.Errorf("after migration 15, %s is %q, want %q", col, got, typ)
		}
		if got := types(oracle)[col]; got != "String" {
			t.Errorf("the oracle's %s is %q, want String", col, got)
		}
	}

	m, o := rawRows(t, migrated, "trials", sweep), rawRows(t, oracle, "trials", sweep)
	ml, ol := bytes.Split(bytes.TrimSuffix(m, []byte("\n")), []byte("\n")), bytes.Split(bytes.TrimSuffix(o, []byte("\n")), []byte("\n"))
	if len(o) == 0 || len(ml) != len(ol) || len(ol) != len(trials) {
		t.Fatalf("%d rows stored after the migration, %d without it, %d written", len(ml), len(ol), len(trials))
	}
	for i := range ml {
		if d := columnDiff(ml[i], ol[i]); d != "" {
			t.Fatalf("row %d differs from the store without the migration: %s", i+1, d)
		}
	}
	// And through the reader every command uses.
	got, err := migrated.Trials(ctx, sweep)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]record.Trial{}
	for _, tr := range got {
		byID[tr.TrialID] = tr
	}
	for _, want := range trials {
		want = validTrial(want)
		have := byID[want.TrialID]
		if have.Verdicts != want.Verdicts || have.Evidence != want.Evidence {
			t.Fatalf("trial %q: documents read back differ", want.TrialID)
		}
	}
}
