package declared

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Templates, paths and values.
//
// A template is a string with placeholders: "ch_{order_id}_{order.charges}".
// A placeholder names an argument, a read (a binding of the tool's reads),
// prior (inside a status block: the result the write gave for the key) or
// a top-level field of the state, then optionally fields below it. A
// string that is exactly one placeholder has the value's own type (an
// integer stays an integer); any other string interpolates. {{ and }} are
// literal braces.
//
// A path is dot-separated segments into the state, each a template:
// "orders.{order_id}.charges". Its first segment may be a read's name, for
// the path that read names. Every path is typed against the state schema
// when the file is loaded.

// tpart is one piece of a template: a literal or a placeholder.
type tpart struct {
	lit string
	ref *ref
}

type tmpl struct {
	parts []tpart
	src   string
}

// single is the placeholder a template consists of, or nil.
func (t *tmpl) single() *ref {
	if len(t.parts) == 1 && t.parts[0].ref != nil {
		return t.parts[0].ref
	}
	return nil
}

func (t *tmpl) literal() (string, bool) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref != nil {
			return "", false
		}
		b.WriteString(p.lit)
	}
	return b.String(), true
}

type refSource uint8

const (
	srcArg refSource = iota
	srcBinding
	srcPrior
	srcState
	srcKey // {READ.$key}: the key of the entry a read names
)

// ref is a compiled placeholder.
type ref struct {
	src  refSource
	arg  *param    // srcArg
	rest []string  // srcArg, srcPrior: fields below the value
	path *pathExpr // srcBinding, srcState
	t    *typ      // its static type (anyType when unknown)
	text string
}

// pathExpr is a compiled path.
type pathExpr struct {
	bind *binding // the read the path starts from; nil: the state's root
	segs []*tmpl
	// types[i] is the type at the i-th segment of the evaluated path
	// (the read's own segments included).
	types []*typ
	t     *typ   // the type at the path
	field *field // the object field the last segment names, if any
	// parent is the type of the container the last segment is in.
	parent *typ
	src    string
}

// rawSegment splits a template into literal text and placeholder names.
type rawPart struct {
	lit  string
	name []string // a placeholder's dotted names; nil for a literal
}

var nameRune = func(r rune) bool {
	return r == '_' || r == '-' || r == '$' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
}

func splitTemplate(s string) ([]rawPart, error) {
	var out []rawPart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, rawPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '}':
			return nil, fmt.Errorf("unmatched } (write }} for a literal brace)")
		case c == '{':
			end := strings.IndexByte(s[i+1:], '}')
			if end < 0 {
				return nil, fmt.Errorf("unclosed { (write {{ for a literal brace)")
			}
			inner := s[i+1 : i+1+end]
			if strings.Contains(inner, "{") {
				return nil, fmt.Errorf("a placeholder holds no other placeholder: name the entry as a read first (reads: {entry: \"items.{id}\"}) and write {entry.field}")
			}
			names := strings.Split(inner, ".")
			for _, n := range names {
				if n == "" || strings.IndexFunc(n, func(r rune) bool { return !nameRune(r) }) >= 0 {
					return nil, fmt.Errorf("{%s}: a placeholder is a name and fields below it, separated by dots", inner)
				}
			}
			flush()
			out = append(out, rawPart{name: names})
			i += end + 1
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	if len(out) == 0 {
		out = append(out, rawPart{lit: ""})
	}
	return out, nil
}

// splitPath splits a path on the dots outside placeholders.
func splitPath(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("an empty path")
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
		case '.':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	out = append(out, s[start:])
	for _, seg := range out {
		if seg == "" {
			return nil, fmt.Errorf("path %q has an empty segment", s)
		}
	}
	return out, nil
}

// scope is what a template may name where it is compiled.
type scope struct {
	p     *parser
	def   *Def
	tool  *tool
	binds []*binding
	prior *tool // inside a status block: the write it answers about
}

func (s *scope) binding(name string) *binding {
	for _, b := range s.binds {
		if b.name == name {
			return b
		}
	}
	return nil
}

