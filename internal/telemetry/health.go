package telemetry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Health is the worker's HTTP endpoint: /healthz (the process answers),
// /readyz (Ready returns nil) and, when Metrics is set, /metrics.
type Health struct {
	// Ready says whether the process can take work; its error is shown to
	// the prober, so it must not carry secrets.
	Ready   func(ctx context.Context) error
	Metrics http.Handler
}

// Handler routes the endpoints.
func (h Health) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if h.Ready != nil {
			if err := h.Ready(ctx); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	if h.Metrics != nil {
		mux.Handle("GET /metrics", h.Metrics)
	}
	return mux
}

// Serve listens on addr and serves h until Close. It returns once the
// listener is bound, so a bad address fails the command at once.
func Serve(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }() // returns ErrServerClosed after Close
	return s, nil
}

// Server is a running health endpoint.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Addr is the bound address (useful with port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops serving, letting requests in flight finish within ctx.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }
