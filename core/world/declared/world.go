package declared

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"rebound/core/harness"
)

// World is one trial's declared world: the state document and the results
// of keyed calls (the world's idempotency memory, which its status tools
// answer from). It implements harness.World.
type World struct {
	def   *Def
	state map[string]any
	keys  []map[string]*remembered // by tool index
}

// remembered is the first result of a keyed call, with its arguments.
type remembered struct {
	data  map[string]any
	args  []any
	given []bool
}

// New builds a world: the file's initial state with the scenario's initial
// state merged over it (mappings merge, anything else replaces), checked
// against the state schema.
func (d *Def) New(initial map[string]any) (*World, error) {
	var merged map[string]any
	switch {
	case d.rawInitial == nil:
		merged = initial
	case len(initial) == 0:
		merged = d.rawInitial
	default:
		merged = mergeInto(clone(d.rawInitial).(map[string]any), initial)
	}
	if merged == nil {
		merged = map[string]any{}
	}
	st, err := d.root.normalize(merged, "")
	if err != nil {
		ie := &InitialError{World: d.Name, Msg: err.Error()}
		if ve, ok := err.(*valueError); ok {
			ie.Path, ie.Msg = ve.at, ve.msg
		}
		return nil, ie
	}
	return &World{def: d, state: st.(map[string]any), keys: make([]map[string]*remembered, len(d.tools))}, nil
}

// InitialError is an initial state that does not fit the world's state
// schema, at a path within it (lint locates it in the scenario's initial:).
type InitialError struct {
	World string
	Path  string // "orders.A-1.amount_cents"; empty for the whole state
	Msg   string
}

func (e *InitialError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("world %s: initial state: %s", e.World, e.Msg)
	}
	return fmt.Sprintf("world %s: initial state: %s: %s", e.World, e.Path, e.Msg)
}

func mergeInto(base, over map[string]any) map[string]any {
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = mergeInto(bm, om)
				continue
			}
		}
		base[k] = v
	}
	return base
}

// Tools implements harness.World.
func (w *World) Tools() []harness.Tool { return w.def.catalog }

// State implements harness.World: the state document as JSON reads it.
func (w *World) State() map[string]any {
	return stateJSON(w.def.root, w.state).(map[string]any)
}

// call is one invocation in progress.
type call struct {
	w       *World
	t       *tool
	args    []any
	given   []bool
	found   [][]string
	foundOK []bool
	prior   map[string]any
}

func invalid(format string, args ...any) *harness.ToolError {
	return harness.Errorf(harness.CodeInvalidInput, format, args...)
}

// Invoke implements harness.World: the arguments are checked against the
// tool's schema (INVALID_INPUT), a repeated idempotency key replays the
// first result, then the first case whose conditions hold runs: its reads,
// its preconditions (the first that fails is the answer), its changes, its
// commit and its returns.
func (w *World) Invoke(name string, args map[string]any, fx harness.Effects) (map[string]any, *harness.ToolError) {
	t, ok := w.def.byName[name]
	if !ok {
		return nil, harness.Errorf(harness.CodeToolUnavailable, "%s has no method %q", w.def.Name, name)
	}
	c := &call{w: w, t: t, args: make([]any, len(t.params)), given: make([]bool, len(t.params))}
	if err := c.readArgs(args); err != nil {
		return nil, err
	}
	var key string
	if t.key != nil && c.given[t.key.idx] {
		key = c.args[t.key.idx].(string)
		if r := w.keys[t.idx][key]; r != nil {
			if t.conflict && !c.sameArgs(r) {
				return nil, harness.Errorf(harness.CodeConflict, "%s %q was already used with different arguments; use a new key for a new request", t.key.name, key)
			}
			return r.data, nil
		}
	}
	c.found, c.foundOK = make([][]string, t.nbind), make([]bool, t.nbind)
	for _, b := range t.cases {
		if !c.all(b.when) {
			continue
		}
		data, err := c.run(b, fx)
		if err != nil {
			return nil, err
		}
		if key != "" {
			if w.keys[t.idx] == nil {
				w.keys[t.idx] = map[string]*remembered{}
			}
			w.keys[t.idx][key] = &remembered{data: data, args: c.args, given: c.given}
		}
		return data, nil
	}
	msg := fmt.Sprintf("no case of %s matches these arguments", name)
	if t.otherwiseMessage != nil {
		msg = c.text(t.otherwiseMessage)
	}
	return nil, &harness.ToolError{Code: t.otherwiseCode, Message: msg}
}

