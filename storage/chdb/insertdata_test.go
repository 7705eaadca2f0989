package chdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// rowBinaryStrings is RowBinary of one String column.
func rowBinaryStrings(vals []string) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// TestInsertDataCarriesAnyByte: binary data holding what ends or splits
// a statement's inline data as text (an empty line, a semicolon, NUL) is
// read whole, in any size.
func TestInsertDataCarriesAnyByte(t *testing.T) {
	c := openOrSkip(t)
	ctx := context.Background()
	if !CanInsertData() {
		t.Fatal("no /dev/fd: InsertData cannot be tested here")
	}
	if _, err := c.Query(ctx, "CREATE TABLE t (i UInt32, s String) ENGINE = MergeTree ORDER BY i", "TabSeparated"); err != nil {
		t.Fatal(err)
	}
	vals := []string{"", "\n\n", "a\n\nb", "\x00", ";\n\nSELECT 1;", "\r\n\r\n", "\xff\xfe", strings.Repeat("\n", 7000)}
	var data []byte
	const n = 20000 // about 2 MB: more than a pipe's buffer
	for i := range n {
		data = binary.LittleEndian.AppendUint32(data, uint32(i))
		data = append(data, rowBinaryStrings(vals[i%len(vals):i%len(vals)+1])...)
	}
	if err := c.InsertData(ctx, "INSERT INTO t (i, s)", "RowBinary", data); err != nil {
		t.Fatal(err)
	}
	out, err := c.Query(ctx, "SELECT i, s FROM t ORDER BY i", "RowBinary")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, data) {
		t.Fatalf("read back %d bytes, wrote %d (or they differ)", len(out), len(data))
	}
}

// TestInsertDataFailsCleanly: a statement the engine refuses, before or
// while reading the data, returns its error and leaves no writer behind;
// the session serves the next statement.
func TestInsertDataFailsCleanly(t *testing.T) {
	c := openOrSkip(t)
	ctx := context.Background()
	if _, err := c.Query(ctx, "CREATE TABLE u (s String) ENGINE = MergeTree ORDER BY s", "TabSeparated"); err != nil {
		t.Fatal(err)
	}
	big := rowBinaryStrings([]string{strings.Repeat("x", 4<<20)})
	for _, tc := range []struct{ insert, format string }{
		{"INSERT INTO no_such_table (s)", "RowBinary"},      // refused before reading
		{"INSERT INTO u (s)", "Native"},                     // fails while reading
		{"INSERT INTO u (s)", "RowBinaryWithNamesAndTypes"}, // a header that is not one
	} {
		done := make(chan error, 1)
		go func() { done <- c.InsertData(ctx, tc.insert, tc.format, big) }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s FORMAT %s: no error", tc.insert, tc.format)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s FORMAT %s: still running after 30 s (a writer left blocked?)", tc.insert, tc.format)
		}
	}
	if err := c.InsertData(ctx, "INSERT INTO u (s)", "RowBinary", rowBinaryStrings([]string{"after"})); err != nil {
		t.Fatalf("the next insert: %v", err)
	}
}
