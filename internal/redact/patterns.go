package redact

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"rebound/internal/fileerr"
)

// EnvPatternsFile names the environment variable holding the path of a
// file of extra secret patterns (PatternsFile).
const EnvPatternsFile = "REBOUND_REDACT_FILE"

// MaxPatternsFileBytes bounds a patterns file.
const MaxPatternsFileBytes = 64 << 10

// PatternsFromEnv reads the extra patterns of the file named by
// $REBOUND_REDACT_FILE; none when it is unset. Its errors name the variable.
func PatternsFromEnv() ([]string, error) {
	path := os.Getenv(EnvPatternsFile)
	if path == "" {
		return nil, nil
	}
	p, err := PatternsFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPatternsFile, err)
	}
	return p, nil
}

// PatternsFile reads extra secret patterns for redaction: one regular
// expression per line, blank lines and lines starting with # ignored. Each
// is compiled up front, so a typo fails with file:line instead of leaking
// later. Only a regular file of at most MaxPatternsFileBytes is read.
func PatternsFile(path string) ([]string, error) {
	data, err := fileerr.ReadRegular(path, MaxPatternsFileBytes, "redact file")
	if err != nil {
		return nil, err
	}
	var out []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, err := regexp.Compile(line); err != nil {
			return nil, fmt.Errorf("%s:%d: invalid pattern: %v", path, i+1, err)
		}
		out = append(out, line)
	}
	return out, nil
}
