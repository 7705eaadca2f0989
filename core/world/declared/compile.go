// Package declared builds worlds from YAML: a team's tools and state,
// declared in one file a scenario names (world: ./worlds/desk.yaml), with
// the same semantics the built-in Go worlds have. The file holds the state
// schema and initial state, and every tool's metadata (effect, arguments,
// permission, documented errors, latency, deadline, cost, idempotency key,
// status tool) with its behaviour: what it reads and returns, the
// preconditions it checks with the error each answers, the changes it
// makes and the commit it reports. The language is documented in
// docs/worlds.md ("Declared worlds") and schema/world.schema.json.
//
// Parse checks a file completely (every template resolves against the
// schema, every status tool reconciles a write) and reports every problem
// at file:line:column; a Def then builds worlds fast: a trial pays for
// copying the initial state, never for reading the file.
package declared

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"rebound/core/harness"
	"rebound/internal/fileerr"
	"rebound/internal/strictyaml"
)

// Def is a compiled declared world.
type Def struct {
	// Name is the world's name, as the file gives it.
	Name       string
	root       *typ
	rawInitial map[string]any // the file's initial state, as written
	tools      []*tool
	byName     map[string]*tool
	catalog    []harness.Tool
}

// Tools is the world's catalog (shared: callers must not modify it).
func (d *Def) Tools() []harness.Tool { return d.catalog }

// param is one declared argument of a tool.
type param struct {
	name     string
	idx      int
	t        *typ
	required bool
}

// tool is a compiled tool.
type tool struct {
	idx     int
	meta    harness.Tool
	params  []*param
	byParam map[string]*param
	// key is the idempotency key argument of a conditional or idempotent
	// tool; a keyed call's result is remembered and replayed.
	key      *param
	conflict bool // key_reuse: conflict
	cases    []*body
	// otherwise answers a call no case matches.
	otherwiseCode    string
	otherwiseMessage *tmpl
	nbind            int
	// returnKeys are the fields its returns give, over every case (nil
	// when a case's returns is not a literal mapping).
	returnKeys map[string]bool
	node       *yaml.Node
	at         string
}

// body is what a tool (or one case of it) does.
type body struct {
	when    []*cond
	binds   []*binding
	pre     []*cond
	changes []*op
	commit  *commit
	returns *objExpr
	status  *status
	node    *yaml.Node
	at      string
}

// binding is one read: a name for a path into the state, or for the entry
// a search finds (resolved once, when the call starts).
type binding struct {
	name  string
	idx   int
	path  *pathExpr
	find  *pathExpr // the map searched
	where []where
	last  bool
	t     *typ
	types []*typ
}

type opKind uint8

const (
	opSet opKind = iota
	opMerge
	opAppend
	opIncrement
	opDelete
)

var opNames = map[string]opKind{"set": opSet, "merge": opMerge, "append": opAppend, "increment": opIncrement, "delete": opDelete}

type op struct {
	kind  opKind
	path  *pathExpr
	value expr
	by    expr
	at    string
}

type commit struct {
	kind, intent, object *tmpl
}

// status answers whether a keyed write landed: completed (or captured)
// with what the returns give, or not_found.
type status struct {
	of      *tool
	key     *param
	landed  string
	returns *objExpr
}

// Parse compiles a world file; file names it in errors. Every problem is
// reported, as fileerr.Errors.
func Parse(file string, data []byte) (*Def, error) {
	root, errs := strictyaml.Parse(file, data)
	if root == nil {
		return nil, errs
	}
	p := &parser{file: file, errs: errs}
	if len(root.Content) == 0 {
		p.errorf(&yaml.Node{Line: 1, Column: 1}, "", "empty document")
		return nil, p.errs
	}
	d := p.world(root.Content[0])
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(a, b fileerr.FieldError) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		})
		return nil, p.errs
	}
	return d, nil
}

var topKeys = []string{"name", "description", "state", "initial", "defaults", "tools"}

var toolKeys = []string{"name", "description", "effect", "permission", "args", "idempotency_key", "key_reuse", "reconciled_by",
	"errors", "latency_ms", "deadline_ms", "cost_usd", "stale_age_ms", "guards", "cases", "otherwise",
	"reads", "preconditions", "changes", "commit", "returns", "status"}

var bodyKeys = []string{"reads", "preconditions", "changes", "commit", "returns", "status"}

var defaultKeys = []string{"permission", "errors", "latency_ms", "deadline_ms", "cost_usd"}

