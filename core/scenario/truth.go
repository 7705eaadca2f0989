package scenario

import (
	"fmt"
	"strings"
)

// A truth path names where the world keeps a value: a dot path into the
// world's final state ("orders.A-4417.captured"), or one of two functions
// over such a path:
//
//	exists(PATH)  true when something is at PATH, false when nothing is
//	count(PATH)   the number of entries of the map or list at PATH (the
//	              length of a string), 0 when nothing is there
//
// A boolean claim field whose plain path holds nothing reads as false: a
// file that does not exist was not created.
const (
	TruthExists = "exists"
	TruthCount  = "count"
)

// TruthExpr is a parsed truth path.
type TruthExpr struct {
	Func string // "", TruthExists or TruthCount
	Path string
}

// ParseTruth parses a truth path or function.
func ParseTruth(expr string) (TruthExpr, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return TruthExpr{}, fmt.Errorf("empty path")
	}
	open := strings.IndexByte(expr, '(')
	if open < 0 {
		if strings.ContainsAny(expr, ")") {
			return TruthExpr{}, fmt.Errorf("unbalanced parenthesis in %q", expr)
		}
		return TruthExpr{Path: expr}, nil
	}
	fn := strings.TrimSpace(expr[:open])
	if !strings.HasSuffix(expr, ")") {
		return TruthExpr{}, fmt.Errorf("%q: a function call must end with ')'", expr)
	}
	inner := strings.TrimSpace(expr[open+1 : len(expr)-1])
	switch fn {
	case TruthExists, TruthCount:
	default:
		return TruthExpr{}, fmt.Errorf("unknown function %q (known: exists, count)", fn)
	}
	if inner == "" || strings.ContainsAny(inner, "()") {
		return TruthExpr{}, fmt.Errorf("%s() takes one dot path, got %q", fn, inner)
	}
	return TruthExpr{Func: fn, Path: inner}, nil
}
