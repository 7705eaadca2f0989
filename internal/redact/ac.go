package redact

// acMatcher finds every occurrence of a set of literal patterns in one pass
// over a string (Aho-Corasick, compiled to a DFA over the bytes the patterns
// use). It is the prefilter that keeps ordinary text cheap: the keywords of
// every rule are found in one pass, and only the rules whose keywords occur
// run their regular expression. Known secret values and their fragments are
// found the same way.
type acMatcher struct {
	class  [256]uint8 // byte -> column of next; 0 for bytes no pattern has
	width  int        // columns per state
	next   []int32    // state*width + class -> next state
	out    [][]int32  // state -> patterns ending there (their own and their suffixes')
	lens   []int      // pattern -> length
	hasOut []bool
}

// newAC builds a matcher; with fold, ASCII letters match either case (the
// patterns are lower-cased).
func newAC(patterns []string, fold bool) *acMatcher {
	m := &acMatcher{lens: make([]int, len(patterns))}
	// The alphabet: one column per byte any pattern uses.
	width := 1
	for _, p := range patterns {
		for i := 0; i < len(p); i++ {
			c := p[i]
			if fold {
				c = lower(c)
			}
			if m.class[c] == 0 {
				if width == 256 {
					continue
				}
				m.class[c] = uint8(width)
				width++
			}
		}
	}
	if fold {
		for c := 'A'; c <= 'Z'; c++ {
			m.class[c] = m.class[c+'a'-'A']
		}
	}
	m.width = width
	// The trie, as rows of next (-1: no edge yet), with the patterns
	// ending at each state.
	states := 1
	for _, p := range patterns {
		states += len(p)
	}
	next := make([]int32, width, width*states)
	for i := range next {
		next[i] = -1
	}
	own := make([][]int32, 1, states)
	for id, p := range patterns {
		m.lens[id] = len(p)
		s := int32(0)
		for i := 0; i < len(p); i++ {
			at := int(s)*width + int(m.class[p[i]])
			if next[at] < 0 {
				next[at] = int32(len(own))
				own = append(own, nil)
				for c := 0; c < width; c++ {
					next = append(next, -1)
				}
			}
			s = next[at]
		}
		own[s] = append(own[s], int32(id))
	}
	// Failure links, breadth first, folded into next in place: a missing
	// edge takes the edge of the state's failure (already complete, it is
	// shallower). Column 0 (bytes no pattern has) always leads to the root.
	n := len(own)
	m.out = make([][]int32, n)
	m.hasOut = make([]bool, n)
	fail := make([]int32, n)
	queue := make([]int32, 0, n)
	m.out[0] = own[0]
	for c := 0; c < width; c++ {
		if t := next[c]; t > 0 && c != 0 {
			queue = append(queue, t)
		} else {
			next[c] = 0
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if f := m.out[fail[s]]; len(f) > 0 {
			m.out[s] = append(append(make([]int32, 0, len(own[s])+len(f)), own[s]...), f...)
		} else {
			m.out[s] = own[s]
		}
		row, frow := int(s)*width, int(fail[s])*width
		for c := 0; c < width; c++ {
			t := next[row+c]
			if t < 0 || c == 0 {
				next[row+c] = next[frow+c]
				continue
			}
			fail[t] = next[frow+c]
			queue = append(queue, t)
		}
	}
	for s := range m.out {
		m.hasOut[s] = len(m.out[s]) > 0
	}
	m.next = next
	return m
}

// scan calls fn for every occurrence, with the index just past its end;
// fn returns false to stop.
func (m *acMatcher) scan(s string, fn func(end int, pattern int32) bool) {
	if m == nil {
		return
	}
	state := int32(0)
	w := int32(m.width)
	for i := 0; i < len(s); i++ {
		state = m.next[state*w+int32(m.class[s[i]])]
		if m.hasOut[state] {
			for _, p := range m.out[state] {
				if !fn(i+1, p) {
					return
				}
			}
		}
	}
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// any reports whether s contains any pattern.
func (m *acMatcher) any(s string) bool {
	found := false
	m.scan(s, func(int, int32) bool { found = true; return false })
	return found
}
