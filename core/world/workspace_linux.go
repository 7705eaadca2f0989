package world

import (
	"os"
	"syscall"
)

// tmpfsMagic is the f_type statfs reports for a tmpfs (linux/magic.h).
const tmpfsMagic = 0x01021994

// memoryTempDir is /dev/shm when it is a tmpfs in which this process can
// make and remove a directory, else "" (os.TempDir()).
func memoryTempDir() string {
	const shm = "/dev/shm"
	var st syscall.Statfs_t
	if err := syscall.Statfs(shm, &st); err != nil || int64(st.Type) != tmpfsMagic {
		return ""
	}
	probe, err := os.MkdirTemp(shm, "rebound-files-")
	if err != nil {
		return ""
	}
	if err := os.Remove(probe); err != nil {
		return ""
	}
	return shm
}
