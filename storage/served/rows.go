package served

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"rebound/storage"
)

// The engine applies max_result_rows to the rows it reads from tables; a
// result computed without one (SELECT arrayJoin(range(n))) passes it, so
// `rebound sql` counts the rows of its result, and so does the served
// store, in the formats whose rows it can count without their types:
// Native, the line formats (one row a line, after their header lines) and
// the JSON documents (their "rows" field). RowBinary, Parquet, Arrow, ...
// are held to max_result_bytes and the engine's limits.

// resultRows counts a result's rows; known is false for a format it does
// not count.
func resultRows(format string, body []byte) (n uint64, known bool, err error) {
	switch {
	case format == "Native":
		n, err := nativeRows(body)
		return n, err == nil, err
	case format == "JSON", format == "JSONStrings", format == "JSONCompact", format == "JSONCompactStrings":
		tail := body[max(0, len(body)-4096):]
		m := jsonRowsRe.FindAllSubmatch(tail, -1)
		if len(m) == 0 {
			return 0, false, nil
		}
		v, err := strconv.ParseUint(string(m[len(m)-1][1]), 10, 64)
		return v, err == nil, nil
	}
	header, ok := lineFormats[format]
	if !ok {
		return 0, false, nil
	}
	lines := uint64(bytes.Count(body, []byte{'\n'}))
	if lines < header {
		return 0, true, nil
	}
	return lines - header, true, nil
}

var jsonRowsRe = regexp.MustCompile(`"rows":\s*(\d+)`)

// lineFormats are the formats that write one row a line, with their header
// lines (names, types).
var lineFormats = func() map[string]uint64 {
	m := map[string]uint64{}
	for _, f := range []string{"TabSeparated", "TabSeparatedRaw", "TSV", "TSVRaw", "CSV", "JSONEachRow", "JSONStringsEachRow",
		"JSONCompactEachRow", "JSONCompactStringsEachRow", "NDJSON", "JSONLines"} {
		m[f] = 0
		switch {
		case strings.HasPrefix(f, "JSONCompact"):
			m[f+"WithNames"] = 1
			m[f+"WithNamesAndTypes"] = 2
		case !strings.HasPrefix(f, "JSON") && f != "NDJSON":
			m[f+"WithNames"] = 1
			m[f+"WithNamesAndTypes"] = 2
		}
	}
	return m
}()

// checkRows holds a result to the door's max_result_rows.
func checkRows(limits storage.Limits, format string, body []byte) error {
	n, known, err := resultRows(format, body)
	if err != nil {
		return err
	}
	if known && n > limits.MaxResultRows {
		return fmt.Errorf("%w: the result has %d rows, more than max_result_rows = %d", storage.ErrLimit, n, limits.MaxResultRows)
	}
	return nil
}
