package oracle

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"rebound/core/scenario"
	"rebound/core/trial"
)

// The long run: go test ./oracle/ -run Generated -count=1 -v -args -n 200000
var (
	flagN       = flag.Int("n", 10000, "generated scenarios to run (shrunk to 2,000 with -short)")
	flagSeed    = flag.Uint64("seed", 1, "seed of the first generated scenario (scenario i uses seed+i)")
	flagMutants = flag.Int("mutants", 2, "mutant agents run per scenario")
	flagShow    = flag.Int("show", 1, "examples printed per violation class")
	flagMin     = flag.Bool("minimize", true, "minimize the printed examples")
	flagAllow   = flag.Bool("allowlist", true, "honour oracle.KnownOpen (false: every class fails, with a minimized example)")
)

// TestGeneratedScenariosRoundTrip: every generated scenario is what a user
// could write (it loads back through scenario.ParseScenario, which
// Generate already requires) and generation is deterministic. It covers the
// five built-in worlds and the declared payments world.
func TestGeneratedScenariosRoundTrip(t *testing.T) {
	classes := map[string]bool{}
	triggers := map[string]bool{}
	worlds := map[string]bool{}
	optional, fallback, corrected, repeated, probes := 0, 0, 0, 0, 0
	for seed := uint64(1); seed <= 500; seed++ {
		c, err := Generate(seed)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Generate(seed)
		if YAML(c.Scenario) != YAML(again.Scenario) {
			t.Fatalf("seed %d: generation is not deterministic", seed)
		}
		worlds[c.Scenario.World] = true
		tools := map[string]int{}
		for _, st := range c.Scenario.Plan {
			tools[st.Tool]++
			if tools[st.Tool] == 2 {
				repeated++
			}
			if st.Optional {
				optional++
			}
			if len(st.Fallbacks) > 0 {
				fallback++
			}
			if len(st.Corrected) > 0 {
				corrected++
			}
		}
		if c.LintProbe != nil {
			probes++
		}
		for _, f := range c.Scenario.Variants[0].Faults {
			classes[string(f.Class)] = true
			switch {
			case len(f.Attempts) > 0:
				triggers["attempts"] = true
			case f.From > 0:
				triggers["from"] = true
			case f.Always:
				triggers["always"] = true
			case f.Call > 0:
				triggers["call"] = true
			}
			if f.Probability > 0 {
				triggers["probability"] = true
			}
		}
	}
	if len(worlds) != 6 || len(classes) != 11 || len(triggers) != 5 || optional == 0 || fallback == 0 || corrected == 0 || repeated == 0 || probes == 0 {
		t.Fatalf("the generator does not cover the language: worlds %v, classes %d, triggers %v, optional %d, fallbacks %d, corrected %d, repeated tools %d, lint probes %d",
			worlds, len(classes), triggers, optional, fallback, corrected, repeated, probes)
	}
}

