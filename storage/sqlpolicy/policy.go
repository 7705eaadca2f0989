// Package sqlpolicy decides which ad-hoc statements rebound's read-only SQL
// door runs (`rebound sql`, and anything else that serves the store to
// people): one SELECT (WITH ... SELECT, UNION, INTERSECT, EXCEPT), DESCRIBE,
// SHOW TABLES or SHOW CREATE TABLE|VIEW, over rebound's own database, using
// functions from an allowlist, and nothing else.
//
// The decision is made on the engine's own parse of the statement, never on
// its text: the store asks the engine for the statement's canonical form
// (formatQuerySingleLine) and for the syntax tree of that form (EXPLAIN
// AST), gives both to Check, and runs exactly the canonical form if Check
// accepts it. The engine's readonly=1 mode and its limits stay on beneath,
// so a construct the policy misjudged still cannot write.
//
// EXPLAIN AST prints one node per line, indented by depth. Its text is
// lossy: some nodes hide what they hold (APPLY's function, the kind of a
// SHOW), and names are printed unescaped, so an alias with a newline in it
// adds lines of its choosing. The rules are written for that:
//   - every node kind must be on an allowlist of kinds whose printing shows
//     everything the engine will evaluate; a kind that hides a function or
//     a table (ColumnsApplyTransformer, ShowColumns, ...) is refused;
//   - every rule that matters holds per line, whatever the line's parent:
//     a function is allowed by its name alone, a table by its database
//     alone, a SETTINGS clause is refused wherever it appears. Lines an
//     attacker adds can only add refusals, never remove a real line.
package sqlpolicy

import (
	"fmt"
	"strconv"
	"strings"
)

// Refusal is the error Check returns for a statement the door does not run.
type Refusal struct {
	// Construct names what was refused ("function file", "a SETTINGS
	// clause", "table system.users", ...), at most ~100 characters.
	Construct string
	// Why says what the door accepts instead.
	Why string
}

func (r *Refusal) Error() string {
	if r.Why == "" {
		return "refused: " + r.Construct
	}
	return "refused: " + r.Construct + ": " + r.Why
}

// Policy is the door's configuration: the store's database, and the other
// databases the engine has (their tables are out of reach, and a dotted
// name that starts with one is refused wherever it appears).
type Policy struct {
	Database  string
	Databases []string
	// Unqualified: the session's current database is Database, so a table
	// named without its database is one of rebound's (or a WITH clause's
	// name). When false, such names are refused.
	Unqualified bool
}

// node is one line of EXPLAIN AST.
type node struct {
	line     int // 1-based line of the AST text
	depth    int // leading spaces
	kind     string
	rest     string // after the kind, with the "(alias ...)" and "(children N)" parts
	name     string // rest without its alias and children parts
	children int    // declared "(children N)", -1 when absent
}

// parse splits EXPLAIN AST text into nodes.
func parse(ast string) []node {
	var out []node
	for i, line := range strings.Split(strings.TrimRight(ast, "\n"), "\n") {
		n := node{line: i + 1, children: -1}
		trimmed := strings.TrimLeft(line, " ")
		n.depth = len(line) - len(trimmed)
		n.kind, n.rest, _ = strings.Cut(trimmed, " ")
		// " " + rest: the alias and children parts each start with a space.
		name := " " + n.rest
		if j := strings.LastIndex(name, " (children "); j >= 0 && strings.HasSuffix(name, ")") {
			if c, err := strconv.Atoi(name[j+len(" (children ") : len(name)-1]); err == nil {
				n.children = c
				name = name[:j]
			}
		}
		if j := strings.Index(name, " (alias "); j >= 0 {
			name = name[:j]
		}
		n.name = strings.TrimPrefix(name, " ")
		out = append(out, n)
	}
	return out
}