// readArgs checks the declared arguments the way a real API validates its
// input; arguments the tool does not declare are ignored, and an optional
// string given empty counts as not given.
func (c *call) readArgs(args map[string]any) *harness.ToolError {
	for i, p := range c.t.params {
		v, ok := args[p.name]
		if !ok || v == nil {
			if p.required {
				return invalid("missing required argument %q", p.name)
			}
			continue
		}
		switch p.t.kind {
		case kString:
			s, ok := v.(string)
			if !ok {
				return invalid("argument %q must be a string", p.name)
			}
			if s == "" {
				if p.required {
					return invalid("argument %q must not be empty", p.name)
				}
				continue
			}
			if len(p.t.enum) > 0 && !slices.Contains(p.t.enum, s) {
				return invalid("argument %q must be one of %s", p.name, strings.Join(p.t.enum, ", "))
			}
			v = s
		case kInteger:
			n, ok := asInteger(v)
			if !ok {
				return invalid("argument %q must be an integer", p.name)
			}
			v = n
		case kNumber:
			f, ok := asNumber(v)
			if !ok {
				return invalid("argument %q must be a number", p.name)
			}
			v = f
		case kBoolean:
			if _, ok := v.(bool); !ok {
				return invalid("argument %q must be true or false", p.name)
			}
		case kMap:
			if _, ok := v.(map[string]any); !ok {
				return invalid("argument %q must be an object", p.name)
			}
		}
		c.args[i], c.given[i] = v, true
	}
	return nil
}

func (c *call) sameArgs(r *remembered) bool {
	for i := range c.args {
		if i == c.t.key.idx {
			continue
		}
		if c.given[i] != r.given[i] || (c.given[i] && !equal(c.args[i], r.args[i])) {
			return false
		}
	}
	return true
}

// run executes one body.
func (c *call) run(b *body, fx harness.Effects) (map[string]any, *harness.ToolError) {
	for _, bd := range b.binds {
		if bd.find == nil {
			continue
		}
		base, ok := c.evalPath(bd.find)
		if !ok {
			continue
		}
		keys := c.matching(bd.find, bd.where)
		if len(keys) == 0 {
			continue
		}
		k := keys[0]
		if bd.last {
			k = keys[len(keys)-1]
		}
		c.found[bd.idx], c.foundOK[bd.idx] = append(base, k), true
	}
	for _, pc := range b.pre {
		if !c.holds(pc) {
			msg := c.defaultMessage(pc)
			if pc.message != nil {
				msg = c.text(pc.message)
			}
			return nil, &harness.ToolError{Code: pc.code, Retryable: pc.retryable, Message: msg}
		}
	}
	if st := b.status; st != nil {
		if !c.given[st.key.idx] {
			return nil, invalid("missing required argument %q", st.key.name)
		}
		r := c.w.keys[st.of.idx][c.args[st.key.idx].(string)]
		if r == nil {
			return map[string]any{harness.ReconcileStatus: harness.ReconcileNotFound}, nil
		}
		c.prior = r.data
		out := map[string]any{}
		if st.returns != nil {
			v, _ := st.returns.eval(c)
			out = v.(map[string]any)
		}
		out[harness.ReconcileStatus] = st.landed
		return out, nil
	}
	changed := false
	for _, o := range b.changes {
		ch, err := c.apply(o)
		if err != nil {
			return nil, err
		}
		changed = changed || ch
	}
	if b.commit != nil && fx != nil && (c.t.meta.Effect != harness.EffectIdempotent || changed) {
		fx.Commit(c.text(b.commit.kind), c.text(b.commit.intent), c.text(b.commit.object))
	}
	if b.returns == nil {
		return map[string]any{}, nil
	}
	v, _ := b.returns.eval(c)
	return v.(map[string]any), nil
}

// ref evaluates a placeholder.
func (c *call) ref(r *ref) (any, bool) {
	switch r.src {
	case srcArg:
		if !c.given[r.arg.idx] {
			return nil, false
		}
		return below(c.args[r.arg.idx], r.rest)
	case srcPrior:
		if c.prior == nil {
			return nil, false
		}
		return below(c.prior, r.rest)
	case srcKey:
		p, ok := c.evalPath(r.path)
		if !ok || len(p) == 0 {
			return nil, false
		}
		return p[len(p)-1], true
	}
	return c.get(r.path)
}

