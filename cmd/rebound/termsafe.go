package main

import (
	"io"
	"strings"
	"unicode/utf8"
)

// termSafe removes what a terminal would interpret from text that came from
// files, agents or storage (plan names, goals, claims, tool output): ANSI
// escape sequences (CSI, OSC and the other ESC forms), C0 control
// characters other than newline and tab (and carriage return when keepCR),
// DEL, and C1 control characters (U+0080..U+009F, which some terminals take
// as escapes too). Everything else, other Unicode included, is kept.
func termSafe(s string, keepCR bool) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c == 0xc2 || c == '\r' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			i = skipEscape(s, i+1)
			continue
		case c == '\n' || c == '\t' || c == '\r' && keepCR:
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == 0x9b { // C1 CSI: skip its parameters like ESC [
				i = skipCSI(s, i+size)
				continue
			}
			if r < 0x80 || r > 0x9f {
				b.WriteString(s[i : i+size])
			}
			i += size
			continue
		default:
			b.WriteByte(c)
		}
		i++
	}
	return b.String()
}

// skipEscape returns the index after the escape sequence whose ESC ended
// at i.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: until BEL or ST
		for j := i + 1; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	}
	// Two-byte forms (ESC c, ESC 7, ...) and charset selection (ESC ( B).
	if s[i] >= 0x20 && s[i] <= 0x2f && i+1 < len(s) {
		return i + 2
	}
	return i + 1
}

// skipCSI skips a CSI sequence's parameter and intermediate bytes and its
// final byte.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// termWriter passes writes through termSafe. Every fmt call and tabwriter
// cell is one Write, so an escape sequence is never split across writes
// of our own output.
type termWriter struct {
	w      io.Writer
	keepCR bool
}

func (t termWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termSafe(string(p), t.keepCR)); err != nil {
		return 0, err
	}
	return len(p), nil
}
