package chdb

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// endless is a statement that runs for minutes on this machine (a hash of
// 10^11 numbers) and returns nothing until it ends: the case the streaming
// API cannot stop. max_execution_time bounds it at 30 s, so without a stop
// the test fails on the elapsed time instead of hanging.
const endless = "SELECT sum(sipHash64(number)) FROM numbers(100000000000)"

// stopWithin is how soon after its context ends a statement must return.
const stopWithin = 2 * time.Second

// TestContextStopsTheRunningStatement: a statement whose context ends
// while it runs returns ctx's error within stopWithin, through every entry
// point, for cancellation and deadline alike, and the session answers the
// next statement with nothing left over from the stopped one.
func TestContextStopsTheRunningStatement(t *testing.T) {
	c := openOrSkip(t)
	bg := context.Background()
	if _, err := c.Query(bg, "SET max_execution_time = 30", "TabSeparated"); err != nil {
		t.Fatal(err)
	}
	run := map[string]func(ctx context.Context) error{
		"Query": func(ctx context.Context) error {
			_, err := c.Query(ctx, endless, "JSONCompact")
			return err
		},
		"QueryWithParams": func(ctx context.Context) error {
			_, err := c.QueryWithParams(ctx, "SELECT sum(sipHash64(number)) FROM numbers({n:UInt64})", "JSONCompact", map[string]string{"n": "100000000000"})
			return err
		},
		"QueryStats": func(ctx context.Context) error {
			_, _, err := c.QueryStats(ctx, endless, "CSV", nil)
			return err
		},
	}
	for name, f := range run {
		for _, end := range []struct {
			name string
			ctx  func() (context.Context, context.CancelFunc)
			want error
		}{
			{"cancel", func() (context.Context, context.CancelFunc) {
				return cancelAfter(bg, 500*time.Millisecond)
			}, context.Canceled},
			{"deadline", func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(bg, 500*time.Millisecond)
			}, context.DeadlineExceeded},
		} {
			t.Run(name+"/"+end.name, func(t *testing.T) {
				ctx, cancel := end.ctx()
				defer cancel()
				kills := c.s.kills.Load()
				err := f(ctx)
				<-ctx.Done()
				late := time.Since(endedAt(ctx))
				if !errors.Is(err, end.want) {
					t.Fatalf("error %v, want one matching %v", err, end.want)
				}
				var qe *QueryError
				if !errors.As(err, &qe) || qe.Code != codeQueryWasCancelled {
					t.Errorf("error %v does not carry the engine's QUERY_WAS_CANCELLED", err)
				}
				if late > stopWithin {
					t.Errorf("returned %v after the context ended, want within %v", late, stopWithin)
				}
				if c.s.kills.Load() == kills {
					t.Error("no KILL QUERY was sent")
				}
				t.Logf("returned %v after the context ended: %v", late.Round(time.Millisecond), err)
				out, err := c.Query(bg, "SELECT 42 AS x", "JSONEachRow")
				if err != nil || string(out) != "{\"x\":42}\n" {
					t.Fatalf("the next statement: %q, %v", out, err)
				}
			})
		}
	}
}

type cancelledAtKey struct{}

// cancelAfter is context.WithCancel cancelled after d, which remembers when
// (see endedAt).
func cancelAfter(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	at := new(time.Time)
	ctx, cancel := context.WithCancel(context.WithValue(parent, cancelledAtKey{}, at))
	var once sync.Once
	stop := func() { once.Do(func() { *at = time.Now(); cancel() }) }
	time.AfterFunc(d, stop)
	return ctx, stop
}

// endedAt is when ctx ended: its deadline, or when cancelAfter cancelled
// it. Call it after <-ctx.Done().
func endedAt(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return *ctx.Value(cancelledAtKey{}).(*time.Time)
}

// TestContextEndingAsTheStatementStarts: a context that ends while the
// statement is being parsed or registered (before the engine lists it, so
// a first KILL finds nothing) still stops it: the stop is repeated until
// the statement returns.
func TestContextEndingAsTheStatementStarts(t *testing.T) {
	c := openOrSkip(t)
	bg := context.Background()
	if _, err := c.Query(bg, "SET max_execution_time = 30", "TabSeparated"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		ctx, cancel := context.WithCancel(bg)
		delay := time.Duration(i) * 700 * time.Microsecond
		time.AfterFunc(delay, cancel)
		start := time.Now()
		_, err := c.Query(ctx, endless, "CSV")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled after %v: error %v", delay, err)
		}
		if took := time.Since(start); took > delay+stopWithin {
			t.Errorf("cancelled after %v: returned after %v", delay, took)
		}
		if out, err := c.Query(bg, "SELECT 7", "CSV"); err != nil || string(out) != "7\n" {
			t.Fatalf("cancelled after %v: the next statement: %q, %v", delay, out, err)
		}
	}
}

// TestContextStopsAReadOnlySessionsStatement: rebound sql's session is
// read-only (readonly=1 refuses KILL QUERY's settings and most else); its
// statements are stopped all the same, from the control connection.
func TestContextStopsAReadOnlySessionsStatement(t *testing.T) {
	c := openOrSkip(t)
	bg := context.Background()
	if _, err := c.Query(bg, "SET max_execution_time = 30", "TabSeparated"); err != nil {
		t.Fatal(err)
	}
	if err := c.MakeReadOnly(bg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
	defer cancel()
	_, err := c.Query(ctx, endless, "CSV")
	if late := time.Since(endedAt(ctx)); !errors.Is(err, context.DeadlineExceeded) || late > stopWithin {
		t.Fatalf("error %v, %v after the deadline", err, late)
	}
	if _, err := c.Query(bg, "INSERT INTO FUNCTION null('x UInt8') VALUES (1)", "CSV"); err == nil {
		t.Fatal("the read-only session wrote after a stop")
	}
	if out, err := c.Query(bg, "SELECT 7", "CSV"); err != nil || string(out) != "7\n" {
		t.Fatalf("the next statement: %q, %v", out, err)
	}
}

// A statement that completes before its context ends is untouched: no
// stop, the same result and counters as without a context that can end.
func TestContextThatOutlivesTheStatement(t *testing.T) {
	c := openOrSkip(t)
	const q = "SELECT sum(number) FROM numbers(1000000)"
	want, wantSt, err := c.QueryStats(context.Background(), q, "CSV", nil)
	if err != nil || string(want) != "499999500000\n" {
		t.Fatalf("%q, %v", want, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out, st, err := c.QueryStats(ctx, q, "CSV", nil)
	cancel()
	if err != nil || string(out) != string(want) || st.RowsRead != wantSt.RowsRead || st.BytesRead != wantSt.BytesRead {
		t.Fatalf("%q, %+v, %v; want %q, %+v", out, st, err, want, wantSt)
	}
	if n := c.s.kills.Load(); n != 0 {
		t.Fatalf("%d KILL QUERY sent for a statement that completed", n)
	}
}

// BenchmarkQueryContext compares a small read with a context that cannot
// end (no stop arranged) and with one that can (a context.AfterFunc per
// statement):
//
//	go test -run '^$' -bench QueryContext -benchtime 3000x ./storage/chdb/
func BenchmarkQueryContext(b *testing.B) {
	c := openOrSkip(b)
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{{"background", context.Background()}, {"cancellable", cancellable}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Query(bc.ctx, "SELECT number FROM numbers(100)", "JSONEachRow"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
