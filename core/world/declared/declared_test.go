package declared

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"rebound/core/harness"
	"rebound/internal/fileerr"
)

const desk = `
name: desk
state:
  seq: {type: integer, default: 100}
  agents:
    type: map
    values:
      team: string
      on_shift: boolean
  tickets:
    type: map
    values:
      subject: {type: string, required: true}
      status: {type: string, enum: [open, assigned, escalated], default: open}
      assignee: {type: string, omit_empty: true}
      escalations: integer
      notes: {type: list, items: string}
      tags: {type: map, values: boolean}
initial:
  agents:
    ana: {team: billing, on_shift: true}
    bo: {team: billing, on_shift: false}
    cy: {team: billing, on_shift: true}
defaults:
  errors: [TIMEOUT, NOT_FOUND, {code: CONFLICT, retryable: false}]
tools:
  - name: desk.open
    effect: conditional
    idempotency_key: key
    reconciled_by: desk.open_status
    key_reuse: conflict
    args:
      subject: {type: string, required: true}
      key: string
    reads:
      n: seq
    changes:
      - increment: n
      - set: tickets.T-{n}
        value: {subject: "{subject}", notes: ["opened: {subject}"]}
    commit: {kind: open, intent: "open:{subject}", object: "T-{n}"}
    returns: {ticket_id: "T-{n}"}
  - name: desk.open_status
    effect: read
    args: {key: {type: string, required: true}}
    status:
      of: desk.open
      returns: {ticket_id: "{prior.ticket_id}"}
  - name: desk.assign
    effect: idempotent
    args:
      ticket_id: {type: string, required: true}
      team: {type: string, required: true}
    reads:
      ticket: tickets.{ticket_id}
      agent: {find: agents, where: {team: "{team}", on_shift: true}, pick: last}
    preconditions:
      - {exists: ticket}
      - {exists: agent, error: CONFLICT, message: "nobody of {team} is on shift"}
    changes:
      - {set: ticket.assignee, value: "{agent.$key}"}
      - {set: ticket.status, value: assigned}
      - {merge: ticket.tags, value: {routed: true}}
    commit: {kind: assign, intent: "assign:{ticket_id}", object: "{agent.$key}"}
    returns: {ticket_id: "{ticket_id}", assignee: "{ticket.assignee}"}
  - name: desk.note
    effect: write
    args: {ticket_id: {type: string, required: true}, text: {type: string, required: true}}
    reads: {ticket: "tickets.{ticket_id}"}
    preconditions: [{exists: ticket}]
    changes: [{append: ticket.notes, value: "{text}"}]
    commit: {intent: "note:{ticket_id}"}
    returns: {notes: {count: tickets, where: {status: open}}}
  - name: desk.close
    effect: idempotent
    args: {ticket_id: {type: string, required: true}}
    changes: [{delete: "tickets.{ticket_id}"}]
    commit: {intent: "close:{ticket_id}"}
    returns: {open: {keys: tickets}}
  - name: desk.get
    effect: read
    args: {ticket_id: string, mode: {type: string, enum: [short, full]}}
    cases:
      - when: [{given: ticket_id}, {value: "{mode}", equals: short}]
        reads: {t: "tickets.{ticket_id}"}
        preconditions: [{exists: t}]
        returns: {status: "{t.status}"}
      - when: {given: ticket_id}
        reads: {t: "tickets.{ticket_id}"}
        preconditions:
          - {exists: t}
          - {path: t.escalations, at_most: 2, error: CONFLICT}
        returns:
          ticket: "{t}"
          has_assignee: {if: {exists: t.assignee}, then: true, else: false}
          assignee: "{t.assignee}"
    otherwise: {error: INVALID_INPUT, message: "pass ticket_id"}
`

type recorder []string

func (r *recorder) Commit(kind, intent, object string) {
	*r = append(*r, kind+"|"+intent+"|"+object)
}

