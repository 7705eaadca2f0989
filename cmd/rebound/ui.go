package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"rebound/internal/logging"
	"rebound/results/reviewui"
	"rebound/storage"
	"rebound/storage/served"
)

const uiAbout = `Serves the review UI on a loopback address and prints its URL: the stored
sweeps, a sweep's report, two arms compared (the numbers and drawings of
'rebound compare'), one trial (goal, fault schedule, every call with its plan
step and result, claim against the world, every check with the calls that
prove it, the causal pivot), two arms on one case side by side opening at the
first divergence, filtered lists of trials, the judge's review queue and its
agreement with people; and it takes human verdicts with a note (per outcome,
and per judge dimension where a judge ran). Verdicts go to the reviews table,
append-only; nothing else is written. 'rebound judge agreement' then reports
the judge's and the checks' agreement with people, and 'rebound review export'
writes the verdicts out for calibration.

The URL carries a random token made at each start; every request needs it (a
cookie after the first page). Only loopback addresses are served. Stop with
Ctrl-C. The store is the one the other commands read (--data-dir or
--clickhouse-dsn). While a worker or 'rebound run' holds the data dir, the UI
reads through the store that process serves, and the verdicts are stored by
that process (its review endpoint).

Example:
  rebound ui
  rebound ui --listen 127.0.0.1:8765`

func newUICmd() *cobra.Command {
	var (
		conn   connection
		listen string
	)
	cmd := &cobra.Command{
		Use:   "ui [flags]",
		Short: "the review UI: trajectories side by side, human verdicts with a note",
		Long:  uiAbout,
		Args:  exactArgs(0, "ui takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUI(cmd.Context(), &conn, listen, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	conn.storageFlags(cmd.Flags())
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback address to serve on (port 0: any free port)")
	return cmd
}

// loopbackListen refuses an address that is not a loopback IP or localhost.
func loopbackListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return usagef("--listen %q: rebound ui serves on a loopback address only (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

func runUI(ctx context.Context, conn *connection, listen string, stdout, stderr io.Writer) error {
	if err := loopbackListen(listen); err != nil {
		return err
	}
	store, writer, err := conn.openUIStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return err
	}
	token := hex.EncodeToString(tok)
	log, err := logging.New(stderr, logging.Options{})
	if err != nil {
		return err
	}
	ui, err := reviewui.New(store, reviewui.Options{Token: token, Writer: writer, Log: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return usagef("--listen %q: %v", listen, err)
	}
	srv := &http.Server{Handler: ui, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 5 * time.Minute}
	fmt.Fprintf(stdout, "rebound ui: http://%s/?token=%s\n(Ctrl-C to stop)\n", ln.Addr(), token)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return ctx.Err()
	}
}

// openUIStore opens the store the UI reads and the way it stores verdicts:
// a data dir another process holds (a worker, rebound run) is read
// through the store that process serves, and verdicts go to that
// process's review endpoint (served.ReviewWriter); otherwise the store is
// opened here (openExistingStore) and writes them itself.
func (c *connection) openUIStore(ctx context.Context) (storage.Store, reviewui.Writer, error) {
	if err := c.requireStore(); err != nil {
		return nil, nil, err
	}
	st, ok, err := c.openServedStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	if ok {
		ep, found, err := served.Find(c.dataDir)
		if err == nil && !found {
			err = fmt.Errorf("the process serving the data dir %s stopped", c.dataDir)
		}
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		secret, err := served.Credential(c.dataDir)
		if err != nil {
			st.Close()
			return nil, nil, usagef("served store: %v", err)
		}
		return st, served.NewReviewWriter(ep, secret), nil
	}
	st, err = c.openExistingStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	return st, st, nil
}
