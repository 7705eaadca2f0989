package main

// The documentation's links and commands are checked here, beside the
// command tree they name: every relative link of README.md,
// ARCHITECTURE.md, CONTRIBUTING.md and docs/*.md resolves to a file (and a
// #anchor to one of its headings), and every `rebound ...` line or
// `make ...` line of an sh block names a command or a target that exists.
// Nothing is built: the cobra tree runs in-process.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
)

// docsRoot is the repository root, two directories above this package.
const docsRoot = "../.."

// docFiles lists the documents the tests read, relative to the root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"}
	pages, err := filepath.Glob(filepath.Join(docsRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md found")
	}
	for _, p := range pages {
		rel, err := filepath.Rel(docsRoot, p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// mdDoc is a markdown file split into its prose (fenced blocks blanked)
// and its fenced blocks.
type mdDoc struct {
	path   string   // relative to the root
	prose  []string // lines outside fenced blocks ("" inside them)
	blocks []mdBlock
}

type mdBlock struct {
	lang  string
	line  int // 1-based line of the opening fence
	lines []string
}

var fenceRE = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")

func readDoc(t *testing.T, rel string) mdDoc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(docsRoot, rel))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	d := mdDoc{path: rel}
	var cur *mdBlock
	var fence string
	for i, line := range strings.Split(string(data), "\n") {
		if cur != nil {
			if strings.HasPrefix(strings.TrimSpace(line), fence) && strings.Trim(strings.TrimSpace(line), fence[:1]) == "" {
				d.blocks = append(d.blocks, *cur)
				cur = nil
			} else {
				cur.lines = append(cur.lines, line)
			}
			d.prose = append(d.prose, "")
			continue
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			fence = m[1]
			cur = &mdBlock{lang: m[2], line: i + 1}
			d.prose = append(d.prose, "")
			continue
		}
		d.prose = append(d.prose, line)
	}
	if cur != nil {
		t.Errorf("%s:%d: fenced block never closed", rel, cur.line)
	}
	return d
}

var (
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	linkRE     = regexp.MustCompile(`!?\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRE   = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	schemeRE   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	assignRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// slug is GitHub's anchor for a heading: the rendered text lowercased,
// punctuation other than '-' and '_' dropped, each space a '-'.
func slug(heading string) string {
	text := linkRE.ReplaceAllString(heading, "$1") // a link's text only
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors lists a document's heading anchors, numbered as GitHub numbers
// repeated ones (x, x-1, x-2, ...).
func (d mdDoc) anchors() map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range d.prose {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

type docLink struct {
	line   int
	target string
}

// links lists a document's link targets outside code: inline links,
// images and reference definitions.
func (d mdDoc) links() []docLink {
	var out []docLink
	for i, line := range d.prose {
		line = codeSpanRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, docLink{i + 1, m[2]})
		}
		if m := refDefRE.FindStringSubmatch(line); m != nil {
			out = append(out, docLink{i + 1, m[1]})
		}
	}
	return out
}

// TestDocsLinks: every relative link resolves to an existing file or
// directory, and every #anchor to a heading of the markdown file it names.
func TestDocsLinks(t *testing.T) {
	docs := map[string]mdDoc{}
	load := func(rel string) mdDoc {
		if d, ok := docs[rel]; ok {
			return d
		}
		d := readDoc(t, rel)
		docs[rel] = d
		return d
	}
	checked := 0
	for _, rel := range docFiles(t) {
		d := load(rel)
		for _, l := range d.links() {
			if schemeRE.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue // a URL, not a file of the repository
			}
			checked++
			where := fmt.Sprintf("%s:%d: link %q", rel, l.line, l.target)
			path, anchor, _ := strings.Cut(l.target, "#")
			target := rel
			if path != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(rel), path)))
				if strings.HasPrefix(target, "../") {
					t.Errorf("%s: leaves the repository", where)
					continue
				}
				if _, err := os.Stat(filepath.Join(docsRoot, target)); err != nil {
					t.Errorf("%s: %s does not exist", where, target)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if !load(target).anchors()[anchor] {
				t.Errorf("%s: %s has no heading with anchor #%s", where, target, anchor)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d relative links found: is the parser broken?", checked)
	}
	t.Logf("%d relative links checked in %d documents", checked, len(docs))
}

type shellLine struct {
	line int // 1-based line of the command's first line
	text string
}

// shellLines returns the command lines of a document's sh blocks, in
// order: continuation lines are joined to their first line.
func shellLines(d mdDoc) []shellLine {
	var out []shellLine
	for _, b := range d.blocks {
		if !slices.Contains([]string{"sh", "bash", "shell", "console"}, b.lang) {
			continue
		}
		joined, start := "", 0
		for i, line := range b.lines {
			if joined == "" {
				start = b.line + 1 + i
			}
			if strings.HasSuffix(line, "\\") {
				joined += strings.TrimSuffix(line, "\\") + " "
				continue
			}
			out = append(out, shellLine{start, joined + line})
			joined = ""
		}
	}
	return out
}

// words splits a command line into its leading words: the environment
// assignments before the program are dropped, and the line ends at a
// comment or a shell operator.
func words(line string) []string {
	var out []string
	for _, w := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "$ ")) {
		if strings.HasPrefix(w, "#") || strings.ContainsAny(w[:1], "|&;><(") {
			break
		}
		if len(out) == 0 && assignRE.MatchString(w) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// docsRootCmd is the command tree as `rebound` builds it, help and
// completion included.
func docsRootCmd() *cobra.Command {
	root := newRoot()
	setOutput(root, io.Discard, io.Discard)
	root.InitDefaultHelpCmd()
	return root
}

// resolveCommand walks args down the tree as far as they name commands. A
// command that has subcommands needs one: a word that is none of them is
// an error (so a renamed subcommand is caught, not taken for an argument).
// Flags and arguments after the command are ignored.
func resolveCommand(root *cobra.Command, args []string) ([]string, error) {
	cur, path := root, []string{}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		var subs []string
		var next *cobra.Command
		for _, c := range cur.Commands() {
			if !c.IsAvailableCommand() && c.Name() != "help" {
				continue
			}
			subs = append(subs, c.Name())
			if c.Name() == a || c.HasAlias(a) {
				next = c
			}
		}
		if len(subs) == 0 {
			break // a leaf: the rest are its arguments
		}
		if next == nil {
			return path, fmt.Errorf("%q is not a subcommand of %q (it has %s)", a, strings.Join(append([]string{"rebound"}, path...), " "), strings.Join(subs, ", "))
		}
		cur, path = next, append(path, next.Name())
	}
	return path, nil
}

// makeTargets lists the Makefile's targets.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(docsRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(string(data), -1) {
		out[m[1]] = true
	}
	return out
}

// TestDocsCommands: every `rebound X [Y]` of an sh block names an existing
// command (`rebound X Y --help` exits 0 with that command's usage), and
// every `make T` an existing target.
func TestDocsCommands(t *testing.T) {
	root := docsRootCmd()
	targets := makeTargets(t)
	helped := map[string]bool{}
	commands := 0
	for _, rel := range docFiles(t) {
		d := readDoc(t, rel)
		for _, sl := range shellLines(d) {
			line, text := sl.line, sl.text
			w := words(text)
			if len(w) == 0 {
				continue
			}
			where := fmt.Sprintf("%s:%d: %q", rel, line, strings.TrimSpace(text))
			switch {
			case w[0] == "rebound" || strings.HasSuffix(w[0], "/rebound"):
				commands++
				path, err := resolveCommand(root, w[1:])
				if err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				key := strings.Join(path, " ")
				if helped[key] {
					continue
				}
				helped[key] = true
				code, out, errOut := runCLI(t, append(path, "--help")...)
				usage := "Usage:\n  " + strings.Join(append([]string{"rebound"}, path...), " ")
				if code != exitOK || !strings.Contains(out, usage) {
					t.Errorf("%s: rebound %s --help: exit %d, want 0 with %q\nstdout: %.200s\nstderr: %.200s", where, key, code, usage, out, errOut)
				}
			case w[0] == "make":
				for _, a := range w[1:] {
					if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
						continue
					}
					if !targets[a] {
						t.Errorf("%s: the Makefile has no target %q", where, a)
					}
				}
			}
		}
	}
	if commands < 20 {
		t.Fatalf("only %d rebound commands found in sh blocks: is the parser broken?", commands)
	}
	t.Logf("%d rebound commands (%d distinct) checked", commands, len(helped))
}

// TestDocsCheckersCatchBreakage keeps the two tests above honest: a link to
// a missing file or heading, and a renamed command or subcommand, are seen.
func TestDocsCheckersCatchBreakage(t *testing.T) {
	root := docsRootCmd()
	for _, args := range [][]string{{"reprot", "ID"}, {"sweep", "strat", "plan.yaml"}, {"scenario", "lnit"}} {
		if _, err := resolveCommand(root, args); err == nil {
			t.Errorf("rebound %s: resolved, want an error", strings.Join(args, " "))
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "start", "--wait", "plan.yaml"}, "sweep start"},
		{[]string{"sql", "SELECT 1"}, "sql"},
		{[]string{"help", "report"}, "help"},
		{[]string{"completion", "bash"}, "completion bash"},
		{[]string{"--data-dir", "x", "run"}, ""},
	} {
		path, err := resolveCommand(root, c.args)
		if err != nil || strings.Join(path, " ") != c.want {
			t.Errorf("resolveCommand(%q) = %q, %v; want %q", c.args, path, err, c.want)
		}
	}
	d := mdDoc{path: "x.md", prose: []string{
		"# Cost: estimate and max_usd",
		"## The `sandbox` in a pod",
		"## Notes", "## Notes",
		"see [a](#cost-estimate-and-max_usd), [b](#the-sandbox-in-a-pod), [c](#notes-1), `[d](#not-a-link)`",
	}}
	a := d.anchors()
	for _, want := range []string{"cost-estimate-and-max_usd", "the-sandbox-in-a-pod", "notes", "notes-1"} {
		if !a[want] {
			t.Errorf("anchors() = %v, want %q among them", a, want)
		}
	}
	if got := d.links(); len(got) != 3 || got[2].target != "#notes-1" {
		t.Errorf("links() = %v, want the three links outside code spans", got)
	}
	if got := words(`FOO=1 rebound sql "SELECT 1" | less # x`); !slices.Equal(got, []string{"rebound", "sql", `"SELECT`, `1"`}) {
		t.Errorf("words() = %q", got)
	}
}
