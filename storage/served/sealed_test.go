package served_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sandbox"
)

// A sealed agent (internal/sandbox: a network namespace of its own) cannot
// reach the served store, though it listens on the host's loopback, nor
// read where it listens: the data dir is not in its view.
func TestSealedAgentCannotReachTheServedStore(t *testing.T) {
	need(t)
	if err := sandbox.Check(); err != nil {
		if devstacktest.Required() {
			t.Fatalf("sandbox required: %v", err)
		}
		t.Skipf("no sandbox here: %v", err)
	}
	addr := fx.srv.Endpoint().Address
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	// From the host, the port answers.
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("the served store is not reachable from the host: %v", err)
	}
	c.Close()
	script := fmt.Sprintf(`exec bash -c 'if exec 3<>/dev/tcp/127.0.0.1/%s; then printf "GET /ping HTTP/1.0\r\n\r\n" >&3; cat <&3; echo reached; else echo unreachable; fi; cat %s/served.json 2>&1 || true'`, port, fx.dataDir)
	out := &devstacktest.Output{}
	s, err := sandbox.Start(sandbox.Spec{
		Command: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		Dir: "/tmp/work", Stdout: out, Stderr: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Exited():
	case <-time.After(60 * time.Second):
		t.Error("the sealed command did not end in 60 s")
	}
	s.Stop(time.Second)
	got := out.String()
	if !strings.Contains(got, "unreachable") || strings.Contains(got, "Ok.") {
		t.Fatalf("a sealed agent reached the served store:\n%s", got)
	}
	if strings.Contains(got, `"address"`) {
		t.Fatalf("a sealed agent read served.json:\n%s", got)
	}
}

// The served store listens on loopback only: the host's other addresses do
// not answer on its port (Serve also refuses a non-loopback --serve-listen:
// TestEndpointFile).
func TestBindsLoopbackOnly(t *testing.T) {
	need(t)
	host, port, err := net.SplitHostPort(fx.srv.Endpoint().Address)
	if err != nil {
		t.Fatal(err)
	}
	// On any host: the address it listens on is a loopback one.
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("the served store listens on %s, not a loopback address", fx.srv.Endpoint().Address)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		tried++
		addr := net.JoinHostPort(ipn.IP.String(), port)
		if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			c.Close()
			t.Errorf("the served store answers on %s, an address that is not loopback", addr)
		}
	}
	if tried == 0 {
		// Nothing else to dial: the listening address above is the check.
		t.Log("this host has no address but loopback")
	}
}
