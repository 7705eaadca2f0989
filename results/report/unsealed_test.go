package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"rebound/results/record"
)

// The note, as every format prints it (text wraps it; flat joins the lines
// back).
func wantUnsealedNote(who, counts string) string {
	return who + ": " + counts + " trials ran unsealed (sandbox: none): the agent could reach the worker, the store and other trials, so these rates are not protected against the agent rewriting them"
}

func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// unsealedTotals is recoveredTotals with unsealed of the arm's 4 trials
// unsealed, as storage counts them.
func unsealedTotals(arm string, unsealed uint64) record.ReportTotals {
	t := recoveredTotals(arm)
	for i := range t.ByScenario {
		t.ByScenario[i].Unsealed = unsealed
	}
	return t
}

// summaryJSON decodes the arms of a summary's JSON: arm -> unsealed_trials
// (-1 when the key is missing).
func summaryJSONUnsealed(t *testing.T, s Summary) map[string]int {
	t.Helper()
	var buf bytes.Buffer
	if err := s.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Arms []map[string]any `json:"arms"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, a := range doc.Arms {
		n, ok := a["unsealed_trials"].(float64)
		if !ok {
			n = -1
		}
		out[a["arm"].(string)] = int(n)
	}
	return out
}

func summaryText(t *testing.T, s Summary) string {
	t.Helper()
	var buf bytes.Buffer
	if err := s.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// An arm with unsealed trials is headed "(unsealed)" and noted under the
// table, with the count the store returned; a sealed arm beside it is not.
func TestReportNotesUnsealedArms(t *testing.T) {
	src := testSource()
	src.sweeps["cand"] = record.Sweep{SweepID: "cand", Name: "nightly", Arms: []string{"sealed", "open"}, TrialsPlanned: 8}
	tot := recoveredTotals("sealed")
	tot.ByScenario = append(tot.ByScenario, unsealedTotals("open", 3).ByScenario...)
	src.totals["cand"] = tot
	sum, err := Load(context.Background(), src, "cand")
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Arms) != 2 || sum.Arms[0].Unsealed != 0 || sum.Arms[1].Unsealed != 3 {
		t.Fatalf("arms = %+v, want sealed 0 and open 3 unsealed", sum.Arms)
	}
	text := summaryText(t, sum)
	lines := strings.Split(text, "\n")
	header := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "metric ") {
			header = i
			break
		}
	}
	if header < 0 || strings.Fields(lines[header])[1] != "sealed" || !strings.Contains(lines[header], "open (unsealed)") {
		t.Fatalf("header %q: want sealed unmarked and open (unsealed)\n%s", lines[max(header, 0)], text)
	}
	if !strings.HasPrefix(lines[0], "harm index") || !strings.Contains(lines[0], "open (unsealed) ") || strings.Contains(lines[0], "sealed (unsealed)") {
		t.Errorf("harm line %q: want open marked, sealed not", lines[0])
	}
	note := wantUnsealedNote("arm open", "3 of 4")
	at := strings.Index(flat(text), note)
	if at < 0 || at < strings.Index(flat(text), "trials (attrition)") {
		t.Fatalf("no note under the table:\n%s\nwant %q", text, note)
	}
	if n := strings.Count(flat(text), "ran unsealed"); n != 1 {
		t.Errorf("the note appears %d times, want once (arm open only)", n)
	}
	if got := summaryJSONUnsealed(t, sum); got["sealed"] != 0 || got["open"] != 3 {
		t.Errorf("JSON unsealed_trials = %v, want sealed 0, open 3", got)
	}
	if got := sum.UnsealedNotes(); len(got) != 1 || got[0] != note {
		t.Errorf("UnsealedNotes = %q", got)
	}
}

// A sweep whose trials all ran sealed (or in process) prints no note and
// no mark, and its JSON counts 0 unsealed trials per arm.
func TestSealedReportHasNoUnsealedNote(t *testing.T) {
	src := testSource()
	sum, err := Load(context.Background(), src, "cand")
	if err != nil {
		t.Fatal(err)
	}
	if text := summaryText(t, sum); strings.Contains(text, "unsealed") {
		t.Fatalf("a sealed sweep mentions unsealed trials:\n%s", text)
	}
	if got := summaryJSONUnsealed(t, sum); got["a"] != 0 {
		t.Errorf("JSON unsealed_trials = %v, want a: 0", got)
	}
	if notes := sum.UnsealedNotes(); notes != nil {
		t.Errorf("UnsealedNotes = %q, want none", notes)
	}
}

// The per-case route counts unsealed trials as the aggregated one does.
func TestBuildWithCountsUnsealedTrials(t *testing.T) {
	ok := true
	var trials []record.Trial
	for seed := uint64(1); seed <= 4; seed++ {
		trials = append(trials,
			record.Trial{SweepID: "sw", Arm: "open", Scenario: "s", Variant: "v", Seed: seed, Weight: 1, Recovered: &ok, Unsealed: seed != 4},
			record.Trial{SweepID: "sw", Arm: "sealed", Scenario: "s", Variant: "v", Seed: seed, Weight: 1, Recovered: &ok})
	}
	sum := Build(record.Sweep{SweepID: "sw", Arms: []string{"sealed", "open"}}, 8, CellsFromTrials(trials))
	if sum.Arms[0].Unsealed != 0 || sum.Arms[1].Unsealed != 3 {
		t.Fatalf("arms = %+v, want sealed 0 and open 3 unsealed", sum.Arms)
	}
	if text := flat(summaryText(t, sum)); !strings.Contains(text, wantUnsealedNote("arm open", "3 of 4")) {
		t.Fatalf("no note: %s", text)
	}
}

// compareOutputs renders a comparison in every format.
func compareOutputs(t *testing.T, c *Comparison) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"text":     func(b *bytes.Buffer) error { return c.WriteText(b) },
		"markdown": func(b *bytes.Buffer) error { return c.WriteMarkdown(b) },
		"html":     func(b *bytes.Buffer) error { return c.WriteHTML(b) },
		"junit":    func(b *bytes.Buffer) error { return c.WriteJUnit(b) },
		"json":     func(b *bytes.Buffer) error { return c.WriteJSON(b) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = b.String()
	}
	return out
}

// compareJSONSides reads unsealed_trials of both sides (-1: missing) and
// the warnings.
func compareJSONSides(t *testing.T, doc string) (base, cand int, warnings []string) {
	t.Helper()
	var d struct {
		Baseline, Candidate map[string]any
		Warnings            []string
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatal(err)
	}
	get := func(m map[string]any) int {
		if n, ok := m["unsealed_trials"].(float64); ok {
			return int(n)
		}
		return -1
	}
	return get(d.Baseline), get(d.Candidate), d.Warnings
}

// junitUnsealed reads the suite's system-out and its unsealed properties.
func junitUnsealed(t *testing.T, doc string) (systemOut string, props map[string]string) {
	t.Helper()
	var d junitSuites
	if err := xml.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatal(err)
	}
	props = map[string]string{}
	for _, p := range d.Suites[0].Properties {
		if strings.Contains(p.Name, "unsealed") {
			props[p.Name] = p.Value
		}
	}
	return d.Suites[0].SystemOut, props
}

// unsealedCells is tenCases with the first n candidate cells unsealed.
func unsealedCells(n int) (base, cand []record.Cell) {
	base, cand = tenCases(2)
	for i := range n {
		cand[i].Unsealed = 1
	}
	return base, cand
}

// A comparison with an unsealed side heads that side's column
// "(unsealed)" and carries the note in every format, the count in JSON
// and JUnit; by either route.
func TestCompareNotesUnsealedSides(t *testing.T) {
	base, cand := unsealedCells(3)
	fromCells := compareCells(base, cand)

	src := testSource()
	src.compare.Summary = record.CompareSummary{TrialsA: 10, TrialsB: 10, UnsealedB: 3, KeysA: 10, KeysB: 10, Pairs: 10, Cases: 10, Scenarios: 10}
	fromTotals, err := LoadComparison(context.Background(), src, CompareRequest{SweepID: "cand", Baseline: "a", Candidate: "b"})
	if err != nil {
		t.Fatal(err)
	}
	for route, c := range map[string]*Comparison{"cells": &fromCells, "totals": &fromTotals} {
		t.Run(route, func(t *testing.T) {
			if c.BaselineUnsealed != 0 || c.CandidateUnsealed != 3 || !c.Unsealed() {
				t.Fatalf("unsealed: baseline %d, candidate %d; want 0, 3", c.BaselineUnsealed, c.CandidateUnsealed)
			}
			note := wantUnsealedNote("candidate arm "+c.Candidate.Arm, "3 of 10")
			if len(c.Warnings) == 0 || c.Warnings[0] != note {
				t.Fatalf("warnings = %q, want the note first", c.Warnings)
			}
			out := compareOutputs(t, c)
			text := out["text"]
			var header string
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, "metric ") {
					header = l
				}
			}
			if !strings.Contains(header, " candidate (unsealed) ") || strings.Contains(header, "baseline (unsealed)") {
				t.Errorf("text header %q: want the candidate marked, the baseline not", header)
			}
			if i, j := strings.Index(flat(text), note), strings.Index(flat(text), "Unit of evidence"); i < 0 || i < j {
				t.Errorf("text: no note under the table:\n%s", text)
			}
			if !strings.Contains(out["markdown"], "| metric | result | baseline | candidate (unsealed) |") || !strings.Contains(out["markdown"], "> ⚠️ "+note) {
				t.Errorf("markdown: no mark or note:\n%s", out["markdown"])
			}
			if !strings.Contains(out["html"], "<th>baseline</th><th>candidate (unsealed)</th>") || !strings.Contains(out["html"], "<div class=\"warnbox\">⚠ "+note+"</div>") {
				t.Errorf("html: no mark or note:\n%s", out["html"])
			}
			so, props := junitUnsealed(t, out["junit"])
			if !strings.Contains(so, note) || props["baseline_unsealed_trials"] != "0" || props["candidate_unsealed_trials"] != "3" {
				t.Errorf("junit: system-out %q, properties %v", so, props)
			}
			b, cn, warnings := compareJSONSides(t, out["json"])
			if b != 0 || cn != 3 || len(warnings) == 0 || warnings[0] != note {
				t.Errorf("json: unsealed_trials %d, %d; warnings %q", b, cn, warnings)
			}
		})
	}
}

// Either side: an unsealed baseline is noted and marked too.
func TestCompareNotesAnUnsealedBaseline(t *testing.T) {
	base, cand := unsealedCells(0)
	for i := range base {
		base[i].Unsealed = 1
	}
	c := compareCells(base, cand)
	out := compareOutputs(t, &c)
	note := wantUnsealedNote("baseline arm base", "10 of 10")
	if !strings.Contains(flat(out["text"]), note) || !strings.Contains(out["text"], "baseline (unsealed)") || strings.Contains(out["text"], "candidate (unsealed)") {
		t.Fatalf("text:\n%s", out["text"])
	}
	if b, cn, _ := compareJSONSides(t, out["json"]); b != 10 || cn != 0 {
		t.Fatalf("json unsealed_trials %d, %d; want 10, 0", b, cn)
	}
}

// A comparison of sealed arms mentions nothing unsealed in any
// human-readable format; JSON counts 0 on both sides.
func TestSealedCompareHasNoUnsealedNote(t *testing.T) {
	base, cand := unsealedCells(0)
	c := compareCells(base, cand)
	out := compareOutputs(t, &c)
	for _, f := range []string{"text", "markdown", "html", "junit"} {
		if strings.Contains(out[f], "unsealed") {
			t.Errorf("%s mentions unsealed trials:\n%s", f, out[f])
		}
	}
	b, cn, warnings := compareJSONSides(t, out["json"])
	if b != 0 || cn != 0 {
		t.Errorf("json unsealed_trials %d, %d; want 0, 0", b, cn)
	}
	for _, w := range warnings {
		if strings.Contains(w, "unsealed") {
			t.Errorf("json warning %q", w)
		}
	}
	if c.Unsealed() || c.UnsealedNotes() != nil {
		t.Errorf("sealed comparison reports unsealed trials: %q", c.UnsealedNotes())
	}
}
