package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"rebound/workflows"
)

// status writes progress to stderr: a redrawn bar on a terminal, a line per
// change (at most every few seconds) otherwise.
type status struct {
	w        io.Writer
	tty      bool
	drawn    bool
	lastLine time.Time
	lastDone int
}

func newStatus(w io.Writer) *status {
	s := &status{w: w, lastDone: -1}
	inner := w
	if t, ok := w.(termWriter); ok {
		inner = t.w
	}
	if f, ok := inner.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			s.tty = true
		}
	}
	return s
}

func (s *status) linef(format string, args ...any) {
	s.done()
	fmt.Fprintf(s.w, format+"\n", args...)
}

func (s *status) progress(p workflows.Progress, elapsed time.Duration) {
	if p.TrialsPlanned == 0 {
		return
	}
	const width = 30
	filled := width * p.TrialsDone / p.TrialsPlanned
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	line := fmt.Sprintf("[%s] %d/%d trials  %d/%d shards  %.1fs", bar, p.TrialsDone, p.TrialsPlanned, p.ShardsDone, p.ShardsTotal, elapsed.Seconds())
	if p.Attrition > 0 {
		line += fmt.Sprintf("  attrition %d", p.Attrition)
	}
	if s.tty {
		fmt.Fprintf(s.w, "\r%s", line)
		s.drawn = true
		return
	}
	if p.TrialsDone != s.lastDone && (time.Since(s.lastLine) > 2*time.Second || p.TrialsDone == p.TrialsPlanned) {
		fmt.Fprintln(s.w, line)
		s.lastLine, s.lastDone = time.Now(), p.TrialsDone
	}
}

func (s *status) done() {
	if s.drawn {
		fmt.Fprintln(s.w)
		s.drawn = false
	}
}
