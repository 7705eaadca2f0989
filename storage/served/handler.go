package served

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"rebound/storage"
)

// handler answers ClickHouse's HTTP interface for one door.
type handler struct {
	door     *storage.Door
	secret   string
	log      *slog.Logger
	timezone string
}

// The exception codes the handler answers besides the door's (storage.DoorCode).
const (
	codeAuthenticationFailed = 516
	codeUnknownDatabase      = 81
	codeBadArguments         = 36
	codeUnknown              = 1002 // UNKNOWN_EXCEPTION
	codeQueryWasCancelled    = 394
)

// codeNames are ClickHouse's names of the codes clients meet here.
var codeNames = map[int]string{
	storage.CodeStatement:    "SYNTAX_ERROR",
	storage.CodeRefused:      "ACCESS_DENIED",
	storage.CodeFormat:       "UNKNOWN_FORMAT",
	storage.ReadOnlyCode:     "READONLY",
	codeAuthenticationFailed: "AUTHENTICATION_FAILED",
	codeUnknownDatabase:      "UNKNOWN_DATABASE",
	codeBadArguments:         "BAD_ARGUMENTS",
	codeUnknown:              "UNKNOWN_EXCEPTION",
	codeQueryWasCancelled:    "QUERY_WAS_CANCELLED",
	60:                       "UNKNOWN_TABLE",
	47:                       "UNKNOWN_IDENTIFIER",
	158:                      "TOO_MANY_ROWS",
	159:                      "TIMEOUT_EXCEEDED",
	241:                      "MEMORY_LIMIT_EXCEEDED",
	307:                      "TOO_MANY_BYTES",
	396:                      "TOO_MANY_ROWS_OR_BYTES",
	456:                      "UNKNOWN_QUERY_PARAMETER",
}

// httpStatus is the status a ClickHouse server answers a code with.
func httpStatus(code int) int {
	switch code {
	case codeAuthenticationFailed, storage.CodeRefused, storage.ReadOnlyCode:
		return http.StatusForbidden
	case storage.CodeStatement, storage.CodeFormat, codeBadArguments, 456, 47:
		return http.StatusBadRequest
	case codeUnknownDatabase, 60:
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// maxBody bounds a request's body: one statement of the door's maximum.
const maxBody = storage.MaxStatementBytes + 1

// ignoredParams are parameters of ClickHouse's HTTP interface that change
// nothing here: credentials and the statement (read apart), the session
// (the door keeps none) and progress headers. Of the other settings, the
// limits lower the door's (limitParams), output_format_* pass, and the
// rest are the door's to fix (readonly: its value holds).
var ignoredParams = map[string]bool{
	"query": true, "user": true, "password": true, "database": true, "default_format": true,
	"query_id": true, "quota_key": true, "session_id": true, "session_timeout": true, "session_check": true,
	"client_protocol_version": true, "enable_http_compression": true, "http_zlib_compression_level": true,
	"wait_end_of_query": true, "buffer_size": true, "send_progress_in_http_headers": true,
	"http_headers_progress_interval_ms": true, "cancel_http_readonly_queries_on_client_close": true,
	"decompress": true,
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	params, queryID, ok := h.admit(w, r)
	if !ok {
		return
	}
	query := params.Get("query")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if query == "" {
			w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
			_, _ = io.WriteString(w, "Ok.\n")
			return
		}
	case http.MethodPost:
		body, err := readBody(r)
		if err != nil {
			h.fail(w, r, queryID, storage.CodeStatement, err, 0)
			return
		}
		// The body continues the query parameter, as on a server.
		if query != "" && len(body) > 0 {
			query += "\n"
		}
		query += string(body)
	default:
		h.fail(w, r, queryID, codeBadArguments, fmt.Errorf("method %s (GET or POST)", r.Method), http.StatusMethodNotAllowed)
		return
	}
	if strings.TrimSpace(query) == "" {
		h.fail(w, r, queryID, storage.CodeStatement, errors.New("empty query"), 0)
		return
	}
	req, clientRevision, err := h.request(r, params, query)
	if err != nil {
		h.fail(w, r, queryID, storage.DoorCode(err), err, 0)
		return
	}
	// The request's context ends when the client goes away (its
	// connection closes: curl killed, a dashboard closed, rebound sql's
	// Ctrl-C, a client's own timeout): the engine then stops the statement
	// (storage/chdb's Conn.Query), freeing the holder's engine at once.
	res, err := h.door.Run(r.Context(), req)
	if err != nil {
		code := storage.DoorCode(err)
		switch {
		case code == 0 && r.Context().Err() != nil:
			code = codeQueryWasCancelled
		case code == 0:
			code = codeUnknown
		}
		h.fail(w, r, queryID, code, err, 0)
		return
	}
	if err := checkRows(h.door.LimitsFor(req), res.Format, res.Body); err != nil {
		h.fail(w, r, queryID, storage.DoorCode(err), err, 0)
		return
	}
	h.answer(w, r, params, queryID, res, clientRevision)
}

// admit answers /ping and refuses other paths and requests without the
// credential; ok is true for a request to / that presents it, with its
// parameters and query id (the client's, or a new one).
func (h *handler) admit(w http.ResponseWriter, r *http.Request) (params url.Values, queryID string, ok bool) {
	switch r.URL.Path {
	case "/ping":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "GET /ping", http.StatusMethodNotAllowed)
			return nil, "", false
		}
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		_, _ = io.WriteString(w, "Ok.\n")
		return nil, "", false
	case "/":
	default:
		h.fail(w, r, "", codeBadArguments, fmt.Errorf("there is no handler %s (the served store answers / and /ping)", r.URL.Path), http.StatusNotFound)
		return nil, "", false
	}
	params = r.URL.Query()
	queryID = params.Get("query_id")
	if queryID == "" {
		queryID = newQueryID()
	}
	if !h.authenticated(r, params) {
		h.fail(w, r, queryID, codeAuthenticationFailed, errors.New(User+": Authentication failed: password is incorrect, or there is no user with such name (the served store's user is "+User+", its password the data dir's credential)"), 0)
		return nil, "", false
	}
	return params, queryID, true
}

