package sandbox_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rebound/internal/devstack/devstacktest"
	"rebound/internal/sandbox"
)

// need skips where a sandbox cannot be set up, unless integration tests
// are required (make test sets REBOUND_REQUIRE_INTEGRATION, and its setup
// installs bubblewrap), where that is a failure.
func need(t *testing.T) {
	t.Helper()
	if err := sandbox.Check(); err != nil {
		if os.Getenv("REBOUND_REQUIRE_INTEGRATION") != "" {
			t.Fatalf("sandbox required: %v", err)
		}
		t.Skipf("no sandbox here: %v", err)
	}
}

// run runs a shell script sealed and returns its output and status.
func run(t *testing.T, script string, limits sandbox.Limits, before func(*sandbox.Sandbox)) (string, sandbox.Status) {
	t.Helper()
	out := &devstacktest.Output{}
	s, err := sandbox.Start(sandbox.Spec{
		Command: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		Dir: "/tmp/work", Limits: limits, Stdout: out, Stderr: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(s)
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
	return out.String(), s.Status()
}

func TestSealedIdentityAndView(t *testing.T) {
	need(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("planted"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, st := run(t, `id -u; pwd; ls /proc | grep -c '^[0-9]'; cat `+secret+` 2>&1; echo x > /usr/x 2>&1; echo ok > here && cat here; ls /etc | tr '\n' ' '`, sandbox.Limits{}, nil)
	if st.ExitCode != 0 {
		t.Fatalf("status %+v, output:\n%s", st, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "1000" || lines[1] != "/tmp/work" {
		t.Errorf("uid and cwd %q %q, want 1000 and /tmp/work", lines[0], lines[1])
	}
	if lines[2] != "3" && lines[2] != "4" { // bwrap's init, sh, and the pipeline's processes
		t.Errorf("%s processes visible, want only the sandbox's own", lines[2])
	}
	if strings.Contains(out, "planted") {
		t.Errorf("a host file outside the mounts was readable:\n%s", out)
	}
	if !strings.Contains(out, "Read-only file system") {
		t.Errorf("/usr was writable:\n%s", out)
	}
	if !strings.Contains(out, "\nok\n") {
		t.Errorf("the working directory was not writable:\n%s", out)
	}
	for _, leaked := range []string{"shadow", "gshadow", "machine-id", "hostname "} {
		if strings.Contains(out, " "+leaked) {
			t.Errorf("/etc shows %s:\n%s", leaked, out)
		}
	}
}

func TestSealedNetworkSeesOnlyItsListeners(t *testing.T) {
	need(t)
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	reached := make(chan struct{}, 1)
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			reached <- struct{}{}
			c.Close()
		}
	}()
	hostPort := host.Addr().(*net.TCPAddr).Port
	got := make(chan string, 1)
	const insidePort = 40123
	script := fmt.Sprintf(`exec bash -c 'if exec 3<>/dev/tcp/127.0.0.1/%d; then echo host-reached; fi; echo hello >/dev/tcp/127.0.0.1/%d && echo sent'`, hostPort, insidePort)
	out, _ := run(t, script, sandbox.Limits{}, func(s *sandbox.Sandbox) {
		inside, err := s.Listen(fmt.Sprintf("127.0.0.1:%d", insidePort))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := inside.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			got <- line
			c.Close()
		}()
	})
	if strings.Contains(out, "host-reached") || !strings.Contains(out, "sent") {
		t.Errorf("want the host listener unreachable and the sandbox's own reachable:\n%s", out)
	}
	select {
	case <-reached:
		t.Error("the host listener saw a connection from the sandbox")
	default:
	}
	select {
	case line := <-got:
		if line != "hello\n" {
			t.Errorf("the listener inside read %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Error("the listener inside the sandbox got nothing")
	}
}

// A forwarded route reaches the declared host and nothing else: the name
// resolves inside through the sandbox's own /etc/hosts.
func TestSealedEgressReachesOnlyDeclaredHosts(t *testing.T) {
	need(t)
	declared, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer declared.Close()
	go func() {
		for {
			c, err := declared.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("provider\n"))
			c.Close()
		}
	}()
	routes, hosts, err := sandbox.Egress([]string{declared.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	port := declared.Addr().(*net.TCPAddr).Port
	out := &devstacktest.Output{}
	s, err := sandbox.Start(sandbox.Spec{
		Command: []string{"/bin/bash", "-c", fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && head -1 <&3; exec 4<>/dev/tcp/127.0.0.1/%d || echo other-port-closed`, port, port+1)},
		Env:     []string{"PATH=/usr/bin:/bin"}, Dir: "/tmp/w", Hosts: hosts, Stdout: out, Stderr: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if err := s.Forward(r.Inside, r.Outside); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	<-s.Exited()
	s.Stop(time.Second)
	if !strings.Contains(out.String(), "provider") || !strings.Contains(out.String(), "other-port-closed") {
		t.Errorf("want the declared host reached and no other port:\n%s", out.String())
	}
}

func TestEgressRoutes(t *testing.T) {
	routes, hosts, err := sandbox.Egress([]string{"127.0.0.1:8080", "localhost:9000", "api.example.com:443", "api.example.com:80", "other.example:443"})
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.Route{
		{Inside: "127.0.0.1:8080", Outside: "127.0.0.1:8080"},
		{Inside: "127.0.0.1:9000", Outside: "localhost:9000"},
		{Inside: "127.0.0.2:443", Outside: "api.example.com:443"},
		{Inside: "127.0.0.2:80", Outside: "api.example.com:80"},
		{Inside: "127.0.0.3:443", Outside: "other.example:443"},
	}
	if fmt.Sprint(routes) != fmt.Sprint(want) {
		t.Errorf("routes %v, want %v", routes, want)
	}
	if fmt.Sprint(hosts) != "[127.0.0.2 api.example.com 127.0.0.3 other.example]" {
		t.Errorf("hosts %v", hosts)
	}
	for _, bad := range []string{"10.0.0.5:443", "host", "host:0", "host:http"} {
		if _, _, err := sandbox.Egress([]string{bad}); err == nil {
			t.Errorf("egress %q accepted", bad)
		}
	}
}

// Every descendant dies with the sandbox, also one that left the process
// group and the session (double fork + setsid).
func TestSealedDescendantsDieWithTheSandbox(t *testing.T) {
	need(t)
	var uid int
	out, _ := run(t, `setsid sh -c 'sleep 300 & sleep 300' </dev/null >/dev/null 2>&1 & echo started`, sandbox.Limits{}, func(s *sandbox.Sandbox) { uid = s.UID() })
	if !strings.Contains(out, "started") {
		t.Fatalf("output %q", out)
	}
	// A killed process can stay a zombie for a moment; none may stay alive.
	deadline := time.Now().Add(5 * time.Second)
	for processesOf(t, uid) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := processesOf(t, uid); n != 0 {
		t.Errorf("%d processes of the sandbox's uid %d outlived it", n, uid)
	}
}

// processesOf counts the machine's processes running under uid.
func processesOf(t *testing.T, uid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		var fi os.FileInfo
		if fi, err = os.Stat("/proc/" + e.Name()); err != nil || e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
			n++
		}
	}
	return n
}

func TestSealedLimits(t *testing.T) {
	need(t)
	t.Run("memory", func(t *testing.T) {
		out, st := run(t, `x=$(head -c 400000000 /dev/zero | tr '\0' a); echo survived ${#x}`, sandbox.Limits{MemoryBytes: 64 << 20}, nil)
		if strings.Contains(out, "survived 400000000") || st.ExitCode == 0 {
			t.Errorf("a 400 MB allocation under a 64 MiB limit survived: %+v %q", st, out)
		}
	})
	t.Run("pids", func(t *testing.T) {
		s, err := sandbox.Start(sandbox.Spec{
			Command: []string{"/bin/sh", "-c", `(for i in $(seq 1 64); do sleep 5 & done) 2>/dev/null; exec sleep 5`}, Env: []string{"PATH=/usr/bin:/bin"},
			Dir: "/tmp/work", Limits: sandbox.Limits{PIDs: 16}, Stdout: &devstacktest.Output{}, Stderr: &devstacktest.Output{},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop(time.Second)
		if err := s.Release(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		// bwrap's own outer process runs under the uid too, outside the cgroup.
		if n := processesOf(t, s.UID()); n < 8 || n > 16+1 {
			t.Errorf("%d processes ran under a limit of 16", n)
		}
	})
	t.Run("tmpfs", func(t *testing.T) {
		out, _ := run(t, `head -c 50000000 /dev/zero > big; wc -c < big`, sandbox.Limits{TmpBytes: 8 << 20}, nil)
		var n int
		fmt.Sscan(strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]), &n)
		if !strings.Contains(out, "No space left") || n == 0 || n > 8<<20 {
			t.Errorf("a 50 MB file in an 8 MiB working directory: %d bytes written:\n%s", n, out)
		}
	})
}

// Trials start together: checks and sandboxes made at once must not
// collide on their cgroups.
func TestConcurrentChecksAndSandboxes(t *testing.T) {
	need(t)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sandbox.Check(); err != nil {
				errs <- err
				return
			}
			s, err := sandbox.Start(sandbox.Spec{Command: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/tmp/w", Stdout: &devstacktest.Output{}, Stderr: &devstacktest.Output{}})
			if err != nil {
				errs <- err
				return
			}
			_ = s.Release()
			<-s.Exited()
			s.Stop(time.Second)
			if st := s.Status(); st.ExitCode != 0 {
				errs <- fmt.Errorf("status %+v", st)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
