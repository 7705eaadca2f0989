package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"rebound/storage/chdb"
)

// chdbTransport runs the shared SQL on the embedded engine. Rows come back
// as JSONEachRow and are decoded with encoding/json; inserts are
// "INSERT INTO t (cols) FROM INFILE <a pipe> FORMAT
// RowBinaryWithNamesAndTypes" with the rows in binary (rowbinary.go,
// chdb.Conn.InsertData), or "INSERT INTO t (cols) FORMAT JSONEachRow"
// followed by the rows as JSON when the process has no /dev/fd or a
// column's type has no binary encoder here.
type chdbTransport struct {
	conn *chdb.Conn
	// maxInsertBytes bounds one INSERT statement; bigger writes are split.
	maxInsertBytes int
	// inserts counts INSERT statements sent (diagnostics, tests), and
	// binaryInserts those of them sent as RowBinary.
	inserts, binaryInserts atomic.Int64
	// jsonInserts: every insert as JSONEachRow (tests: the oracle of the
	// binary form).
	jsonInserts bool
	// types holds each insert target's column types (DESCRIBE TABLE), read
	// at its first insert; an Exec (DDL) forgets them all and an insert
	// that fails or names a column not described forgets its table's, so a
	// changed table is described again.
	typesMu sync.Mutex
	types   map[string]map[string]string
}

// Session settings for the embedded transport. They shape the JSON the
// engine prints (64-bit integers as numbers, not strings) and how many
// threads a query uses, never a query's meaning, so the SQL stays the same
// as on a server.
//
// max_threads = 1: the embedded engine shares the process (and, here, two
// cores) with the worker or the CLI. The reads that matter at scale group
// by case (a report's fault classes, a comparison's pairs: 250,000 cases
// at 1,000,000 trials), and with two threads each thread builds a hash
// table of every case before they are merged: on the 1M-trial readbench
// that cost 70-90 MB more peak RSS (compare 530 MB vs 440-460 MB, report
// 435-470 vs 400-410) for no gain in wall time, and about the same CPU.
// Inserts are unaffected (sweepbench's embedded insert rate: 26,900 vs
// 25,900 tool-call rows/s). A read whose hash tables are small asks for
// more (Stmt.Threads); run adds it to the statement as a SETTINGS clause,
// which a read-only session refuses, so there it keeps one thread.
var chdbSessionSettings = []string{
	"SET output_format_json_quote_64bit_integers = 0",
	"SET output_format_json_quote_64bit_floats = 0",
	"SET output_format_json_quote_denormals = 0",
	"SET max_threads = 1",
}

// readOnlySession is how a ReadOnly store's embedded session is set up
// before readonly=1 locks it: the store's database as the current one (when
// it exists) and the door's limits.
type readOnlySession struct {
	database string
	limits   Limits
}

func openCHDB(ctx context.Context, libPath, dataDir string, ro *readOnlySession) (*chdbTransport, error) {
	conn, err := chdb.Open(libPath, dataDir)
	if err != nil {
		return nil, fmt.Errorf("storage: embedded ClickHouse: %w", err)
	}
	for _, q := range chdbSessionSettings {
		if _, err := conn.Query(ctx, q, "TabSeparated"); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("storage: embedded ClickHouse: %s: %w", q, err)
		}
	}
	if ro != nil {
		// USE fails on a data dir without rebound's database (nothing to
		// read yet); unqualified names are then refused by the door.
		_, _ = conn.Query(ctx, "USE "+quoteIdent(ro.database), "TabSeparated")
		for _, v := range ro.limits.readOnlySettings() {
			if _, err := conn.Query(ctx, v.setStatement(), "TabSeparated"); err != nil {
				_ = conn.Close()
				return nil, fmt.Errorf("storage: embedded ClickHouse: %s: %w", v.setStatement(), err)
			}
		}
		if err := conn.MakeReadOnly(ctx); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("storage: embedded ClickHouse: %w", err)
		}
	}
	return &chdbTransport{conn: conn, maxInsertBytes: 16 << 20}, nil
}

