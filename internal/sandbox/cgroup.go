package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// probes numbers the probe cgroups of checkCgroups.
var probes atomic.Int64

// cgroupRoot is where the kernel's cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroup is one sandbox's cgroup: a directory per hierarchy (one on
// cgroup v2; memory, pids and cpu on v1), created beneath the worker's own
// cgroup so the worker's limits still hold over it.
type cgroup struct {
	dirs  []string // the sandbox's directories; dirs[0] lists its processes
	v2    bool
	limit Limits
}

// v1Controllers are the cgroup v1 hierarchies a sandbox joins.
var v1Controllers = []string{"memory", "pids", "cpu"}

func cgroupV2() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
}

// checkCgroups says whether the sandbox's cgroups can be made here.
func checkCgroups() error {
	parents, err := parentDirs()
	if err != nil {
		return err
	}
	for _, p := range parents {
		if err := syscall.Access(p, 2 /* W_OK */); err != nil {
			return fmt.Errorf("cannot create cgroups under %s (%v): per-trial memory, PID and CPU limits need a writable cgroup hierarchy", p, err)
		}
	}
	// The proof is a cgroup made, limited and removed.
	// Concurrent checks (trials starting together) each make their own.
	probe, err := newCgroup(fmt.Sprintf("rebound-probe-%d-%d", os.Getpid(), probes.Add(1)), Limits{}.withDefaults())
	if err != nil {
		return fmt.Errorf("per-trial memory, PID and CPU limits: %v", err)
	}
	probe.remove()
	return nil
}

// parentDirs are the directories a sandbox's cgroups are made in: on v2
// a rebound-sandbox directory at the hierarchy's root (the root is the
// only cgroup that may hold processes and delegate controllers at once),
// on v1 the worker's own cgroup in each hierarchy.
func parentDirs() ([]string, error) {
	if cgroupV2() {
		controllers, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
		if err != nil {
			return nil, fmt.Errorf("cgroup v2: %v", err)
		}
		for _, c := range []string{"memory", "pids", "cpu"} {
			if !strings.Contains(" "+strings.TrimSpace(string(controllers))+" ", " "+c+" ") {
				return nil, fmt.Errorf("cgroup v2 offers no %s controller (%s/cgroup.controllers)", c, cgroupRoot)
			}
		}
		return []string{cgroupRoot}, nil
	}
	own, err := ownCgroupsV1()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, c := range v1Controllers {
		rel, ok := own[c]
		if !ok {
			return nil, fmt.Errorf("no cgroup v1 %s hierarchy is mounted under %s", c, cgroupRoot)
		}
		dir := filepath.Join(cgroupRoot, c, rel)
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			// The path of /proc/self/cgroup is relative to the hierarchy's
			// root as mounted; a container may mount its own part at the top.
			dir = filepath.Join(cgroupRoot, c)
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// ownCgroupsV1 maps each v1 controller to the worker's cgroup path in it.
func ownCgroupsV1() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cannot read /proc/self/cgroup: %v", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	// A hierarchy that holds several controllers (cpu,cpuacct) is mounted
	// under each name as a symbolic link, so the name alone reaches it.
	return out, nil
}

// newCgroup makes the sandbox's cgroup and writes its limits.
func newCgroup(name string, l Limits) (cgroup, error) {
	parents, err := parentDirs()
	if err != nil {
		return cgroup{}, err
	}
	cg := cgroup{v2: cgroupV2(), limit: l}
	if cg.v2 {
		base := filepath.Join(parents[0], "rebound-sandbox")
		if err := os.MkdirAll(base, 0o755); err != nil {
			return cgroup{}, fmt.Errorf("sandbox: cgroup: %w", err)
		}
		// Delegate the controllers to rebound-sandbox and from it to each
		// sandbox's cgroup.
		for _, d := range []string{parents[0], base} {
			if err := write(d, "cgroup.subtree_control", "+memory +pids +cpu"); err != nil {
				return cgroup{}, fmt.Errorf("sandbox: cgroup v2: enabling memory, pids and cpu under %s: %w", d, err)
			}
		}
		parents = []string{base}
	}
	for _, p := range parents {
		d := filepath.Join(p, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			cg.remove()
			return cgroup{}, fmt.Errorf("sandbox: cgroup: %w", err)
		}
		cg.dirs = append(cg.dirs, d)
	}
	period := int64(100_000)
	quota := int64(l.CPUs * float64(period))
	var writes [][3]string
	if cg.v2 {
		d := cg.dirs[0]
		writes = [][3]string{
			{d, "memory.max", strconv.FormatInt(l.MemoryBytes, 10)},
			{d, "memory.swap.max", "0"},
			{d, "pids.max", strconv.Itoa(l.PIDs)},
			{d, "cpu.max", fmt.Sprintf("%d %d", quota, period)},
		}
	} else {
		writes = [][3]string{
			{cg.dirs[0], "memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10)},
			{cg.dirs[1], "pids.max", strconv.Itoa(l.PIDs)},
			{cg.dirs[2], "cpu.cfs_period_us", strconv.FormatInt(period, 10)},
			{cg.dirs[2], "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)},
		}
	}
	for _, w := range writes {
		if err := write(w[0], w[1], w[2]); err != nil {
			if w[1] == "memory.swap.max" && errors.Is(err, os.ErrNotExist) {
				continue // no swap accounting: nothing to bound
			}
			cg.remove()
			return cgroup{}, fmt.Errorf("sandbox: cgroup limit %s: %w", w[1], err)
		}
	}
	return cg, nil
}

func write(dir, file, value string) error {
	return os.WriteFile(filepath.Join(dir, file), []byte(value), 0)
}

// add moves a process into every directory of the cgroup.
func (cg cgroup) add(pid int) error {
	for _, d := range cg.dirs {
		if err := write(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("sandbox: cgroup: adding process %d to %s: %w", pid, d, err)
		}
	}
	return nil
}

// pids lists the processes in the cgroup.
func (cg cgroup) pids() []int {
	if len(cg.dirs) == 0 {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(cg.dirs[0], "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// signal sends sig to every process in the cgroup but skip.
func (cg cgroup) signal(sig syscall.Signal, skip int) {
	if cg.v2 && sig == syscall.SIGKILL && len(cg.dirs) > 0 {
		_ = write(cg.dirs[0], "cgroup.kill", "1")
	}
	for _, pid := range cg.pids() {
		if pid != skip {
			_ = syscall.Kill(pid, sig)
		}
	}
}

// remove deletes the cgroup's directories once they are empty: the kernel
// may take a moment to reap the last process.
func (cg cgroup) remove() {
	for _, d := range cg.dirs {
		for i := 0; i < 500; i++ {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			cg.signal(syscall.SIGKILL, 0)
			time.Sleep(2 * time.Millisecond)
		}
	}
}
