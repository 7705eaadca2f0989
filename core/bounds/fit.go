package bounds

// Column is one stored text column of a trial, for Fit.
type Column struct {
	Name string
	Text *string
	// JSON columns hold one JSON value and are shrunk with ShrinkJSON;
	// others are cut with Cut.
	JSON bool
	// Fixed columns (ids, names) count toward the limit and are made valid
	// UTF-8, but are never cut.
	Fixed bool
}

// Truncation records what Fit cut to make a trial fit.
type Truncation struct {
	// Limit is the bound, Bytes the escaped size of the columns before and
	// Stored after.
	Limit  int `json:"limit"`
	Bytes  int `json:"bytes"`
	Stored int `json:"stored"`
	// Columns names the columns cut (the first maxNamed of them, in the
	// order given), More counts the others.
	Columns []string `json:"columns"`
	More    int      `json:"more,omitempty"`
}

const maxNamed = 32

// Fit makes the columns storable within limit bytes, escaped as stored:
// every column is made valid UTF-8, and if their escaped sizes add up to
// more than limit, every column above a common ceiling is shrunk to it
// (the largest first, so small columns are kept whole), from its original
// value. It is deterministic: the same columns give the same result. It
// returns nil when nothing was cut.
func Fit(cols []Column, limit int) *Truncation {
	orig := make([]string, len(cols))
	sizes := make([]int, len(cols))
	total, fixed := 0, 0
	for i, c := range cols {
		*c.Text = Valid(*c.Text)
		orig[i] = *c.Text
		sizes[i] = EscapedLen(orig[i])
		total += sizes[i]
		if c.Fixed {
			fixed += sizes[i]
		}
	}
	if total <= limit {
		return nil
	}
	tr := &Truncation{Limit: limit, Bytes: total}
	var cutIdx []int
	var cutSizes []int
	for i, c := range cols {
		if !c.Fixed {
			cutIdx = append(cutIdx, i)
			cutSizes = append(cutSizes, sizes[i])
		}
	}
	target := limit - fixed
	stored := total
	var c int
	for range 8 {
		var ok bool
		if c, ok = Ceiling(cutSizes, target); !ok {
			c = 0
		}
		stored = fixed
		for j, i := range cutIdx {
			s := orig[i]
			if cutSizes[j] > c {
				if cols[i].JSON {
					s = ShrinkJSON(s, c)
				} else {
					s = Cut(s, c)
				}
			}
			*cols[i].Text = s
			stored += EscapedLen(s)
		}
		if stored <= limit {
			break
		}
		target -= stored - limit // markers overshot the ceiling: aim lower
	}
	if stored > limit {
		// Not even markers fit (a limit below the columns' count of
		// markers): keep the fixed columns and empty values.
		stored = fixed
		for _, i := range cutIdx {
			*cols[i].Text = ""
			if cols[i].JSON && orig[i] != "" {
				*cols[i].Text = "{}"
			}
			stored += len(*cols[i].Text)
		}
	}
	tr.Stored = stored
	for _, i := range cutIdx {
		if *cols[i].Text != orig[i] {
			if len(tr.Columns) < maxNamed {
				tr.Columns = append(tr.Columns, cols[i].Name)
			} else {
				tr.More++
			}
		}
	}
	return tr
}