func (s *scope) names() string {
	var parts []string
	if len(s.tool.params) > 0 {
		var a []string
		for _, p := range s.tool.params {
			a = append(a, p.name)
		}
		parts = append(parts, "arguments: "+strings.Join(a, ", "))
	}
	if len(s.binds) > 0 {
		var r []string
		for _, b := range s.binds {
			r = append(r, b.name)
		}
		parts = append(parts, "reads: "+strings.Join(r, ", "))
	}
	if s.prior != nil {
		parts = append(parts, "prior")
	}
	parts = append(parts, "state: "+s.def.root.fieldNames())
	return strings.Join(parts, "; ")
}

// template compiles a template string at node n.
func (s *scope) template(n *yaml.Node, at, src string) (*tmpl, bool) {
	return s.templateIn(n, at, src, src)
}

// templateIn compiles src, a part of the string whole (a path's segment),
// naming whole in errors.
func (s *scope) templateIn(n *yaml.Node, at, src, whole string) (*tmpl, bool) {
	raw, err := splitTemplate(src)
	if err != nil {
		s.p.errorf(n, at, "%q: %v", whole, err)
		return nil, false
	}
	t := &tmpl{src: src}
	ok := true
	for _, r := range raw {
		if r.name == nil {
			t.parts = append(t.parts, tpart{lit: r.lit})
			continue
		}
		rf, err := s.ref(r.name)
		if err != nil {
			s.p.errorf(n, at, "%q: {%s}: %v", whole, strings.Join(r.name, "."), err)
			ok = false
			continue
		}
		t.parts = append(t.parts, tpart{ref: rf})
	}
	return t, ok
}

// ref resolves a placeholder's names.
func (s *scope) ref(names []string) (*ref, error) {
	root, rest := names[0], names[1:]
	text := strings.Join(names, ".")
	for i, n := range names {
		if strings.HasPrefix(n, "$") && (n != "$key" || i != len(names)-1 || i != 1 || s.binding(root) == nil) {
			return nil, fmt.Errorf("%s: only a read has a $key (the key of the entry it names: {READ.$key})", n)
		}
	}
	if b := s.binding(root); b != nil {
		if len(rest) == 1 && rest[0] == "$key" {
			return &ref{src: srcKey, path: &pathExpr{bind: b, types: b.types, t: b.t, src: b.name}, t: &typ{kind: kString}, text: text}, nil
		}
		pe, err := s.typePath(b, b.types, b.t, literalSegs(rest), text)
		if err != nil {
			return nil, err
		}
		return &ref{src: srcBinding, path: pe, t: pe.t, text: text}, nil
	}
	if a, ok := s.tool.byParam[root]; ok {
		t := a.t
		if len(rest) > 0 {
			if a.t.kind != kObject && a.t.kind != kAny {
				return nil, fmt.Errorf("argument %s is %s; it has no field %q", root, a.t.describe(), rest[0])
			}
			t = anyType
		}
		return &ref{src: srcArg, arg: a, rest: rest, t: t, text: text}, nil
	}
	if root == "prior" && s.prior != nil {
		if len(rest) == 0 {
			return &ref{src: srcPrior, t: &typ{kind: kMap, elem: anyType}, text: text}, nil
		}
		if keys := s.prior.returnKeys; keys != nil && !keys[rest[0]] {
			return nil, fmt.Errorf("%s returns no field %q (it returns: %s)", s.prior.meta.Name, rest[0], strings.Join(sortedSet(keys), ", "))
		}
		return &ref{src: srcPrior, rest: rest, t: anyType, text: text}, nil
	}
	if _, ok := s.def.root.byName[root]; ok {
		pe, err := s.typePath(nil, nil, s.def.root, literalSegs(names), text)
		if err != nil {
			return nil, err
		}
		return &ref{src: srcState, path: pe, t: pe.t, text: text}, nil
	}
	return nil, fmt.Errorf("%q is not an argument, a read or a state field (%s)", root, s.names())
}

