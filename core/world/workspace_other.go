//go:build !linux

package world

// memoryTempDir is "" (os.TempDir()) where no memory-backed directory is
// known.
func memoryTempDir() string { return "" }