// answer writes a statement's result as a server does: Native framed for
// the client's protocol revision, the X-ClickHouse-* headers, gzip when
// asked.
func (h *handler) answer(w http.ResponseWriter, r *http.Request, params url.Values, queryID string, res storage.DoorResult, clientRevision uint64) {
	body := res.Body
	if res.Format == "Native" && clientRevision > 0 {
		var err error
		body, err = frameNative(body, clientRevision)
		if err != nil {
			h.fail(w, r, queryID, codeUnknown, err, 0)
			return
		}
	}
	hd := w.Header()
	hd.Set("Content-Type", contentType(res.Format))
	hd.Set("X-ClickHouse-Query-Id", queryID)
	hd.Set("X-ClickHouse-Format", res.Format)
	hd.Set("X-ClickHouse-Timezone", h.timezone)
	hd.Set("X-ClickHouse-Server-Display-Name", "rebound")
	hd.Set("X-ClickHouse-Summary", summary(res, len(body)))
	if r.Method == http.MethodHead {
		return
	}
	if wantsGzip(r, params) {
		hd.Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(body)
		_ = zw.Close()
		return
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// request builds the door's request from the parameters and headers.
func (h *handler) request(r *http.Request, params map[string][]string, query string) (storage.DoorRequest, uint64, error) {
	req := storage.DoorRequest{SQL: query, Params: map[string]string{}, Settings: map[string]string{}}
	req.Format = first(params, "default_format")
	if f := r.Header.Get("X-ClickHouse-Format"); f != "" {
		req.Format = f
	}
	db := first(params, "database")
	if d := r.Header.Get("X-ClickHouse-Database"); d != "" {
		db = d
	}
	if db != "" && db != h.door.Database() && db != "default" {
		return req, 0, fmt.Errorf("%w: database %q (the served store is the database %s)", errUnknownDatabase, db, h.door.Database())
	}
	var rev uint64
	if v := first(params, "client_protocol_version"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return req, 0, fmt.Errorf("%w: client_protocol_version %q", errBadArgument, v)
		}
		rev = n
	}
	if v := first(params, "compress"); v == "1" {
		return req, 0, fmt.Errorf("%w: compress=1 (ClickHouse's own block compression) is not answered here; use enable_http_compression=1 (gzip) or none", errBadArgument)
	}
	for k, vs := range params {
		v := ""
		if len(vs) > 0 {
			v = vs[len(vs)-1]
		}
		switch {
		case strings.HasPrefix(k, "param_"):
			req.Params[strings.TrimPrefix(k, "param_")] = v
		case ignoredParams[k], k == "compress":
		case limitParams[k]:
			if err := clientLimit(&req.Limits, k, v); err != nil {
				return req, 0, err
			}
		case storage.OutputSetting(k, v):
			req.Settings[k] = v
		}
		// Any other setting is the door's to fix: its value holds
		// (readonly, the limits), as documented in docs/security.md.
	}
	return req, rev, nil
}

// limitParams are the settings of the door's limits a client may lower
// for its statement (rebound sql's --timeout, --max-memory, --max-rows and
// --max-result-bytes, which the server transport sends with every query;
// clickhouse-go also sends a context's deadline as max_execution_time). A
// value above the door's, or 0 (no limit, on a server), leaves the door's.
var limitParams = map[string]bool{"max_execution_time": true, "max_memory_usage": true, "max_result_rows": true, "max_result_bytes": true}

// clientLimit reads one of limitParams into l.
func clientLimit(l *storage.Limits, name, v string) error {
	if name == "max_execution_time" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs < 0 || math.IsNaN(secs) || math.IsInf(secs, 0) {
			return fmt.Errorf("%w: %s = %q (seconds)", errBadArgument, name, v)
		}
		l.MaxExecutionTime = time.Duration(min(secs, 1e9) * float64(time.Second))
		return nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s = %q (a count)", errBadArgument, name, v)
	}
	switch name {
	case "max_memory_usage":
		l.MaxMemoryBytes = n
	case "max_result_rows":
		l.MaxResultRows = n
	case "max_result_bytes":
		l.MaxResultBytes = n
	}
	return nil
}