func literalSegs(names []string) []*tmpl {
	out := make([]*tmpl, len(names))
	for i, n := range names {
		out[i] = &tmpl{parts: []tpart{{lit: n}}, src: n}
	}
	return out
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// path compiles a path string at node n: its segments, typed against the
// state schema from its root (a read, or the state).
func (s *scope) path(n *yaml.Node, at, src string) (*pathExpr, bool) {
	raw, err := splitPath(src)
	if err != nil {
		s.p.errorf(n, at, "%v", err)
		return nil, false
	}
	var segs []*tmpl
	ok := true
	for _, r := range raw {
		t, tok := s.templateIn(n, at, r, src)
		ok = ok && tok
		segs = append(segs, t)
	}
	if !ok {
		return nil, false
	}
	var (
		bind  *binding
		types []*typ
		from  = s.def.root
	)
	if lit, isLit := segs[0].literal(); isLit {
		if b := s.binding(lit); b != nil {
			bind, types, from, segs = b, b.types, b.t, segs[1:]
		}
	}
	pe, err := s.typePath(bind, types, from, segs, src)
	if err != nil {
		s.p.errorf(n, at, "path %q does not resolve against the state schema: %v", src, err)
		return nil, false
	}
	return pe, true
}

// typePath types segments below a root of type from.
func (s *scope) typePath(bind *binding, prefix []*typ, from *typ, segs []*tmpl, src string) (*pathExpr, error) {
	pe := &pathExpr{bind: bind, segs: segs, types: slices.Clone(prefix), t: from, src: src}
	where := "the state"
	if bind != nil {
		where = bind.name
	}
	for _, seg := range segs {
		cur := pe.t
		pe.parent, pe.field = cur, nil
		switch cur.kind {
		case kObject:
			name, isLit := seg.literal()
			if !isLit {
				return nil, fmt.Errorf("%s is an object (fields: %s): a placeholder {…} names an entry of a map, not a field", where, cur.fieldNames())
			}
			f, ok := cur.byName[name]
			if !ok {
				return nil, fmt.Errorf("%s has no field %q (fields: %s)", where, name, cur.fieldNames())
			}
			pe.t, pe.field = f.t, f
		case kMap:
			pe.t = cur.elem
		case kList:
			if name, isLit := seg.literal(); isLit {
				if _, err := strconv.Atoi(name); err != nil {
					return nil, fmt.Errorf("%s is a list: %q is not an index", where, name)
				}
			}
			pe.t = cur.elem
		case kAny:
			pe.t = anyType
		default:
			return nil, fmt.Errorf("%s is %s; it has no field %q", where, cur.describe(), seg.src)
		}
		pe.types = append(pe.types, pe.t)
		where = where + "." + seg.src
	}
	return pe, nil
}

// ---- values ----

// expr is a value: a literal, a template, an object or list of values, a
// conditional, a count or the keys of a map.
type expr interface {
	// eval returns the value, or false when it is missing (a placeholder
	// naming an argument not given, an entry that does not exist).
	eval(c *call) (any, bool)
	// static is the value's type as far as it is known when loading.
	static() *typ
}

type litExpr struct {
	v any
	t *typ
}

func (e *litExpr) eval(*call) (any, bool) { return clone(e.v), true }
func (e *litExpr) static() *typ           { return e.t }

type tmplExpr struct{ t *tmpl }

func (e *tmplExpr) eval(c *call) (any, bool) {
	if r := e.t.single(); r != nil {
		v, ok := c.ref(r)
		return clone(v), ok
	}
	return c.text(e.t), true
}

func (e *tmplExpr) static() *typ {
	if r := e.t.single(); r != nil {
		return r.t
	}
	return &typ{kind: kString}
}

type objExpr struct {
	keys []string
	vals []expr
}

func (e *objExpr) eval(c *call) (any, bool) {
	out := make(map[string]any, len(e.keys))
	for i, k := range e.keys {
		if v, ok := e.vals[i].eval(c); ok {
			out[k] = v
		}
	}
	return out, true
}

func (e *objExpr) static() *typ { return &typ{kind: kMap, elem: anyType} }

type listExpr struct{ items []expr }

func (e *listExpr) eval(c *call) (any, bool) {
	out := make([]any, 0, len(e.items))
	for _, it := range e.items {
		if v, ok := it.eval(c); ok {
			out = append(out, v)
		}
	}
	return out, true
}

func (e *listExpr) static() *typ { return &typ{kind: kList, elem: anyType} }

type ifExpr struct {
	conds []*cond
	then  expr
	els   expr // nil: missing
}

func (e *ifExpr) eval(c *call) (any, bool) {
	if c.all(e.conds) {
		return e.then.eval(c)
	}
	if e.els == nil {
		return nil, false
	}
	return e.els.eval(c)
}

func (e *ifExpr) static() *typ { return e.then.static() }

// queryExpr counts, or lists the keys of, the entries of a map that match.
type queryExpr struct {
	in    *pathExpr
	where []where
	keys  bool
}

type where struct {
	field []string
	value expr
}

func (e *queryExpr) eval(c *call) (any, bool) {
	keys := c.matching(e.in, e.where)
	if e.keys {
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = k
		}
		return out, true
	}
	return int64(len(keys)), true
}

