package toolserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// sessionHeader and versionHeader are streamable HTTP's headers.
const (
	sessionHeader = "Mcp-Session-Id"
	versionHeader = "Mcp-Protocol-Version"
	// statelessVersion is the first protocol version whose requests need
	// no session (they carry their own protocol metadata).
	statelessVersion = "2026-07-28"
)

// requireSession answers a POST without a session that is a request other
// than initialize (and not of the stateless protocol) with a standard
// JSON-RPC error, Invalid Request (-32600), HTTP 400: the SDK would open
// a session for it and answer error code 0 inside an event stream.
func requireSession(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get(sessionHeader) != "" || r.Header.Get(versionHeader) >= statelessVersion {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			h.ServeHTTP(w, r)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 || string(req.ID) == "null" ||
			req.Method == "initialize" || req.Method == "ping" || req.Params.Meta["io.modelcontextprotocol/protocolVersion"] != nil {
			h.ServeHTTP(w, r) // a batch, a notification, initialize: the SDK's
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{
			"code": -32600, "message": "Invalid Request: no session: send initialize first, then the " + sessionHeader + " header it returns with every request"}})
	})
}