func (p *parser) world(n *yaml.Node) *Def {
	d := &Def{byName: map[string]*tool{}, root: &typ{kind: kObject, byName: map[string]*field{}}}
	pairs := p.mapping(n, "", topKeys)
	get := func(key string) *pair {
		for i := range pairs {
			if pairs[i].key == key {
				return &pairs[i]
			}
		}
		return nil
	}
	if pr := get("name"); pr != nil {
		d.Name, _ = p.nonEmpty(pr.v, pr.at)
	} else if n.Kind == yaml.MappingNode {
		p.errorf(n, "name", "required: the world's name")
	}
	if pr := get("description"); pr != nil {
		p.str(pr.v, pr.at)
	}
	if pr := get("state"); pr != nil {
		if t, _ := p.objectType(pr.v, pr.at); t != nil {
			d.root = t
		}
	} else if n.Kind == yaml.MappingNode {
		p.errorf(n, "state", "required: the state schema")
	}
	if pr := get("initial"); pr != nil {
		if v, ok := p.value(pr.v, pr.at); ok && v != nil {
			m, isMap := v.(map[string]any)
			if !isMap {
				p.errorf(pr.v, pr.at, "expected a mapping (the state's starting document)")
			} else if _, err := d.root.normalize(m, ""); err != nil {
				p.errorf(pr.v, pr.at, "does not fit the state schema: %v", err)
			} else {
				d.rawInitial = m
			}
		}
	}
	defaults := harness.Tool{}
	if pr := get("defaults"); pr != nil {
		for _, dp := range p.mapping(pr.v, pr.at, defaultKeys) {
			p.toolMeta(&defaults, dp)
		}
	}
	pr := get("tools")
	if pr == nil {
		if n.Kind == yaml.MappingNode {
			p.errorf(n, "tools", "required: at least one tool")
		}
		return d
	}
	items := p.sequence(pr.v, pr.at, false)
	if len(items) == 0 && pr.v.Kind == yaml.SequenceNode {
		p.errorf(pr.v, pr.at, "at least one tool is required")
	}
	// First the metadata of every tool, so that a tool may name one
	// declared after it (reconciled_by, status.of).
	for i, tn := range items {
		t := p.toolHeader(d, defaults, tn, fmt.Sprintf("tools[%d]", i))
		if t == nil {
			continue
		}
		if _, dup := d.byName[t.meta.Name]; dup {
			p.errorf(find(tn, "name"), t.at+".name", "tool %q is declared twice", t.meta.Name)
			continue
		}
		t.idx = len(d.tools)
		d.tools = append(d.tools, t)
		d.byName[t.meta.Name] = t
	}
	for _, t := range d.tools {
		p.toolBody(d, t)
	}
	p.reconciliation(d)
	for _, t := range d.tools {
		d.catalog = append(d.catalog, t.meta)
	}
	return d
}

// toolMeta reads one metadata field shared by tools and defaults.
func (p *parser) toolMeta(t *harness.Tool, pr pair) bool {
	switch pr.key {
	case "permission":
		t.Permission, _ = p.str(pr.v, pr.at)
	case "errors":
		t.Errors = p.errorList(pr.v, pr.at)
	case "latency_ms":
		t.LatencyMs, _ = p.integer(pr.v, pr.at, 0)
	case "deadline_ms":
		t.DeadlineMs, _ = p.integer(pr.v, pr.at, 0)
	case "stale_age_ms":
		t.StaleAgeMs, _ = p.integer(pr.v, pr.at, 0)
	case "cost_usd":
		t.CostUSD, _ = p.number(pr.v, pr.at)
	case "guards": // a tool's own (defaults: take no guards key)
		for i, e := range p.sequence(pr.v, pr.at, false) {
			if s, ok := p.nonEmpty(e, fmt.Sprintf("%s[%d]", pr.at, i)); ok {
				t.Guards = append(t.Guards, s)
			}
		}
	default:
		return false
	}
	return true
}

// retryableCodes are the documented errors retryable unless a tool says
// otherwise.
var retryableCodes = map[string]bool{
	harness.CodeTimeout: true, harness.CodeTimeoutAfterSend: true, harness.CodeUnavailable: true,
	harness.CodeBadGateway: true, harness.CodeRateLimited: true,
}

func (p *parser) errorList(n *yaml.Node, at string) []harness.DocumentedError {
	out := []harness.DocumentedError{}
	seen := map[string]bool{}
	for i, e := range p.sequence(n, at, false) {
		eat := fmt.Sprintf("%s[%d]", at, i)
		var de harness.DocumentedError
		if e.Kind == yaml.ScalarNode {
			code, ok := p.nonEmpty(e, eat)
			if !ok {
				continue
			}
			de = harness.DocumentedError{Code: code, Retryable: retryableCodes[code]}
		} else {
			hasCode := false
			for _, pr := range p.mapping(e, eat, []string{"code", "retryable"}) {
				switch pr.key {
				case "code":
					de.Code, hasCode = p.nonEmpty(pr.v, pr.at)
				case "retryable":
					de.Retryable, _ = p.boolean(pr.v, pr.at)
				}
			}
			if !hasCode {
				p.errorf(e, eat+".code", "required")
				continue
			}
			if find(e, "retryable") == nil {
				de.Retryable = retryableCodes[de.Code]
			}
		}
		if !validCode(de.Code) {
			p.errorf(e, eat, "%q: an error code is upper case letters, digits and underscores", de.Code)
			continue
		}
		if seen[de.Code] {
			p.errorf(e, eat, "%s is listed twice", de.Code)
			continue
		}
		seen[de.Code] = true
		out = append(out, de)
	}
	return out
}