func (e *queryExpr) static() *typ {
	if e.keys {
		return &typ{kind: kList, elem: &typ{kind: kString}}
	}
	return &typ{kind: kInteger}
}

// expr compiles a value node.
func (s *scope) expr(n *yaml.Node, at string) (expr, bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			t, ok := s.template(n, at, n.Value)
			if !ok {
				return nil, false
			}
			if lit, isLit := t.literal(); isLit {
				return &litExpr{v: lit, t: &typ{kind: kString}}, true
			}
			return &tmplExpr{t: t}, true
		}
		v, ok := s.p.value(n, at)
		if !ok {
			return nil, false
		}
		return &litExpr{v: v, t: literalType(v)}, true
	case yaml.SequenceNode:
		e := &listExpr{}
		ok := true
		for i, c := range n.Content {
			x, xok := s.expr(c, fmt.Sprintf("%s[%d]", at, i))
			ok = ok && xok
			e.items = append(e.items, x)
		}
		return e, ok
	case yaml.MappingNode:
		switch {
		case find(n, "if") != nil && onlyKeys(n, "if", "then", "else"):
			return s.ifExpr(n, at)
		case (find(n, "count") != nil || find(n, "keys") != nil) && onlyKeys(n, "count", "keys", "where"):
			return s.query(n, at)
		}
		return s.object(n, at)
	}
	s.p.errorf(n, at, "unsupported value")
	return nil, false
}

// onlyKeys reports whether a mapping's keys are all among keys: a
// conditional ({if, then, else}) or a query ({count|keys, where}) is
// written with these alone; any other key makes the mapping an object.
func onlyKeys(n *yaml.Node, keys ...string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !slices.Contains(keys, n.Content[i].Value) {
			return false
		}
	}
	return true
}

// object compiles a mapping whose keys are the fields of an object value
// (a tool's returns: the fields of its result).
func (s *scope) object(n *yaml.Node, at string) (*objExpr, bool) {
	e := &objExpr{}
	ok := true
	for _, pr := range s.p.mapping(n, at, nil) {
		x, xok := s.expr(pr.v, pr.at)
		ok = ok && xok
		e.keys = append(e.keys, pr.key)
		e.vals = append(e.vals, x)
	}
	return e, ok
}

func literalType(v any) *typ {
	switch v.(type) {
	case string:
		return &typ{kind: kString}
	case int64:
		return &typ{kind: kInteger}
	case float64:
		return &typ{kind: kNumber}
	case bool:
		return &typ{kind: kBoolean}
	}
	return anyType
}

func (s *scope) ifExpr(n *yaml.Node, at string) (expr, bool) {
	e := &ifExpr{}
	ok := true
	for _, pr := range s.p.mapping(n, at, []string{"if", "then", "else"}) {
		var xok bool
		switch pr.key {
		case "if":
			e.conds, xok = s.conds(pr.v, pr.at, false)
		case "then":
			e.then, xok = s.expr(pr.v, pr.at)
		case "else":
			e.els, xok = s.expr(pr.v, pr.at)
		}
		ok = ok && xok
	}
	if e.then == nil && ok {
		s.p.errorf(n, at, "then: required")
		ok = false
	}
	return e, ok
}

