package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

const sqlAbout = `Runs one SQL statement against rebound's ClickHouse store and prints the
result: the way to query the embedded store (no other client can open it
while it is in use) and a quick look at a server. Tables are in the database
'rebound'; they are ReplacingMergeTree, so deduplicate with FINAL (or use
the views trial_metrics and trial_rates, which do). Outcome columns are
Nullable: NULL is NOT TESTED, and avg() skips it.

Read-only statements (SELECT, WITH, SHOW, DESCRIBE, EXPLAIN) run as they are;
anything else needs --write. Pass - to read the statement from stdin.

Examples:
  rebound sql "SELECT arm, avg(recovered) AS rate, count(recovered) AS n
               FROM rebound.trials FINAL GROUP BY arm"
  rebound sql "SELECT * FROM rebound.trial_rates WHERE sweep_id = 'ID'"
  rebound sql --output json - < query.sql`

var readOnlyStatements = []string{"SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "EXISTS"}

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
	if !*write && !readOnly(query) {
		return usagef("%q does not look read-only; pass --write to run it", firstWord(query))
	}
	store, err := conn.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	tab, err := store.Query(ctx, query)
	if err != nil {
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

func readOnly(query string) bool {
	w := strings.ToUpper(firstWord(query))
	for _, s := range readOnlyStatements {
		if w == s {
			return true
		}
	}
	return false
}

func firstWord(query string) string {
	f := strings.Fields(strings.TrimLeft(query, "( \t\n"))
	if len(f) == 0 {
		return ""
	}
	return f[0]
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
