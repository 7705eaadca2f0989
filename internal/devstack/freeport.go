package devstack

import (
	"fmt"
	"net"
)

// freePort asks the kernel for a free TCP port on ip. Like the Temporal dev
// server's own helper, it then connects to the port and closes the accepted
// side first, which leaves the port in TIME_WAIT: Linux does not hand it out
// again for bind(:0) for a while, yet a listener with SO_REUSEADDR (the Go
// default) can still bind it explicitly. This narrows, but cannot close, the
// race between choosing a port and the server binding it; StartTemporal
// retries when it loses.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	addr := l.Addr().(*net.TCPAddr)
	c, err := net.DialTCP("tcp", nil, addr)
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	s.Close() // server side first: TIME_WAIT stays on this port
	return addr.Port, nil
}