func mustParse(t *testing.T, src string) *Def {
	t.Helper()
	d, err := Parse("desk.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Every construct of the language, end to end on one world: counters for
// ids, keyed replay and key reuse with other arguments, status by key,
// searches, an idempotent tool that commits only when it changes
// something, merge, append, delete, counts and keys, cases with an
// otherwise, conditional values, defaults and omit_empty.
func TestLanguage(t *testing.T) {
	d := mustParse(t, desk)
	w, err := d.New(map[string]any{"agents": map[string]any{"dee": map[string]any{"team": "ops", "on_shift": true}}})
	if err != nil {
		t.Fatal(err)
	}
	var fx recorder
	call := func(tool string, args map[string]any) string {
		data, terr := w.Invoke(tool, args, &fx)
		if terr != nil {
			return terr.Code + ": " + terr.Message
		}
		return js(data)
	}
	steps := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"desk.open", map[string]any{"subject": "refund", "key": "k1"}, `{"ticket_id":"T-101"}`},
		{"desk.open", map[string]any{"subject": "refund", "key": "k1"}, `{"ticket_id":"T-101"}`},
		{"desk.open", map[string]any{"subject": "other", "key": "k1"}, `CONFLICT: key "k1" was already used with different arguments; use a new key for a new request`},
		{"desk.open", map[string]any{"subject": "login"}, `{"ticket_id":"T-102"}`},
		{"desk.open_status", map[string]any{"key": "k1"}, `{"status":"completed","ticket_id":"T-101"}`},
		{"desk.open_status", map[string]any{"key": "k9"}, `{"status":"not_found"}`},
		{"desk.open_status", map[string]any{}, `INVALID_INPUT: missing required argument "key"`},
		{"desk.assign", map[string]any{"ticket_id": "T-101", "team": "billing"}, `{"assignee":"cy","ticket_id":"T-101"}`},
		{"desk.assign", map[string]any{"ticket_id": "T-101", "team": "billing"}, `{"assignee":"cy","ticket_id":"T-101"}`},
		{"desk.assign", map[string]any{"ticket_id": "T-101", "team": "sales"}, `CONFLICT: nobody of sales is on shift`},
		{"desk.assign", map[string]any{"ticket_id": "T-9", "team": "billing"}, `NOT_FOUND: not found: tickets.T-9`},
		{"desk.note", map[string]any{"ticket_id": "T-102", "text": "called back"}, `{"notes":1}`},
		{"desk.get", map[string]any{"ticket_id": "T-101", "mode": "short"}, `{"status":"assigned"}`},
		{"desk.get", map[string]any{"ticket_id": "T-102"}, `{"assignee":"","has_assignee":false,"ticket":{"assignee":"","escalations":0,"notes":["opened: login","called back"],"status":"open","subject":"login","tags":{}}}`},
		{"desk.get", map[string]any{"mode": "full"}, `INVALID_INPUT: pass ticket_id`},
		{"desk.get", map[string]any{"ticket_id": "T-1", "mode": "long"}, `INVALID_INPUT: argument "mode" must be one of short, full`},
		{"desk.get", map[string]any{"ticket_id": 7}, `INVALID_INPUT: argument "ticket_id" must be a string`},
		{"desk.close", map[string]any{"ticket_id": "T-102"}, `{"open":["T-101"]}`},
		{"desk.close", map[string]any{"ticket_id": "T-102"}, `{"open":["T-101"]}`},
		{"desk.nope", nil, `TOOL_UNAVAILABLE: desk has no method "desk.nope"`},
	}
	for i, st := range steps {
		if got := call(st.tool, st.args); got != st.want {
			t.Errorf("%d %s %v:\n got %s\nwant %s", i, st.tool, st.args, got, st.want)
		}
	}
	wantCommits := []string{"open|open:refund|T-101", "open|open:login|T-102", "assign|assign:T-101|cy", "desk.note|note:T-102|", "desk.close|close:T-102|"}
	if !reflect.DeepEqual([]string(fx), wantCommits) {
		t.Errorf("commits %v, want %v", fx, wantCommits)
	}
	state := js(w.State())
	want := `{"agents":{"ana":{"on_shift":true,"team":"billing"},"bo":{"on_shift":false,"team":"billing"},"cy":{"on_shift":true,"team":"billing"},"dee":{"on_shift":true,"team":"ops"}},"seq":102,"tickets":{"T-101":{"assignee":"cy","escalations":0,"notes":["opened: refund"],"status":"assigned","subject":"refund","tags":{"routed":true}}}}`
	if state != want {
		t.Errorf("state\n got %s\nwant %s", state, want)
	}
	if _, ok := w.State()["seq"].(float64); !ok {
		t.Error("State() numbers are not float64, as a JSON round trip gives")
	}
	// A world is independent of the next one built from the same Def.
	w2, err := d.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := js(w2.State()["tickets"]); got != `{}` {
		t.Errorf("a fresh world starts with tickets %s", got)
	}
	// Results never alias the state: editing a returned object leaves the
	// world as it was.
	data, _ := w.Invoke("desk.get", map[string]any{"ticket_id": "T-101"}, &fx)
	data["ticket"].(map[string]any)["status"] = "hacked"
	if got, _ := w.Invoke("desk.get", map[string]any{"ticket_id": "T-101", "mode": "short"}, &fx); got["status"] != "assigned" {
		t.Error("a returned object aliases the state")
	}
}