// toolHeader reads a tool's metadata and arguments.
func (p *parser) toolHeader(d *Def, defaults harness.Tool, n *yaml.Node, at string) *tool {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "expected a tool (a mapping with name, effect, ...), got %s", kindOf(n))
		return nil
	}
	t := &tool{byParam: map[string]*param{}, node: n, at: at}
	t.meta = harness.Tool{Permission: defaults.Permission, Errors: slices.Clone(defaults.Errors), LatencyMs: defaults.LatencyMs,
		DeadlineMs: defaults.DeadlineMs, CostUSD: defaults.CostUSD}
	var keyNode, reuseNode *yaml.Node
	for _, pr := range p.mapping(n, at, toolKeys) {
		if p.toolMeta(&t.meta, pr) {
			continue
		}
		switch pr.key {
		case "name":
			t.meta.Name, _ = p.nonEmpty(pr.v, pr.at)
		case "description":
			t.meta.Description, _ = p.str(pr.v, pr.at)
		case "effect":
			if s, ok := p.nonEmpty(pr.v, pr.at); ok {
				t.meta.Effect = harness.Effect(s)
				if !t.meta.Effect.Valid() {
					p.errorf(pr.v, pr.at, "%q: an effect is read, idempotent, conditional or write", s)
				}
			}
		case "args":
			p.params(t, pr.v, pr.at)
		case "idempotency_key":
			keyNode = pr.v
		case "key_reuse":
			reuseNode = pr.v
		case "reconciled_by":
			t.meta.ReconciledBy, _ = p.nonEmpty(pr.v, pr.at)
		}
	}
	if t.meta.Name == "" {
		if find(n, "name") == nil {
			p.errorf(n, at+".name", "required")
		}
		return nil
	}
	if t.meta.Effect == "" && find(n, "effect") == nil {
		p.errorf(n, at+".effect", "required: read, idempotent, conditional or write")
	}
	if keyNode != nil {
		if name, ok := p.nonEmpty(keyNode, at+".idempotency_key"); ok {
			switch k := t.byParam[name]; {
			case k == nil:
				p.errorf(keyNode, at+".idempotency_key", "%q is not an argument of %s", name, t.meta.Name)
			case k.t.kind != kString:
				p.errorf(keyNode, at+".idempotency_key", "the idempotency key %q must be a string argument", name)
			case t.meta.Effect != harness.EffectConditional && t.meta.Effect != harness.EffectIdempotent:
				p.errorf(keyNode, at+".idempotency_key", "only a conditional or idempotent tool takes an idempotency key (a %s tool %s)", t.meta.Effect,
					map[harness.Effect]string{harness.EffectRead: "changes nothing", harness.EffectWrite: "commits every call: make it conditional"}[t.meta.Effect])
			default:
				t.key, t.meta.IdempotencyKeyParam = k, name
			}
		}
	} else if t.meta.Effect == harness.EffectConditional {
		p.errorf(n, at+".idempotency_key", "a conditional tool names the argument that makes it idempotent")
	}
	if reuseNode != nil {
		if s, ok := p.nonEmpty(reuseNode, at+".key_reuse"); ok {
			switch {
			case s != "replay" && s != "conflict":
				p.errorf(reuseNode, at+".key_reuse", "%q: replay (a repeated key returns the first result) or conflict (and CONFLICT when the other arguments differ)", s)
			case t.key == nil:
				p.errorf(reuseNode, at+".key_reuse", "only a tool with an idempotency_key reuses keys")
			}
			t.conflict = s == "conflict"
		}
	}
	t.returnKeys = returnKeys(n)
	return t
}

// params reads a tool's argument schema: name -> type or {type, required,
// description, enum}.
func (p *parser) params(t *tool, n *yaml.Node, at string) {
	for _, pr := range p.mapping(n, at, nil) {
		pa := &param{name: pr.key, idx: len(t.params)}
		hp := harness.Param{Name: pr.key}
		if !validName(pr.key) {
			p.errorf(pr.k, pr.at, "an argument's name is letters, digits, _ and -")
			continue
		}
		if pr.key == "prior" {
			p.errorf(pr.k, pr.at, "prior is reserved (a status block's name for the write's result)")
			continue
		}
		typeName := ""
		if pr.v.Kind == yaml.ScalarNode {
			typeName, _ = p.nonEmpty(pr.v, pr.at)
		} else {
			for _, ap := range p.mapping(pr.v, pr.at, []string{"type", "required", "description", "enum"}) {
				switch ap.key {
				case "type":
					typeName, _ = p.nonEmpty(ap.v, ap.at)
				case "required":
					pa.required, _ = p.boolean(ap.v, ap.at)
				case "description":
					hp.Description, _ = p.str(ap.v, ap.at)
				case "enum":
					for i, e := range p.sequence(ap.v, ap.at, false) {
						if s, ok := p.str(e, fmt.Sprintf("%s[%d]", ap.at, i)); ok {
							hp.Enum = append(hp.Enum, s)
						}
					}
				}
			}
			if typeName == "" && find(pr.v, "type") == nil {
				p.errorf(pr.v, pr.at+".type", "required: string, integer, number, boolean or object")
			}
		}
		switch typeName {
		case "string":
			pa.t = &typ{kind: kString, enum: hp.Enum}
		case "integer":
			pa.t = &typ{kind: kInteger}
		case "number":
			pa.t = &typ{kind: kNumber}
		case "boolean":
			pa.t = &typ{kind: kBoolean}
		case "object":
			pa.t = &typ{kind: kMap, elem: anyType}
		case "":
			pa.t = anyType
		default:
			p.errorf(pr.v, pr.at, "%q: an argument is a string, integer, number, boolean or object", typeName)
			pa.t = anyType
		}
		if len(hp.Enum) > 0 && typeName != "string" {
			p.errorf(pr.v, pr.at, "enum lists the values of a string argument")
		}
		hp.Type, hp.Required = typeName, pa.required
		t.params = append(t.params, pa)
		t.byParam[pa.name] = pa
		t.meta.Params = append(t.meta.Params, hp)
	}
}

func validName(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return !nameRune(r) || r == '$' }) < 0
}