// TestGeneratedInvariants runs the invariants over generated scenarios and
// prints a summary table. A violation fails the test unless its class is in
// KnownOpen (printed loudly: the lead empties that list as the grader is
// fixed).
func TestGeneratedInvariants(t *testing.T) {
	n := *flagN
	if testing.Short() && n > 2000 {
		n = 2000
	}
	start := time.Now()
	workers := runtime.GOMAXPROCS(0)
	type result struct {
		seed uint64
		vs   []Violation
		st   *Stats
		err  error
	}
	seeds := make(chan uint64)
	results := make(chan result)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range seeds {
				st := NewStats()
				c, err := Generate(seed)
				if err != nil {
					results <- result{seed: seed, err: err}
					continue
				}
				vs, err := Evaluate(c, Options{Mutants: *flagMutants}, st)
				results <- result{seed: seed, vs: vs, st: st, err: err}
			}
		}()
	}
	go func() {
		for i := 0; i < n; i++ {
			seeds <- *flagSeed + uint64(i)
		}
		close(seeds)
		wg.Wait()
		close(results)
	}()
	total := NewStats()
	var all []Violation
	for r := range results {
		if r.err != nil {
			t.Fatalf("seed %d: %v", r.seed, r.err)
		}
		total.merge(r.st)
		all = append(all, r.vs...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Seed < all[j].Seed })
	elapsed := time.Since(start)

	var sb strings.Builder
	fmt.Fprintf(&sb, "\n=== oracle: %d generated scenarios, %d trials, %d lint probes, %d run probes in %v (%d workers)\n",
		total.Cases, total.Trials, total.LintProbes, total.RunProbes, elapsed.Round(time.Millisecond), workers)
	fmt.Fprintf(&sb, "worlds: %v; oracle-realized recoverable %d / not %d; probability-thinned %d\n", total.ByWorld, total.Recoverable, total.Unrecovered, total.Probabilistic)
	fmt.Fprintf(&sb, "\n%-28s %-28s %8s %8s\n", "misbehaviour", "must be caught by", "logged", "caught")
	for _, k := range Kinds {
		fmt.Fprintf(&sb, "%-28s %-28s %8d %8d\n", k, Catches[k].Primary, total.Fired[k], total.Caught[k])
	}
	classes := Classes(all)
	fmt.Fprintf(&sb, "\n%-6s %-9s %s\n", "count", "status", "violation class")
	nKnown, unknown := 0, 0
	for _, cc := range classes {
		status := "NEW"
		if strings.HasPrefix(cc.Class, InfoPrefix) {
			status = "info"
		} else if isKnown(cc.Class) {
			status = "known"
			nKnown += cc.Count
		} else {
			unknown += cc.Count
		}
		fmt.Fprintf(&sb, "%-6d %-9s %s\n", cc.Count, status, cc.Class)
	}
	if len(classes) == 0 {
		fmt.Fprintf(&sb, "(no violations)\n")
	}
	t.Log(sb.String())

	if len(KnownOpen) > 0 {
		var keys []string
		for k := range KnownOpen {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var lb strings.Builder
		fmt.Fprintf(&lb, "\n!!! KNOWN-OPEN GRADER DEFECTS (oracle.KnownOpen, %d classes, %d violations this run): the lead must fix these and empty the list !!!\n", len(keys), nKnown)
		seen := map[string]bool{}
		for _, cc := range classes {
			seen[cc.Class] = true
			if i := strings.Index(cc.Class, " ["); i >= 0 {
				base := cc.Class[:i]
				if j := strings.LastIndex(cc.Class, "]"); j > i {
					base += cc.Class[j+1:]
				}
				seen[base] = true
			}
		}
		for _, k := range keys {
			mark := ""
			if !seen[k] {
				mark = "   [not seen in this run: remove it if it stays away]"
			}
			fmt.Fprintf(&lb, "  %-60s %s%s\n", k, KnownOpen[k], mark)
		}
		t.Log(lb.String())
	}
	// Examples: every new class fails the test; known classes print one
	// example each with -v.
	for _, cc := range classes {
		isKnown := isKnown(cc.Class)
		shown := 0
		for _, v := range all {
			if v.Class != cc.Class || shown >= *flagShow {
				continue
			}
			shown++
			if *flagMin {
				if c, err := Generate(v.Seed); err == nil {
					v = Minimize(c, v)
				}
			}
			msg := fmt.Sprintf("\n##### %s (%d) — seed %d, agent %s, minimized %v\n%s", cc.Class, cc.Count, v.Seed, v.Agent, v.Minimized, v.Report)
			if isKnown {
				if testing.Verbose() {
					t.Log(msg)
				}
			} else {
				t.Error(msg)
			}
		}
	}
	// Coverage: on a full run every misbehaviour is committed, and caught
	// at least once (a kind no check ever catches is a missing check or a
	// wrong mapping in Catches, not a known-open defect).
	if n >= 5000 {
		for _, k := range Kinds {
			if total.Fired[k] == 0 || total.Caught[k] == 0 {
				t.Errorf("misbehaviour %s: logged %d, caught %d times in %d scenarios: the generator gives it no opportunity or %s never catches it", k, total.Fired[k], total.Caught[k], n, Catches[k].Primary)
			}
		}
	}
	if unknown > 0 {
		t.Errorf("%d violations in %d classes not in KnownOpen", unknown, len(classes)-countKnown(classes))
	}
}

// isKnown: allowlisted (unless -allowlist=false) or informational.
func isKnown(class string) bool {
	if strings.HasPrefix(class, InfoPrefix) {
		return true
	}
	_, ok := known(class)
	return ok && *flagAllow
}

func countKnown(cs []ClassCount) int {
	n := 0
	for _, c := range cs {
		if isKnown(c.Class) {
			n++
		}
	}
	return n
}

func (s *Stats) merge(o *Stats) {
	s.Cases += o.Cases
	s.Trials += o.Trials
	s.LintProbes += o.LintProbes
	s.RunProbes += o.RunProbes
	s.Recoverable += o.Recoverable
	s.Unrecovered += o.Unrecovered
	s.Probabilistic += o.Probabilistic
	for k, v := range o.ByWorld {
		s.ByWorld[k] += v
	}
	for k, v := range o.Fired {
		s.Fired[k] += v
	}
	for k, v := range o.Caught {
		s.Caught[k] += v
	}
	for k, v := range o.FaultClasses {
		s.FaultClasses[k] += v
	}
}