func (s *scope) query(n *yaml.Node, at string) (expr, bool) {
	e := &queryExpr{}
	ok := true
	for _, pr := range s.p.mapping(n, at, []string{"count", "keys", "where"}) {
		switch pr.key {
		case "count", "keys":
			if e.in != nil {
				s.p.errorf(pr.k, pr.at, "count and keys exclude each other")
				ok = false
				continue
			}
			e.keys = pr.key == "keys"
			e.in, ok = s.mapPath(pr.v, pr.at)
		case "where":
			var wok bool
			e.where, wok = s.where(pr.v, pr.at, e.in)
			ok = ok && wok
		}
	}
	return e, ok
}

// mapPath compiles a path that must name a map.
func (s *scope) mapPath(n *yaml.Node, at string) (*pathExpr, bool) {
	src, ok := s.p.nonEmpty(n, at)
	if !ok {
		return nil, false
	}
	pe, ok := s.path(n, at, src)
	if !ok {
		return nil, false
	}
	if pe.t.kind != kMap && pe.t.kind != kAny {
		s.p.errorf(n, at, "%q is %s, not a map to search", src, pe.t.describe())
		return nil, false
	}
	return pe, true
}

// where compiles the field conditions of a search: each field of an entry
// (a dotted path below it) equals the value.
func (s *scope) where(n *yaml.Node, at string, in *pathExpr) ([]where, bool) {
	var out []where
	ok := true
	for _, pr := range s.p.mapping(n, at, nil) {
		names := strings.Split(pr.key, ".")
		if in != nil && in.t.kind == kMap {
			if _, err := s.typePath(nil, nil, in.t.elem, literalSegs(names), pr.key); err != nil {
				s.p.errorf(pr.k, pr.at, "the entries of %s: %v", in.src, err)
				ok = false
			}
		}
		v, vok := s.expr(pr.v, pr.at)
		ok = ok && vok
		out = append(out, where{field: names, value: v})
	}
	return out, ok
}

// ---- conditions ----

type condOp uint8

const (
	opExists condOp = iota
	opAbsent
	opGiven
	opNotGiven
	opEquals
	opNotEquals
	opAtLeast
	opAtMost
	opLess
	opGreater
)

var comparisons = map[string]condOp{
	"equals": opEquals, "not_equals": opNotEquals, "at_least": opAtLeast,
	"at_most": opAtMost, "less_than": opLess, "greater_than": opGreater,
}

// cond is a condition: of a case (when), a conditional value (if) or a
// precondition, which also names the error it answers.
type cond struct {
	op      condOp
	path    *pathExpr // exists, absent, or the subject of a comparison
	subject expr      // value: the subject of a comparison
	arg     *param    // given, not_given
	want    expr
	// A precondition's answer when it does not hold.
	code      string
	retryable bool
	message   *tmpl
}

// Default errors of the precondition kinds.
func defaultCode(op condOp) string {
	switch op {
	case opExists:
		return "NOT_FOUND"
	case opGiven, opNotGiven:
		return "INVALID_INPUT"
	}
	return "CONFLICT"
}

// conds compiles one condition or a list of them (all must hold).
func (s *scope) conds(n *yaml.Node, at string, precondition bool) ([]*cond, bool) {
	var out []*cond
	ok := true
	items := s.p.sequence(n, at, true)
	for i, c := range items {
		cat := at
		if n.Kind == yaml.SequenceNode {
			cat = fmt.Sprintf("%s[%d]", at, i)
		}
		x, xok := s.cond(c, cat, precondition)
		ok = ok && xok
		if x != nil {
			out = append(out, x)
		}
	}
	return out, ok
}

var condKeys = []string{"exists", "absent", "given", "not_given", "path", "value", "equals", "not_equals", "at_least", "at_most", "less_than", "greater_than"}
var preconditionKeys = append(slices.Clone(condKeys), "error", "message", "retryable")

