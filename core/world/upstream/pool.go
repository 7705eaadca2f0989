package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A reused upstream (Config.Reuse) keeps its process between the trials of
// one worker: the next trial empties its trial directory and runs the
// setup calls again instead of starting the server, which costs far more
// than either (docs/your-own-tools.md). Only an upstream that keeps its
// whole state in its trial directory may say reuse: rebound cannot empty
// what a process holds in memory.

// Bounds of the pool: idle processes per configuration, and how long one
// waits for a next trial.
const (
	maxIdlePerKey = 8
	idleTimeout   = time.Minute
)

// pooled is a process a reused upstream's trials share, one at a time.
type pooled struct {
	key     string
	session *mcp.ClientSession
	stop    func() error
	dir     string // the trial dir on the host
	tools   []*mcp.Tool
	timer   *time.Timer
}

var pool = struct {
	sync.Mutex
	idle map[string][]*pooled
}{idle: map[string][]*pooled{}}

// poolKey identifies the upstream processes that can stand in for one
// another: the same command, environment, directory and sealing.
func poolKey(cfg Config) string {
	b, _ := json.Marshal(struct {
		Command  []string
		Env      map[string]string
		Dir      string
		Unsealed bool
		ReadOnly []string
	}{cfg.Command, cfg.Env, cfg.Dir, cfg.Unsealed, cfg.ReadOnly})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// takeIdle returns an idle process of the configuration, or nil.
func takeIdle(key string) *pooled {
	pool.Lock()
	defer pool.Unlock()
	list := pool.idle[key]
	for len(list) > 0 {
		p := list[len(list)-1]
		list = list[:len(list)-1]
		pool.idle[key] = list
		if p.timer.Stop() { // not already being evicted
			return p
		}
	}
	return nil
}

// putIdle hands a process back for the next trial; past the bound it is
// stopped.
func putIdle(p *pooled) {
	pool.Lock()
	defer pool.Unlock()
	if len(pool.idle[p.key]) >= maxIdlePerKey {
		go p.shut()
		return
	}
	p.timer = time.AfterFunc(idleTimeout, func() { evict(p) })
	pool.idle[p.key] = append(pool.idle[p.key], p)
}

// evict stops an idle process no trial took in time.
func evict(p *pooled) {
	pool.Lock()
	list := pool.idle[p.key]
	for i, q := range list {
		if q == p {
			pool.idle[p.key] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	pool.Unlock()
	p.shut()
}

func (p *pooled) shut() {
	if p.session != nil {
		_ = p.session.Close()
	}
	_ = p.stop()
}

// emptyDir removes everything in dir, never following a link out of it.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
