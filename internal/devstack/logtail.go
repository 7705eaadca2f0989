package devstack

import (
	"strings"
	"sync"
)

// logTail keeps the last bytes written to it, for error messages.
type logTail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newLogTail(max int) *logTail { return &logTail{max: max} }

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - l.max; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
	return len(p), nil
}

// lines returns the last n lines kept.
func (l *logTail) lines(n int) string {
	l.mu.Lock()
	s := string(l.buf)
	l.mu.Unlock()
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (l *logTail) containsAny(subs ...string) bool {
	l.mu.Lock()
	s := string(l.buf)
	l.mu.Unlock()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
