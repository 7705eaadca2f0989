package world

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// A files world's workspace is made where workspaceBase says: the
// variable when set, else a tmpfs on Linux when /dev/shm is one.
func TestWorkspaceBase(t *testing.T) {
	if got := chooseWorkspace("/some/dir"); got != "/some/dir" {
		t.Errorf("chooseWorkspace with %s set = %q", WorkspaceEnv, got)
	}
	want := ""
	var st syscall.Statfs_t
	if runtime.GOOS == "linux" && syscall.Statfs("/dev/shm", &st) == nil && int64(st.Type) == 0x01021994 {
		want = "/dev/shm"
	}
	if got := chooseWorkspace(""); got != want {
		t.Errorf("chooseWorkspace without %s = %q, want %q (a writable tmpfs at /dev/shm, else the temporary directory)", WorkspaceEnv, got, want)
	}
	f := newFilesWorld(t, seed004Initial())
	base := workspaceBase()
	if base == "" {
		base = os.TempDir()
	}
	base, err := filepath.EvalSymlinks(base)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.Dir(), base+string(filepath.Separator)) {
		t.Errorf("workspace %s is not in %s", f.Dir(), base)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.Dir()); !os.IsNotExist(err) {
		t.Errorf("workspace %s left behind after Close: %v", f.Dir(), err)
	}
}
