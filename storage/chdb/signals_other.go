//go:build !(linux && (amd64 || arm64))

package chdb

import "errors"

func platformSupported() error {
	return errors.New("the embedded chDB store is only supported on Linux (amd64, arm64) in this build; use a ClickHouse server DSN")
}

func guardSignals(f func()) []int { f(); return nil }

// RestoredSignals is always empty on this platform.
func RestoredSignals() map[int]int { return map[int]int{} }
