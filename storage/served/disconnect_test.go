package served_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"rebound/storage/served"
)

// endlessSQL runs far past the door's 60 s at the holder (10^11 pairs)
// unless it is stopped.
const endlessSQL = "SELECT count() FROM (SELECT arrayJoin(range(1000000)) AS a) AS x CROSS JOIN (SELECT arrayJoin(range(100000)) AS b) AS y WHERE a + b > 7"

// TestDisconnectedClientFreesTheEngine: a client that goes away while its
// statement runs (curl killed, a dashboard closed, rebound sql's Ctrl-C
// through the served store) has the statement stopped in the holding
// process, so the holder's own next statement and another client's answer
// within seconds instead of after the door's 60 s.
func TestDisconnectedClientFreesTheEngine(t *testing.T) {
	need(t)
	auth := "Basic " + basicAuth(served.User, fx.secret)
	ways := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"http client closes the connection", func(ctx context.Context) error {
			u := "http://" + fx.srv.Endpoint().Address + "/?" + url.Values{"default_format": {"TSV"}}.Encode()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(endlessSQL))
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", auth)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				return errors.New("the statement answered " + resp.Status)
			}
			return err
		}},
		{"client half-closes and reads the answer", func(ctx context.Context) error {
			// A client that shuts its sending side (what the server
			// sees of one that goes away) can still read what the
			// server answered: the statement stopped, with a server's
			// code for that.
			conn, err := net.Dial("tcp", fx.srv.Endpoint().Address)
			if err != nil {
				return err
			}
			defer conn.Close()
			req := fmt.Sprintf("POST /?default_format=TSV HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Length: %d\r\n\r\n%s", auth, len(endlessSQL), endlessSQL)
			if _, err := io.WriteString(conn, req); err != nil {
				return err
			}
			<-ctx.Done()
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				return err
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				return fmt.Errorf("reading the answer: %w", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if code := resp.Header.Get("X-ClickHouse-Exception-Code"); code != "394" || !strings.Contains(string(body), "QUERY_WAS_CANCELLED") {
				return fmt.Errorf("answer %s, code %q: %q", resp.Status, code, body)
			}
			return ctx.Err()
		}},
		{"the store's client gives up (rebound sql's path)", func(ctx context.Context) error {
			_, err := client(t).Query(ctx, endlessSQL)
			return err
		}},
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- way.run(ctx) }()
			time.Sleep(1500 * time.Millisecond) // the statement runs at the holder
			cancel()
			gone := time.Now()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("the client: %v, want its cancellation", err)
			}
			// The holding process's next statement: it waits for the
			// engine, which the abandoned statement held.
			qctx, qcancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer qcancel()
			tab, err := fx.st.Query(qctx, "SELECT 42 AS n")
			took := time.Since(gone)
			if err != nil || len(tab.Rows) != 1 {
				t.Fatalf("the holder's next statement after %v: %v %v", took, tab.Rows, err)
			}
			if took > 3*time.Second {
				t.Errorf("the holder's next statement answered %v after the client went away, want within 3 s", took)
			}
			t.Logf("the holder's next statement answered %v after the client went away", took.Round(time.Millisecond))
			if resp, body := post(t, "/", url.Values{"default_format": {"TSV"}}, "SELECT 43", map[string]string{"Authorization": auth}); resp.StatusCode != 200 || body != "43\n" {
				t.Errorf("another client: %d %q", resp.StatusCode, body)
			}
		})
	}
}