// returnKeys lists the fields a tool's returns give, over its cases.
func returnKeys(n *yaml.Node) map[string]bool {
	keys := map[string]bool{}
	add := func(body *yaml.Node) bool {
		if st := find(body, "status"); st != nil {
			keys[harness.ReconcileStatus] = true
			if r := find(st, "returns"); r != nil {
				if r.Kind != yaml.MappingNode {
					return false
				}
				for i := 0; i+1 < len(r.Content); i += 2 {
					keys[r.Content[i].Value] = true
				}
			}
		}
		r := find(body, "returns")
		if r == nil {
			return true
		}
		if r.Kind != yaml.MappingNode {
			return false
		}
		for i := 0; i+1 < len(r.Content); i += 2 {
			keys[r.Content[i].Value] = true
		}
		return true
	}
	if cs := find(n, "cases"); cs != nil && cs.Kind == yaml.SequenceNode {
		for _, c := range cs.Content {
			if !add(c) {
				return nil
			}
		}
		return keys
	}
	if !add(n) {
		return nil
	}
	return keys
}

// toolBody compiles what a tool does: its one body, or its cases.
func (p *parser) toolBody(d *Def, t *tool) {
	n := t.node
	cases := find(n, "cases")
	hasBody := false
	for _, k := range bodyKeys {
		if find(n, k) != nil {
			hasBody = true
		}
	}
	if other := find(n, "otherwise"); other != nil {
		if cases == nil {
			p.errorf(other, t.at+".otherwise", "otherwise answers a call no case matches: it needs cases")
		}
		sc := &scope{p: p, def: d, tool: t}
		for _, pr := range p.mapping(other, t.at+".otherwise", []string{"error", "message"}) {
			switch pr.key {
			case "error":
				if code, ok := p.nonEmpty(pr.v, pr.at); ok {
					if !validCode(code) {
						p.errorf(pr.v, pr.at, "%q: an error code is upper case letters, digits and underscores", code)
					}
					t.otherwiseCode = code
				}
			case "message":
				if s, ok := p.str(pr.v, pr.at); ok {
					t.otherwiseMessage, _ = sc.template(pr.v, pr.at, s)
				}
			}
		}
	}
	if t.otherwiseCode == "" {
		t.otherwiseCode = harness.CodeInvalidInput
	}
	switch {
	case cases != nil && hasBody:
		p.errorf(cases, t.at+".cases", "a tool either has cases or one body (reads, preconditions, changes, commit, returns, status), not both")
		return
	case cases != nil:
		items := p.sequence(cases, t.at+".cases", false)
		if len(items) == 0 && cases.Kind == yaml.SequenceNode {
			p.errorf(cases, t.at+".cases", "at least one case is required")
		}
		for i, cn := range items {
			at := fmt.Sprintf("%s.cases[%d]", t.at, i)
			if cn.Kind != yaml.MappingNode {
				p.errorf(cn, at, "expected a case (a mapping with when and a body), got %s", kindOf(cn))
				continue
			}
			if b := p.body(d, t, cn, at, true); b != nil {
				t.cases = append(t.cases, b)
			}
		}
	default:
		if b := p.body(d, t, n, t.at, false); b != nil {
			t.cases = []*body{b}
		}
	}
	for _, b := range t.cases {
		t.nbind = max(t.nbind, len(b.binds))
	}
}

// body compiles one body: of a tool (n is the tool) or of a case.
func (p *parser) body(d *Def, t *tool, n *yaml.Node, at string, isCase bool) *body {
	b := &body{node: n, at: at}
	sc := &scope{p: p, def: d, tool: t}
	if isCase {
		p.mapping(n, at, append([]string{"when"}, bodyKeys...)) // report unknown keys
		if w := find(n, "when"); w != nil {
			b.when, _ = sc.conds(w, at+".when", false)
		}
	}
	if r := find(n, "reads"); r != nil {
		p.reads(sc, b, r, at+".reads")
	}
	if pre := find(n, "preconditions"); pre != nil {
		items := p.sequence(pre, at+".preconditions", false)
		for i, c := range items {
			if x, ok := sc.cond(c, fmt.Sprintf("%s.preconditions[%d]", at, i), true); ok {
				b.pre = append(b.pre, x)
			}
		}
	}
	side := t.meta.Effect != harness.EffectRead
	if ch := find(n, "changes"); ch != nil {
		if !side {
			p.errorf(ch, at+".changes", "a read changes nothing: give %s the effect idempotent, conditional or write", t.meta.Name)
		}
		for i, c := range p.sequence(ch, at+".changes", false) {
			if o := p.change(sc, c, fmt.Sprintf("%s.changes[%d]", at, i)); o != nil {
				b.changes = append(b.changes, o)
			}
		}
	}
	if cm := find(n, "commit"); cm != nil {
		if !side {
			p.errorf(cm, at+".commit", "a read commits nothing")
		}
		b.commit = p.commit(sc, t, cm, at+".commit")
	} else if len(b.changes) > 0 && side {
		p.errorf(n, at+".commit", "%s changes the state: declare its commit (kind, intent), the business intent whose second commit is a duplicate side effect", t.meta.Name)
	}
	if st := find(n, "status"); st != nil {
		if side {
			p.errorf(st, at+".status", "a status tool is a read (effect: read)")
		}
		if find(n, "returns") != nil {
			p.errorf(st, at+".status", "a status block has its own returns; the body's returns would be ignored")
		}
		b.status = p.status(sc, t, st, at+".status")
	}
	if r := find(n, "returns"); r != nil {
		if r.Kind != yaml.MappingNode {
			p.errorf(r, at+".returns", "expected a mapping: the fields of the result")
		} else if e, ok := sc.object(r, at+".returns"); ok {
			b.returns = e
		}
	}
	return b
}

