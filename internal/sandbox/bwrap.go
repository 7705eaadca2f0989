package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Check says whether sandboxes can be set up here, and if not, what is
// missing: bubblewrap, the privileges to give a process another uid and
// namespaces, user namespaces in the kernel, a writable cgroup hierarchy
// with the memory, pids and cpu controllers (a probe cgroup is made and
// removed). It costs about a millisecond; Start checks again.
func Check() error {
	_, err := check()
	return err
}

// check returns bubblewrap's path (REBOUND_BWRAP, or bwrap on PATH).
func check() (string, error) {
	var missing []string
	name := os.Getenv("REBOUND_BWRAP")
	if name == "" {
		name = "bwrap"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		missing = append(missing, fmt.Sprintf("bubblewrap (%s) is not installed: apt-get install bubblewrap (make setup does it as root), or set REBOUND_BWRAP", name))
	}
	if err := checkCaps(); err != nil {
		missing = append(missing, err.Error())
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		missing = append(missing, "user namespaces are disabled (sysctl user.max_user_namespaces=0)")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		missing = append(missing, "unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone=0)")
	}
	if err := checkCgroups(); err != nil {
		missing = append(missing, err.Error())
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(missing, "; "))
	}
	return path, nil
}

// ErrUnavailable is the error of Check when a sandbox cannot be set up.
var ErrUnavailable = errors.New("the command arm's sandbox cannot be set up on this machine (set sandbox: none on the arm to run it unsealed, stored and reported as such)")

// checkCaps needs CAP_SYS_ADMIN (entering the sandbox's network namespace,
// cgroups), CAP_SETUID and CAP_SETGID (the sandbox's own uid), in the
// effective set.
func checkCaps() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("cannot read the worker's capabilities: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return fmt.Errorf("cannot read the worker's capabilities: %v", err)
		}
		var lack []string
		for _, c := range []struct {
			bit  uint
			name string
		}{{21, "CAP_SYS_ADMIN"}, {7, "CAP_SETUID"}, {6, "CAP_SETGID"}} {
			if caps&(1<<c.bit) == 0 {
				lack = append(lack, c.name)
			}
		}
		if len(lack) > 0 {
			return fmt.Errorf("the worker lacks %s: run it as root, or in a container with those capabilities (see docs: the Helm chart's securityContext)", strings.Join(lack, ", "))
		}
		return nil
	}
	return errors.New("cannot read the worker's capabilities: no CapEff in /proc/self/status")
}

// systemDirs are mounted read-only from the host when they exist (a
// symbolic link, as /bin -> usr/bin on a merged-/usr system, is recreated).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// systemEtc are the files of /etc a runtime needs (dynamic linker, TLS
// roots, name service, time zone); the rest of /etc stays out.
var systemEtc = []string{
	"/etc/alternatives", "/etc/ca-certificates", "/etc/ssl", "/etc/pki",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/nsswitch.conf", "/etc/host.conf", "/etc/gai.conf", "/etc/localtime", "/etc/timezone",
	"/etc/os-release", "/etc/protocols", "/etc/services", "/etc/mime.types",
}

// Descriptors bwrap is handed (cmd.ExtraFiles in Start).
const (
	infoFD  = 3
	blockFD = 4
)

// bwrapArgs builds bubblewrap's command line.
func bwrapArgs(spec Spec, staging string) ([]string, error) {
	dir := filepath.Clean(spec.Dir)
	limits := spec.Limits.withDefaults()
	args := []string{
		"--unshare-all", "--unshare-user", "--disable-userns", "--uid", "1000", "--gid", "1000",
		"--die-with-parent", "--new-session", "--hostname", "rebound-trial",
		"--info-fd", strconv.Itoa(infoFD), "--block-fd", strconv.Itoa(blockFD),
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
			args = append(args, "--symlink", target, d)
		default:
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, p := range systemEtc {
		args = append(args, "--ro-bind-try", p, p)
	}
	for _, f := range []string{"hosts", "passwd", "group", "resolv.conf"} {
		args = append(args, "--ro-bind", filepath.Join(staging, f), "/etc/"+f)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(limits.TmpBytes, 10), "--tmpfs", "/tmp",
		"--dir", dir)
	if spec.HostDir != "" {
		if !filepath.IsAbs(spec.HostDir) {
			return nil, fmt.Errorf("sandbox: host dir %q is not absolute", spec.HostDir)
		}
		args = append(args, "--bind", filepath.Clean(spec.HostDir), dir)
	}
	exe, err := resolveCommand(spec.Command[0], spec.Env)
	if err != nil {
		return nil, err
	}
	mounts := []string{filepath.Dir(exe)}
	for _, p := range spec.ReadOnly {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("sandbox: read-only path %q is not absolute", p)
		}
		mounts = append(mounts, filepath.Clean(p))
	}
	for _, m := range mounts {
		if underSystem(m) {
			continue
		}
		if err := othersCanRead(m); err != nil {
			return nil, err
		}
		args = append(args, "--ro-bind", m, m)
	}
	args = append(args, "--chdir", dir, "--")
	return append(args, spec.Command...), nil
}

// underSystem is whether p is already visible through a system directory.
func underSystem(p string) bool {
	for _, d := range systemDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// resolveCommand finds argv[0] as execvp inside the sandbox will, on the
// process's own PATH, and follows symbolic links so the directory mounted
// is the one holding the file.
func resolveCommand(name string, env []string) (string, error) {
	path := name
	if !strings.Contains(name, "/") {
		dirs := ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				dirs = v
			}
		}
		path = ""
		for _, d := range filepath.SplitList(dirs) {
			if c := filepath.Join(d, name); isExecutable(c) {
				path = c
				break
			}
		}
		if path == "" {
			return "", fmt.Errorf("sandbox: command %q is not on the process's PATH", name)
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("sandbox: command %q: %w", name, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("sandbox: command %q: %w", name, err)
	}
	return real, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// othersCanRead checks that the sandbox's uid, which owns nothing on the
// host, can reach p: every directory on the way searchable by others, p
// itself readable by them.
// Readable reports whether a sealed process could read p (a file, or a
// directory it can list and enter), as a read-only mount needs: nil when
// others may read p and enter every directory above it.
func Readable(p string) error { return othersCanRead(p) }

func othersCanRead(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("sandbox: read-only path %s: %w", p, err)
	}
	need := os.FileMode(0o004)
	if fi.IsDir() {
		need = 0o005
	}
	if fi.Mode().Perm()&need != need {
		return fmt.Errorf("sandbox: %s is not readable by other users (mode %v), and the sealed agent runs under a uid of its own: chmod o+rX it, or install the agent elsewhere", p, fi.Mode().Perm())
	}
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("sandbox: read-only path %s: %w", p, err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("sandbox: %s is under %s, which other users cannot enter (mode %v), and the sealed agent runs under a uid of its own: chmod o+x %s, or install the agent elsewhere", p, d, fi.Mode().Perm(), d)
		}
		if d == "/" {
			return nil
		}
	}
}

// stage writes the sandbox's own /etc/hosts, /etc/passwd, /etc/group and
// an empty /etc/resolv.conf (there is no DNS inside) into a directory the
// sandbox mounts read-only.
func stage(hosts []string) (string, error) {
	dir, err := os.MkdirTemp("", "rebound-sandbox-")
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("sandbox: %w", err)
	}
	files := map[string]string{
		"hosts":       "127.0.0.1 localhost rebound-trial\n::1 localhost\n" + strings.Join(hosts, "\n") + "\n",
		"passwd":      "root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":       "root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n",
		"resolv.conf": "",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("sandbox: %w", err)
		}
	}
	return dir, nil
}