// below walks fields under a free-form value.
func below(v any, rest []string) (any, bool) {
	for _, k := range rest {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// text renders a template; a missing placeholder reads as nothing.
func (c *call) text(t *tmpl) string {
	if len(t.parts) == 1 && t.parts[0].ref == nil {
		return t.parts[0].lit
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref == nil {
			b.WriteString(p.lit)
			continue
		}
		if v, ok := c.ref(p.ref); ok {
			b.WriteString(text(v))
		}
	}
	return b.String()
}

// segment renders one path segment; a missing placeholder makes the path
// missing.
func (c *call) segment(t *tmpl) (string, bool) {
	if len(t.parts) == 1 && t.parts[0].ref == nil {
		return t.parts[0].lit, true
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref == nil {
			b.WriteString(p.lit)
			continue
		}
		v, ok := c.ref(p.ref)
		if !ok {
			return "", false
		}
		b.WriteString(text(v))
	}
	return b.String(), true
}

// evalPath renders a path; false when a placeholder or the read it starts
// from is missing.
func (c *call) evalPath(pe *pathExpr) ([]string, bool) {
	var out []string
	if b := pe.bind; b != nil {
		var base []string
		if b.find != nil {
			if !c.foundOK[b.idx] {
				return nil, false
			}
			base = c.found[b.idx]
		} else {
			var ok bool
			if base, ok = c.evalPath(b.path); !ok {
				return nil, false
			}
		}
		out = make([]string, len(base), len(base)+len(pe.segs))
		copy(out, base)
	} else {
		out = make([]string, 0, len(pe.segs))
	}
	for _, s := range pe.segs {
		seg, ok := c.segment(s)
		if !ok {
			return nil, false
		}
		out = append(out, seg)
	}
	return out, true
}

// lookup finds the value at a path: found, or (parentFound) the container
// it would be in exists.
func (w *World) lookup(p []string) (v any, found, parentFound bool) {
	cur := any(w.state)
	for i, seg := range p {
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return nil, false, i == len(p)-1
			}
			cur = next
		case []any:
			idx, err := strconv.Atoi(seg)
			if err != nil || idx < 0 || idx >= len(x) {
				return nil, false, false
			}
			cur = x[idx]
		default:
			return nil, false, false
		}
	}
	return cur, true, true
}

// get reads the value at a path; a declared field of an existing object
// that holds nothing reads as its default.
func (c *call) get(pe *pathExpr) (any, bool) {
	p, ok := c.evalPath(pe)
	if !ok {
		return nil, false
	}
	v, found, parent := c.w.lookup(p)
	if found {
		return v, true
	}
	if parent && pe.field != nil {
		return pe.field.initial()
	}
	return nil, false
}

// exists reports whether the path holds a value, as State shows it (an
// omit_empty field that is empty holds nothing).
func (c *call) exists(pe *pathExpr) bool {
	p, ok := c.evalPath(pe)
	if !ok {
		return false
	}
	v, found, _ := c.w.lookup(p)
	return found && v != nil && !(pe.field != nil && pe.field.omitEmpty && empty(v))
}

func (c *call) all(conds []*cond) bool {
	for _, x := range conds {
		if !c.holds(x) {
			return false
		}
	}
	return true
}

func (c *call) subject(x *cond) (any, bool) {
	if x.path != nil {
		return c.get(x.path)
	}
	return x.subject.eval(c)
}

func (c *call) holds(x *cond) bool {
	switch x.op {
	case opExists:
		return c.exists(x.path)
	case opAbsent:
		return !c.exists(x.path)
	case opGiven:
		return c.given[x.arg.idx]
	case opNotGiven:
		return !c.given[x.arg.idx]
	}
	a, aok := c.subject(x)
	b, _ := x.want.eval(c)
	switch x.op {
	case opEquals:
		return aok && equal(a, b)
	case opNotEquals:
		return !aok || !equal(a, b)
	}
	fa, ok1 := asNumber(a)
	fb, ok2 := asNumber(b)
	if !aok || !ok1 || !ok2 {
		return false
	}
	switch x.op {
	case opAtLeast:
		return fa >= fb
	case opAtMost:
		return fa <= fb
	case opLess:
		return fa < fb
	}
	return fa > fb
}

func (c *call) pathText(pe *pathExpr) string {
	if p, ok := c.evalPath(pe); ok {
		return strings.Join(p, ".")
	}
	return pe.src
}

