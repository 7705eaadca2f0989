package storage

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"rebound/storage/sqlpolicy"
)

var updateFunctions = flag.Bool("update-sql-functions", false, "rewrite storage/sqlpolicy/functions.txt from the engine's catalog")

// The rules that make the read-only door's function allowlist from the
// engine's catalog. A function is allowed when it computes on its
// arguments only: no file, network, host, session, server or dictionary
// access, no sleeping, no side effect.

// allowedCategories are system.functions categories whose functions all
// compute on their arguments (checked by hand on chDB 26.5; denied below
// lists the exceptions).
var allowedCategories = map[string]bool{
	"Aggregate Functions": true, "Arithmetic": true, "Arrays": true, "Bit": true, "Bitmap": true,
	"Comparison": true, "Conditional": true, "Dates and Times": true, "Distance": true, "Encoding": true,
	"Encryption": true, "Financial": true, "Geo": true, "Geo Polygon": true, "Hash": true,
	"IP Address": true, "JSON": true, "Logical": true, "Map": true, "Mathematical": true, "Null": true,
	"Random Number": true, "Rounding": true, "String": true, "String Replacement": true,
	"String Search": true, "String Splitting": true, "Time Window": true, "Tuple": true,
	"Type Conversion": true, "URL": true, "UUID": true,
}

// pickedOther are the pure functions of the catalog's catch-all "Other"
// category.
var pickedOther = map[string]bool{
	"MACNumToString": true, "MACStringToNum": true, "MACStringToOUI": true, "bar": true,
	"colorOKLABToSRGB": true, "colorOKLCHToSRGB": true, "colorSRGBToOKLAB": true, "colorSRGBToOKLCH": true,
	"countDigits": true, "currentDatabase": true, "defaultValueOfArgumentType": true,
	"defaultValueOfTypeName": true, "errorCodeToName": true, "finalizeAggregation": true,
	"formatReadableDecimalSize": true, "formatReadableQuantity": true, "formatReadableSize": true,
	"formatReadableTimeDelta": true, "identity": true, "ignore": true, "initializeAggregation": true,
	"isConstant": true, "isDecimalOverflow": true, "materialize": true, "minSampleSizeContinuous": true,
	"minSampleSizeConversion": true, "neighbor": true, "parseReadableSize": true,
	"parseReadableSizeOrNull": true, "parseReadableSizeOrZero": true, "parseTimeDelta": true,
	"runningAccumulate": true, "runningDifference": true, "runningDifferenceStartingWithFirstValue": true,
	"throwIf": true, "toColumnTypeName": true, "toTypeName": true, "transform": true,
	"variantElement": true, "variantType": true, "visibleWidth": true, "version": true,
	// The server's name and protocol revision: clickhouse-go's HTTP handshake
	// asks for them (SELECT displayName(), version(), revision(), timezone())
	// before any query, so a store served over HTTP (storage/served) answers
	// them. displayName is the host's name, which a client on loopback knows.
	"displayName": true, "revision": true,
}

// denied are functions of allowed categories that reach beyond their
// arguments, and the names the door must never let through whatever the
// catalog says (the test fails if one is on the list).
var denied = map[string]bool{
	"chdb": true, // runs a query of its own
	"file": true, "url": true, "s3": true, "remote": true, "remoteSecure": true, "sqlite": true,
	"postgresql": true, "mysql": true, "executable": true, "catboostEvaluate": true,
	"sleep": true, "sleepEachRow": true, "getSetting": true, "getSettingOrDefault": true,
	"getServerSetting": true, "getMergeTreeSetting": true, "getMacro": true, "hostName": true,
	"FQDN": true, "currentUser": true, "authenticatedUser": true, "currentRoles": true,
	"filesystemAvailable": true, "filesystemCapacity": true, "filesystemUnreserved": true,
	"joinGet": true, "joinGetOrNull": true, "dictGet": true, "hasColumnInTable": true,
	"addressToLine": true, "addressToSymbol": true, "demangle": true, "generateSerialID": true,
	"getClientHTTPHeader": true, "serverUUID": true, "tcpPort": true, "getServerPort": true,
	"aiGenerate": true, "aiClassify": true, "aiExtract": true, "aiTranslate": true, "evalMLMethod": true,
	"__getScalar": true, "globalVariable": true, "uptime": true, "showCertificate": true,
}

// deniedCategories are never allowed, whatever else a rule says.
var deniedCategories = map[string]bool{
	"Dictionary": true, "Embedded Dictionary": true, "Introspection": true, "Internal": true,
	"AI": true, "Machine Learning": true,
}

// specialFunctions are syntax the parser turns into function nodes that the
// catalog does not list.
//
// _CAST is how the engine's parse writes a bound query parameter,
// _CAST(value, 'Type') (the served store checks a statement with its
// parameters bound); the catalog files it as internal, and it converts as
// CAST does, keeping the value's nullability.
var specialFunctions = []string{"exists", "grouping", "lambda", "_CAST"}

