// Package reviewui is rebound's review UI (rebound ui): a local web app
// over the store that shows sweeps, a sweep's report, the comparison of
// two arms (drawn by results/report, the code behind rebound compare), one
// trial, two arms on one case side by side, filtered lists of trials, the
// judge's review queue and its agreement with people, and takes human
// verdicts with a note (the one thing it writes, through Writer).
//
// It is plain html/template with its style sheet and one small script
// embedded (go:embed): no CDN, no build step, works offline. Every value
// from the store is hostile input (claims, tool arguments and agent output
// are the agent's) and reaches the page only through html/template's
// contextual escaping or the report's own escaping; the Content Security
// Policy allows scripts from the server itself only. Access needs the
// per-start token (Handler): the first URL carries it, a cookie the rest.
//
// Like every results package it never imports storage: it reads through
// Source and writes through Writer, which storage.Store implements.
package reviewui

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"rebound/results/record"
	"rebound/results/report"
)

// Source is what the UI reads; storage.Store implements it. An unknown
// sweep or trial is record.ErrNotFound.
type Source interface {
	Sweeps(ctx context.Context, limit int) ([]record.Sweep, error)
	Sweep(ctx context.Context, id string) (record.Sweep, error)
	CountTrials(ctx context.Context, sweepID string) (uint64, error)
	ReportTotals(ctx context.Context, sweepID, noFault string) (record.ReportTotals, error)
	CompareTotals(ctx context.Context, a, b record.CompareSide, withClasses bool, noFault string) (record.CompareTotals, error)
	EachTrial(ctx context.Context, sweepID string, sel record.TrialSelect, fn func(record.Trial) error) error
	Trial(ctx context.Context, trialID string) (record.Trial, []record.ToolCall, error)
	Judgements(ctx context.Context, sweepID string) ([]record.Judgement, error)
	ReviewQueue(ctx context.Context, sweepID string) ([]record.ReviewItem, error)
	HumanReviews(ctx context.Context, sweepID string) ([]record.Review, error)

	// The reads of one page, each one statement over a range of the
	// primary key: the UI never walks a sweep's trials (see
	// storage.ReviewReads for what each returns).
	ListTrials(ctx context.Context, sweepID string, f record.TrialFilter, offset, limit uint64) (record.TrialPage, error)
	Regressions(ctx context.Context, base, cand record.CompareSide, metric string, offset, limit uint64) (record.RegressionPage, error)
	FindTrial(ctx context.Context, sweepID, arm, scenario, variant string, seed uint64) (string, error)
	TrialJudgement(ctx context.Context, sweepID, trialID string) (record.Judgement, bool, error)
	TrialReviews(ctx context.Context, sweepID, trialID string) ([]record.Review, error)
	TrialReviewHistory(ctx context.Context, sweepID, trialID string) ([]record.Review, error)
	SweepVersion(ctx context.Context, sweepID string) (string, error)
}

// Writer stores a human verdict; storage.Store implements it. It is the
// only write the UI makes.
type Writer interface {
	PutReview(ctx context.Context, r record.Review) error
}

// Options configure a Server.
type Options struct {
	// Token is the per-start secret every request must carry (at least
	// 16 characters).
	Token string
	// Writer stores human verdicts; nil makes the UI read-only (the review
	// forms say why: ReadOnlyReason).
	Writer         Writer
	ReadOnlyReason string
	// Log receives one line per failed request (nil: discarded).
	Log *slog.Logger
}