func (c *call) defaultMessage(x *cond) string {
	switch x.op {
	case opExists:
		return "not found: " + c.pathText(x.path)
	case opAbsent:
		return "already exists: " + c.pathText(x.path)
	case opGiven:
		return fmt.Sprintf("missing required argument %q", x.arg.name)
	case opNotGiven:
		return fmt.Sprintf("argument %q is not accepted here", x.arg.name)
	}
	what := "the value"
	if x.path != nil {
		what = c.pathText(x.path)
	}
	a, _ := c.subject(x)
	b, _ := x.want.eval(c)
	rel := map[condOp]string{opEquals: "", opNotEquals: "not ", opAtLeast: "at least ", opAtMost: "at most ", opLess: "less than ", opGreater: "greater than "}[x.op]
	return fmt.Sprintf("%s is %s, expected %s%s", what, text(a), rel, text(b))
}

// matching lists, sorted, the keys of the entries of the map at in whose
// fields equal the where values.
func (c *call) matching(in *pathExpr, ws []where) []string {
	p, ok := c.evalPath(in)
	if !ok {
		return nil
	}
	v, found, _ := c.w.lookup(p)
	m, isMap := v.(map[string]any)
	if !found || !isMap {
		return nil
	}
	want := make([]any, len(ws))
	for i, w := range ws {
		want[i], _ = w.value.eval(c)
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		match := true
		for i, w := range ws {
			got, ok := below(m[k], w.field)
			if !ok || !equal(got, want[i]) {
				match = false
				break
			}
		}
		if match {
			out = append(out, k)
		}
	}
	return out
}

// container returns the container holding the last segment of p,
// creating the ones on the way (with their declared defaults) when create.
func (c *call) container(p []string, types []*typ, create bool) (any, error) {
	cur := any(c.w.state)
	for i, seg := range p[:len(p)-1] {
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok || next == nil {
				if !create {
					return nil, nil
				}
				t := anyType
				if i < len(types) {
					t = types[i]
				}
				switch t.kind {
				case kObject, kMap, kList:
					next = t.zero()
				case kAny:
					next = map[string]any{}
				default:
					return nil, fmt.Errorf("%s is %s", strings.Join(p[:i+1], "."), t.describe())
				}
				x[seg] = next
			}
			cur = next
		case []any:
			idx, err := strconv.Atoi(seg)
			if err != nil || idx < 0 || idx >= len(x) {
				return nil, fmt.Errorf("%s: no entry %s in a list of %d", strings.Join(p[:i], "."), seg, len(x))
			}
			cur = x[idx]
		default:
			return nil, fmt.Errorf("%s holds no fields", strings.Join(p[:i], "."))
		}
	}
	switch cur.(type) {
	case map[string]any, []any:
		return cur, nil
	}
	return nil, fmt.Errorf("%s holds no fields", strings.Join(p[:len(p)-1], "."))
}

// put stores v under the last segment of p in its container.
func put(cont any, seg string, v any) error {
	switch x := cont.(type) {
	case map[string]any:
		x[seg] = v
		return nil
	case []any:
		idx, err := strconv.Atoi(seg)
		if err != nil || idx < 0 || idx >= len(x) {
			return fmt.Errorf("no entry %s in a list of %d", seg, len(x))
		}
		x[idx] = v
		return nil
	}
	return fmt.Errorf("not a container")
}

// apply makes one change; changed reports whether the state moved. A
// change whose path or value is missing (an argument not given) changes
// nothing; one that does not fit the schema is INVALID_INPUT.
func (c *call) apply(o *op) (changed bool, _ *harness.ToolError) {
	p, ok := c.evalPath(o.path)
	if !ok {
		return false, nil
	}
	ch := &change{c: c, o: o, p: p, at: strings.Join(p, "."), t: o.path.t}
	var err error
	switch o.kind {
	case opSet:
		changed, err = ch.set()
	case opMerge:
		changed, err = ch.merge()
	case opAppend:
		changed, err = ch.append()
	case opIncrement:
		changed, err = ch.increment()
	case opDelete:
		changed = ch.delete()
	}
	if err != nil {
		return false, invalid("%s: %v", c.t.meta.Name, err)
	}
	return changed, nil
}

// change is one change being made, at its evaluated path.
type change struct {
	c  *call
	o  *op
	p  []string
	at string
	t  *typ
}

// value evaluates the change's value; false when it is missing.
func (ch *change) value() (any, bool) { return ch.o.value.eval(ch.c) }

