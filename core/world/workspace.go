package world

import (
	"os"
	"sync"
)

// WorkspaceEnv names the directory in which the files world makes its
// per-trial workspaces (docs/configuration.md).
const WorkspaceEnv = "REBOUND_WORKSPACE_DIR"

// workspaceBase is where the files world makes a trial's workspace:
// REBOUND_WORKSPACE_DIR when set, else a memory-backed directory when the
// machine has one this process can write in (Linux's /dev/shm, a tmpfs),
// else os.TempDir(). A workspace lives for one trial and is created, written
// and removed in under a millisecond of CPU; on a disk every one of those
// steps is a journaled metadata operation that waits behind whatever else
// writes to the disk. Measured for issue 35 (2 shared cores, the disk
// shared with the embedded store and other processes): a files trial took
// 2.2–2.8 ms of wall time in /tmp on ext4 against 0.2–0.6 ms on tmpfs in
// process, and in a 60,760-trial library sweep its shards took 15–23 s
// against 1–2 s for the others (the sweep 42.7 s; 18.0 s with the
// workspaces on tmpfs).
func workspaceBase() string {
	workspaceOnce.Do(func() { workspaceDir = chooseWorkspace(os.Getenv(WorkspaceEnv)) })
	return workspaceDir
}

// chooseWorkspace is workspaceBase's choice given REBOUND_WORKSPACE_DIR.
func chooseWorkspace(env string) string {
	if env != "" {
		return env
	}
	return memoryTempDir()
}

var (
	workspaceOnce sync.Once
	workspaceDir  string // "" is os.TempDir()
)
