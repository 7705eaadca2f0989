package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"rebound/core/harness"
	"rebound/internal/childproc"
	"rebound/internal/sandbox"
)

// TrialDirToken is replaced, in a stdio upstream's command and environment,
// by the trial's own directory.
const TrialDirToken = "{trial_dir}"

// sealedTrialDir is the trial's directory inside a sealed upstream's
// sandbox (on its tmpfs, gone with it).
const sealedTrialDir = "/tmp/trial"

// maxStderr bounds what is kept of an upstream's stderr, for errors.
const maxStderr = 16 << 10

// Open starts (or, for a URL, resets and reaches) the upstream, lists its
// tools and returns the trial's world. The context bounds the start.
func Open(ctx context.Context, cfg Config) (*World, error) {
	start := cfg.StartTimeout
	if start <= 0 {
		start = DefaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, start)
	defer cancel()
	w := &World{cfg: cfg, committed: map[string]bool{}}
	listed, err := w.connect(ctx)
	if err != nil {
		return nil, err
	}
	tools, err := catalog(listed, cfg.Tools)
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("upstream: %w", err)
	}
	w.tools = tools
	w.byName = make(map[string]harness.Tool, len(tools))
	for _, t := range tools {
		w.byName[t.Name] = t
	}
	for i, c := range cfg.Setup {
		if _, ok := w.byName[c.Tool]; !ok {
			_ = w.Close()
			return nil, fmt.Errorf("upstream: setup[%d]: the upstream has no tool %s", i, c.Tool)
		}
		if _, terr := w.call(c.Tool, c.Args, false); terr != nil {
			_ = w.Close()
			return nil, fmt.Errorf("upstream: setup[%d] %s: %s", i, c.Tool, terr.Error())
		}
		w.mu.Lock()
		w.log[len(w.log)-1].Setup = true
		w.mu.Unlock()
	}
	for _, p := range cfg.Probes {
		t, ok := w.byName[p.Tool]
		if !ok {
			_ = w.Close()
			return nil, fmt.Errorf("upstream: probe %s: the upstream has no tool %s", p.Name, p.Tool)
		}
		if t.Effect != harness.EffectRead {
			_ = w.Close()
			return nil, fmt.Errorf("upstream: probe %s: %s is not a read (probes must not change the upstream)", p.Name, p.Tool)
		}
	}
	return w, nil
}

// connect reaches the upstream and lists its tools: a process of the
// pool, emptied, when the upstream is reused; else a new process, or the
// shared URL (reset, and held by this trial unless it isolates trials).
func (w *World) connect(ctx context.Context) ([]*mcp.Tool, error) {
	cfg := w.cfg
	var transport mcp.Transport
	var stderr *boundedBuffer
	switch {
	case len(cfg.Command) > 0 && cfg.URL != "":
		return nil, errors.New("upstream: a command or a url, not both")
	case len(cfg.Command) > 0 && cfg.Reuse:
		if p := takeIdle(poolKey(cfg)); p != nil {
			if err := emptyDir(p.dir); err != nil {
				p.stop()
				return nil, fmt.Errorf("upstream: empty the reused trial dir: %w", err)
			}
			w.session, w.stop, w.pooled = p.session, p.stop, p
			return p.tools, nil
		}
		pr, err := startStdio(cfg)
		if err != nil {
			return nil, err
		}
		transport, w.stop, stderr = pr.transport, pr.stop, pr.stderr
		w.pooled = &pooled{stop: pr.stop, dir: pr.dir, key: poolKey(cfg)}
	case len(cfg.Command) > 0:
		pr, err := startStdio(cfg)
		if err != nil {
			return nil, err
		}
		transport, w.stop, stderr = pr.transport, pr.stop, pr.stderr
	case cfg.URL != "":
		if !cfg.Isolated {
			if err := lockURL(ctx, cfg.URL); err != nil {
				return nil, err
			}
			w.unlock = func() { unlockURL(cfg.URL) }
		}
		if len(cfg.Reset) > 0 {
			if err := runReset(ctx, cfg); err != nil {
				_ = w.Close()
				return nil, err
			}
		}
		transport = &mcp.StreamableClientTransport{Endpoint: cfg.URL, MaxRetries: -1}
	default:
		return nil, errors.New("upstream: no command and no url")
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "rebound", Version: "1"}, nil)
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		w.pooled = nil
		_ = w.Close()
		return nil, fmt.Errorf("upstream: connect: %w%s", err, stderrNote(stderr))
	}
	w.session = session
	var listed []*mcp.Tool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			w.pooled = nil
			_ = w.Close()
			return nil, fmt.Errorf("upstream: tools/list: %w%s", err, stderrNote(stderr))
		}
		listed = append(listed, t)
		if len(listed) > 10_000 {
			w.pooled = nil
			_ = w.Close()
			return nil, errors.New("upstream: tools/list: more than 10,000 tools")
		}
	}
	if w.pooled != nil {
		w.pooled.session, w.pooled.tools = session, listed
	}
	return listed, nil
}

// started is a started stdio upstream.
type started struct {
	transport mcp.Transport
	stop      func() error
	stderr    *boundedBuffer
	dir       string // the trial dir on the host ("" when it lives on the sandbox's tmpfs)
}