// reads compiles a body's bindings, in order: each may use the ones before.
func (p *parser) reads(sc *scope, b *body, n *yaml.Node, at string) {
	for _, pr := range p.mapping(n, at, nil) {
		name := pr.key
		switch {
		case !validName(name):
			p.errorf(pr.k, pr.at, "a read's name is letters, digits, _ and -")
			continue
		case sc.tool.byParam[name] != nil:
			p.errorf(pr.k, pr.at, "%q is an argument of %s: name the read otherwise", name, sc.tool.meta.Name)
			continue
		case sc.def.root.byName[name] != nil:
			p.errorf(pr.k, pr.at, "%q is a field of the state: name the read otherwise", name)
			continue
		case name == "prior":
			p.errorf(pr.k, pr.at, "prior is reserved (a status block's name for the write's result)")
			continue
		}
		bd := &binding{name: name, idx: len(sc.binds)}
		if pr.v.Kind == yaml.ScalarNode {
			src, ok := p.nonEmpty(pr.v, pr.at)
			if !ok {
				continue
			}
			pe, ok := sc.path(pr.v, pr.at, src)
			if !ok {
				continue
			}
			bd.path, bd.t, bd.types = pe, pe.t, pe.types
		} else {
			ok := true
			for _, fp := range p.mapping(pr.v, pr.at, []string{"find", "where", "pick"}) {
				switch fp.key {
				case "find":
					bd.find, ok = sc.mapPath(fp.v, fp.at)
				case "pick":
					if s, sok := p.nonEmpty(fp.v, fp.at); sok {
						if s != "first" && s != "last" {
							p.errorf(fp.v, fp.at, "%q: first or last (of the matching entries, by key)", s)
						}
						bd.last = s == "last"
					}
				}
			}
			if bd.find == nil {
				if ok && find(pr.v, "find") == nil {
					p.errorf(pr.v, pr.at+".find", "required: the map to search (or write the read as a path)")
				}
				continue
			}
			if w := find(pr.v, "where"); w != nil {
				bd.where, _ = sc.where(w, pr.at+".where", bd.find)
			}
			bd.t = anyType
			if bd.find.t.kind == kMap {
				bd.t = bd.find.t.elem
			}
			bd.types = append(slices.Clone(bd.find.types), bd.t)
		}
		sc.binds = append(sc.binds, bd)
		b.binds = append(b.binds, bd)
	}
}

var changeKeys = []string{"set", "merge", "append", "increment", "delete", "value", "by"}

// change compiles one change and checks it against the schema.
func (p *parser) change(sc *scope, n *yaml.Node, at string) *op {
	o := &op{at: at}
	kinds := 0
	var valueNode, byNode *yaml.Node
	ok := true
	for _, pr := range p.mapping(n, at, changeKeys) {
		switch pr.key {
		case "value":
			valueNode = pr.v
		case "by":
			byNode = pr.v
		default:
			kinds++
			o.kind = opNames[pr.key]
			src, sok := p.nonEmpty(pr.v, pr.at)
			if sok {
				o.path, sok = sc.path(pr.v, pr.at, src)
			}
			ok = ok && sok
		}
	}
	if kinds != 1 {
		if ok {
			p.errorf(n, at, "a change is one of set, merge, append, increment, delete (with its path)")
		}
		return nil
	}
	if !ok {
		return nil
	}
	cc := changeCheck{p: p, sc: sc, o: o, n: n, at: at, value: valueNode, by: byNode}
	var good bool
	switch o.kind {
	case opSet, opMerge, opAppend:
		good = cc.written()
	case opIncrement:
		good = cc.increment()
	case opDelete:
		good = cc.delete()
	}
	if !good {
		return nil
	}
	return o
}

// changeCheck checks one change against the schema when the file loads.
type changeCheck struct {
	p         *parser
	sc        *scope
	o         *op
	n         *yaml.Node
	at        string
	value, by *yaml.Node
}

// written checks set, merge and append: a value that fits the target.
func (cc changeCheck) written() bool {
	o, t := cc.o, cc.o.path.t
	name := map[opKind]string{opSet: "set", opMerge: "merge", opAppend: "append"}[o.kind]
	if cc.by != nil {
		cc.p.errorf(cc.by, cc.at+".by", "by is the amount of an increment")
	}
	if cc.value == nil {
		cc.p.errorf(cc.n, cc.at+".value", "required: what to %s", name)
		return false
	}
	v, ok := cc.sc.expr(cc.value, cc.at+".value")
	if !ok {
		return false
	}
	o.value = v
	switch o.kind {
	case opMerge:
		if t.kind != kObject && t.kind != kMap && t.kind != kAny {
			cc.p.errorf(cc.n, cc.at+".merge", "%q is %s: only an object or a map merges", o.path.src, t.describe())
			return false
		}
		if err := mergeable(t, v); err != nil {
			cc.p.errorf(cc.value, cc.at+".value", "%v", err)
			return false
		}
		return true
	case opAppend:
		if t.kind != kList && t.kind != kAny {
			cc.p.errorf(cc.n, cc.at+".append", "%q is %s: only a list is appended to", o.path.src, t.describe())
			return false
		}
		if t = t.elem; t == nil {
			t = anyType
		}
	}
	if err := assignable(t, v); err != nil {
		cc.p.errorf(cc.value, cc.at+".value", "%s %q: %v", name, o.path.src, err)
		return false
	}
	return true
}