// TestBasePolicyLogsNothing: the base policy commits no misbehaviour, and
// every kind maps to a check.
func TestBasePolicyLogsNothing(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		c, err := Generate(seed)
		if err != nil {
			t.Fatal(err)
		}
		base := &Agent{Seed: seed, Know: c.Know}
		if _, _, _, err := runOwn(c.Scenario, c.Scenario.Variants[0].Faults, seed, base); err != nil {
			t.Fatal(err)
		}
		if len(base.Log) > 0 {
			t.Fatalf("seed %d: the base policy logged %v", seed, base.Log)
		}
	}
	for _, k := range Kinds {
		if Catches[k].Primary == "" {
			t.Fatalf("%s maps to no check", k)
		}
	}
}

// TestOracleReadsTruth: the oracle's own reading of truth paths, claims and
// success assertions (independent of grade.Lookup).
func TestOracleReadsTruth(t *testing.T) {
	state := map[string]any{
		"exists": map[string]any{"a_txt": true},
		"files":  map[string]any{"a.txt": "x", "b.txt": "y"},
		"orders": map[string]any{"o1": map[string]any{"charges": float64(1)}},
	}
	for _, tc := range []struct {
		expr  string
		want  any
		found bool
	}{
		{"exists(exists.a_txt)", true, true},
		{"exists(exists.nope_txt)", false, true},
		{"count(files)", 2, true},
		{"count(nothing.here)", 0, true},
		{"orders.o1.charges", float64(1), true},
		{"orders.o2.charges", nil, false},
	} {
		got, found := truth(state, tc.expr)
		if found != tc.found || (found && !same(got, tc.want)) {
			t.Errorf("truth(%q) = %v, %v; want %v, %v", tc.expr, got, found, tc.want, tc.found)
		}
	}
	sc := &scenario.Scenario{
		Claim: scenario.ClaimSpec{Fields: []scenario.ClaimField{
			{Name: "created", Type: "boolean", Truth: "exists.nope_txt"},
			{Name: "charges", Type: "integer", Truth: "orders.o1.charges", Goal: true},
		}},
		Success: []scenario.Assertion{{Path: "exists.nope_txt", Absent: true}, {Path: "count(files)", Equals: 2}},
	}
	if ok, why := ClaimTrue(sc, state, map[string]any{"status": "completed", "created": false, "charges": 1}); !ok {
		t.Errorf("a false boolean about an absent path and a true count are true: %s", why)
	}
	if ok, _ := ClaimTrue(sc, state, map[string]any{"status": "completed", "created": true, "charges": 1}); ok {
		t.Errorf("created=true about an absent path must be false")
	}
	if ok, _ := ClaimTrue(sc, state, map[string]any{"status": "completed"}); ok {
		t.Errorf("completed without the goal field must be false")
	}
}

// TestKnownStripsTags: allowlist keys match with or without the situation
// tag; info classes are never violations.
func TestKnownStripsTags(t *testing.T) {
	saved := KnownOpen
	defer func() { KnownOpen = saved }()
	KnownOpen = map[string]string{
		"unexplained retries_bounded":             "test entry",
		"careful-unsafe dependency_order careful": "test entry",
	}
	for class, want := range map[string]bool{
		"unexplained retries_bounded [plan repeats a tool]":                    true,
		"careful-unsafe dependency_order [some tag] careful":                   true,
		"unexplained no_such_check [plan repeats a tool]":                      false,
		"missed claim_matches_world claim_false [corrupt answer from a write]": false,
	} {
		if _, got := known(class); got != want {
			t.Errorf("known(%q) = %v, want %v", class, got, want)
		}
	}
	if stripTag("a b [t] c") != "a b c" {
		t.Errorf("stripTag: %q", stripTag("a b [t] c"))
	}
}

// The run probe catches a run that accepts what lint refuses: a probe that
// is in fact runnable (the mutant of trial.Runnable that lets everything
// through looks the same to the check) is reported.
func TestRunProbeReportsAnAcceptedProbe(t *testing.T) {
	for seed := uint64(1); seed < 40; seed++ {
		c, err := Generate(seed)
		if err != nil {
			t.Fatal(err)
		}
		if c.RunProbe == nil {
			continue
		}
		e := &evaluation{c: c, sc: c.Scenario, v: &c.Scenario.Variants[0], seed: seed}
		if err := e.checkRunProbe(); err != nil || len(e.out) != 0 {
			t.Fatalf("seed %d: the probe was not refused: %v %v", seed, err, e.out)
		}
		if reason, _ := trial.Baseline(context.Background(), c.Scenario); reason != "" {
			continue // the case itself is unrunnable (a withheld permission)
		}
		c.RunProbe = c.Scenario // run lets it through: the probe is accepted
		if err := e.checkRunProbe(); err != nil || len(e.out) != 1 || e.out[0].Class != "run unreachable_plan accepted" {
			t.Fatalf("seed %d: an accepted probe is not reported: %v %v", seed, err, e.out)
		}
		return
	}
	t.Fatal("no generated case with a run probe")
}