// startStdio starts the command, sealed unless cfg.Unsealed, with the
// protocol on its stdin and stdout.
func startStdio(cfg Config) (*started, error) {
	argv := resolveArgv(cfg.Command, cfg.Dir)
	stderr := &boundedBuffer{max: maxStderr}
	// Real pipes: when the upstream exits, its end closes and the session
	// reads EOF at once (and a write gets EPIPE) instead of hanging.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("upstream: %w", err)
	}
	// After the start, only the upstream holds its ends.
	closeChildEnds := func() { _ = inR.Close(); _ = outW.Close() }
	if cfg.Unsealed {
		dir, err := os.MkdirTemp("", "rebound-upstream-")
		if err != nil {
			return nil, fmt.Errorf("upstream: trial dir: %w", err)
		}
		for i := range argv {
			argv[i] = strings.ReplaceAll(argv[i], TrialDirToken, dir)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), envList(cfg.Env, dir)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
		cmd.WaitDelay = 2 * time.Second
		// Its own process group, killed by the kernel if the worker dies
		// (childproc forks from a locked thread, as the signal needs).
		proc, err := childproc.Start(cmd)
		closeChildEnds()
		if err != nil {
			_ = os.RemoveAll(dir)
			_ = inW.Close()
			_ = outR.Close()
			return nil, fmt.Errorf("upstream: start %s: %w", argv[0], err)
		}
		var once sync.Once
		stop := func() error {
			once.Do(func() {
				_ = inW.Close()
				select {
				case <-proc.Done():
				case <-time.After(2 * time.Second):
					_ = proc.SignalGroup(syscall.SIGKILL)
					<-proc.Done()
				}
				_ = os.RemoveAll(dir)
			})
			return nil
		}
		return &started{transport: &mcp.IOTransport{Reader: outR, Writer: inW}, stop: stop, stderr: stderr, dir: dir}, nil
	}
	for i := range argv {
		argv[i] = strings.ReplaceAll(argv[i], TrialDirToken, sealedTrialDir)
	}
	readOnly := make([]string, 0, len(cfg.ReadOnly)+1)
	for _, p := range cfg.ReadOnly {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cfg.Dir, p)
		}
		readOnly = append(readOnly, p)
	}
	env := append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + sealedTrialDir}, envList(cfg.Env, sealedTrialDir)...)
	// A reused upstream's trial dir is a host directory bound into the
	// sandbox, so it can be emptied between trials; otherwise it is on the
	// sandbox's tmpfs, gone with it.
	hostDir := ""
	if cfg.Reuse {
		if hostDir, err = os.MkdirTemp("", "rebound-upstream-"); err != nil {
			closeChildEnds()
			return nil, fmt.Errorf("upstream: trial dir: %w", err)
		}
	}
	sb, err := sandbox.Start(sandbox.Spec{
		Command: argv, Env: env, Dir: sealedTrialDir, HostDir: hostDir, ReadOnly: readOnly,
		Stdin: inR, Stdout: outW, Stderr: stderr,
	})
	closeChildEnds()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		if hostDir != "" {
			_ = os.RemoveAll(hostDir)
		}
		return nil, fmt.Errorf("upstream: sealed start (set sandbox: none to run it unsealed): %w", err)
	}
	if err := sb.Release(); err != nil {
		sb.Stop(0)
		_ = inW.Close()
		_ = outR.Close()
		return nil, fmt.Errorf("upstream: %w", err)
	}
	var once sync.Once
	stop := func() error {
		once.Do(func() {
			_ = inW.Close()
			sb.Stop(2 * time.Second)
			if hostDir != "" {
				_ = os.RemoveAll(hostDir)
			}
		})
		return nil
	}
	return &started{transport: &mcp.IOTransport{Reader: outR, Writer: inW}, stop: stop, stderr: stderr, dir: hostDir}, nil
}

// resolveArgv resolves a command against the scenario's directory: a
// relative program with a slash, and every argument that starts with ./
// or ../ (a script beside the scenario). A bare program name is found on
// PATH (inside the sandbox: the system's); other arguments are the
// upstream's own.
func resolveArgv(command []string, dir string) []string {
	argv := append([]string(nil), command...)
	for i, a := range argv {
		rel := strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../")
		if i == 0 {
			rel = strings.Contains(a, "/") && !filepath.IsAbs(a)
		}
		if rel && dir != "" {
			argv[i] = filepath.Join(dir, a)
		}
	}
	return argv
}

func envList(env map[string]string, trialDir string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+strings.ReplaceAll(v, TrialDirToken, trialDir))
	}
	return out
}

// runReset runs a URL upstream's reset command and waits for it.
func runReset(ctx context.Context, cfg Config) error {
	argv := resolveArgv(cfg.Reset, cfg.Dir)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = cfg.Dir
	out := &boundedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("upstream: reset %s: %w%s", strings.Join(cfg.Reset, " "), err, stderrNote(out))
	}
	return nil
}

// urlLocks serialize the trials of one process against one shared URL
// upstream (a one-slot channel per URL, so a wait honours the context).
var urlLocks = struct {
	sync.Mutex
	m map[string]chan struct{}
}{m: map[string]chan struct{}{}}

func lockURL(ctx context.Context, url string) error {
	urlLocks.Lock()
	ch, ok := urlLocks.m[url]
	if !ok {
		ch = make(chan struct{}, 1)
		urlLocks.m[url] = ch
	}
	urlLocks.Unlock()
	select {
	case ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("upstream: waiting for %s, shared by another trial: %w", url, ctx.Err())
	}
}

func unlockURL(url string) {
	urlLocks.Lock()
	ch := urlLocks.m[url]
	urlLocks.Unlock()
	<-ch
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func stderrNote(b *boundedBuffer) string {
	if b == nil {
		return ""
	}
	s := strings.TrimSpace(b.String())
	if s == "" {
		return ""
	}
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return "\nthe upstream's stderr:\n" + s
}
