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
	"time"

	"github.com/spf13/cobra"

	"rebound/storage"
)

const sqlAbout = `Runs one SQL statement against rebound's ClickHouse store and prints the
result: the way to query the embedded store and a quick look at a server.
While a worker or rebound run holds the embedded store, sql reads it
through that process, which applies the same door and limits: --timeout,
--max-memory, --max-rows and --max-result-bytes lower them as in process,
but not above the defaults there (the worker's engine runs one statement at
a time; stop the worker to run longer). Tables are in the database
'rebound'; they are ReplacingMergeTree, so deduplicate with FINAL (or use
the views trial_metrics and trial_rates, which do). Outcome columns are
Nullable: NULL is NOT TESTED, and avg() skips it.

Without --write, statements pass a door. The engine's own parser reads the
statement (exactly one) and its syntax tree is checked against an allowlist:
one SELECT (WITH, UNION, INTERSECT, EXCEPT, subqueries), DESCRIBE, SHOW
TABLES or SHOW CREATE TABLE|VIEW, of rebound's own tables and views only,
using functions from an allowlist of pure ones. Refused: table functions
(file, url, numbers, ...), functions that reach files, the network, the
host or the engine's state, a SETTINGS clause anywhere, FORMAT and INTO
OUTFILE (the result is printed), and SYSTEM, KILL, SET, USE, INSERT, ....
Beneath the door the session runs in the engine's readonly=1 mode with
introspection off, under limits no statement can change: --timeout,
--max-memory, --max-rows and --max-result-bytes. An error quotes at most
200 characters of the statement. Ctrl-C abandons a running statement at
once (exit 130) and releases the store. --write runs the statement with the
store's full rights, without the door or the limits. Pass - to read the
statement from stdin.

Exit codes: 0 the result was printed; 1 the statement failed or hit a
limit; 2 the statement was refused (or is not one statement); 130 Ctrl-C.

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
		limits = storage.DefaultLimits
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
			conn.limits = limits
			open := conn.openReadOnlyStore
			if write {
				open = conn.openStore
			}
			if !write && limitsAbove(limits, storage.DefaultLimits) && conn.servedElsewhere() {
				fmt.Fprintln(cmd.ErrOrStderr(), "note: the data dir is held by a worker or rebound run, which serves it within rebound sql's default limits (60s, 4GiB, 1000000 rows, 256MiB); a higher --timeout, --max-memory, --max-rows or --max-result-bytes stays at those")
			}
			store, err := open(ctx)
			if err != nil {
				return err
			}
			tab, err := queryInterruptibly(ctx, store, query, write, cmd.ErrOrStderr())
			_ = store.Close()
			switch {
			case errors.Is(err, storage.ErrReadOnly), errors.Is(err, storage.ErrRefused):
				return usageError{fmt.Errorf("%w\n(rebound sql is read-only; see rebound sql --help for what it runs, or pass --write to change data)", err)}
			case errors.Is(err, storage.ErrLimit):
				return fmt.Errorf("%w\n(raise --timeout, --max-memory, --max-rows or --max-result-bytes)", err)
			case err != nil:
				return err
			}
			return writeTable(tab, output, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	conn.storageFlags(cmd.Flags())
	outputFlag(cmd.Flags(), &output)
	cmd.Flags().BoolVar(&write, "write", false, "allow statements that change data or schema (no door, no limits)")
	cmd.Flags().DurationVar(&limits.MaxExecutionTime, "timeout", limits.MaxExecutionTime, "stop a statement that runs longer (the engine's max_execution_time)")
	cmd.Flags().Var(byteSize{&limits.MaxMemoryBytes}, "max-memory", "memory one statement may use, e.g. 4GiB (max_memory_usage)")
	cmd.Flags().Uint64Var(&limits.MaxResultRows, "max-rows", limits.MaxResultRows, "rows a result may have (max_result_rows)")
	cmd.Flags().Var(byteSize{&limits.MaxResultBytes}, "max-result-bytes", "bytes a result may have, e.g. 256MiB (max_result_bytes)")
	return cmd
}

// interruptGrace is how long an interrupted statement has to return
// before the process exits without it.
const interruptGrace = time.Second

// abandonProcess ends the process; tests replace it.
var abandonProcess = os.Exit

// queryInterruptibly runs the statement and returns as soon as ctx is
// cancelled (Ctrl-C, SIGTERM). A server cancels the query when its context
// ends; so does the served store (the holder's engine stops the statement
// when this process's request goes away); the embedded engine stops it
// with KILL QUERY, typically within 200 ms. Should a statement not have
// returned after interruptGrace, the process exits with 130 anyway: the
// kernel releases the data dir's lock and the connection with the process.
func queryInterruptibly(ctx context.Context, store storage.Store, query string, write bool, stderr io.Writer) (storage.Table, error) {
	type result struct {
		tab storage.Table
		err error
	}
	done := make(chan result, 1)
	go func() {
		tab, err := store.Query(ctx, query)
		done <- result{tab, err}
	}()
	select {
	case r := <-done:
		return r.tab, r.err
	case <-ctx.Done():
	}
	select {
	case r := <-done:
		if r.err == nil {
			r.err = ctx.Err()
		}
		return storage.Table{}, r.err
	case <-time.After(interruptGrace):
	}
	if write {
		fmt.Fprintln(stderr, "rebound sql: interrupted: the statement was abandoned while it ran; it may or may not have taken effect")
	} else {
		fmt.Fprintln(stderr, "rebound sql: interrupted: the statement was abandoned")
	}
	abandonProcess(exitInterrupted)
	return storage.Table{}, ctx.Err()
}

func writeTable(tab storage.Table, output string, stdout, stderr io.Writer) error {
	if output == "json" {
		return writeJSON(stdout, tab, false)
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

// limitsAbove reports whether any of l is above the same limit of base.
func limitsAbove(l, base storage.Limits) bool {
	return l.MaxExecutionTime > base.MaxExecutionTime || l.MaxMemoryBytes > base.MaxMemoryBytes ||
		l.MaxResultRows > base.MaxResultRows || l.MaxResultBytes > base.MaxResultBytes
}
