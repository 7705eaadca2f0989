package toolserver

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Guard wraps h with the DNS-rebinding protection the MCP specification
// asks of local servers, for MCP and plain HTTP alike: a request whose Host
// is not one of hosts (host:port, compared without regard to case; a Host
// without a port means port 80) is refused with 403, and so is a request
// carrying an Origin header whose host is not loopback (http or https on
// 127.0.0.1, localhost or [::1], any port). A request without an Origin
// header (every non-browser client) passes the Origin check. Start applies
// it with the listener's own address (see StartOption); the random path
// prefix stays the capability.
func Guard(h http.Handler, hosts []string) http.Handler {
	allowed := make([]string, 0, len(hosts))
	for _, hp := range hosts {
		allowed = append(allowed, normalHost(hp))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !slices.Contains(allowed, normalHost(req.Host)) {
			http.Error(w, fmt.Sprintf("Forbidden: Host %q is not this server's address", req.Host), http.StatusForbidden)
			return
		}
		if origin := req.Header.Values("Origin"); len(origin) > 0 && (len(origin) > 1 || !loopbackOrigin(origin[0])) {
			http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not loopback", strings.Join(origin, ", ")), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// normalHost is host:port in lower case, with port 80 when none is given;
// "" when hp is empty or not a host.
func normalHost(hp string) string {
	hp = strings.ToLower(strings.TrimSpace(hp))
	if hp == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		// No port (or a bare IPv6 literal in brackets).
		host, port = strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), "80"
		if strings.ContainsAny(host, "[]") {
			return ""
		}
	}
	if host == "" || port == "" {
		return ""
	}
	return net.JoinHostPort(host, port)
}

// loopbackOrigin reports whether an Origin header names a page served from
// this machine's loopback: http or https, host 127.0.0.1, localhost or
// [::1], any port. "null" (a sandboxed or file page) is not loopback.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || (u.Path != "" && u.Path != "/") {
		return false
	}
	switch strings.ToLower(u.Hostname()) {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}

// listenerHosts is the set of Host values that name ln's address: the
// address itself and, for a loopback address, localhost with its port.
func listenerHosts(addr net.Addr) ([]string, error) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("toolserver: listener address %s is not TCP", addr)
	}
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return nil, fmt.Errorf("toolserver: listener %s is not bound to one address (listen on 127.0.0.1)", addr)
	}
	hosts := []string{tcp.String()}
	if tcp.IP.IsLoopback() {
		hosts = append(hosts, net.JoinHostPort("localhost", fmt.Sprint(tcp.Port)))
	}
	return hosts, nil
}

// StartOption configures Start.
type StartOption func(*startOptions)

type startOptions struct {
	ln     net.Listener
	hosts  []string
	prefix string
}

// AtPrefix makes Start serve under prefix ("/" and at least 32 random hex
// digits) instead of a prefix of its own: for a caller that must hand the
// URLs to a process before the server starts (a sealed agent's
// environment is fixed when its sandbox is made).
func AtPrefix(prefix string) StartOption {
	return func(o *startOptions) { o.prefix = prefix }
}

// OnListener makes Start serve on ln (for example a listener opened inside
// a sandbox's network namespace, where the agent connects to
// 127.0.0.1:PORT) instead of a fresh listener on 127.0.0.1. The URLs name
// ln's address, and Host must be that address (or localhost:PORT when it
// is loopback), plus any given with AllowHosts. ln must be bound to one
// address, not 0.0.0.0; Running.Close closes it.
func OnListener(ln net.Listener) StartOption {
	return func(o *startOptions) { o.ln = ln }
}

// AllowHosts adds Host header values (host:port) the server accepts
// besides its listener's own address: the address an agent dials when a
// forwarder, not the listener itself, faces it.
func AllowHosts(hostports ...string) StartOption {
	return func(o *startOptions) { o.hosts = append(o.hosts, hostports...) }
}
