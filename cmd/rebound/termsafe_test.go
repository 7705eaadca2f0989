package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rebound/internal/redact"
)

func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain name", "plain name"},
		{"tabs\tand\nnewlines", "tabs\tand\nnewlines"},
		{"\x1b[31mred\x1b[0m plan", "red plan"},
		{"\x1b[2J\x1b[Hclear", "clear"},
		{"title\x1b]0;pwned\x07 x", "title x"},
		{"link \x1b]8;;http://e/\x1b\\text\x1b]8;;\x1b\\", "link text"},
		{"bell\x07 back\bspace\x00nul\x7fdel", "bell backspacenuldel"},
		{"over\rwrite", "overwrite"},
		{"c1 \u009b31mcsi\u0085 nel", "c1 csi nel"},
		{"ünïcödé ✓", "ünïcödé ✓"},
		{"\x1b(Bcharset \x1bctrailing\x1b", "charset trailing"},
	} {
		if got := termSafe(tc.in, false); got != tc.want {
			t.Errorf("termSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := termSafe("bar\r[===]", true); got != "bar\r[===]" {
		t.Errorf("keepCR dropped the carriage return: %q", got)
	}
}

// Every command's output goes through termSafe: a scenario whose name and
// goal carry escape sequences prints them inert.
func TestCommandsPrintNoEscapes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ansi.yaml")
	sc := "name: \"evil\\e[2J\\e]0;owned\\a\"\nworld: payments\ngoal: \"\\e[31mred goal\"\ntools: [payments.charge]\npermissions: [payments.write]\n" +
		"budget: {tool_calls: 3}\nplan:\n  - {id: c, tool: payments.charge, args: {order_id: A, amount_cents: 1, idempotency_key: k}}\n" +
		"claim: {fields: []}\nvariants:\n  - {name: \"v\\e[1m\", recoverable: true}\n"
	if err := os.WriteFile(path, []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "scenario", "variants", path)
	if code != exitOK || !strings.Contains(out, "evil") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.ContainsAny(out+errOut, "\x1b\x07") {
		t.Fatalf("escape printed: %q %q", out, errOut)
	}
}

func TestRedactionKeyEnvName(t *testing.T) {
	if redactionKeyEnv != redact.EnvKey {
		t.Fatalf("%s != %s", redactionKeyEnv, redact.EnvKey)
	}
}
