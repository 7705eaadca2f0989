package fileerr

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(ok, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(ok, 100, "scenario file"); err != nil || string(b) != "name: x\n" {
		t.Fatalf("%q %v", b, err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRegular(link, 100, "scenario file"); err != nil {
		t.Fatalf("symlink to a regular file: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{ok, "larger than the scenario file limit of 4 bytes"},
		{dir, "is a directory"},
		{"/dev/zero", "is a device"},
		{fifo, "is a named pipe"}, // would block forever if opened
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadRegular(tc.path, 4, "scenario file"); done <- err }()
		select {
		case err := <-done:
			var es Errors
			if !errors.As(err, &es) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), tc.path+": ") {
				t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadRegular hung", tc.path)
		}
	}
}
