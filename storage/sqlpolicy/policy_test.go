package sqlpolicy

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// ASTs as chDB 26.5 prints them (EXPLAIN AST). storage's
// TestReadOnlyAttacks runs the same decisions on the engine itself.
const (
	astSelectTrials = `SelectWithUnionQuery (children 1)
 ExpressionList (children 1)
  SelectQuery (children 3)
   ExpressionList (children 2)
    Identifier arm
    Function avg (alias rate) (children 1)
     ExpressionList (children 1)
      Identifier recovered
   TablesInSelectQuery (children 1)
    TablesInSelectQueryElement (children 1)
     TableExpression (children 1)
      TableIdentifier rebound.trials
   ExpressionList (children 1)
    Identifier arm
`
	astSubquerySettingsFile = `SelectWithUnionQuery (children 1)
 ExpressionList (children 1)
  SelectQuery (children 2)
   ExpressionList (children 1)
    Asterisk
   TablesInSelectQuery (children 1)
    TablesInSelectQueryElement (children 1)
     TableExpression (children 1)
      Subquery (children 1)
       SelectWithUnionQuery (children 1)
        ExpressionList (children 1)
         SelectQuery (children 3)
          ExpressionList (children 1)
           Asterisk
          TablesInSelectQuery (children 1)
           TablesInSelectQueryElement (children 1)
            TableExpression (children 1)
             Function file (children 1)
              ExpressionList (children 2)
               Literal '/etc/hostname'
               Literal 'LineAsString'
          Set
`
	astScalarFile = `SelectWithUnionQuery (children 1)
 ExpressionList (children 1)
  SelectQuery (children 1)
   ExpressionList (children 1)
    Function file (alias x
y) (children 1)
     ExpressionList (children 1)
      Literal '/data/redaction.key'
`
)

var policy = Policy{Database: "rebound", Databases: []string{"INFORMATION_SCHEMA", "default", "information_schema", "rebound", "system"}, Unqualified: true}

func TestCheck(t *testing.T) {
	cases := []struct {
		name, canonical, ast string
		refused              string // "" accepted, else a substring of the refusal
	}{
		{"select over rebound's table", "SELECT arm, avg(recovered) AS rate FROM rebound.trials GROUP BY arm", astSelectTrials, ""},
		{"subquery SETTINGS with file()", "", astSubquerySettingsFile, "function file"},
		{"scalar file() with a newline alias", "", astScalarFile, "function file"},
		{"SETTINGS alone", "", "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 2)\n   ExpressionList (children 1)\n    Literal UInt64_1\n   Set\n", "SETTINGS"},
		{"FORMAT clause", "", "SelectWithUnionQuery (children 2)\n ExpressionList (children 1)\n  SelectQuery (children 1)\n   ExpressionList (children 1)\n    Literal UInt64_1\n Identifier TSV\n", "FORMAT"},
		{"system table", "", strings.Replace(astSelectTrials, "rebound.trials", "system.users", 1), "table system.users"},
		{"a database named like rebound", "", strings.Replace(astSelectTrials, "rebound.trials", "rebound_other.trials", 1), "table rebound_other.trials"},
		{"IN another database's table", "", "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 1)\n   ExpressionList (children 1)\n    Function in (children 1)\n     ExpressionList (children 2)\n      Literal UInt64_1\n      Identifier system.users\n", "system.users"},
		{"unqualified table, current database rebound's", "", strings.Replace(astSelectTrials, "rebound.trials", "trials", 1), ""},
		{"table function numbers", "", strings.Replace(astSelectTrials, "      TableIdentifier rebound.trials", "      Function numbers (children 1)\n       ExpressionList (children 1)\n        Literal UInt64_10", 1), "function numbers"},
		{"pure table function format", "", strings.Replace(astSelectTrials, "      TableIdentifier rebound.trials", "      Function format (children 1)\n       ExpressionList (children 2)\n        Identifier JSONEachRow\n        Literal '{}'", 1), "table function format"},
		{"APPLY", "", "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 1)\n   ExpressionList (children 1)\n    Asterisk (children 1)\n     ColumnsTransformerList (children 1)\n      ColumnsApplyTransformer\n", "APPLY"},
		{"an unknown node kind", "", "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 1)\n   ProjectionSomething\n", "ProjectionSomething"},
		{"SYSTEM", "SYSTEM STOP MERGES", "SYSTEM query\n", "SYSTEM STOP"},
		{"KILL", "KILL QUERY WHERE 1", "KillQueryQuery Literal_UInt64_1 ASYNC (children 1)\n Literal UInt64_1\n", "KILL QUERY"},
		{"USE", "USE system", "UseQuery system (children 1)\n Identifier system\n", "USE system"},
		{"SHOW TABLES", "SHOW TABLES", "ShowTables\n", ""},
		{"SHOW TABLES FROM rebound", "SHOW TABLES FROM rebound", "ShowTables (children 1)\n Identifier rebound\n", ""},
		{"SHOW TABLES FROM system", "SHOW TABLES FROM system", "ShowTables (children 1)\n Identifier system\n", "another database"},
		{"SHOW DATABASES prints as ShowTables", "SHOW DATABASES", "ShowTables\n", "SHOW DATABASES"},
		{"SHOW CREATE TABLE rebound.trials", "SHOW CREATE TABLE rebound.trials", "ShowCreateTableQuery rebound trials (children 2)\n Identifier rebound\n Identifier trials\n", ""},
		{"SHOW CREATE TABLE system.users", "SHOW CREATE TABLE system.users", "ShowCreateTableQuery system users (children 2)\n Identifier system\n Identifier users\n", "database system"},
		{"DESCRIBE file()", "", "DescribeQuery (children 1)\n TableExpression (children 1)\n  Function file (children 1)\n   ExpressionList (children 2)\n    Literal '/etc/shadow'\n    Literal 'TSVWithNames'\n", "function file"},
		{"DESCRIBE rebound.sweeps", "", "DescribeQuery (children 1)\n TableExpression (children 1)\n  TableIdentifier rebound.sweeps\n", ""},
		{"empty", "", "", "empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := policy.Check(c.canonical, c.ast)
			var r *Refusal
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refused != "" && err == nil:
				t.Fatal("accepted")
			case c.refused != "" && (!errors.As(err, &r) || !strings.Contains(err.Error(), c.refused)):
				t.Fatalf("refusal %v, want one naming %q", err, c.refused)
			}
		})
	}
	noCurrent := policy
	noCurrent.Unqualified = false
	if err := noCurrent.Check("", strings.Replace(astSelectTrials, "rebound.trials", "trials", 1)); err == nil {
		t.Error("an unqualified table was accepted although the current database is not rebound's")
	}
}