// Server serves the UI.
type Server struct {
	src   Source
	opts  Options
	pages map[string]*template.Template
	mux   *http.ServeMux
	// The reports and comparisons computed, kept while their sweeps'
	// stored versions hold (reads.go).
	summaries   *versioned[string, report.Summary]
	comparisons *versioned[report.CompareRequest, report.Comparison]
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// CookieName is the cookie that carries the token after the first URL.
const CookieName = "rebound_ui_token"

// contentSecurityPolicy allows nothing from elsewhere: scripts and style
// sheets from this server only (the comparison's inline <style> and SVG
// attributes need 'unsafe-inline' for styles; no script is inline), forms
// posted here only, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'; connect-src 'self'"

// New builds the UI over src.
func New(src Source, opts Options) (*Server, error) {
	if len(opts.Token) < 16 {
		return nil, errors.New("reviewui: the token must be at least 16 characters")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{src: src, opts: opts, pages: map[string]*template.Template{}, mux: http.NewServeMux(),
		summaries: newVersioned[string, report.Summary](16), comparisons: newVersioned[report.CompareRequest, report.Comparison](16)}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == "templates/layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("reviewui: %s: %w", n, err)
		}
		s.pages[strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")] = t
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.sweepsPage)
	s.mux.HandleFunc("GET /sweeps/{sweep}", s.sweepPage)
	s.mux.HandleFunc("GET /sweeps/{sweep}/trials", s.trialsPage)
	s.mux.HandleFunc("GET /sweeps/{sweep}/compare", s.comparePage)
	s.mux.HandleFunc("GET /sweeps/{sweep}/regressions", s.regressionsPage)
	s.mux.HandleFunc("GET /sweeps/{sweep}/case", s.casePage)
	s.mux.HandleFunc("GET /sweeps/{sweep}/queue", s.queuePage)
	s.mux.HandleFunc("GET /sweeps/{sweep}/agreement", s.agreementPage)
	s.mux.HandleFunc("GET /trials/{trial}", s.trialPage)
	s.mux.HandleFunc("POST /trials/{trial}/review", s.postReview)
	return s, nil
}

// ServeHTTP checks the host, the token and (for a POST) the origin, sets
// the security headers and serves the page.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make the browser send "Origin: null" on our own posts
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !loopbackHost(r.Host) {
		// A page elsewhere that resolves its own name to 127.0.0.1 (DNS
		// rebinding) reaches this server under that name: refused.
		http.Error(w, "rebound ui answers on a loopback address only", http.StatusMisdirectedRequest)
		return
	}
	if tok := r.URL.Query().Get("token"); tok != "" {
		if !s.tokenOK(tok) {
			http.Error(w, "wrong token: use the URL rebound ui printed", http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(CookieName)
	if err != nil || !s.tokenOK(c.Value) {
		http.Error(w, "this page needs the token: open the URL rebound ui printed", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.opts.Token)) == 1
}

// loopbackHost reports whether a Host header names a loopback address or
// localhost.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// page is what every template receives.
type page struct {
	Title string
	// Crumbs lead back (sweeps, the sweep).
	Crumbs []crumb
	Data   any
	// Writable: review forms are enabled; ReadOnly says why not.
	Writable bool
	ReadOnly string
}

type crumb struct{ Label, URL string }

func (s *Server) render(w http.ResponseWriter, r *http.Request, name, title string, crumbs []crumb, data any) {
	t, ok := s.pages[name]
	if !ok {
		s.fail(w, r, fmt.Errorf("reviewui: no template %q", name))
		return
	}
	var b strings.Builder
	p := page{Title: title, Crumbs: crumbs, Data: data, Writable: s.opts.Writer != nil, ReadOnly: s.opts.ReadOnlyReason}
	if err := t.Execute(&b, p); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// fail answers an error: 404 for an unknown sweep or trial, 400 for a bad
// request, 500 otherwise. The message is plain text (never HTML).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	var bad badRequest
	switch {
	case errors.Is(err, record.ErrNotFound):
		code = http.StatusNotFound
	case errors.As(err, &bad):
		code = http.StatusBadRequest
	}
	s.opts.Log.Warn("rebound ui", "path", r.URL.Path, "status", code, "err", err)
	http.Error(w, err.Error(), code)
}

type badRequest struct{ msg string }

func (b badRequest) Error() string { return b.msg }

func badf(format string, args ...any) error { return badRequest{fmt.Sprintf(format, args...)} }

// link builds a path with query parameters (escaped; empty ones left out).
func link(path string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

func sweepPath(id string) string { return "/sweeps/" + url.PathEscape(id) }
func trialPath(id string) string { return "/trials/" + url.PathEscape(id) }
