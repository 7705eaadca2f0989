// Package valuetable is the table of JSON-compatible values that the
// grader's comparisons (core/grade: number, Equal) and the oracle's own
// copies of them (core/oracle: num, same) are both tested against. The
// oracle stays independent of the grader (it never calls it, so a defect
// in one is not repeated in the other), and the shared table keeps the
// two copies from drifting apart. Only tests import it.
package valuetable

import "encoding/json"

// Number is a value and what reading it as a number gives.
type Number struct {
	Name string
	V    any
	F    float64
	OK   bool // V is a number
}

// Numbers are the values a claim, a tool's answer or a world's state may
// hold, read as numbers.
var Numbers = []Number{
	{"int", 7, 7, true},
	{"int64", int64(-3), -3, true},
	{"uint64", uint64(1 << 40), 1 << 40, true},
	{"float64", 2.5, 2.5, true},
	{"json.Number", json.Number("12.25"), 12.25, true},
	{"json.Number that is no number", json.Number("x"), 0, false},
	{"string of digits", "7", 0, false},
	{"bool", true, 0, false},
	{"nil", nil, 0, false},
	{"map", map[string]any{"a": 1}, 0, false},
	{"slice", []any{1}, 0, false},
}

// Pair is two values and whether they are equal: all numbers alike,
// everything else by its JSON.
type Pair struct {
	Name  string
	A, B  any
	Equal bool
}

// Pairs are the comparisons both copies must agree on.
var Pairs = []Pair{
	{"int and float64", 7, 7.0, true},
	{"float64 and int", float64(7), 7, true},
	{"uint64 and int", uint64(7), 7, true},
	{"int and uint64", 7, uint64(7), true},
	{"json.Number and float64", json.Number("2.5"), 2.5, true},
	{"int64 and json.Number", int64(3), json.Number("3"), true},
	{"different numbers", 7, 8, false},
	{"a number and its string", 7, "7", false},
	{"a string and its number", "7", 7, false},
	{"strings", "a", "a", true},
	{"different strings", "a", "b", false},
	{"bools", true, true, true},
	{"different bools", true, false, false},
	{"nil and nil", nil, nil, true},
	{"nil and zero", nil, 0, false},
	{"nil and false", nil, false, false},
	{"maps in another key order", map[string]any{"a": 1.0, "b": "x"}, map[string]any{"b": "x", "a": 1.0}, true},
	{"maps with an int and a float inside", map[string]any{"a": 1}, map[string]any{"a": 1.0}, true},
	{"different maps", map[string]any{"a": 1.0}, map[string]any{"a": 2.0}, false},
	{"slices", []any{1.0, "x"}, []any{1.0, "x"}, true},
	{"reordered slices", []any{1.0, "x"}, []any{"x", 1.0}, false},
}