func TestInitialState(t *testing.T) {
	d := mustParse(t, desk)
	for _, tc := range []struct {
		initial map[string]any
		want    string
	}{
		{map[string]any{"tickets": map[string]any{"T-1": map[string]any{"subject": "s", "colour": "red"}}}, `world desk: initial state: tickets.T-1.colour: unknown field (fields: subject, status, assignee, escalations, notes, tags)`},
		{map[string]any{"tickets": map[string]any{"T-1": map[string]any{}}}, `tickets.T-1.subject: required`},
		{map[string]any{"tickets": map[string]any{"T-1": map[string]any{"subject": "s", "status": "lost"}}}, `tickets.T-1.status: "lost" is not one of open, assigned, escalated`},
		{map[string]any{"seq": "x"}, `seq: expected an integer, got the string "x"`},
		{map[string]any{"seq": 1.5}, `seq: expected an integer`},
		{map[string]any{"other": 1}, `other: unknown field`},
	} {
		_, err := d.New(tc.initial)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("initial %v: %v, want %q", tc.initial, err, tc.want)
		}
	}
	// The scenario's initial state merges over the file's.
	w, err := d.New(map[string]any{"agents": map[string]any{"bo": map[string]any{"on_shift": true}}, "seq": float64(7)})
	if err != nil {
		t.Fatal(err)
	}
	if got := js(w.State()["agents"].(map[string]any)["bo"]); got != `{"on_shift":true,"team":"billing"}` {
		t.Errorf("merged agent %s", got)
	}
	if w.State()["seq"] != float64(7) {
		t.Errorf("seq %v", w.State()["seq"])
	}
}

