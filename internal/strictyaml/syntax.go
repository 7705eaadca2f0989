package strictyaml

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"rebound/internal/fileerr"
)

var (
	lineRe   = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	anchorRe = regexp.MustCompile(`^(?:yaml: )?unknown anchor '(.*)' referenced$`)
)

// syntaxError locates one of yaml.v3's parse errors. yaml.v3 gives a line
// only (and none at all on line 1, and sometimes the line where the
// construct around the problem starts); where the problem is a character
// that can be found from there (a tab used as indentation, a reserved
// indicator, an alias that names no anchor), its column is found too.
func syntaxError(file string, text []byte, err error) fileerr.FieldError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1 // yaml.v3 omits "line 1"
	if m := lineRe.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	fe := fileerr.FieldError{File: file, Line: line, Col: 1, Msg: "invalid YAML: " + msg}
	lines := splitLines(text)
	switch {
	case anchorRe.MatchString(msg):
		name := anchorRe.FindStringSubmatch(msg)[1]
		fe.Msg = "invalid YAML: the alias *" + name + " names no anchor: define &" + name + " on a value before the alias"
		if l, c, ok := findAlias(lines, name); ok {
			fe.Line, fe.Col = l, c
		}
	case strings.Contains(msg, "tab character"):
		if l, c, ok := findIndentTab(lines, line, len(lines)); ok {
			fe.Line, fe.Col = l, c
			fe.Msg = "invalid YAML: a tab character in the indentation: YAML indents with spaces only"
		}
	case msg == "found character that cannot start any token":
		if l, c, ok := findIndentTab(lines, line, line); ok {
			fe.Line, fe.Col = l, c
			fe.Msg = "invalid YAML: a tab character in the indentation: YAML indents with spaces only"
		} else if c, ok := findReserved(lines, line); ok {
			fe.Col = c
			fe.Msg = "invalid YAML: a plain value cannot start with @ or ` (reserved in YAML): quote the value"
		}
	}
	return fe
}

// splitLines splits text into lines as yaml.v3 counts them.
func splitLines(text []byte) [][]byte {
	var out [][]byte
	start := 0
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(text[i:])
		}
		switch r {
		case '\r':
			out = append(out, text[start:i])
			if i+1 < len(text) && text[i+1] == '\n' {
				size = 2
			}
			start = i + size
		case '\n', 0x85, 0x2028, 0x2029:
			out = append(out, text[start:i])
			start = i + size
		}
		i += size
	}
	return append(out, text[start:])
}

// column is the 1-based character column of byte offset i of line.
func column(line []byte, i int) int {
	return utf8.RuneCount(line[:i]) + 1
}

// findIndentTab finds, on lines from..to (1-based), the first tab used as
// indentation: before the first content of its line, after spaces and the
// block indicators "- ", "? " and ": ".
func findIndentTab(lines [][]byte, from, to int) (line, col int, ok bool) {
	for l := max(from, 1); l <= min(to, len(lines)); l++ {
		s := lines[l-1]
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == '\t' {
				return l, column(s, i), true
			}
			if c == ' ' {
				continue
			}
			if (c == '-' || c == '?' || c == ':') && i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '\t') {
				continue
			}
			break
		}
	}
	return 0, 0, false
}

// findReserved finds the first @ or ` that starts a token on line.
func findReserved(lines [][]byte, line int) (int, bool) {
	if line < 1 || line > len(lines) {
		return 0, false
	}
	s := lines[line-1]
	for i, c := range s {
		if (c == '@' || c == '`') && (i == 0 || bytes.IndexByte([]byte(" \t[{,:-?"), s[i-1]) >= 0) {
			return column(s, i), true
		}
	}
	return 0, false
}

// findAlias finds the first alias *name in the text.
func findAlias(lines [][]byte, name string) (line, col int, ok bool) {
	want := []byte("*" + name)
	for l, s := range lines {
		for off := 0; ; {
			i := bytes.Index(s[off:], want)
			if i < 0 {
				break
			}
			i += off
			end := i + len(want)
			before := i == 0 || bytes.IndexByte([]byte(" \t[{,:-?"), s[i-1]) >= 0
			after := end == len(s) || bytes.IndexByte([]byte(" \t]},"), s[end]) >= 0
			if before && after {
				return l + 1, column(s, i), true
			}
			off = i + 1
		}
	}
	return 0, 0, false
}
