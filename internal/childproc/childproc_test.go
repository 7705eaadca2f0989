package childproc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The helper modes: the test binary run again as a child (CHILDPROC_HELPER).
func TestMain(m *testing.M) {
	switch os.Getenv("CHILDPROC_HELPER") {
	case "pdeathsig": // print the parent-death signal the kernel holds for this process
		var sig int32
		if _, _, errno := syscall.Syscall(syscall.SYS_PRCTL, syscall.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0); errno != 0 {
			fmt.Println("error", errno)
			os.Exit(1)
		}
		fmt.Println(sig)
		os.Exit(0)
	case "parent": // start a long child with Start, print its pid, wait to be killed
		p, err := Start(exec.Command("sleep", "60"))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(p.Pid)
		<-p.Done()
		os.Exit(0)
	case "plainparent": // the same without Start: the control
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		_ = cmd.Wait()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helper(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CHILDPROC_HELPER="+mode)
	return cmd
}

func firstLine(t *testing.T, cmd *exec.Cmd, start func() error) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	return strings.TrimSpace(line)
}

func TestTheKernelHoldsTheParentDeathSignal(t *testing.T) {
	cmd := helper("pdeathsig")
	var p *Process
	line := firstLine(t, cmd, func() (err error) { p, err = Start(cmd); return err })
	<-p.Done()
	if line != strconv.Itoa(int(syscall.SIGKILL)) {
		t.Fatalf("the child's parent-death signal is %q, want %d (SIGKILL)", line, syscall.SIGKILL)
	}
}

func TestTheChildDiesWithItsParent(t *testing.T) {
	if pid := orphan(t, "parent"); !gone(pid, 10*time.Second) {
		t.Fatalf("the child %d outlived its parent by 10 s", pid)
	}
	// The control: a child started without Start outlives its parent.
	if pid := orphan(t, "plainparent"); gone(pid, 300*time.Millisecond) {
		t.Fatalf("the control child %d died with its parent: the test cannot tell", pid)
	}
}

// orphan runs a helper parent that starts a long child, kills the parent
// with SIGKILL (no chance to clean up), and returns the child's pid.
func orphan(t *testing.T, mode string) int {
	t.Helper()
	parent := helper(mode)
	line := firstLine(t, parent, parent.Start)
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("helper said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	return pid
}

// gone waits up to d for pid to stop running.
func gone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// alive reports whether pid runs (a zombie waiting to be reaped does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestStartKeepsTheOtherAttributesAndSetsItsOwnGroup(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), NoSetGroups: true}}
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.SignalGroup(syscall.SIGKILL); <-p.Done() }()
	if a := cmd.SysProcAttr; a.Credential == nil || !a.Setpgid || a.Pdeathsig != syscall.SIGKILL {
		t.Errorf("SysProcAttr = %+v, want the Credential kept, Setpgid and Pdeathsig SIGKILL", a)
	}
	if pgid, err := syscall.Getpgid(p.Pid); err != nil || pgid != p.Pid {
		t.Errorf("the child's group is %d (%v), want its own, %d", pgid, err, p.Pid)
	}
}

func TestDoneReportsTheExit(t *testing.T) {
	p, err := Start(exec.Command("sh", "-c", "exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done was not closed after the child exited")
	}
	if p.State().ExitCode() != 3 || p.Err() == nil {
		t.Errorf("exit %d, err %v; want 3 and an exit error", p.State().ExitCode(), p.Err())
	}
}

func TestSignalGroupReachesTheChildsChildren(t *testing.T) {
	p, err := Start(exec.Command("sh", "-c", "sleep 30 & wait"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the shell start its child
	if err := p.SignalGroup(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the group survived SIGKILL")
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(-p.Pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("a member of the child's group is still alive")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartFailsForAMissingProgram(t *testing.T) {
	if _, err := Start(exec.Command("/nonexistent/program")); err == nil {
		t.Fatal("Start of a missing program succeeded")
	}
}