// innerKinds are the node kinds allowed below the root: each prints every
// function, table and identifier it holds as a node of its own (or holds
// none).
var innerKinds = map[string]bool{
	"SelectWithUnionQuery":                   true,
	"SelectIntersectExceptQuery":             true,
	"SelectQuery":                            true,
	"ExpressionList":                         true,
	"Function":                               true,
	"Literal":                                true,
	"Identifier":                             true,
	"Asterisk":                               true,
	"QualifiedAsterisk":                      true,
	"ColumnsRegexpMatcher":                   true,
	"QualifiedColumnsRegexpMatcher":          true,
	"ColumnsListMatcher":                     true,
	"QualifiedColumnsListMatcher":            true,
	"ColumnsTransformerList":                 true,
	"ColumnsExceptTransformer":               true,
	"ColumnsReplaceTransformer":              true,
	"ColumnsReplaceTransformer::Replacement": true,
	"TablesInSelectQuery":                    true,
	"TablesInSelectQueryElement":             true,
	"TableExpression":                        true,
	"TableIdentifier":                        true,
	"TableJoin":                              true,
	"ArrayJoin":                              true,
	"Subquery":                               true,
	"WithElement":                            true,
	"OrderByElement":                         true,
	"InterpolateElement":                     true,
	"WindowDefinition":                       true,
	"WindowListElement":                      true,
	"SampleRatio":                            true,
}

// refusedKinds explain the refusals people meet.
var refusedKinds = map[string]string{
	"Set":                     "a SETTINGS clause (the door's settings and limits are fixed; they are rebound sql's flags)",
	"ColumnsApplyTransformer": "APPLY (its function is not visible in the engine's parse; write the function per column)",
	"QueryParameter":          "a query parameter ({name:Type}); write the value",
	"Explain":                 "EXPLAIN",
}

// Check decides one statement: canonical is the engine's single-line form
// of it (what will run), ast the engine's EXPLAIN AST of canonical.
func (p Policy) Check(canonical, ast string) error {
	nodes := parse(ast)
	if len(nodes) == 0 || strings.TrimSpace(ast) == "" {
		return &Refusal{Construct: "an empty statement"}
	}
	root := nodes[0]
	if root.depth != 0 {
		return &Refusal{Construct: "a statement the engine's parse does not describe"}
	}
	switch root.kind {
	case "SelectWithUnionQuery":
		// A FORMAT or INTO OUTFILE clause is a second child of the root.
		if root.children != 1 {
			return &Refusal{Construct: "a FORMAT or INTO OUTFILE clause", Why: "the result is printed in the format --output asks for"}
		}
		return p.checkInner(nodes[1:])
	case "DescribeQuery":
		return p.checkInner(nodes[1:])
	case "ShowTables":
		return p.checkShowTables(canonical, nodes[1:])
	case "ShowCreateTableQuery", "ShowCreateViewQuery":
		return p.checkShowCreate(root, nodes[1:])
	}
	return &Refusal{Construct: describeStatement(root, canonical), Why: acceptedStatements}
}

const acceptedStatements = "the read-only door runs one SELECT (WITH, UNION, INTERSECT, EXCEPT included), DESCRIBE, SHOW TABLES or SHOW CREATE TABLE|VIEW of rebound's own tables"

