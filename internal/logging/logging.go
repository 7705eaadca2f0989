// Package logging is rebound's structured log: log/slog, as text
// (key=value) or JSON lines, at a level. The worker logs through it (its
// own messages and the Temporal SDK's), and the embedded dev server's
// output is relayed through it into temporal.log (Lines). Plain Go.
package logging

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// Formats and levels, as the --log-format and --log-level flags take them
// (the first is the default format).
var (
	Formats = []string{"text", "json"}
	Levels  = []string{"debug", "info", "warn", "error"}
)

// Options say how to log.
type Options struct {
	Format string // text (default) or json
	Level  string // debug, info, warn or error; empty: info
}

// ParseLevel reads a level name.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// New returns a logger writing to w as o says.
func New(w io.Writer, o Options) (*slog.Logger, error) {
	level, err := ParseLevel(o.Level)
	if err != nil {
		return nil, err
	}
	ho := &slog.HandlerOptions{Level: level}
	switch o.Format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", o.Format)
}

// Lines is an io.Writer that relays another program's output, line by
// line, through l: a line already in the log's format (a JSON object for
// json, "time=... level=..." for text: the Temporal dev server logs in the
// format it is given) is written as it is, so its own level and fields
// stay; any other line (a banner, a note) becomes a record at level info
// with attrs. Close writes a last line without its newline.
type Lines struct {
	mu     sync.Mutex
	l      *slog.Logger
	raw    io.Writer
	json   bool
	attrs  []any
	buf    bytes.Buffer
	closed bool
}

// NewLines relays lines through l, whose handler writes to raw in format.
func NewLines(l *slog.Logger, raw io.Writer, format string, attrs ...any) *Lines {
	return &Lines{l: l, raw: raw, json: format == "json", attrs: attrs}
}

func (w *Lines) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf.Next(i + 1))
		if err := w.line(strings.TrimRight(line, "\r\n")); err != nil {
			return len(p), err
		}
	}
}

// Close relays what is left of an unfinished line.
func (w *Lines) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.buf.Len() == 0 {
		w.closed = true
		return nil
	}
	w.closed = true
	return w.line(w.buf.String())
}

func (w *Lines) line(s string) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if w.structured(s) {
		_, err := io.WriteString(w.raw, s+"\n")
		return err
	}
	w.l.Log(context.Background(), slog.LevelInfo, s, w.attrs...)
	return nil
}

func (w *Lines) structured(s string) bool {
	if w.json {
		return strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}")
	}
	return strings.HasPrefix(s, "time=") && strings.Contains(s, " level=")
}