// Names print unescaped in EXPLAIN AST, so a statement can add lines of
// its choosing. The rules hold per line: whatever lines are added, anywhere,
// a refused tree stays refused.
func TestAddedLinesNeverLiftARefusal(t *testing.T) {
	refused := []string{astSubquerySettingsFile, astScalarFile,
		strings.Replace(astSelectTrials, "rebound.trials", "system.users", 1),
		"SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 2)\n   ExpressionList (children 1)\n    Literal UInt64_1\n   Set\n",
	}
	vocabulary := []string{"ExpressionList (children 1)", "Literal UInt64_1", "Identifier x", "TableIdentifier rebound.trials",
		"SelectQuery (children 1)", "TableExpression (children 1)", "Function count (children 1)", "Subquery (children 1)",
		"SelectWithUnionQuery (children 1)", ")", "(children 0)", "Function plus (alias f) (children 1)"}
	r := rand.New(rand.NewPCG(1, 2))
	for _, base := range refused {
		if policy.Check("SELECT 1", base) == nil {
			t.Fatalf("base tree accepted:\n%s", base)
		}
		lines := strings.Split(strings.TrimRight(base, "\n"), "\n")
		for trial := 0; trial < 2000; trial++ {
			out := append([]string(nil), lines[:1]...)
			for _, l := range lines[1:] {
				for r.IntN(3) == 0 {
					out = append(out, strings.Repeat(" ", r.IntN(12))+vocabulary[r.IntN(len(vocabulary))])
				}
				out = append(out, l)
			}
			ast := strings.Join(out, "\n") + "\n"
			if policy.Check("SELECT 1", ast) == nil {
				t.Fatalf("added lines lifted a refusal:\n%s", ast)
			}
		}
	}
}

func TestAllowed(t *testing.T) {
	for name, want := range map[string]bool{
		"count": true, "COUNT": true, "sumIf": true, "avgOrNullIf": true, "quantilesExactIf": true, "uniqArrayIf": true,
		"sumMergeState": true, "plus": true, "lambda": true, "toStartOfHour": true,
		"file": false, "FILE": false, "url": false, "numbers": false, "getSetting": false, "sleep": false,
		"fileIf": false, "hostNameIf": false, "chdb": false, "": false,
	} {
		if got := Allowed(name); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRefusalsQuoteLittle(t *testing.T) {
	long := strings.Repeat("a", 5000)
	err := policy.Check("", "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 1)\n   ExpressionList (children 1)\n    Function "+long+" (children 1)\n")
	if err == nil || len(err.Error()) > 400 {
		t.Fatalf("refusal of a long name: %d bytes", len(err.Error()))
	}
}