// put stores v at the change's path, creating the containers on the way.
func (ch *change) put(v any) error {
	cont, err := ch.c.container(ch.p, ch.o.path.types, true)
	if err != nil {
		return err
	}
	return put(cont, ch.p[len(ch.p)-1], v)
}

func (ch *change) set() (bool, error) {
	v, ok := ch.value()
	if !ok {
		return false, nil
	}
	nv, err := ch.t.normalize(v, ch.at)
	if err != nil {
		return false, err
	}
	old, found, _ := ch.c.w.lookup(ch.p)
	if err := ch.put(nv); err != nil {
		return false, err
	}
	return !found || !equal(old, nv), nil
}

func (ch *change) merge() (bool, error) {
	v, ok := ch.value()
	if !ok {
		return false, nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		return false, fmt.Errorf("%s: a merge takes a mapping, got %s", ch.at, describeValue(v))
	}
	changed := false
	old, found, _ := ch.c.w.lookup(ch.p)
	target, isTarget := old.(map[string]any)
	if !found || !isTarget {
		if found && old != nil {
			return false, fmt.Errorf("%s holds %s, not a mapping to merge into", ch.at, describeValue(old))
		}
		target = map[string]any{}
		if ch.t.kind == kObject || ch.t.kind == kMap {
			target = ch.t.zero().(map[string]any)
		}
		if err := ch.put(target); err != nil {
			return false, err
		}
		changed = true
	}
	for _, k := range sortedKeys(m) {
		ft, err := ch.memberType(k)
		if err != nil {
			return false, err
		}
		nv, err := ft.normalize(m[k], join(ch.at, k))
		if err != nil {
			return false, err
		}
		if prev, ok := target[k]; !ok || !equal(prev, nv) {
			changed = true
		}
		target[k] = nv
	}
	return changed, nil
}

// memberType is the type of a field (or entry) k of the merged value.
func (ch *change) memberType(k string) (*typ, error) {
	switch ch.t.kind {
	case kObject:
		f, ok := ch.t.byName[k]
		if !ok {
			return nil, fmt.Errorf("%s has no field %q", ch.at, k)
		}
		return f.t, nil
	case kMap:
		return ch.t.elem, nil
	}
	return anyType, nil
}

func (ch *change) append() (bool, error) {
	v, ok := ch.value()
	if !ok {
		return false, nil
	}
	et := anyType
	if ch.t.kind == kList {
		et = ch.t.elem
	}
	nv, err := et.normalize(v, ch.at)
	if err != nil {
		return false, err
	}
	old, found, _ := ch.c.w.lookup(ch.p)
	list, isList := old.([]any)
	if found && old != nil && !isList {
		return false, fmt.Errorf("%s holds %s, not a list", ch.at, describeValue(old))
	}
	return true, ch.put(append(list, nv))
}

func (ch *change) increment() (bool, error) {
	var by any = int64(1)
	if ch.o.by != nil {
		v, ok := ch.o.by.eval(ch.c)
		if !ok {
			return false, nil
		}
		by = v
	}
	old, found, _ := ch.c.w.lookup(ch.p)
	if !found || old == nil {
		old = int64(0)
	}
	next, err := sum(ch.t, old, by, ch.at)
	if err != nil {
		return false, err
	}
	if err := ch.put(next); err != nil {
		return false, err
	}
	return !equal(old, next), nil
}

// sum adds by to old: integers stay integers (a field of type integer
// takes only integers), anything else adds as numbers.
func sum(t *typ, old, by any, at string) (any, error) {
	bi, byInt := asInteger(by)
	oi, oldInt := asInteger(old)
	_, oldIsInt := old.(int64)
	switch {
	case t.kind == kInteger:
		if !byInt || !oldInt {
			return nil, fmt.Errorf("%s: an integer is incremented by an integer, got %s", at, describeValue(by))
		}
		return oi + bi, nil
	case t.kind == kAny && oldIsInt && byInt:
		return oi + bi, nil
	}
	bf, ok1 := asNumber(by)
	of, ok2 := asNumber(old)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s holds %s, incremented by %s", at, describeValue(old), describeValue(by))
	}
	return of + bf, nil
}

func (ch *change) delete() bool {
	cont, err := ch.c.container(ch.p, ch.o.path.types, false)
	if err != nil || cont == nil {
		return false
	}
	m, isMap := cont.(map[string]any)
	if !isMap {
		return false
	}
	last := ch.p[len(ch.p)-1]
	if _, ok := m[last]; !ok {
		return false
	}
	delete(m, last)
	return true
}
