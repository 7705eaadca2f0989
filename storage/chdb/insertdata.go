package chdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
)

// fdDir is where a process opens its own file descriptors by number.
const fdDir = "/dev/fd"

var fdDirOK = sync.OnceValue(func() bool {
	st, err := os.Stat(fdDir)
	return err == nil && st.IsDir()
})

// CanInsertData reports whether InsertData works here: the engine reads the
// data from this process's end of a pipe, opened by its path in /dev/fd.
func CanInsertData() bool { return fdDirOK() }

// InsertData runs insert ("INSERT INTO t (cols)") with data as its rows in
// format, which may be binary (RowBinary, Native): the engine reads the
// rows FROM INFILE, the read end of a pipe this call writes data into, so
// nothing touches a disk and no file is left behind.
//
// Why not the rows after the statement, as JSONEachRow rows are sent:
// the engine's client ends a statement's inline data at an empty line
// (two line breaks in a row), which binary data holds anywhere (measured
// with libchdb 26.5: a RowBinary string "\n\n" fails with "Cannot read
// all data"); chdb_query_n, which takes the statement by length, does the
// same.
func (c *Conn) InsertData(ctx context.Context, insert, format string, data []byte) error {
	if !CanInsertData() {
		return fmt.Errorf("chdb: %s is not available to pass data to the engine", fdDir)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("chdb: pipe for insert data: %w", err)
	}
	written := make(chan error, 1)
	go func() {
		_, err := w.Write(data)
		written <- errors.Join(err, w.Close())
	}()
	_, qerr := c.Query(ctx, fmt.Sprintf("%s FROM INFILE '%s/%d' FORMAT %s", insert, fdDir, r.Fd(), format), "TabSeparated")
	// Closing the read end ends a write the engine did not read to the
	// end (a failed statement): the writer gets EPIPE and returns.
	rerr := r.Close()
	werr := <-written
	if qerr != nil {
		return qerr
	}
	if werr != nil {
		return fmt.Errorf("chdb: writing insert data: %w", werr)
	}
	return rerr
}