// Every problem of a world file is reported at file:line:column with its
// field's path.
func TestParseErrors(t *testing.T) {
	base := func(tools string) string {
		return "name: w\nstate:\n  items:\n    type: map\n    values: {n: integer, s: string}\ntools:\n" + tools
	}
	for _, tc := range []struct {
		name, src string
		want      []string // "line:col field: message part"
	}{
		{"unknown top-level field", "name: w\nstate: {}\ntools: []\ncolour: red\n", []string{"3:8 tools: at least one tool", "4:1 colour: unknown field"}},
		{"no name, no state", "tools:\n  - {name: a, effect: read}\n", []string{"1:1 name: required", "1:1 state: required"}},
		{"duplicate key", "name: w\nname: v\nstate: {}\ntools: [{name: a, effect: read}]\n", []string{"2:1 name: "}},
		{"unknown type", "name: w\nstate: {a: strin}\ntools: [{name: a, effect: read}]\n", []string{`2:12 state.a: "strin": a type is`}},
		{"bad default", "name: w\nstate: {a: {type: integer, default: x}}\ntools: [{name: a, effect: read}]\n", []string{"2:37 state.a.default: expected an integer"}},
		{"initial off schema", "name: w\nstate: {a: integer}\ninitial: {a: x}\ntools: [{name: a, effect: read}]\n", []string{"3:10 initial: does not fit the state schema: a: expected an integer"}},
		{"tool without effect", base("  - {name: t}\n"), []string{"7:5 tools[0].effect: required"}},
		{"unknown effect", base("  - {name: t, effect: maybe}\n"), []string{`7:23 tools[0].effect: "maybe"`}},
		{"tool twice", base("  - {name: t, effect: read}\n  - {name: t, effect: read}\n"), []string{`8:12 tools[1].name: tool "t" is declared twice`}},
		{"conditional without key", base("  - {name: t, effect: conditional}\n"), []string{"7:5 tools[0].idempotency_key: a conditional tool names"}},
		{"key not an argument", base("  - {name: t, effect: conditional, idempotency_key: k}\n"), []string{`7:53 tools[0].idempotency_key: "k" is not an argument`}},
		{"write with a key", base("  - {name: t, effect: write, idempotency_key: k, args: {k: string}}\n"), []string{"7:47 tools[0].idempotency_key: only a conditional or idempotent tool"}},
		{"unresolved path", base("  - name: t\n    effect: read\n    reads: {x: \"items.{id}\"}\n"), []string{`9:16 tools[0].reads.x: "items.{id}": {id}: "id" is not an argument, a read or a state field`}},
		{"no such field", base("  - name: t\n    effect: read\n    args: {id: string}\n    reads: {x: \"items.{id}.m\"}\n"), []string{`10:16 tools[0].reads.x: path "items.{id}.m" does not resolve against the state schema: the state.items.{id} has no field "m" (fields: n, s)`}},
		{"placeholder for a field", base("  - name: t\n    effect: read\n    args: {id: string}\n    returns: {x: \"{items.{id}}\"}\n"), []string{`10:18 tools[0].returns.x: "{items.{id}}": a placeholder holds no other placeholder`}},
		{"unclosed brace", base("  - name: t\n    effect: read\n    returns: {x: \"a{b\"}\n"), []string{`9:18 tools[0].returns.x: "a{b": unclosed {`}},
		{"read changes", base("  - name: t\n    effect: read\n    changes: [{set: items.a.n, value: 1}]\n"), []string{"9:14 tools[0].changes: a read changes nothing"}},
		{"changes without commit", base("  - name: t\n    effect: write\n    changes: [{set: items.a.n, value: 1}]\n"), []string{"7:5 tools[0].commit: t changes the state: declare its commit"}},
		{"increment a string", base("  - name: t\n    effect: write\n    changes: [{increment: items.a.s}]\n    commit: {intent: x}\n"), []string{`9:15 tools[0].changes[0].increment: "items.a.s" is a string: only a number is incremented`}},
		{"set the wrong type", base("  - name: t\n    effect: write\n    changes: [{set: items.a.n, value: x}]\n    commit: {intent: x}\n"), []string{`9:39 tools[0].changes[0].value: set "items.a.n": expected an integer, got the string "x"`}},
		{"set an argument of the wrong type", base("  - name: t\n    effect: write\n    args: {v: boolean}\n    changes: [{set: items.a.n, value: \"{v}\"}]\n    commit: {intent: x}\n"), []string{`10:39 tools[0].changes[0].value: set "items.a.n": expected an integer, got a boolean`}},
		{"delete a field", base("  - name: t\n    effect: write\n    changes: [{delete: items.a.n}]\n    commit: {intent: x}\n"), []string{`9:15 tools[0].changes[0].delete: "items.a.n" is not an entry of a map`}},
		{"two kinds in a change", base("  - name: t\n    effect: write\n    changes: [{set: items.a.n, delete: items.a}]\n    commit: {intent: x}\n"), []string{"9:15 tools[0].changes[0]: a change is one of"}},
		{"commit without intent", base("  - name: t\n    effect: write\n    changes: [{set: items.a.n, value: 1}]\n    commit: {kind: k}\n"), []string{"10:13 tools[0].commit.intent: required"}},
		{"condition of two kinds", base("  - name: t\n    effect: read\n    preconditions: [{exists: items, absent: items}]\n"), []string{"9:21 tools[0].preconditions[0]: a condition is one of"}},
		{"comparison without subject", base("  - name: t\n    effect: read\n    preconditions: [{equals: 1}]\n"), []string{"9:21 tools[0].preconditions[0]: a comparison needs its subject"}},
		{"order comparison of strings", base("  - name: t\n    effect: read\n    preconditions: [{path: items.a.s, at_least: 1}]\n"), []string{"9:21 tools[0].preconditions[0]: an order comparison needs numbers"}},
		{"bad error code", base("  - name: t\n    effect: read\n    preconditions: [{exists: items.a, error: not-found}]\n"), []string{`9:46 tools[0].preconditions[0].error: "not-found"`}},
		{"given an unknown argument", base("  - name: t\n    effect: read\n    cases: [{when: {given: id}, returns: {}}]\n"), []string{`9:28 tools[0].cases[0].when.given: "id" is not an argument`}},
		{"cases and a body", base("  - name: t\n    effect: read\n    returns: {}\n    cases: [{returns: {}}]\n"), []string{"10:12 tools[0].cases: a tool either has cases or one body"}},
		{"otherwise without cases", base("  - name: t\n    effect: read\n    otherwise: {error: X}\n"), []string{"9:16 tools[0].otherwise: otherwise answers a call no case matches"}},
		{"status tool of nothing", base("  - name: t\n    effect: read\n    status: {of: u}\n"), []string{`9:18 tools[0].status.of: no tool "u"`}},
		{"status of a keyless write", base("  - {name: w, effect: write}\n  - name: t\n    effect: read\n    status: {of: w}\n"), []string{"10:18 tools[1].status.of: w takes no idempotency key"}},
		{"status tool not named back", base("  - {name: w, effect: conditional, idempotency_key: k, args: {k: string}}\n  - name: t\n    effect: read\n    args: {k: string}\n    status: {of: w}\n"), []string{"11:13 tools[1].status.of: t answers about w, but w names no status tool as its status tool"}},
		{"status tool answers nothing", base("  - {name: w, effect: conditional, idempotency_key: k, args: {k: string}, reconciled_by: t}\n  - {name: t, effect: read}\n"), []string{"7:90 tools[0].reconciled_by: t does not answer about w's idempotency key"}},
		{"status tool is a write", base("  - {name: w, effect: write, reconciled_by: t}\n  - {name: t, effect: write}\n"), []string{"7:45 tools[0].reconciled_by: the status tool t must be a read"}},
		{"keyless write, blind status tool", base("  - {name: w, effect: write, args: {id: string}, reconciled_by: t}\n  - {name: t, effect: read, returns: {x: 1}}\n"), []string{"7:65 tools[0].reconciled_by: t cannot reconcile w"}},
		{"prior field the write never returns", base("  - {name: w, effect: conditional, idempotency_key: k, args: {k: string}, reconciled_by: t, returns: {id: 1}}\n  - name: t\n    effect: read\n    args: {k: string}\n    status: {of: w, returns: {x: \"{prior.nope}\"}}\n"), []string{`11:34 tools[1].status.returns.x: "{prior.nope}": {prior.nope}: w returns no field "nope" (it returns: id)`}},
		{"wrong landed word", base("  - {name: w, effect: conditional, idempotency_key: k, args: {k: string}, reconciled_by: t}\n  - name: t\n    effect: read\n    args: {k: string}\n    status: {of: w, landed: done}\n"), []string{`11:29 tools[1].status.landed: "done"`}},
		{"read named like an argument", base("  - name: t\n    effect: read\n    args: {x: string}\n    reads: {x: items}\n"), []string{`10:13 tools[0].reads.x: "x" is an argument of t`}},
		{"search of a scalar", base("  - name: t\n    effect: read\n    reads: {x: {find: items.a.n}}\n"), []string{`9:23 tools[0].reads.x.find: "items.a.n" is an integer, not a map to search`}},
		{"search by a field entries lack", base("  - name: t\n    effect: read\n    reads: {x: {find: items, where: {m: 1}}}\n"), []string{`9:38 tools[0].reads.x.where.m: the entries of items: the state has no field "m"`}},
		{"bad argument type", base("  - {name: t, effect: read, args: {a: strng}}\n"), []string{`7:39 tools[0].args.a: "strng": an argument is a string`}},
		{"$key of an argument", base("  - {name: t, effect: read, args: {a: string}, returns: {x: \"{a.$key}\"}}\n"), []string{`7:61 tools[0].returns.x: "{a.$key}": {a.$key}: $key: only a read has a $key`}},
		{"error listed twice", base("  - {name: t, effect: read, errors: [TIMEOUT, TIMEOUT]}\n"), []string{"7:47 tools[0].errors[1]: TIMEOUT is listed twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("w.yaml", []byte(tc.src))
			var es fileerr.Errors
			if !errors.As(err, &es) {
				t.Fatalf("not located errors: %v", err)
			}
			var got []string
			for _, e := range es {
				if e.File != "w.yaml" {
					t.Errorf("error in file %q", e.File)
				}
				got = append(got, e.Error())
			}
			for _, want := range tc.want {
				loc, rest, _ := strings.Cut(want, " ")
				field, msg, _ := strings.Cut(rest, ": ")
				found := false
				for _, g := range got {
					if strings.HasPrefix(g, "w.yaml:"+loc+": "+field+": ") && strings.Contains(g, msg) {
						found = true
					}
				}
				if !found {
					t.Errorf("want %s, got:\n%s", want, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// Aliases and merge keys are expanded before the fields are checked, and a
// problem reached through an alias says so (strictyaml).
func TestParseThroughAliases(t *testing.T) {
	src := "name: w\nstate: {a: integer}\ndefaults:\n  errors: &errs [TIMEOUT, NOT_FOUND]\ntools:\n  - {name: t, effect: read, errors: *errs}\n  - {name: u, effect: read, <<: {colour: red}}\n"
	_, err := Parse("w.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "colour: unknown field") {
		t.Fatalf("the unknown field behind a merge key: %v", err)
	}
	d, err := Parse("w.yaml", []byte(strings.Replace(src, ", <<: {colour: red}", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Tools()[0].Errors; len(got) != 2 || !got[0].Retryable || got[1].Retryable {
		t.Errorf("errors through an alias: %+v", got)
	}
}

// The catalog says what the file declares, defaults applied.
func TestCatalog(t *testing.T) {
	d := mustParse(t, desk)
	var open harness.Tool
	for _, tl := range d.Tools() {
		if tl.Name == "desk.open" {
			open = tl
		}
	}
	want := harness.Tool{Name: "desk.open", Effect: harness.EffectConditional, IdempotencyKeyParam: "key", ReconciledBy: "desk.open_status",
		Errors: []harness.DocumentedError{{Code: "TIMEOUT", Retryable: true}, {Code: "NOT_FOUND"}, {Code: "CONFLICT"}},
		Params: []harness.Param{{Name: "subject", Type: "string", Required: true}, {Name: "key", Type: "string"}}}
	if !reflect.DeepEqual(open, want) {
		t.Errorf("catalog entry\n got %+v\nwant %+v", open, want)
	}
	for _, tl := range d.Tools() {
		if err := tl.Validate(); err != nil {
			t.Error(err)
		}
	}
}

// A tool declares what it reaches beyond its own permission (guards:): the
// grader treats calling it after a denial of one of them as escalation.
func TestToolGuards(t *testing.T) {
	src := strings.Replace(desk, "  - name: desk.get\n", "  - name: desk.get\n    guards: [desk.admin]\n", 1)
	if src == desk {
		t.Fatal("desk has no desk.get to extend")
	}
	for _, tl := range mustParse(t, src).Tools() {
		if want := []string(nil); tl.Name != "desk.get" && !reflect.DeepEqual(tl.Guards, want) {
			t.Errorf("%s guards %v", tl.Name, tl.Guards)
		}
		if tl.Name == "desk.get" && !reflect.DeepEqual(tl.Guards, []string{"desk.admin"}) {
			t.Errorf("desk.get guards %v, want [desk.admin]", tl.Guards)
		}
	}
}
