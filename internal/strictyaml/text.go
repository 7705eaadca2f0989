package strictyaml

import (
	"bytes"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"rebound/internal/fileerr"
)

// Text returns data as UTF-8 without a byte-order mark, the form the rest
// of this package (and yaml.v3) reads. Accepted: UTF-8 with or without a
// byte-order mark, and UTF-16 LE or BE with one (what the YAML spec asks
// every reader to accept; Windows editors and PowerShell write them).
// Refused, naming the encoding found: UTF-32, and UTF-16 without a mark
// (YAML's spec would guess; rebound asks instead). Refused at their line
// and column: bytes that are not UTF-8, characters YAML does not allow
// (NUL and the other control characters), and a byte-order mark anywhere
// but at the start (an invisible character that would make a key differ
// from the one it looks like).
func Text(file string, data []byte) ([]byte, *fileerr.FieldError) {
	at := func(format string, args ...any) *fileerr.FieldError {
		return &fileerr.FieldError{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf(format, args...)}
	}
	const save = "rebound reads UTF-8, or UTF-16 with a byte-order mark: save the file as UTF-8"
	switch {
	case bytes.HasPrefix(data, []byte{0x00, 0x00, 0xFE, 0xFF}):
		return nil, at("the file is UTF-32BE (it starts with that byte-order mark); %s", save)
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE, 0x00, 0x00}):
		return nil, at("the file is UTF-32LE (it starts with that byte-order mark); %s", save)
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return fromUTF16(file, data[2:], true)
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		return fromUTF16(file, data[2:], false)
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		data = data[3:]
	case len(data) >= 4 && data[0] == 0 && data[1] == 0 && data[2] == 0 && data[3] != 0:
		return nil, at("the file looks like UTF-32BE without a byte-order mark; %s", save)
	case len(data) >= 4 && data[0] != 0 && data[1] == 0 && data[2] == 0 && data[3] == 0:
		return nil, at("the file looks like UTF-32LE without a byte-order mark; %s", save)
	case len(data) >= 2 && data[0] == 0 && data[1] != 0:
		return nil, at("the file looks like UTF-16BE without a byte-order mark; %s", save)
	case len(data) >= 2 && data[0] != 0 && data[1] == 0:
		return nil, at("the file looks like UTF-16LE without a byte-order mark; %s", save)
	}
	if fe := checkText(file, data); fe != nil {
		return nil, fe
	}
	return data, nil
}

// fromUTF16 converts UTF-16 text (after its byte-order mark) to UTF-8.
func fromUTF16(file string, b []byte, bigEndian bool) ([]byte, *fileerr.FieldError) {
	name := "UTF-16LE"
	if bigEndian {
		name = "UTF-16BE"
	}
	units := make([]uint16, len(b)/2)
	for i := range units {
		if bigEndian {
			units[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		} else {
			units[i] = uint16(b[2*i+1])<<8 | uint16(b[2*i])
		}
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(units); i++ {
		r := rune(units[i])
		if utf16.IsSurrogate(r) {
			if i+1 < len(units) {
				r = utf16.DecodeRune(r, rune(units[i+1]))
			} else {
				r = utf8.RuneError
			}
			if r == utf8.RuneError {
				line, col := end(out)
				return nil, &fileerr.FieldError{File: file, Line: line, Col: col, Msg: fmt.Sprintf("invalid %s: a lone surrogate 0x%04X is not a character; save the file as UTF-8", name, units[i])}
			}
			i++
		}
		out = utf8.AppendRune(out, r)
	}
	if len(b)%2 == 1 {
		line, col := end(out)
		return nil, &fileerr.FieldError{File: file, Line: line, Col: col, Msg: fmt.Sprintf("invalid %s: the file ends in the middle of a character (an odd number of bytes)", name)}
	}
	if fe := checkText(file, out); fe != nil {
		return nil, fe
	}
	return out, nil
}

// checkText refuses the first byte sequence that is not UTF-8 and the
// first character YAML does not allow, at its line and column (counted as
// yaml.v3 counts them, so positions agree with its own).
func checkText(file string, b []byte) *fileerr.FieldError {
	var p position
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		var msg string
		switch {
		case r == utf8.RuneError && size == 1:
			msg = fmt.Sprintf("invalid UTF-8: byte 0x%02X does not start a character here; save the file as UTF-8", b[i])
		case r == 0:
			msg = "a NUL byte (U+0000): control characters are not allowed in YAML (is this a binary file, or UTF-16 without a byte-order mark?)"
		case r == 0xFEFF:
			msg = "a byte-order mark (U+FEFF) inside the text: it may only start the file; remove it (it is invisible, and would be part of a key or value)"
		case !printable(r):
			msg = fmt.Sprintf("control character U+%04X is not allowed in YAML (write it as an escape inside double quotes)", r)
		}
		if msg != "" {
			return &fileerr.FieldError{File: file, Line: p.line(), Col: p.col(), Msg: msg}
		}
		var next rune = -1
		if i+size < len(b) {
			next = rune(b[i+size])
		}
		p.advance(r, next)
		i += size
	}
	return nil
}

// printable is YAML's c-printable set, which yaml.v3 enforces too.
func printable(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		(r >= 0x20 && r <= 0x7E) || r == 0x85 ||
		(r >= 0xA0 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) ||
		(r >= 0x10000 && r <= 0x10FFFF)
}

// position counts lines and columns (in characters, from 1) the way
// yaml.v3 does: CR, LF, CR LF, NEL, LS and PS each end a line.
type position struct {
	lines, cols int // completed lines; characters on the current one
}

// end is the line and column just after UTF-8 text b.
func end(b []byte) (line, col int) {
	var p position
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		var next rune = -1
		if i+size < len(b) {
			next = rune(b[i+size])
		}
		p.advance(r, next)
		i += size
	}
	return p.line(), p.col()
}

func (p *position) line() int { return p.lines + 1 }
func (p *position) col() int  { return p.cols + 1 }

// advance moves past r; next is the byte that follows (-1 at the end), so
// that CR LF ends one line.
func (p *position) advance(r, next rune) {
	switch r {
	case '\r':
		if next == '\n' {
			p.cols++ // the LF ends the line
			return
		}
		p.lines, p.cols = p.lines+1, 0
	case '\n', 0x85, 0x2028, 0x2029:
		p.lines, p.cols = p.lines+1, 0
	default:
		p.cols++
	}
}
