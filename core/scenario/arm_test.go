package scenario

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"rebound/internal/endpoint"
)

func writePlan(t *testing.T, arms string) string {
	t.Helper()
	dir := t.TempDir()
	sc, err := os.ReadFile("../../examples/scenarios/charge-502-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"s.yaml":    string(sc),
		"prompt.md": "Be careful with tools.\n",
		"empty.md":  "",
		"plan.yaml": "name: p\nscenarios: [s.yaml]\nseeds: 1\narms:\n" + arms,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "plan.yaml")
}

func TestLLMArmLoadsPromptWithHash(t *testing.T) {
	p, err := LoadPlanWith(writePlan(t, `  - name: gpt
    agent: llm
    llm: {base_url: "http://127.0.0.1:8000/v1", api_key_env: OPENAI_API_KEY, model: m, prompt: prompt.md, temperature: 0}
`), noCatalog)
	if err != nil {
		t.Fatal(err)
	}
	l := p.Arms[0].LLM
	if l.PromptText != "Be careful with tools.\n" || l.PromptHash != endpoint.HashPrompt(l.PromptText) || l.PromptName != "prompt.md" || *l.Temperature != 0 {
		t.Fatalf("llm arm = %+v", l)
	}
}

func TestLLMArmErrorsAreLocated(t *testing.T) {
	cases := []struct{ arms, want string }{
		{"  - {name: a, agent: llm}\n", "plan.yaml:5:5: arms[0].llm: an llm arm needs its llm settings"},
		{"  - {name: a, agent: careful, llm: {base_url: x, model: m, prompt: prompt.md}}\n", "arms[0].llm: llm settings need agent: llm"},
		{"  - {name: a, agent: llm, llm: {base_url: \"http://user:pw@h/v1\", model: m, prompt: prompt.md}}\n", "arms[0].llm.base_url: must not carry credentials"},
		{"  - {name: a, agent: llm, llm: {base_url: \"http://h/v1\", api_key_env: sk-abc123, model: m, prompt: prompt.md}}\n", "arms[0].llm.api_key_env: must be the NAME of an environment variable"},
		{"  - {name: a, agent: llm, llm: {base_url: \"http://h/v1\", model: m, prompt: missing.md}}\n", "arms[0].llm.prompt: cannot read prompt file"},
		{"  - {name: a, agent: llm, llm: {base_url: \"http://h/v1\", model: m, prompt: empty.md}}\n", "arms[0].llm.prompt: prompt file empty.md is empty"},
		{"  - {name: a, agent: llm, llm: {base_url: \"http://h/v1\", model: m, prompt: prompt.md, request_timeout: soon}}\n", `arms[0].llm.request_timeout: "soon" is not a positive duration`},
	}
	for _, tc := range cases {
		_, err := LoadPlanWith(writePlan(t, tc.arms), noCatalog)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("arms %q: error = %v\nwant containing %q", tc.arms, err, tc.want)
		}
	}
}

func TestCommandArmLoads(t *testing.T) {
	path := writePlan(t, `  - name: mine
    agent: command
    command: [./bin/agent.sh, --fast]
    env: {MODEL: gpt-x}
    env_from: {OPENAI_API_KEY: MY_KEY}
    timeout: 2m
    attrition_exit_codes: [75]
    read_only: [../deps, /opt/venv]
    egress: [api.example.com:443]
    limits: {memory_mb: 512, pids: 64, cpus: 0.5}
`)
	p, err := LoadPlanWith(path, noCatalog)
	if err != nil {
		t.Fatal(err)
	}
	a := p.Arms[0]
	if want := filepath.Join(filepath.Dir(filepath.Dir(path)), "deps"); a.ReadOnly[0] != want || a.ReadOnly[1] != "/opt/venv" {
		t.Errorf("read_only %v: want %s resolved against the plan, the absolute path kept", a.ReadOnly, want)
	}
	if !a.Sealed() || a.Egress[0] != "api.example.com:443" || a.Limits.MemoryMB != 512 || a.Limits.PIDs != 64 || a.Limits.CPUs != 0.5 {
		t.Errorf("sandbox fields %+v", a)
	}
	if want := filepath.Join(filepath.Dir(path), "bin/agent.sh"); a.Command[0] != want || a.Command[1] != "--fast" {
		t.Errorf("command %v: want %s resolved against the plan", a.Command, want)
	}
	if a.CommandTimeout().String() != "2m0s" || a.EnvFrom["OPENAI_API_KEY"] != "MY_KEY" || a.AttritionExitCodes[0] != 75 {
		t.Errorf("arm %+v", a)
	}
	if p.ShardSize != 1 {
		t.Errorf("a plan with a command arm runs one trial per activity by default, got shard_size %d", p.ShardSize)
	}
	// A bare name is looked up on PATH at run time, untouched.
	p, err = LoadPlanWith(writePlan(t, "  - {name: m, agent: command, command: [node, x.js]}\n"), noCatalog)
	if err != nil || p.Arms[0].Command[0] != "node" || p.Arms[0].CommandTimeout().String() != "5m0s" {
		t.Errorf("bare command: %v %v", p, err)
	}
}

