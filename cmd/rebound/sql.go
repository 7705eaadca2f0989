package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/ClickHouse/clickhouse-go/v2"

	"rebound/storage"
	"rebound/storage/chdb"
)

const sqlAbout = `Runs one SQL statement against rebound's ClickHouse store and prints the
result: the way to query the embedded store (no other client can open it
while it is in use) and a quick look at a server. Tables are in the database
'rebound'; they are ReplacingMergeTree, so deduplicate with FINAL (or use
the views trial_metrics and trial_rates, which do). Outcome columns are
Nullable: NULL is NOT TESTED, and avg() skips it.

Without --write the engine itself enforces read-only: the connection (or
the embedded session) runs in ClickHouse's readonly=1 mode, which refuses
writes and DDL, refuses changing any setting (so SETTINGS readonly=0 cannot
lift it), and refuses table functions that reach files, URLs or other
servers (file, url, s3, remote, executable, ...). The engine's parser must
read exactly one statement, and INTO OUTFILE is refused: the result is
printed. --write runs the statement with the store's full rights. Pass - to
read the statement from stdin.

Examples:
  rebound sql "SELECT arm, avg(recovered) AS rate, count(recovered) AS n
               FROM rebound.trials FINAL GROUP BY arm"
  rebound sql "SELECT * FROM rebound.trial_rates WHERE sweep_id = 'ID'"
  rebound sql --output json - < query.sql`

func sqlCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sql", "rebound sql [flags] STATEMENT|-", sqlAbout, stderr)
	var conn connection
	conn.storageFlags(fs)
	output := outputFlag(fs)
	write := fs.Bool("write", false, "allow statements that change data or schema")
	if err := parseOneArg(fs, args, output, "sql takes exactly one statement (quote it), or - for stdin"); err != nil {
		return err
	}
	query := fs.Arg(0)
	if query == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		query = string(b)
	}
	query = strings.TrimSpace(query)
	if query == "" {
		return usagef("empty statement")
	}
	open := conn.openReadOnlyStore
	if *write {
		open = conn.openStore
	}
	store, err := open(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	tab, err := store.Query(ctx, query)
	if err != nil {
		switch {
		case errors.Is(err, storage.ErrStatement):
			return usageError{err}
		case !*write && isReadOnlyRefusal(err):
			return usageError{fmt.Errorf("%w\n(rebound sql is read-only: pass --write to change data)", err)}
		}
		return err
	}
	if *output == "json" {
		return json.NewEncoder(stdout).Encode(tab)
	}
	if len(tab.Columns) == 0 {
		fmt.Fprintln(stdout, "ok")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tab.Columns, "\t"))
	for _, row := range tab.Rows {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = cell(v)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%d row(s)\n", len(tab.Rows))
	return nil
}

// isReadOnlyRefusal reports the engine's READONLY error (code 164).
func isReadOnlyRefusal(err error) bool {
	var qe *chdb.QueryError
	if errors.As(err, &qe) && qe.Code == 164 {
		return true
	}
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && ex.Code == 164
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}