func (t *chdbTransport) Close() error { return t.conn.Close() }

func (t *chdbTransport) run(ctx context.Context, q Stmt, format string) ([]byte, error) {
	writable := !t.conn.ReadOnly()
	if q.Threads > 1 && writable {
		q.SQL += fmt.Sprintf("\nSETTINGS max_threads = %d", q.Threads)
	}
	var out []byte
	var err error
	if len(q.Params) == 0 {
		out, err = t.conn.Query(ctx, q.SQL, format)
	} else {
		out, err = t.conn.QueryWithParams(ctx, q.SQL, format, q.Params)
	}
	if q.ReleaseMemory && writable {
		// Best effort: an engine built without jemalloc refuses it, and
		// the statement's result stands either way.
		_, _ = t.conn.Query(ctx, releaseMemorySQL, "TabSeparated")
	}
	return out, err
}

// releaseMemorySQL returns the pages the engine's allocator freed to the
// system (Stmt.ReleaseMemory). Measured after a comparison's statement at a
// million trials: the process's resident set fell from 367 MB to 226 MB.
const releaseMemorySQL = "SYSTEM JEMALLOC PURGE"

// raw runs a statement and returns the engine's output in format as it
// wrote it (the served door).
func (t *chdbTransport) raw(ctx context.Context, sql, format string, params map[string]string) ([]byte, chdb.ResultStats, error) {
	return t.conn.QueryStats(ctx, sql, format, params)
}

func (t *chdbTransport) Exec(ctx context.Context, q Stmt) error {
	_, err := t.run(ctx, q, "TabSeparated")
	// A statement without a result may change a table (a migration's
	// ALTER): the column types are described again at the next insert.
	t.forgetAllTypes()
	return err
}

func (t *chdbTransport) forgetAllTypes() {
	t.typesMu.Lock()
	t.types = nil
	t.typesMu.Unlock()
}

func (t *chdbTransport) Select(ctx context.Context, dest any, q Stmt) error {
	out, err := t.run(ctx, q, "JSONEachRow")
	if err != nil {
		return err
	}
	return decodeJSONEachRow(out, dest)
}