func (cc changeCheck) increment() bool {
	o, t := cc.o, cc.o.path.t
	if cc.value != nil {
		cc.p.errorf(cc.value, cc.at+".value", "an increment takes by (default 1), not value")
	}
	if t.kind != kInteger && t.kind != kNumber && t.kind != kAny {
		cc.p.errorf(cc.n, cc.at+".increment", "%q is %s: only a number is incremented", o.path.src, t.describe())
		return false
	}
	if cc.by == nil {
		return true
	}
	v, ok := cc.sc.expr(cc.by, cc.at+".by")
	if !ok {
		return false
	}
	if err := assignable(t, v); err != nil {
		cc.p.errorf(cc.by, cc.at+".by", "%v", err)
		return false
	}
	o.by = v
	return true
}

func (cc changeCheck) delete() bool {
	o := cc.o
	if cc.value != nil || cc.by != nil {
		cc.p.errorf(cc.n, cc.at, "delete takes only its path")
	}
	if o.path.parent == nil || (o.path.parent.kind != kMap && o.path.parent.kind != kAny) {
		cc.p.errorf(cc.n, cc.at+".delete", "%q is not an entry of a map: only a map's entry is deleted (set a field to change it)", o.path.src)
		return false
	}
	return true
}

// assignable checks, as far as it is known when loading, that a value
// fits the type it is written to.
func assignable(t *typ, e expr) error {
	if t.kind == kAny {
		return nil
	}
	switch x := e.(type) {
	case *litExpr:
		if _, err := t.normalize(x.v, ""); err != nil {
			return err
		}
		return nil
	case *ifExpr:
		if err := assignable(t, x.then); err != nil {
			return err
		}
		if x.els != nil {
			return assignable(t, x.els)
		}
		return nil
	case *objExpr:
		return assignableObject(t, x)
	case *listExpr:
		if t.kind != kList {
			return fmt.Errorf("expected %s, got a list", t.describe())
		}
		for i, it := range x.items {
			if err := assignable(t.elem, it); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	}
	s := e.static()
	switch {
	case s.kind == kAny || s.kind == t.kind || (t.kind == kNumber && s.kind == kInteger):
		return nil
	case (t.kind == kObject && s.kind == kMap) || (t.kind == kMap && s.kind == kObject):
		return nil // checked when the call writes it
	}
	return fmt.Errorf("expected %s, got %s", t.describe(), s.describe())
}

// assignableObject checks a mapping written to an object (its fields, the
// required ones given) or a map (its entries).
func assignableObject(t *typ, x *objExpr) error {
	switch t.kind {
	case kObject:
		for i, k := range x.keys {
			f, ok := t.byName[k]
			if !ok {
				return fmt.Errorf("%s has no field %q (fields: %s)", t.describe(), k, t.fieldNames())
			}
			if err := assignable(f.t, x.vals[i]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		for _, f := range t.fields {
			if f.required && !slices.Contains(x.keys, f.name) {
				return fmt.Errorf("%s: required", f.name)
			}
		}
		return nil
	case kMap:
		for i, k := range x.keys {
			if err := assignable(t.elem, x.vals[i]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		return nil
	}
	return fmt.Errorf("expected %s, got a mapping", t.describe())
}

// mergeable checks a merge's value: some fields of the object (or
// entries of the map) it merges into.
func mergeable(t *typ, e expr) error {
	if x, ok := e.(*objExpr); ok {
		for i, k := range x.keys {
			ft := anyType
			switch t.kind {
			case kObject:
				f, ok := t.byName[k]
				if !ok {
					return fmt.Errorf("%s has no field %q (fields: %s)", t.describe(), k, t.fieldNames())
				}
				ft = f.t
			case kMap:
				ft = t.elem
			}
			if err := assignable(ft, x.vals[i]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		return nil
	}
	s := e.static()
	if s.kind != kMap && s.kind != kObject && s.kind != kAny {
		return fmt.Errorf("a merge takes a mapping, got %s", s.describe())
	}
	return nil
}

func (p *parser) commit(sc *scope, t *tool, n *yaml.Node, at string) *commit {
	c := &commit{}
	for _, pr := range p.mapping(n, at, []string{"kind", "intent", "object"}) {
		s, ok := p.str(pr.v, pr.at)
		if !ok {
			continue
		}
		tm, ok := sc.template(pr.v, pr.at, s)
		if !ok {
			continue
		}
		switch pr.key {
		case "kind":
			c.kind = tm
		case "intent":
			c.intent = tm
		case "object":
			c.object = tm
		}
	}
	if c.intent == nil && find(n, "intent") == nil {
		p.errorf(n, at+".intent", "required: the business intent (a second commit of the same intent is a duplicate side effect), e.g. \"refund:{invoice_id}\"")
	}
	if c.kind == nil {
		c.kind = &tmpl{parts: []tpart{{lit: t.meta.Name}}, src: t.meta.Name}
	}
	if c.object == nil {
		c.object = &tmpl{parts: []tpart{{lit: ""}}}
	}
	return c
}

func (p *parser) status(sc *scope, t *tool, n *yaml.Node, at string) *status {
	st := &status{landed: harness.ReconcileCompleted}
	var ofNode, keyNode, retNode *yaml.Node
	for _, pr := range p.mapping(n, at, []string{"of", "key", "landed", "returns"}) {
		switch pr.key {
		case "of":
			ofNode = pr.v
		case "key":
			keyNode = pr.v
		case "landed":
			if s, ok := p.nonEmpty(pr.v, pr.at); ok {
				if s != harness.ReconcileCompleted && s != harness.ReconcileCaptured {
					p.errorf(pr.v, pr.at, "%q: a status tool answers %s (or %s) when the write landed, %s when not", s, harness.ReconcileCompleted, harness.ReconcileCaptured, harness.ReconcileNotFound)
				}
				st.landed = s
			}
		case "returns":
			retNode = pr.v
		}
	}
	if ofNode == nil {
		p.errorf(n, at+".of", "required: the write whose idempotency keys it answers about")
		return nil
	}
	name, ok := p.nonEmpty(ofNode, at+".of")
	if !ok {
		return nil
	}
	if st.of = sc.def.byName[name]; st.of == nil {
		p.errorf(ofNode, at+".of", "no tool %q in this world", name)
		return nil
	}
	if st.of.key == nil {
		p.errorf(ofNode, at+".of", "%s takes no idempotency key: a keyless write is reconciled by reading it back (returns carrying what it wrote)", name)
		return nil
	}
	keyName := st.of.key.name
	if keyNode != nil {
		keyName, ok = p.nonEmpty(keyNode, at+".key")
		if !ok {
			return nil
		}
	}
	if st.key = t.byParam[keyName]; st.key == nil {
		where := keyNode
		if where == nil {
			where = n
		}
		p.errorf(where, at+".key", "%s has no argument %q to carry %s's idempotency key", t.meta.Name, keyName, name)
		return nil
	}
	if st.key.t.kind != kString {
		p.errorf(n, at+".key", "the key argument %q must be a string", keyName)
	}
	if retNode != nil {
		if retNode.Kind != yaml.MappingNode {
			p.errorf(retNode, at+".returns", "expected a mapping: the fields of the answer besides status")
			return nil
		}
		rs := &scope{p: p, def: sc.def, tool: t, binds: sc.binds, prior: st.of}
		e, ok := rs.object(retNode, at+".returns")
		if !ok {
			return st // reported; the block still answers about the write
		}
		st.returns = e
		if slices.Contains(st.returns.keys, harness.ReconcileStatus) {
			p.errorf(retNode, at+".returns.status", "status is the answer itself (%s or %s)", st.landed, harness.ReconcileNotFound)
		}
	}
	return st
}

// reconciliation checks that every write's status tool answers about it,
// and every status block about a write that names it.
func (p *parser) reconciliation(d *Def) {
	for _, t := range d.tools {
		if err := t.meta.Validate(); err != nil && len(p.errs) == 0 {
			p.errorf(t.node, t.at, "%v", err)
		}
		for ci, b := range t.cases {
			if b.status == nil {
				continue
			}
			w := b.status.of
			if w.meta.ReconciledBy != t.meta.Name {
				at := t.at + ".status.of"
				if len(t.cases) > 1 || find(t.node, "cases") != nil {
					at = fmt.Sprintf("%s.cases[%d].status.of", t.at, ci)
				}
				p.errorf(find(b.node, "status"), at, "%s answers about %s, but %s names %s as its status tool: set its reconciled_by: %s", t.meta.Name, w.meta.Name, w.meta.Name, orNone(w.meta.ReconciledBy), t.meta.Name)
			}
		}
		if t.meta.ReconciledBy == "" {
			continue
		}
		rn := find(t.node, "reconciled_by")
		at := t.at + ".reconciled_by"
		r := d.byName[t.meta.ReconciledBy]
		switch {
		case !t.meta.Effect.SideEffecting() && t.meta.Effect != harness.EffectIdempotent:
			p.errorf(rn, at, "a read has nothing to reconcile")
			continue
		case r == nil:
			p.errorf(rn, at, "no tool %q in this world", t.meta.ReconciledBy)
			continue
		case r.meta.Effect != harness.EffectRead:
			p.errorf(rn, at, "the status tool %s must be a read (it is %s)", r.meta.Name, r.meta.Effect)
			continue
		}
		if t.key != nil {
			answers := false
			for _, b := range r.cases {
				if b.status != nil && b.status.of == t {
					answers = true
				}
			}
			if !answers {
				p.errorf(rn, at, "%s does not answer about %s's idempotency key: give it a status block (status: {of: %s}) that answers %s or %s", r.meta.Name, t.meta.Name, t.meta.Name, harness.ReconcileCompleted, harness.ReconcileNotFound)
			}
			continue
		}
		// A keyless write is reconciled by asking about its object: the
		// status tool answers status completed/not_found, or reads back
		// what the write wrote (a field named like one of its arguments).
		if !r.returnsStatusOrReadBack(t) {
			p.errorf(rn, at, "%s cannot reconcile %s: it returns neither a status (%s or %s) nor any of %s's arguments read back", r.meta.Name, t.meta.Name, harness.ReconcileCompleted, harness.ReconcileNotFound, t.meta.Name)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "no status tool"
	}
	return s
}

func (r *tool) returnsStatusOrReadBack(w *tool) bool {
	if r.returnKeys == nil {
		return true // not known when loading
	}
	if r.returnKeys[harness.ReconcileStatus] {
		return true
	}
	for _, pa := range w.params {
		if r.returnKeys[pa.name] {
			return true
		}
	}
	return false
}

// objectType reads the state schema's root (or any object): a mapping of
// fields, or {type: object, fields: ...}.
func (p *parser) objectType(n *yaml.Node, at string) (*typ, *fieldAttrs) {
	t, attrs := p.typeOf(n, at)
	if t == nil {
		return nil, nil
	}
	if t.kind != kObject {
		p.errorf(n, at, "expected an object: its fields, name: type")
		return nil, nil
	}
	return t, attrs
}

type fieldAttrs struct {
	def       any
	hasDef    bool
	defNode   *yaml.Node
	required  bool
	omitEmpty bool
}

var typeKeys = []string{"type", "description", "default", "required", "omit_empty", "enum", "fields", "values", "items"}

// typeOf reads a type: a scalar name, {type: NAME, ...}, or a mapping of
// fields (an object).
func (p *parser) typeOf(n *yaml.Node, at string) (*typ, *fieldAttrs) {
	switch n.Kind {
	case yaml.ScalarNode:
		return p.typeName(n, at)
	case yaml.MappingNode:
		tn := find(n, "type")
		if tn == nil || tn.Kind != yaml.ScalarNode || kindNames[tn.Value] == kAny && tn.Value != "any" {
			return p.fields(n, at), &fieldAttrs{}
		}
		return p.typeSpec(n, at, kindNames[tn.Value])
	}
	p.errorf(n, at, "expected a type, got %s", kindOf(n))
	return nil, nil
}

// typeName reads a type written as its name.
func (p *parser) typeName(n *yaml.Node, at string) (*typ, *fieldAttrs) {
	name, ok := p.nonEmpty(n, at)
	if !ok {
		return nil, nil
	}
	k, known := kindNames[name]
	switch {
	case !known:
		p.errorf(n, at, "%q: a type is string, integer, number, boolean, object, map, list or any", name)
		return nil, nil
	case k == kObject:
		p.errorf(n, at, "an object lists its fields: {type: object, fields: {...}} or the fields themselves")
		return nil, nil
	case k == kMap || k == kList:
		return &typ{kind: k, elem: anyType}, &fieldAttrs{}
	}
	return &typ{kind: k}, &fieldAttrs{}
}

// typeSpec reads {type: KIND, ...}: the type's own keys and a field's
// attributes (default, required, omit_empty).
func (p *parser) typeSpec(n *yaml.Node, at string, k kind) (*typ, *fieldAttrs) {
	t := &typ{kind: k}
	attrs := &fieldAttrs{}
	for _, pr := range p.mapping(n, at, typeKeys) {
		switch pr.key {
		case "description":
			p.str(pr.v, pr.at)
		case "default":
			attrs.defNode = pr.v
		case "required":
			attrs.required, _ = p.boolean(pr.v, pr.at)
		case "omit_empty":
			attrs.omitEmpty, _ = p.boolean(pr.v, pr.at)
		case "enum":
			p.enum(t, pr)
		case "fields":
			if t.kind != kObject {
				p.errorf(pr.k, pr.at, "fields belong to an object")
			} else if f := p.fields(pr.v, pr.at); f != nil {
				t.fields, t.byName = f.fields, f.byName
			}
		case "values", "items":
			p.elem(t, pr)
		}
	}
	switch t.kind {
	case kObject:
		if t.byName == nil {
			if find(n, "fields") == nil {
				p.errorf(n, at+".fields", "required: an object lists its fields")
			}
			t.byName = map[string]*field{}
		}
	case kMap, kList:
		if t.elem == nil {
			t.elem = anyType
		}
	}
	if attrs.defNode != nil {
		if v, ok := p.value(attrs.defNode, at+".default"); ok {
			nv, err := t.normalize(v, "")
			if err != nil {
				p.errorf(attrs.defNode, at+".default", "%v", err)
			} else {
				attrs.def, attrs.hasDef = nv, true
			}
		}
	}
	return t, attrs
}

func (p *parser) enum(t *typ, pr pair) {
	if t.kind != kString {
		p.errorf(pr.k, pr.at, "enum lists the values of a string")
	}
	for i, e := range p.sequence(pr.v, pr.at, false) {
		if s, ok := p.str(e, fmt.Sprintf("%s[%d]", pr.at, i)); ok {
			t.enum = append(t.enum, s)
		}
	}
}

// elem reads the values of a map or the items of a list.
func (p *parser) elem(t *typ, pr pair) {
	want := map[string]kind{"values": kMap, "items": kList}[pr.key]
	if t.kind != want {
		p.errorf(pr.k, pr.at, "%s belong to a %s", pr.key, want)
		return
	}
	e, eattrs := p.typeOf(pr.v, pr.at)
	if e == nil {
		return
	}
	if eattrs.defNode != nil || eattrs.required || eattrs.omitEmpty {
		p.errorf(pr.v, pr.at, "default, required and omit_empty belong to an object's fields, not to the %s of a %s", pr.key, want)
	}
	t.elem = e
}

// fields reads an object's fields: name -> type.
func (p *parser) fields(n *yaml.Node, at string) *typ {
	t := &typ{kind: kObject, byName: map[string]*field{}}
	for _, pr := range p.mapping(n, at, nil) {
		if !validName(pr.key) {
			p.errorf(pr.k, pr.at, "a field's name is letters, digits, _ and -")
			continue
		}
		ft, attrs := p.typeOf(pr.v, pr.at)
		if ft == nil {
			continue
		}
		f := &field{name: pr.key, t: ft, def: attrs.def, hasDef: attrs.hasDef, required: attrs.required, omitEmpty: attrs.omitEmpty}
		if f.required && f.hasDef {
			p.errorf(attrs.defNode, pr.at+".default", "a required field has no default")
		}
		t.fields = append(t.fields, f)
		t.byName[f.name] = f
	}
	return t
}
