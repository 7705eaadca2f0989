package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Listen opens a TCP listener inside the sandbox's network namespace, at
// addr as the sandbox sees it (e.g. 127.0.0.1:0). The worker accepts on
// it; the sandbox's processes connect to it as to any local port. It is
// closed by Stop.
func (s *Sandbox) Listen(addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	// A thread that entered another network namespace is never given back
	// to the Go scheduler: the goroutine ends locked, so the runtime
	// retires the thread with it.
	go func() {
		runtime.LockOSThread()
		ns, err := os.Open("/proc/" + strconv.Itoa(s.pid) + "/ns/net")
		if err != nil {
			ch <- result{nil, fmt.Errorf("sandbox: the sandbox's network namespace: %w", err)}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{nil, fmt.Errorf("sandbox: entering the sandbox's network namespace: %w", err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		ch <- result{ln, err}
	}()
	res := <-ch
	if res.err != nil {
		return nil, fmt.Errorf("sandbox: listen on %s inside the sandbox: %w", addr, res.err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		res.ln.Close()
		return nil, errors.New("sandbox: stopped")
	}
	s.listeners = append(s.listeners, res.ln)
	return res.ln, nil
}

// Forward serves inside (an address in the sandbox, as for Listen) by
// connecting each accepted connection to outside (host:port, dialled from
// the worker's network): the one way out of the sandbox, for the hosts an
// arm declares for its model provider. Bytes are copied as they are; TLS
// stays end to end.
func (s *Sandbox) Forward(inside, outside string) error {
	ln, err := s.Listen(inside)
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Stop
			}
			go s.pipe(c, outside)
		}
	}()
	return nil
}

func (s *Sandbox) pipe(in net.Conn, outside string) {
	if !s.track(in) {
		in.Close()
		return
	}
	defer s.untrack(in)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	out, err := (&net.Dialer{}).DialContext(ctx, "tcp", outside)
	cancel()
	if err != nil {
		return
	}
	if !s.track(out) {
		out.Close()
		return
	}
	defer s.untrack(out)
	var wg sync.WaitGroup
	wg.Add(2)
	copyHalf := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	go copyHalf(out, in)
	go copyHalf(in, out)
	wg.Wait()
}

func (s *Sandbox) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Sandbox) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// Route is one declared egress host: the address the sandbox connects to
// and the host:port the worker dials for it.
type Route struct {
	Inside  string
	Outside string
}

// Egress turns an arm's declared hosts (host:port) into routes and the
// /etc/hosts lines that make their names resolve inside the sandbox: a
// loopback address stays as it is, localhost is 127.0.0.1, and each other
// name or address gets a loopback address of its own (127.0.0.2, ...).
func Egress(entries []string) ([]Route, []string, error) {
	var routes []Route
	var hosts []string
	next := 2
	names := map[string]string{}
	for _, e := range entries {
		host, port, err := net.SplitHostPort(e)
		if err != nil {
			return nil, nil, fmt.Errorf("egress %q: %v (want host:port)", e, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, nil, fmt.Errorf("egress %q: port %q is not a number between 1 and 65535", e, port)
		}
		inside := host
		switch ip := net.ParseIP(host); {
		case host == "localhost":
			inside = "127.0.0.1"
		case ip != nil && ip.IsLoopback():
			inside = host
		case ip != nil:
			return nil, nil, fmt.Errorf("egress %q: only a host name or a loopback address can be routed into the sandbox; name the host (an /etc/hosts or DNS name the worker resolves)", e)
		default:
			if a, ok := names[host]; ok {
				inside = a
				break
			}
			if next > 254 {
				return nil, nil, errors.New("egress: more than 253 hosts")
			}
			inside = "127.0.0." + strconv.Itoa(next)
			next++
			names[host] = inside
			hosts = append(hosts, inside+" "+host)
		}
		routes = append(routes, Route{Inside: net.JoinHostPort(inside, port), Outside: e})
	}
	return routes, hosts, nil
}
