package devstacktest

import (
	"strings"
	"sync"
)

// Output collects what a child process (a worker, a dev server, a sealed
// script) writes, and is safe to read while it still writes: give it as
// the command's Stdout or Stderr and poll String.
type Output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String is everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
