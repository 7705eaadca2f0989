package served

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"rebound/storage"
)

// The writable served engine exists only in this package's tests: a
// ClickHouse HTTP interface on the embedded engine with full rights, so
// the ClickHouse server transport (storage/clickhouseserver), the code
// users point at a real server, can run the whole schema, its batch
// inserts and every read it sends against the engine rebound ships. It is
// in a _test.go file: no program links it, and what the worker and
// `rebound run` serve is the read-only door (Serve).

// Writable is a served engine that takes writes, and the statements it
// ran.
type Writable struct {
	*Server
	h *writableHandler
}

// ServeWritable serves eng with full rights on a loopback port of
// o.DataDir's served.json and credential. An INSERT ... FORMAT F in the
// query parameter with its rows in the body (a ClickHouse client's batch:
// clickhouse-go sends Native) is spooled to a file under spool and read by
// the engine in the format the statement names (storage.Engine.InsertFrom);
// every other statement runs as given (storage.Engine.Run).
func ServeWritable(eng *storage.Engine, o Options, spool string) (*Writable, error) {
	addr, err := o.address()
	if err != nil {
		return nil, err
	}
	wh := &writableHandler{eng: eng, spool: spool}
	srv, err := listen(o.DataDir, addr, eng.Database(), func(secret string) http.Handler {
		wh.handler = &handler{secret: secret, log: o.Log, timezone: "UTC"}
		return wh
	}, storage.DefaultLimits.MaxExecutionTime)
	if err != nil {
		return nil, err
	}
	return &Writable{Server: srv, h: wh}, nil
}

// Statements are the statements the engine accepted and ran, in order (an
// insert as its client sent it, without its rows).
func (w *Writable) Statements() []string {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return append([]string(nil), w.h.ran...)
}

type writableHandler struct {
	*handler
	eng   *storage.Engine
	spool string
	mu    sync.Mutex
	ran   []string
}

// maxInsertBody bounds one insert's rows.
const maxInsertBody = 1 << 30

func (h *writableHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	params, queryID, ok := h.admit(w, r)
	if !ok {
		return
	}
	var rev uint64
	values, settings := map[string]string{}, map[string]string{}
	for k := range params {
		v := first(params, k)
		switch {
		case k == "client_protocol_version":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				h.fail(w, r, queryID, codeBadArguments, fmt.Errorf("client_protocol_version %q", v), 0)
				return
			}
			rev = n
		case strings.HasPrefix(k, "param_"):
			values[strings.TrimPrefix(k, "param_")] = v
		case k == "compress" && v == "1":
			h.fail(w, r, queryID, codeBadArguments, errors.New("compress=1 is not answered here"), 0)
			return
		case ignoredParams[k], k == "compress":
		default:
			settings[k] = v
		}
	}
	format := first(params, "default_format")
	if f := r.Header.Get("X-ClickHouse-Format"); f != "" {
		format = f
	}
	query := params.Get("query")
	var body io.Reader = http.NoBody
	if r.Method == http.MethodPost {
		body = http.MaxBytesReader(w, r.Body, maxInsertBody)
		if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
			zr, err := gzip.NewReader(body)
			if err != nil {
				h.fail(w, r, queryID, storage.CodeStatement, err, 0)
				return
			}
			body = zr
		}
	}
	if query != "" && r.Method == http.MethodPost {
		// A statement in the query parameter and a body: an insert's rows.
		if err := h.insert(r, query, body, settings); err != nil {
			h.fail(w, r, queryID, engineCode(err), err, 0)
			return
		}
		h.answer(w, r, params, queryID, storage.DoorResult{Format: "TabSeparated"}, rev)
		return
	}
	if query == "" {
		b, err := io.ReadAll(io.LimitReader(body, storage.MaxStatementBytes+1))
		if err != nil {
			h.fail(w, r, queryID, storage.CodeStatement, err, 0)
			return
		}
		query = string(b)
	}
	out, stats, f, err := h.eng.Run(r.Context(), query, format, values, settings)
	if err != nil {
		h.fail(w, r, queryID, engineCode(err), err, 0)
		return
	}
	h.record(query)
	h.answer(w, r, params, queryID, storage.DoorResult{Body: out, Format: f, Stats: stats}, rev)
}

// insert spools an insert's rows and has the engine read them.
func (h *writableHandler) insert(r *http.Request, query string, rows io.Reader, settings map[string]string) error {
	f, err := os.CreateTemp(h.spool, "insert-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = io.Copy(f, rows)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("read the insert's rows: %w", err)
	}
	if _, err := h.eng.InsertFrom(r.Context(), query, f.Name(), settings); err != nil {
		return err
	}
	h.record(query)
	return nil
}

func (h *writableHandler) record(q string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ran = append(h.ran, q)
}

// engineCode is the exception code of err: the engine's, else
// SYNTAX_ERROR for a statement that is not one, else UNKNOWN_EXCEPTION.
func engineCode(err error) int {
	if c := storage.DoorCode(err); c != 0 {
		return c
	}
	return codeUnknown
}