type catalogFunction struct {
	Name          string `json:"name" ch:"name"`
	IsAggregate   uint8  `json:"is_aggregate" ch:"is_aggregate"`
	AliasTo       string `json:"alias_to" ch:"alias_to"`
	Categories    string `json:"categories" ch:"categories"`
	CaseSensitive uint8  `json:"case_sensitive" ch:"case_sensitive"`
}

// allowlistFromCatalog applies the rules: a function of an allowed category
// (or picked from "Other"), any aggregate or window function without a
// category, and an alias whose target is allowed; never a denied name or
// category.
func allowlistFromCatalog(fns []catalogFunction) map[string]string {
	byName := map[string]catalogFunction{}
	for _, f := range fns {
		byName[f.Name] = f
	}
	var ok func(f catalogFunction, depth int) bool
	ok = func(f catalogFunction, depth int) bool {
		if denied[f.Name] || deniedCategories[f.Categories] || depth > 4 {
			return false
		}
		if f.AliasTo != "" {
			t, found := byName[f.AliasTo]
			return found && ok(t, depth+1)
		}
		switch {
		case allowedCategories[f.Categories], pickedOther[f.Name]:
			return true
		case f.Categories == "" && f.IsAggregate == 1:
			return true // aggregate and window functions: computation over rows
		}
		return false
	}
	out := map[string]string{}
	for _, f := range fns {
		if !ok(f, 0) {
			continue
		}
		k := "scalar"
		if f.IsAggregate == 1 {
			k = "aggregate"
		}
		out[f.Name] = k
	}
	for _, s := range specialFunctions {
		out[s] = "special"
	}
	return out
}

func renderAllowlist(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# The functions rebound's read-only SQL door lets through: \"name kind\".\n")
	b.WriteString("# Generated from the engine's catalog by storage/sqlpolicy_functions_test.go\n")
	b.WriteString("# (go test ./storage -run SQLPolicyFunctions -update-sql-functions); review every change.\n")
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, m[n])
	}
	return b.String()
}

// TestSQLPolicyFunctions holds the allowlist to the engine's catalog and
// its rules, and holds sqlpolicy.Allowed to the list: every catalog
// function not on it, and no denied name, is refused, combinators
// included.
func TestSQLPolicyFunctions(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	var fns []catalogFunction
	err := st.t.Select(ctx, &fns, Stmt{SQL: "SELECT name, toUInt8(is_aggregate) AS is_aggregate, alias_to, categories, toUInt8(case_insensitive = 0) AS case_sensitive FROM system.functions ORDER BY name"})
	if err != nil {
		t.Fatal(err)
	}
	want := renderAllowlist(allowlistFromCatalog(fns))
	path := filepath.Join("sqlpolicy", "functions.txt")
	if *updateFunctions {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s disagrees with the engine's catalog and the rules: regenerate with -update-sql-functions and review the diff", path)
	}
	allowedLower := map[string]bool{}
	for _, n := range sqlpolicy.AllowedNames() {
		allowedLower[strings.ToLower(n)] = true
	}
	for _, f := range fns {
		onList := allowedLower[strings.ToLower(f.Name)]
		if got := sqlpolicy.Allowed(f.Name); got != onList {
			t.Errorf("Allowed(%q) = %v, but the list says %v (a combinator suffix, or two functions differing in case)", f.Name, got, onList)
		}
		// A special function is syntax, listed by name above with its
		// reason (_CAST: a bound parameter), whatever its category.
		if onList && (denied[f.Name] || deniedCategories[f.Categories] && !slices.Contains(specialFunctions, f.Name)) {
			t.Errorf("%s (%s) is on the list but denied", f.Name, f.Categories)
		}
	}
	for n := range denied {
		if sqlpolicy.Allowed(n) {
			t.Errorf("denied function %s is allowed", n)
		}
	}
	// No table function that reads anything is allowed by name.
	var tfs []struct {
		Name string `json:"name" ch:"name"`
	}
	if err := st.t.Select(ctx, &tfs, Stmt{SQL: "SELECT name FROM system.table_functions"}); err != nil {
		t.Fatal(err)
	}
	pureTableFunctions := map[string]bool{"format": true} // format(fmt, 'data'): parses its argument
	for _, tf := range tfs {
		if sqlpolicy.Allowed(tf.Name) && !pureTableFunctions[tf.Name] {
			t.Errorf("table function %s is allowed by name", tf.Name)
		}
	}
	for _, s := range []string{"sumIf", "quantilesExactOrNull", "uniqArrayIf", "countDistinct", "avgMergeState", "argMaxIf", "row_number", "lagInFrame"} {
		if !sqlpolicy.Allowed(s) {
			t.Errorf("Allowed(%q) = false, want true", s)
		}
	}
}