var (
	errUnknownDatabase = errors.New("unknown database")
	errBadArgument     = errors.New("bad argument")
)

func first(params map[string][]string, k string) string {
	if vs := params[k]; len(vs) > 0 {
		return vs[len(vs)-1]
	}
	return ""
}

// authenticated checks the credential, sent as basic auth, as
// X-ClickHouse-User/X-ClickHouse-Key, or as user/password parameters.
func (h *handler) authenticated(r *http.Request, params map[string][]string) bool {
	user, pass, ok := r.BasicAuth()
	if !ok {
		user, pass = r.Header.Get("X-ClickHouse-User"), r.Header.Get("X-ClickHouse-Key")
	}
	if user == "" && pass == "" {
		user, pass = first(params, "user"), first(params, "password")
	}
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(User)) == 1
	passOK := subtle.ConstantTimeCompare([]byte(pass), []byte(h.secret)) == 1
	return userOK && passOK
}

func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = http.MaxBytesReader(nil, r.Body, maxBody)
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, fmt.Errorf("the body is not gzip: %w", err)
		}
		rd = io.LimitReader(zr, maxBody)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read the statement: %w", err)
	}
	if len(b) >= maxBody {
		return nil, fmt.Errorf("%w: the statement is more than %d bytes", storage.ErrStatement, storage.MaxStatementBytes)
	}
	return b, nil
}

func wantsGzip(r *http.Request, params map[string][]string) bool {
	if first(params, "enable_http_compression") != "1" {
		return false
	}
	for _, enc := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(strings.SplitN(enc, ";", 2)[0]) == "gzip" {
			return true
		}
	}
	return false
}

// fail answers an exception as a ClickHouse server does: the code in
// X-ClickHouse-Exception-Code, the text "Code: N. DB::Exception: ...
// (NAME)" in the body.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, queryID string, code int, err error, status int) {
	switch {
	case errors.Is(err, errUnknownDatabase):
		code = codeUnknownDatabase
	case errors.Is(err, errBadArgument):
		code = codeBadArguments
	case code == 0:
		code = codeUnknown
	}
	if status == 0 {
		status = httpStatus(code)
	}
	name := codeNames[code]
	if name == "" {
		name = "UNKNOWN_EXCEPTION"
	}
	if h.log != nil {
		h.log.Warn("served store: request failed", "code", code, "status", status, "query_id", queryID)
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/plain; charset=UTF-8")
	hd.Set("X-ClickHouse-Exception-Code", strconv.Itoa(code))
	if queryID != "" {
		hd.Set("X-ClickHouse-Query-Id", queryID)
	}
	w.WriteHeader(status)
	msg := strings.TrimSuffix(err.Error(), ".")
	_, _ = fmt.Fprintf(w, "Code: %d. DB::Exception: %s. (%s)\n", code, msg, name)
}

// summary is X-ClickHouse-Summary: what the statement read, as the engine
// counted it, and what was answered.
func summary(res storage.DoorResult, bodyBytes int) string {
	s := map[string]string{
		"read_rows":          strconv.FormatUint(res.Stats.RowsRead, 10),
		"read_bytes":         strconv.FormatUint(res.Stats.BytesRead, 10),
		"written_rows":       "0",
		"written_bytes":      "0",
		"total_rows_to_read": strconv.FormatUint(res.Stats.RowsRead, 10),
		"result_bytes":       strconv.Itoa(bodyBytes),
		"elapsed_ns":         strconv.FormatInt(res.Stats.Elapsed.Nanoseconds(), 10),
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func contentType(format string) string {
	switch {
	case strings.HasPrefix(format, "JSON"), format == "NDJSON":
		return "application/json; charset=UTF-8"
	case strings.HasPrefix(format, "TabSeparated"), strings.HasPrefix(format, "TSV"):
		return "text/tab-separated-values; charset=UTF-8"
	case strings.HasPrefix(format, "CSV"):
		return "text/csv; charset=UTF-8; header=absent"
	case format == "XML":
		return "application/xml; charset=UTF-8"
	case strings.HasPrefix(format, "Pretty"), format == "Vertical", format == "Markdown", format == "Values":
		return "text/plain; charset=UTF-8"
	}
	return "application/octet-stream"
}

func newQueryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// serverTimezone asks the engine its time zone (X-ClickHouse-Timezone).
func serverTimezone(ctx context.Context, door *storage.Door) string {
	res, err := door.Run(ctx, storage.DoorRequest{SQL: "SELECT timezone()", Format: "TabSeparatedRaw"})
	if err != nil {
		return "UTC"
	}
	if tz := strings.TrimSpace(string(bytes.TrimSpace(res.Body))); tz != "" {
		return tz
	}
	return "UTC"
}