func (s *scope) cond(n *yaml.Node, at string, precondition bool) (*cond, bool) {
	known := condKeys
	if precondition {
		known = preconditionKeys
	}
	c := &cond{}
	ok := true
	kinds := 0
	var msg *yaml.Node
	for _, pr := range s.p.mapping(n, at, known) {
		if pr.key == "message" {
			msg = pr.v
			continue
		}
		kind, fok := s.condField(c, pr)
		if kind {
			kinds++
		}
		ok = ok && fok
	}
	if !ok || !s.checkCond(c, n, at, kinds) {
		return nil, false
	}
	if c.code == "" {
		c.code = defaultCode(c.op)
	}
	if msg != nil {
		src, sok := s.p.str(msg, join(at, "message"))
		if sok {
			c.message, sok = s.template(msg, join(at, "message"), src)
		}
		if !sok {
			return nil, false
		}
	}
	return c, true
}

// condField reads one field of a condition into c; kind reports whether
// the field says what the condition is (exists, given, equals, ...).
func (s *scope) condField(c *cond, pr pair) (kind, ok bool) {
	switch pr.key {
	case "exists", "absent", "path":
		if pr.key != "path" {
			kind, c.op = true, map[string]condOp{"exists": opExists, "absent": opAbsent}[pr.key]
		}
		src, ok := s.p.nonEmpty(pr.v, pr.at)
		if ok {
			c.path, ok = s.path(pr.v, pr.at, src)
		}
		return kind, ok
	case "given", "not_given":
		c.op = map[string]condOp{"given": opGiven, "not_given": opNotGiven}[pr.key]
		name, ok := s.p.nonEmpty(pr.v, pr.at)
		if ok {
			if c.arg = s.tool.byParam[name]; c.arg == nil {
				s.p.errorf(pr.v, pr.at, "%q is not an argument of %s", name, s.tool.meta.Name)
				ok = false
			}
		}
		return true, ok
	case "value":
		var ok bool
		c.subject, ok = s.expr(pr.v, pr.at)
		return false, ok
	case "error":
		code, ok := s.p.nonEmpty(pr.v, pr.at)
		if ok && !validCode(code) {
			s.p.errorf(pr.v, pr.at, "%q: an error code is upper case letters, digits and underscores (NOT_FOUND, CONFLICT, INVALID_INPUT, ...)", code)
			ok = false
		}
		c.code = code
		return false, ok
	case "retryable":
		var ok bool
		c.retryable, ok = s.p.boolean(pr.v, pr.at)
		return false, ok
	}
	c.op = comparisons[pr.key]
	var ok2 bool
	c.want, ok2 = s.expr(pr.v, pr.at)
	return true, ok2
}

// checkCond checks that a condition says one thing, with what it needs.
func (s *scope) checkCond(c *cond, n *yaml.Node, at string, kinds int) bool {
	compare := c.op >= opEquals
	switch {
	case kinds != 1:
		s.p.errorf(n, at, "a condition is one of exists, absent, given, not_given, or a path (or value) with one of equals, not_equals, at_least, at_most, less_than, greater_than")
		return false
	case compare && (c.path == nil) == (c.subject == nil):
		s.p.errorf(n, at, "a comparison needs its subject: path: (a state path) or value: (a value)")
		return false
	case !compare && c.subject != nil:
		s.p.errorf(n, at, "value: is the subject of a comparison (equals, ...)")
		return false
	case (c.op == opGiven || c.op == opNotGiven) && c.path != nil:
		s.p.errorf(n, at, "given names an argument; path: is for comparisons")
		return false
	}
	if compare && c.op >= opAtLeast {
		for _, t := range []*typ{c.subjectType(), c.want.static()} {
			if t.kind != kInteger && t.kind != kNumber && t.kind != kAny {
				s.p.errorf(n, at, "an order comparison needs numbers; this compares %s", t.describe())
				return false
			}
		}
	}
	return true
}

func (c *cond) subjectType() *typ {
	if c.path != nil {
		return c.path.t
	}
	return c.subject.static()
}

func validCode(code string) bool {
	for i, r := range code {
		if !(('A' <= r && r <= 'Z') || r == '_' || (i > 0 && '0' <= r && r <= '9')) {
			return false
		}
	}
	return code != ""
}
