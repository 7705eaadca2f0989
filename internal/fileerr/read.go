package fileerr

import (
	"fmt"
	"io"
	"os"
)

// ReadRegular reads an input file: a regular file (symbolic links are
// followed) of at most limit bytes. Directories, devices (/dev/zero), pipes
// and sockets are refused before anything is read, and nothing beyond the
// limit is ever read, so a hostile path cannot exhaust memory or hang the
// loader. Problems are located at the file.
func ReadRegular(path string, limit int64, what string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, st, what); err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, tooLarge(path, st.Size(), limit, what)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The path may have been replaced between Stat and Open.
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, st, what); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, int64(len(data)), limit, what)
	}
	return data, nil
}

func regular(path string, st os.FileInfo, what string) error {
	if st.Mode().IsRegular() {
		return nil
	}
	kind := "not a regular file"
	switch {
	case st.IsDir():
		kind = "a directory"
	case st.Mode()&os.ModeDevice != 0:
		kind = "a device"
	case st.Mode()&os.ModeNamedPipe != 0:
		kind = "a named pipe"
	case st.Mode()&os.ModeSocket != 0:
		kind = "a socket"
	}
	return Errors{{File: path, Msg: fmt.Sprintf("is %s; a %s must be a regular file", kind, what)}}
}

func tooLarge(path string, size, limit int64, what string) error {
	return Errors{{File: path, Msg: fmt.Sprintf("is larger than the %s limit of %d bytes (%d+ bytes)", what, limit, size)}}
}
