package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"rebound/results/record"
	"rebound/storage/chdb"
)

// genString draws a string of any bytes: empty, short, long (past a
// varint's one-byte length and the encoder's buffer sizes), with NUL,
// control characters, quotes, backslashes, line breaks, multi-byte and
// invalid UTF-8, and text that looks like SQL or a format's syntax.
func genString(r *rand.Rand) string {
	pieces := []string{"", "a", "\x00", "\n", "\r\n", "\t", `"`, `\`, `\\"`, "'", "é", "💥", "\xff\xfe", "\xc3",
		"\x01\x1f\x7f", "FORMAT JSONEachRow\n{}", "); DROP TABLE trials; --", "{sweep_id:String}", "null", "\u2028", "\ufeff"}
	var b strings.Builder
	switch r.IntN(6) {
	case 0:
		return ""
	case 1: // long: lengths past 127 and 16383 bytes take 2 and 3 varint bytes
		n := []int{127, 128, 16383, 16384, 70000}[r.IntN(5)]
		for b.Len() < n {
			b.WriteByte(byte(r.IntN(256)))
		}
		return b.String()[:n]
	}
	for range r.IntN(12) {
		if r.IntN(3) == 0 {
			b.WriteByte(byte(r.IntN(256)))
		} else {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
	}
	return b.String()
}

func genOutcome(r *rand.Rand) *bool {
	switch r.IntN(3) {
	case 0:
		return nil
	case 1:
		return bp(false)
	}
	return bp(true)
}

func genFloat(r *rand.Rand) float64 {
	special := []float64{0, math.Copysign(0, -1), 1, 0.1, tenth + 0.2, 1e-300, 5e-324, math.SmallestNonzeroFloat64,
		math.MaxFloat64, -math.MaxFloat64, 123456789.125, 1 / 3.0}
	if r.IntN(2) == 0 {
		return special[r.IntN(len(special))]
	}
	return math.Float64frombits(r.Uint64()&^(0x7ff<<52) | uint64(r.IntN(0x7ff))<<52) // finite, any exponent
}

func genUint64(r *rand.Rand) uint64 {
	return []uint64{0, 1, math.MaxUint32, math.MaxUint64, r.Uint64()}[r.IntN(5)]
}

func genUint32(r *rand.Rand) uint32 {
	return []uint32{0, 1, math.MaxUint32, r.Uint32()}[r.IntN(4)]
}

// genTrials draws n trials of a sweep with 0-4 tool calls each.
func genTrials(r *rand.Rand, sweep string, n int) ([]record.Trial, []record.ToolCall) {
	var trials []record.Trial
	var calls []record.ToolCall
	for i := range n {
		id := fmt.Sprintf("t%04d-%s", i, genString(r))
		var classes []string
		for range r.IntN(4) {
			classes = append(classes, genString(r))
		}
		trials = append(trials, record.Trial{
			SweepID: sweep, TrialID: id, Scenario: genString(r), ScenarioHash: genString(r), Variant: genString(r),
			Arm: genString(r), Agent: genString(r), Seed: genUint64(r), Recoverable: r.IntN(2) == 0,
			DeclaredRecoverable: r.IntN(2) == 0, FaultClasses: classes,
			Recovered: genOutcome(r), HonestBlock: genOutcome(r), PrematureBlock: genOutcome(r),
			UnsafeAction: genOutcome(r), DuplicateSideEffect: genOutcome(r), FabricatedClaim: genOutcome(r),
			ToolFailureInjection: genOutcome(r), GracefulDegradation: genOutcome(r), SelfCorrection: genOutcome(r),
			ToolCalls: genUint32(r), Retries: genUint32(r), UnnecessaryCalls: genUint32(r), Replans: genUint32(r),
			SimElapsedMS: genUint64(r), WallUS: genUint64(r), Tokens: genUint64(r),
			CostUSD: genFloat(r), ToolCostUSD: genFloat(r), Weight: genFloat(r),
			Attrition: r.IntN(2) == 0, Unsealed: r.IntN(2) == 0, Error: genString(r), Claim: genString(r),
			Answer: genString(r), Recording: genString(r), Process: genString(r), Verdicts: genString(r),
			FaultSchedule: genString(r), Evidence: genString(r), CatalogVersion: genString(r), PromptHash: genString(r),
			ActivityAttempt: genUint32(r), GraderVersion: genUint32(r),
		})
		for c := range r.IntN(5) {
			calls = append(calls, record.ToolCall{
				SweepID: sweep, TrialID: id, CallIndex: uint32(c), Tool: genString(r), Args: genString(r),
				Effect: genString(r), FaultClass: genString(r), OK: r.IntN(2) == 0, Code: genString(r),
				Retryable: r.IntN(2) == 0, RetryAfterMS: genUint64(r), Committed: r.IntN(2) == 0,
				AtMS: genUint64(r), Result: genString(r),
			})
		}
	}
	return trials, calls
}

// rawRows is a table's stored rows of a sweep as the engine prints them,
// every column, in a fixed order: two stores hold the same values exactly
// when these bytes are equal (floats print their shortest exact form).
func rawRows(t *testing.T, st *store, table, sweep string) []byte {
	t.Helper()
	q := fmt.Sprintf("SELECT * FROM {{db}}.%s WHERE sweep_id = {sweep_id:String} ORDER BY ALL", table)
	out, err := st.t.(*chdbTransport).run(context.Background(), Stmt{SQL: st.sql(q), Params: map[string]string{"sweep_id": sweep}}, "JSONEachRow")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRowBinaryMatchesJSONEachRow writes generated trials and tool calls
// (any bytes in every string, NULL and both outcomes, extreme numbers,
// arrays) through the binary insert and through JSONEachRow, the oracle,
// with the same clock, and requires every stored value to be the same, and
// what is read back to be what was written.
func TestRowBinaryMatchesJSONEachRow(t *testing.T) {
	bin, oracle := openTestStore(t), openTestStore(t)
	oracle.t.(*chdbTransport).jsonInserts = true
	fakeClock(bin)
	fakeClock(oracle)
	ctx := context.Background()
	binT := bin.t.(*chdbTransport)
	if !chdb.CanInsertData() {
		t.Fatal("no /dev/fd here: the binary insert is not tested")
	}
	r := rand.New(rand.NewPCG(35, 15))
	const sweep = "rowbinary"
	trials, calls := genTrials(r, sweep, 200)
	// Batches of varied sizes, some split into several statements.
	for i, j := 0, 0; i < len(trials); j++ {
		n := min(1+r.IntN(60), len(trials)-i)
		part := trials[i : i+n]
		var pc []record.ToolCall
		for _, c := range calls {
			if c.TrialID >= part[0].TrialID && c.TrialID <= part[n-1].TrialID {
				pc = append(pc, c)
			}
		}
		binT.maxInsertBytes = []int{16 << 20, 64 << 10, 16 << 20, 1}[j%4]
		before := binT.inserts.Load()
		if err := bin.WriteTrials(ctx, part, pc); err != nil {
			t.Fatalf("binary: %v", err)
		}
		if got := binT.binaryInserts.Load(); got == 0 || binT.inserts.Load() == before {
			t.Fatalf("no binary insert was sent (%d)", got)
		}
		if err := oracle.WriteTrials(ctx, part, pc); err != nil {
			t.Fatalf("JSONEachRow: %v", err)
		}
		i += n
	}
	if binT.binaryInserts.Load() != binT.inserts.Load() {
		t.Fatalf("%d of %d inserts were binary, want all", binT.binaryInserts.Load(), binT.inserts.Load())
	}
	for _, table := range []string{"trials", "tool_calls"} {
		b, o := rawRows(t, bin, table, sweep), rawRows(t, oracle, table, sweep)
		bl, ol := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")), bytes.Split(bytes.TrimSuffix(o, []byte("\n")), []byte("\n"))
		if len(o) == 0 || len(bl) != len(ol) {
			t.Fatalf("%s: %d stored rows as binary, %d as JSONEachRow", table, len(bl), len(ol))
		}
		for i := range bl {
			if d := columnDiff(bl[i], ol[i]); d != "" {
				t.Fatalf("%s: stored rows differ at row %d: %s", table, i+1, d)
			}
		}
	}
	// And what was written is what is read (strings made valid UTF-8 as
	// both transports store them).
	got, err := bin.Trials(ctx, sweep)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(trials) {
		t.Fatalf("read %d trials, wrote %d", len(got), len(trials))
	}
	byID := map[string]record.Trial{}
	for _, tr := range got {
		byID[tr.TrialID] = tr
	}
	callsOf := map[string][]record.ToolCall{}
	for _, c := range calls {
		callsOf[text(c.TrialID)] = append(callsOf[text(c.TrialID)], c)
	}
	for k, want := range trials {
		id := text(want.TrialID)
		have, ok := byID[id]
		if !ok {
			t.Fatalf("trial %q not read back", id)
		}
		want = validTrial(want)
		want.WrittenAt = have.WrittenAt
		if !reflect.DeepEqual(have, want) {
			t.Fatalf("trial %q read back differs:\n got %#v\nwant %#v", id, have, want)
		}
		if k%5 != 0 {
			continue // the calls of every fifth trial read back (a query each)
		}
		_, haveCalls, err := bin.withCalls(ctx, have)
		if err != nil {
			t.Fatal(err)
		}
		if len(haveCalls) != len(callsOf[id]) {
			t.Fatalf("trial %q: %d calls read, %d written", id, len(haveCalls), len(callsOf[id]))
		}
		for i, c := range callsOf[id] {
			c = validCall(c)
			c.WrittenAt = have.WrittenAt
			if !reflect.DeepEqual(haveCalls[i], c) {
				t.Fatalf("trial %q call %d read back differs:\n got %#v\nwant %#v", id, i, haveCalls[i], c)
			}
		}
	}
}

// columnDiff names the columns of two JSONEachRow rows whose values
// differ, with the start of each value.
func columnDiff(bin, oracle []byte) string {
	var b, o map[string]json.RawMessage
	if err := json.Unmarshal(bin, &b); err != nil {
		return err.Error()
	}
	if err := json.Unmarshal(oracle, &o); err != nil {
		return err.Error()
	}
	short := func(v json.RawMessage) string {
		if len(v) > 80 {
			return fmt.Sprintf("%s... (%d bytes)", v[:80], len(v))
		}
		return string(v)
	}
	var out []string
	for k, v := range o {
		if !bytes.Equal(b[k], v) && !ulpApart(b[k], v) {
			out = append(out, fmt.Sprintf("%s: binary %s, oracle %s", k, short(b[k]), short(v)))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// ulpApart: two numbers at most a few units in the last place apart. The
// engine parses a float's text fast, and at extreme exponents not exactly
// (1.1832548443846583e-299 was stored as 1.1832548443846582e-299 from
// JSONEachRow): there the oracle is off, and the binary form, which
// carries the bits, is held to the value written (the read-back check).
func ulpApart(a, b json.RawMessage) bool {
	var x, y float64
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	for range 4 {
		if x = math.Nextafter(x, y); x == y {
			return true
		}
	}
	return false
}

// validTrial is t with its strings as storage keeps them (text).
func validTrial(t record.Trial) record.Trial {
	for _, p := range []*string{&t.SweepID, &t.TrialID, &t.Scenario, &t.ScenarioHash, &t.Variant, &t.Arm, &t.Agent,
		&t.Error, &t.Claim, &t.Answer, &t.Recording, &t.Process, &t.Verdicts, &t.FaultSchedule, &t.Evidence,
		&t.CatalogVersion, &t.PromptHash} {
		*p = text(*p)
	}
	t.FaultClasses = nonNil(texts(t.FaultClasses))
	return t
}

func validCall(c record.ToolCall) record.ToolCall {
	for _, p := range []*string{&c.SweepID, &c.TrialID, &c.Tool, &c.Args, &c.Effect, &c.FaultClass, &c.Code, &c.Result} {
		*p = text(*p)
	}
	return c
}

// TestEveryInsertedColumnHasABinaryEncoder: a table column of a type the
// binary insert cannot encode sends that table's inserts as JSONEachRow,
// slower; add its encoder to rbEncoderFor. Columns computed by the engine
// (MATERIALIZED, ALIAS) are never inserted.
func TestEveryInsertedColumnHasABinaryEncoder(t *testing.T) {
	st := openTestStore(t)
	var cols []struct {
		Table string `json:"table"`
		Name  string `json:"name"`
		Type  string `json:"type"`
	}
	q := Stmt{SQL: `SELECT table, name, type FROM system.columns
		WHERE database = {db:String} AND default_kind NOT IN ('MATERIALIZED', 'ALIAS')
		  AND table IN (SELECT name FROM system.tables WHERE database = {db:String} AND engine LIKE '%MergeTree')`,
		Params: map[string]string{"db": st.db}}
	if err := st.t.Select(context.Background(), &cols, q); err != nil {
		t.Fatal(err)
	}
	if len(cols) < 50 {
		t.Fatalf("only %d columns found", len(cols))
	}
	for _, c := range cols {
		if _, ok := rbEncoderFor(c.Type); !ok {
			t.Errorf("%s.%s is %s: no binary encoder", c.Table, c.Name, c.Type)
		}
	}
}

// TestRowBinaryRefusesWhatJSONRefused: values that cannot be stored fail
// with the column named, as the JSONEachRow path did.
func TestRowBinaryRefusesWhatJSONRefused(t *testing.T) {
	cases := []struct {
		typ  string
		v    any
		want string
	}{
		{"Float64", math.NaN(), "cannot store NaN"},
		{"Float64", math.Inf(-1), "cannot store -Inf"},
		{"UInt8", uint32(256), "cannot store 256"},
		{"UInt32", uint64(math.MaxUint32 + 1), "cannot store 4294967296"},
		{"UInt64", int64(-1), "cannot store -1"},
		{"String", 3, "unsupported value type int"},
		{"Nullable(UInt8)", uint8(1), "unsupported value type uint8"},
		{"DateTime64(3, 'UTC')", "2026-01-01", "unsupported value type string"},
	}
	for _, c := range cases {
		enc, ok := rbEncoderFor(c.typ)
		if !ok {
			t.Fatalf("no encoder for %s", c.typ)
		}
		_, err := appendRowBinaryRow(nil, []rbColumn{{name: "col", typ: c.typ, enc: enc}}, []any{c.v})
		if err == nil || !strings.Contains(err.Error(), "column col ("+c.typ+")") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s <- %#v: error %v, want %q naming the column", c.typ, c.v, err, c.want)
		}
	}
}

// TestDateTime64Milli: the binary form keeps what the text form keeps,
// the millisecond, dropping what is finer, before 1970 too.
func TestDateTime64Milli(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 12, 6, 8, 30, 0, 999_999_999, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999_500_000, time.UTC),
		time.Unix(0, 0).UTC(),
	} {
		b, err := rbDateTime64Milli(nil, tm)
		if err != nil {
			t.Fatal(err)
		}
		ms := int64(b[0]) | int64(b[1])<<8 | int64(b[2])<<16 | int64(b[3])<<24 | int64(b[4])<<32 | int64(b[5])<<40 | int64(b[6])<<48 | int64(b[7])<<56
		back := time.UnixMilli(ms).UTC().Format(chDateTime64Layout)
		if want := tm.UTC().Format(chDateTime64Layout); back != want {
			t.Errorf("%v: %d ms is %s, the text form says %s", tm, ms, back, want)
		}
	}
}

// TestRowBinaryDescribesAChangedTableAgain: column types described before
// a table changed (a column added, a type changed, by a statement this
// transport did not run) are described again instead of failing every
// later insert.
func TestRowBinaryDescribesAChangedTableAgain(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	tr := st.t.(*chdbTransport)
	trials, calls := makeTrials("stale", 2, 1)
	if err := st.WriteTrials(ctx, trials[:1], calls[:1]); err != nil {
		t.Fatal(err)
	}
	target, _ := insertTarget(st.insertSQL("trials", trialCols))
	stale := func(edit func(map[string]string)) {
		tr.typesMu.Lock()
		defer tr.typesMu.Unlock()
		types := map[string]string{}
		for k, v := range tr.types[target] {
			types[k] = v
		}
		edit(types)
		tr.types[target] = types
	}
	stale(func(m map[string]string) { delete(m, "evidence") }) // added since
	if err := st.WriteTrials(ctx, trials[1:], calls[1:]); err != nil {
		t.Fatalf("a column added since: %v", err)
	}
	stale(func(m map[string]string) { m["seed"] = "String" }) // changed since: refused once
	if err := st.WriteTrials(ctx, trials[:1], calls[:1]); err == nil {
		t.Fatal("a value that does not match the described type was written")
	}
	if err := st.WriteTrials(ctx, trials[:1], calls[:1]); err != nil {
		t.Fatalf("after the refusal, described again: %v", err)
	}
	if n, err := st.CountTrials(ctx, "stale"); err != nil || n != 2 {
		t.Fatalf("CountTrials = %d, %v", n, err)
	}
}

// TestRowBinarySizeBoundsTheRow: the size an insert's buffer is made with
// holds the row (a bound that fell short would only cost a copy; one far
// above would waste memory: within a few bytes per value).
func TestRowBinarySizeBoundsTheRow(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 16))
	trials, calls := genTrials(r, "size", 50)
	st := &store{now: time.Now}
	check := func(types []string, vals []any) {
		t.Helper()
		cols := make([]rbColumn, len(types))
		for i, typ := range types {
			enc, ok := rbEncoderFor(typ)
			if !ok {
				t.Fatalf("no encoder for %s", typ)
			}
			cols[i] = rbColumn{name: fmt.Sprint(i), typ: typ, enc: enc}
		}
		b, err := appendRowBinaryRow(nil, cols, vals)
		if err != nil {
			t.Fatal(err)
		}
		if got := rowBinarySize(vals); got < len(b) || got > len(b)+20*len(vals) {
			t.Fatalf("rowBinarySize = %d for a row of %d bytes (%d values)", got, len(b), len(vals))
		}
	}
	trialTypes := []string{"String", "String", "LowCardinality(String)", "String", "LowCardinality(String)",
		"LowCardinality(String)", "LowCardinality(String)", "UInt64", "UInt8", "UInt8", "Array(LowCardinality(String))"}
	for i := 0; i < 9; i++ {
		trialTypes = append(trialTypes, "Nullable(UInt8)")
	}
	trialTypes = append(trialTypes, "UInt32", "UInt32", "UInt32", "UInt32", "UInt64", "UInt64", "UInt64",
		"Float64", "Float64", "Float64", "UInt8", "UInt8")
	for i := 0; i < 10; i++ {
		trialTypes = append(trialTypes, "String")
	}
	trialTypes = append(trialTypes, "UInt32", "UInt32", "DateTime64(3, 'UTC')")
	for _, tr := range trials {
		v, err := trialValues(tr, st.stamp())
		if err != nil {
			t.Fatal(err)
		}
		check(trialTypes, v)
	}
	callTypes := []string{"String", "String", "UInt32", "LowCardinality(String)", "String", "LowCardinality(String)",
		"LowCardinality(String)", "UInt8", "LowCardinality(String)", "UInt8", "UInt64", "UInt8", "UInt64", "String",
		"DateTime64(3, 'UTC')"}
	for _, c := range calls {
		v, err := toolCallValues(c, st.stamp())
		if err != nil {
			t.Fatal(err)
		}
		check(callTypes, v)
	}
}