func (p Policy) checkInner(nodes []node) error {
	for _, n := range nodes {
		if why, ok := refusedKinds[n.kind]; ok {
			return &Refusal{Construct: why}
		}
		if !innerKinds[n.kind] {
			return &Refusal{Construct: fmt.Sprintf("%s (line %d of the engine's parse)", clip(n.kind), n.line), Why: "not a part of a query the door knows to be read-only"}
		}
		switch n.kind {
		case "Function":
			name, _, _ := strings.Cut(n.name, " ")
			if !Allowed(name) {
				return &Refusal{Construct: "function " + clip(name), Why: "not on the allowlist of functions that compute without reaching files, the network, the host or the engine's state (table functions included)"}
			}
		case "TableIdentifier":
			if err := p.checkTable(n.name); err != nil {
				return err
			}
		case "Identifier", "QualifiedAsterisk":
			// A dotted name whose first part is another database reads
			// that database's table (x IN system.users), wherever it is.
			if first, _, dotted := strings.Cut(n.name, "."); dotted && p.otherDatabase(first) {
				return &Refusal{Construct: "name " + clip(n.name), Why: "only the database " + p.Database + " is readable"}
			}
		}
	}
	// An extra layer: a function directly under TableExpression is a table
	// function. (Per-line rules above already refuse every table function
	// that reads anything: none is on the allowlist, save pure ones.)
	for i, n := range nodes {
		if n.kind != "TableExpression" {
			continue
		}
		for _, c := range nodes[i+1:] {
			if c.depth <= n.depth {
				break
			}
			if c.depth == n.depth+1 && c.kind == "Function" {
				name, _, _ := strings.Cut(c.name, " ")
				return &Refusal{Construct: "table function " + clip(name), Why: "only rebound's tables and views are read"}
			}
		}
	}
	return nil
}

// checkTable allows a table of the store's database, or an unqualified name
// (a table of the session's current database, which is the store's, or a
// WITH clause's name).
func (p Policy) checkTable(name string) error {
	if name == "" {
		return &Refusal{Construct: "a table without a name"}
	}
	if strings.HasPrefix(name, p.Database+".") {
		return nil
	}
	if !strings.Contains(name, ".") {
		if p.Unqualified {
			return nil
		}
		return &Refusal{Construct: "table " + clip(name) + " without its database", Why: "write " + p.Database + "." + clip(name) + " (this session's current database is not " + p.Database + ")"}
	}
	return &Refusal{Construct: "table " + clip(name), Why: "only the tables and views of the database " + p.Database + " are readable"}
}

func (p Policy) otherDatabase(name string) bool {
	if name == p.Database {
		return false
	}
	for _, d := range p.Databases {
		if d != p.Database && strings.EqualFold(d, name) {
			return true
		}
	}
	// The engine's own databases, whatever the list said.
	switch strings.ToLower(name) {
	case "system", "information_schema":
		return true
	}
	return false
}

// checkShowTables allows SHOW TABLES [FROM <database>] [LIKE ...]: the
// engine prints SHOW DATABASES, SHOW SETTINGS and SHOW DICTIONARIES as the
// same node, so the canonical form tells them apart.
func (p Policy) checkShowTables(canonical string, rest []node) error {
	if !strings.HasPrefix(canonical, "SHOW TABLES") {
		return &Refusal{Construct: clip(firstWords(canonical, 2)), Why: acceptedStatements}
	}
	for _, n := range rest {
		switch {
		case n.depth == 1 && n.kind == "Identifier" && n.name == p.Database:
		case n.depth == 1 && n.kind == "Literal":
		default:
			return &Refusal{Construct: "SHOW TABLES of another database", Why: "only the database " + p.Database + " is readable"}
		}
	}
	return nil
}

// checkShowCreate allows SHOW CREATE TABLE|VIEW of the store's tables: the
// root line names the database and the table ("ShowCreateTableQuery db t").
func (p Policy) checkShowCreate(root node, rest []node) error {
	db, _, _ := strings.Cut(root.name, " ")
	if db != "" && db != p.Database {
		return &Refusal{Construct: "SHOW CREATE of database " + clip(db), Why: "only the database " + p.Database + " is readable"}
	}
	for _, n := range rest {
		if n.depth != 1 || n.kind != "Identifier" {
			return &Refusal{Construct: "a SHOW CREATE the door does not know", Why: acceptedStatements}
		}
	}
	return nil
}

// describeStatement names a refused statement by its first words, as the
// canonical form spells them (SYSTEM, KILL, SET ROLE, USE, INSERT, ...).
func describeStatement(root node, canonical string) string {
	if w := firstWords(canonical, 2); w != "" {
		return clip(w)
	}
	return clip(root.kind)
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
	}
	return strings.Join(f, " ")
}

// clip bounds a name taken from the statement in an error.
func clip(s string) string {
	const max = 100
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