func TestCommandArmErrorsAreLocated(t *testing.T) {
	cases := []struct{ arms, want string }{
		{"  - {name: a, agent: command}\n", "arms[0].command: required"},
		{"  - {name: a, agent: careful, command: [x]}\n", "arms[0].command: command, env, env_from, timeout, attrition_exit_codes, sandbox, read_only, egress and limits need agent: command"},
		{"  - {name: a, agent: careful, sandbox: none}\n", "arms[0].command: command, env, env_from, timeout, attrition_exit_codes, sandbox, read_only, egress and limits need agent: command"},
		{"  - {name: a, agent: command, command: [x], sandbox: off}\n", `arms[0].sandbox: "off" is not a sandbox: sealed (the default) or none`},
		{"  - {name: a, agent: command, command: [x], sandbox: none, egress: [h:1]}\n", "arms[0].sandbox: read_only, egress and limits confine a sealed process"},
		{"  - {name: a, agent: command, command: [x], egress: [api.example.com]}\n", `arms[0].egress: egress "api.example.com"`},
		{"  - {name: a, agent: command, command: [x], egress: [10.0.0.5:443]}\n", "only a host name or a loopback address can be routed"},
		{"  - {name: a, agent: command, command: [x], egress: [h:99999]}\n", "is not a number between 1 and 65535"},
		{"  - {name: a, agent: command, command: [x], read_only: ['']}\n", "arms[0].read_only[0]: empty path"},
		{"  - {name: a, agent: command, command: [x], limits: {memory_mb: -1}}\n", "arms[0].limits.memory_mb: -1 is not a size"},
		{"  - {name: a, agent: command, command: [x], limits: {pids: 100000}}\n", "arms[0].limits.pids: 100000 is not a count"},
		{"  - {name: a, agent: command, command: [x], limits: {cpus: -2}}\n", "arms[0].limits.cpus: -2 is not a number of CPUs"},
		{"  - {name: a, agent: command, command: [x], limits: {memory: 5}}\n", "memory"},
		{"  - {name: a, agent: command, command: [x], env: {K: sk-abcdefghijklmnopqrstuv}}\n", "arms[0].env.K: looks like a secret"},
		{"  - {name: a, agent: command, command: [x], env: {REBOUND_MCP_URL: x}}\n", "REBOUND_ is reserved"},
		{"  - {name: a, agent: command, command: [x], env_from: {K: not-a-name}}\n", `arms[0].env_from.K: "not-a-name" is not a variable name`},
		{"  - {name: a, agent: command, command: [x], timeout: 2h}\n", `arms[0].timeout: "2h" is not a duration`},
		{"  - {name: a, agent: command, command: [x], attrition_exit_codes: [0]}\n", "0 is not an exit code"},
		{"  - {name: a, agent: command, command: [x], timeout: 10m}\nshard_size: 4\n", "shard_size: 4 trials of arm a (timeout 10m0s each) may outlast"},
	}
	for _, tc := range cases {
		_, err := LoadPlanWith(writePlan(t, tc.arms), noCatalog)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("arms %q: error = %v\nwant containing %q", tc.arms, err, tc.want)
		}
	}
}

// Every relative argument that exists beside the plan is made absolute
// (and its directory readable by a sealed process); {plan_dir} is the
// plan's directory; options, assignments and names that exist nowhere
// beside the plan are left as they are.
func TestCommandArgumentsResolveAgainstThePlan(t *testing.T) {
	path := writePlan(t, `  - name: mine
    agent: command
    command: [node, agent.mjs, --flag, prompt.md, not-here.js, "{plan_dir}/x", KEY=prompt.md, sub]
    read_only: ["{plan_dir}/deps"]
`)
	dir := filepath.Dir(path)
	if err := os.WriteFile(filepath.Join(dir, "agent.mjs"), []byte("//"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPlanWith(path, noCatalog)
	if err != nil {
		t.Fatal(err)
	}
	a := p.Arms[0]
	want := []string{"node", filepath.Join(dir, "agent.mjs"), "--flag", filepath.Join(dir, "prompt.md"), "not-here.js",
		filepath.Join(dir, "x"), "KEY=prompt.md", filepath.Join(dir, "sub")}
	if !slices.Equal(a.Command, want) {
		t.Errorf("command %q\nwant    %q", a.Command, want)
	}
	if wantRO := []string{filepath.Join(dir, "deps"), dir, filepath.Join(dir, "sub")}; !slices.Equal(a.ReadOnly, wantRO) {
		t.Errorf("read_only %q, want %q", a.ReadOnly, wantRO)
	}
}
