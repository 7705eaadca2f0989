package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rebound/storage"
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
  rebound sql - --output json < query.sql`

func newSQLCmd() *cobra.Command {
	var (
		conn   connection
		output string
		write  bool
	)
	cmd := &cobra.Command{
		Use:   "sql [flags] STATEMENT|-",
		Short: "run one SQL statement against the store (the embedded one included)",
		Long:  sqlAbout,
		Args:  exactArgs(1, "sql takes exactly one statement (quote it), or - for stdin"),
		RunE: func(cmd *cobra.Command, args []string) error {
			query := args[0]
			if query == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return err
				}
				query = string(b)
			}
			query = strings.TrimSpace(query)
			if query == "" {
				return usagef("empty statement")
			}
			ctx := cmd.Context()
			open := conn.openReadOnlyStore
			if write {
				open = conn.openStore
			}
			store, err := open(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			tab, err := store.Query(ctx, query)
			if errors.Is(err, storage.ErrReadOnly) {
				return fmt.Errorf("%w\n(rebound sql is read-only: pass --write to change data)", err)
			}
			if err != nil {
				return err
			}
			return writeTable(tab, output, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	conn.storageFlags(cmd.Flags())
	outputFlag(cmd.Flags(), &output)
	cmd.Flags().BoolVar(&write, "write", false, "allow statements that change data or schema")
	return cmd
}

func writeTable(tab storage.Table, output string, stdout, stderr io.Writer) error {
	if output == "json" {
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