func (t *chdbTransport) Query(ctx context.Context, sql string) (Table, error) {
	out, err := t.conn.Query(ctx, sql, "JSONCompact")
	t.forgetAllTypes() // an ad-hoc statement may change a table
	if err != nil {
		return Table{}, err
	}
	var tab Table
	if len(bytes.TrimSpace(out)) == 0 {
		return tab, nil // a statement without a result
	}
	var res struct {
		Meta []struct{ Name, Type string } `json:"meta"`
		Data [][]any                       `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		return Table{}, fmt.Errorf("decode result: %w", err)
	}
	for _, m := range res.Meta {
		tab.Columns = append(tab.Columns, m.Name)
		tab.Types = append(tab.Types, m.Type)
	}
	tab.Rows = res.Data
	return tab, nil
}

// parallelDecodeBytes is the result size from which decodeJSONEachRow
// decodes on every processor: encoding/json reads about 40 MB/s of rows
// here, so a comparison's 6 MB at a million trials took 150 ms on one
// goroutine while the engine, done, sat idle.
const parallelDecodeBytes = 1 << 20

// decodeJSONEachRow appends one element per line of data to *dest (the
// engine writes a row per line and escapes newlines inside strings).
// Large results are cut into runs of lines decoded concurrently, each into
// its own elements; an error names the first bad row.
func decodeJSONEachRow(data []byte, dest any) error {
	sv := reflect.ValueOf(dest)
	if sv.Kind() != reflect.Pointer || sv.Elem().Kind() != reflect.Slice {
		return fmt.Errorf("storage: decode: dest must be a pointer to a slice, got %T", dest)
	}
	var lines [][]byte
	for rest := data; len(rest) > 0; {
		line := rest
		if k := bytes.IndexByte(rest, '\n'); k >= 0 {
			line, rest = rest[:k], rest[k+1:]
		} else {
			rest = nil
		}
		if len(bytes.TrimSpace(line)) > 0 {
			lines = append(lines, line)
		}
	}
	old := sv.Elem()
	rows := reflect.MakeSlice(old.Type(), len(lines), len(lines))
	workers := 1
	if len(data) >= parallelDecodeBytes {
		workers = min(runtime.GOMAXPROCS(0), len(lines))
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := len(lines)*w/workers, len(lines)*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if err := json.Unmarshal(lines[i], rows.Index(i).Addr().Interface()); err != nil {
					errs[w] = fmt.Errorf("storage: decode JSONEachRow row %d: %w", old.Len()+i+1, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the first run's first error is the first bad row
		}
	}
	sv.Elem().Set(reflect.AppendSlice(old, rows))
	return nil
}

func (t *chdbTransport) Insert(ctx context.Context, insertSQL string, cols []string, rows [][]any) error {
	if !t.jsonInserts && chdb.CanInsertData() {
		rbCols, ok, err := t.rowBinaryColumns(ctx, insertSQL, cols)
		if err != nil {
			return err
		}
		if ok {
			err := t.insertRowBinary(ctx, insertSQL, rbCols, rows)
			if err != nil {
				t.forgetTypes(insertSQL)
			}
			return err
		}
	}
	return t.insertJSON(ctx, insertSQL, cols, rows)
}

// rowBinaryColumns returns the columns of an insert with their types and
// encoders, false when one of them has no binary encoder.
func (t *chdbTransport) rowBinaryColumns(ctx context.Context, insertSQL string, cols []string) ([]rbColumn, bool, error) {
	target, ok := insertTarget(insertSQL)
	if !ok {
		return nil, false, nil
	}
	types, err := t.columnTypes(ctx, target)
	if err != nil {
		return nil, false, err
	}
	for _, c := range cols {
		if _, ok := types[c]; !ok {
			// Added since it was described (by another session): again.
			t.forgetTypes(insertSQL)
			if types, err = t.columnTypes(ctx, target); err != nil {
				return nil, false, err
			}
			break
		}
	}
	out := make([]rbColumn, len(cols))
	for i, c := range cols {
		typ, ok := types[c]
		if !ok {
			return nil, false, fmt.Errorf("storage: insert into %s: no column %s", target, c)
		}
		enc, ok := rbEncoderFor(typ)
		if !ok {
			return nil, false, nil
		}
		out[i] = rbColumn{name: c, typ: typ, enc: enc}
	}
	return out, true, nil
}

// columnTypes returns a table's column types by name, described once.
func (t *chdbTransport) columnTypes(ctx context.Context, target string) (map[string]string, error) {
	t.typesMu.Lock()
	types, ok := t.types[target]
	t.typesMu.Unlock()
	if ok {
		return types, nil
	}
	var rows []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	if err := t.Select(ctx, &rows, Stmt{SQL: "DESCRIBE TABLE " + target}); err != nil {
		return nil, fmt.Errorf("storage: describe %s: %w", target, err)
	}
	types = make(map[string]string, len(rows))
	for _, r := range rows {
		types[r.Name] = r.Type
	}
	t.typesMu.Lock()
	if t.types == nil {
		t.types = map[string]map[string]string{}
	}
	t.types[target] = types
	t.typesMu.Unlock()
	return types, nil
}

func (t *chdbTransport) forgetTypes(insertSQL string) {
	if target, ok := insertTarget(insertSQL); ok {
		t.typesMu.Lock()
		delete(t.types, target)
		t.typesMu.Unlock()
	}
}

// insertRowBinary writes rows as RowBinaryWithNamesAndTypes, in statements
// of at most maxInsertBytes (a row larger than that alone).
func (t *chdbTransport) insertRowBinary(ctx context.Context, insertSQL string, cols []rbColumn, rows [][]any) error {
	header := appendRowBinaryHeader(nil, cols)
	// The buffer is sized once (growing it by doubling copied a shard's
	// 8 MB of rows four times over: 3% of a sweep's CPU).
	size := len(header)
	for _, r := range rows {
		size += rowBinarySize(r)
	}
	buf := append(make([]byte, 0, min(size, t.maxInsertBytes+len(header))), header...)
	flush := func() error {
		if len(buf) == len(header) {
			return nil
		}
		err := t.conn.InsertData(ctx, insertSQL, "RowBinaryWithNamesAndTypes", buf)
		t.inserts.Add(1)
		t.binaryInserts.Add(1)
		buf = append(buf[:0], header...)
		return err
	}
	for _, r := range rows {
		before := len(buf)
		var err error
		if buf, err = appendRowBinaryRow(buf, cols, r); err != nil {
			return err
		}
		if before > len(header) && len(buf) > t.maxInsertBytes {
			// Send what came before this row, keep the row for the next statement.
			row := append([]byte(nil), buf[before:]...)
			buf = buf[:before]
			if err := flush(); err != nil {
				return err
			}
			buf = append(buf, row...)
		}
	}
	return flush()
}

// insertJSON writes rows as JSONEachRow, in statements of at most
// maxInsertBytes (a row larger than that alone).
func (t *chdbTransport) insertJSON(ctx context.Context, insertSQL string, cols []string, rows [][]any) error {
	head := insertSQL + " FORMAT JSONEachRow\n"
	var buf bytes.Buffer
	flush := func() error {
		if buf.Len() == 0 {
			return nil
		}
		_, err := t.conn.Query(ctx, head+buf.String(), "TabSeparated")
		t.inserts.Add(1)
		buf.Reset()
		return err
	}
	for _, r := range rows {
		if len(r) != len(cols) {
			return fmt.Errorf("storage: insert: %d values for %d columns", len(r), len(cols))
		}
		before := buf.Len()
		if err := appendJSONRow(&buf, cols, r); err != nil {
			return err
		}
		if before > 0 && buf.Len() > t.maxInsertBytes {
			// Send what came before this row, keep the row for the next statement.
			row := append([]byte(nil), buf.Bytes()[before:]...)
			buf.Truncate(before)
			if err := flush(); err != nil {
				return err
			}
			buf.Write(row)
		}
	}
	return flush()
}

// appendJSONRow writes one JSONEachRow object.
func appendJSONRow(buf *bytes.Buffer, cols []string, vals []any) error {
	buf.WriteByte('{')
	for i, c := range cols {
		if i > 0 {
			buf.WriteByte(',')
		}
		appendJSONString(buf, c)
		buf.WriteByte(':')
		if err := appendJSONValue(buf, vals[i]); err != nil {
			return fmt.Errorf("storage: column %s: %w", c, err)
		}
	}
	buf.WriteString("}\n")
	return nil
}

// ClickHouse's text form of DateTime64(3) values.
const chDateTime64Layout = "2006-01-02 15:04:05.000"

func appendJSONValue(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case string:
		appendJSONString(buf, x)
	case uint8:
		buf.WriteString(strconv.FormatUint(uint64(x), 10))
	case uint32:
		buf.WriteString(strconv.FormatUint(uint64(x), 10))
	case uint64:
		buf.WriteString(strconv.FormatUint(x, 10))
	case int64:
		buf.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("cannot store %v", x)
		}
		buf.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case *uint8:
		if x == nil {
			buf.WriteString("null")
		} else {
			buf.WriteString(strconv.FormatUint(uint64(*x), 10))
		}
	case []string:
		buf.WriteByte('[')
		for i, s := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			appendJSONString(buf, s)
		}
		buf.WriteByte(']')
	case time.Time:
		buf.WriteByte('"')
		buf.WriteString(x.UTC().Format(chDateTime64Layout))
		buf.WriteByte('"')
	default:
		return fmt.Errorf("unsupported value type %T", v)
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string: control characters, quotes
// and backslashes are escaped, every other byte (UTF-8 included) is written
// as is and stored by ClickHouse unchanged.
func appendJSONString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf.WriteString(s[start:i])
		switch c {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			buf.WriteString(`\u00`)
			buf.WriteByte(hexDigits[c>>4])
			buf.WriteByte(hexDigits[c&0xf])
		}
		start = i + 1
	}
	buf.WriteString(s[start:])
	buf.WriteByte('"')
}
