package scenario

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"gopkg.in/yaml.v3"

	"rebound/internal/fileerr"
)

// Plan crosses scenarios with arms and seeds: the matrix of a sweep.
type Plan struct {
	Name        string   `json:"name" yaml:"name"`
	Description string   `json:"description,omitempty" yaml:"description,omitempty"`
	Scenarios   []string `json:"scenarios" yaml:"scenarios"` // files or globs, relative to the plan
	Arms        []Arm    `json:"arms" yaml:"arms"`
	// Matrix adds the arms of a models x prompts x settings sweep.
	Matrix *Matrix `json:"matrix,omitempty" yaml:"matrix,omitempty"`
	Seeds  Seeds   `json:"seeds" yaml:"seeds"`
	// ShardSize is the number of trials one activity runs; Concurrency the
	// number of shards in flight at once.
	ShardSize   int `json:"shard_size,omitempty" yaml:"shard_size,omitempty"`
	Concurrency int `json:"concurrency,omitempty" yaml:"concurrency,omitempty"`
	// MaxUSD caps the sweep's model spend, in USD (0: no cap): a sweep
	// whose projected cost exceeds it does not start, and a running one
	// stops scheduling shards once its recorded spend reaches it.
	MaxUSD float64 `json:"max_usd,omitempty" yaml:"max_usd,omitempty"`
	// Judge, when set, scores every trial that met a failure with the LLM
	// judge as well; the executable checks stay the authority.
	Judge *JudgeSpec `json:"judge,omitempty" yaml:"judge,omitempty"`

	expanded []Arm // the matrix's arms, set by validate
}

// Arm is one agent configuration being compared.
type Arm struct {
	Name string `json:"name" yaml:"name"`
	// Agent names the agent: a scripted reference agent (careful,
	// naive_retrier, fabricator, ...) or "llm" with the LLM settings.
	Agent string  `json:"agent" yaml:"agent"`
	LLM   *LLMArm `json:"llm,omitempty" yaml:"llm,omitempty"`
	// Axes are the matrix values of an arm expanded from a plan's matrix
	// (model, prompt, temperature, top_p); nil for a hand-written arm.
	Axes map[string]string `json:"axes,omitempty" yaml:"-"`
	// Command arms (agent: command) run an external agent's process once
	// per trial; see CommandArm in arm.go for the fields' meaning.
	Command            []string          `json:"command,omitempty" yaml:"command,omitempty"`
	Env                map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	EnvFrom            map[string]string `json:"env_from,omitempty" yaml:"env_from,omitempty"`
	Timeout            string            `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	AttritionExitCodes []int             `json:"attrition_exit_codes,omitempty" yaml:"attrition_exit_codes,omitempty"`
	// Sandbox, ReadOnly, Egress and Limits confine a command arm's
	// process; see AgentCommand in arm.go.
	Sandbox  string        `json:"sandbox,omitempty" yaml:"sandbox,omitempty"`
	ReadOnly []string      `json:"read_only,omitempty" yaml:"read_only,omitempty"`
	Egress   []string      `json:"egress,omitempty" yaml:"egress,omitempty"`
	Limits   *SandboxLimit `json:"limits,omitempty" yaml:"limits,omitempty"`
}

// SandboxLimit are a sealed command arm's per-trial resource limits; zero
// fields take the defaults of internal/sandbox.
type SandboxLimit struct {
	MemoryMB int     `json:"memory_mb,omitempty" yaml:"memory_mb,omitempty"`
	PIDs     int     `json:"pids,omitempty" yaml:"pids,omitempty"`
	CPUs     float64 `json:"cpus,omitempty" yaml:"cpus,omitempty"`
}

// Seeds is the list of seeds each (scenario, variant, arm) runs with. In
// YAML it is either a count N (seeds 1..N) or an explicit list.
type Seeds []uint64

// UnmarshalYAML accepts a count or a list.
func (s *Seeds) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var count int
		if err := n.Decode(&count); err != nil {
			return locatedError(n, "expected a count or a list of seeds")
		}
		if count < 1 || count > 100000 {
			return locatedError(n, "count must be between 1 and 100000, got %d", count)
		}
		out := make(Seeds, count)
		for i := range out {
			out[i] = uint64(i + 1)
		}
		*s = out
		return nil
	}
	var list []uint64
	if err := n.Decode(&list); err != nil {
		return locatedError(n, "expected a count or a list of non-negative integers")
	}
	*s = list
	return nil
}

// Resolved is a plan with its scenarios loaded: everything a worker needs to
// run any trial of the sweep, with no access to the files. It is stored with
// the sweep so workers on other machines read it from storage.
type Resolved struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	File        string      `json:"file,omitempty"`
	Hash        string      `json:"hash"`
	Scenarios   []*Scenario `json:"scenarios"`
	Arms        []Arm       `json:"arms"`
	Seeds       []uint64    `json:"seeds"`
	ShardSize   int         `json:"shard_size"`
	// ShardSizeAuto is true when the plan set no shard_size: the runner
	// sizes shards from the measured cost of a trial (runner.SizeShards).
	ShardSizeAuto bool `json:"shard_size_auto,omitempty"`
	// ConcurrencyAuto is true when the plan set no concurrency.
	ConcurrencyAuto bool       `json:"concurrency_auto,omitempty"`
	Concurrency     int        `json:"concurrency"`
	Judge           *JudgeSpec `json:"judge,omitempty"`
	// MaxUSD is the plan's spend cap (0: none), see Plan.MaxUSD.
	MaxUSD float64 `json:"max_usd,omitempty"`
	// TrialOrder is how Trial numbers the trials, and so the order in
	// which a sweep's shards run them. LoadPlan sets SeedBlocks; a plan
	// stored before orders existed has none (ScenarioMajor), and keeps it.
	TrialOrder TrialOrder `json:"trial_order,omitempty"`
}

// TrialOrder is how a resolved plan numbers its trials. A sweep's shards
// are ranges of trial numbers recorded in its workflow's history, so the
// order is stored with the plan: a sweep keeps the order it started with,
// whichever rebound binary runs its remaining shards or resumes it.
type TrialOrder string

const (
	// ScenarioMajor (the zero value: plans stored before orders existed,
	// where the field is absent) numbers scenario, variant, seed, arm. A
	// sweep stopped early measured its first scenarios on every seed and
	// its last ones not at all.
	ScenarioMajor TrialOrder = ""
	// SeedBlocks cuts the seeds into blocks of SeedBlock() seeds and
	// numbers block, then the (scenario, variant) cases in the plan's
	// order, then the block's seeds, then arm: every case's seeds of one
	// block come before any case's seeds of the next, so once a sweep
	// (stopped by max_usd, cancelled, or still running) has run one
	// block's worth of trials, what it ran covers every case. A block is
	// as many seeds as a shard holds per arm: a shard holds one case's run
	// of seeds, adjacent in the trials table's key (arm, scenario,
	// variant, seed), where a retried or resumed shard's checkpoint finds
	// them (storage.StoredTrials); a plan of model or process arms (one or
	// two trials per shard) runs seed by seed. (With one block, as with
	// one seed, the two orders are the same.)
	SeedBlocks TrialOrder = "seed_blocks"
)

// SeedBlock is the number of seeds in a block of the SeedBlocks order:
// the trials a shard holds per arm (ShardSize / arms), at least 1 and at
// most the plan's seeds. It is derived from fields stored with the plan,
// so every worker of a sweep cuts the same blocks.
func (r *Resolved) SeedBlock() int {
	b := 1
	if len(r.Arms) > 0 {
		b = max(b, r.ShardSize/len(r.Arms))
	}
	return min(b, max(len(r.Seeds), 1))
}

// Check reports an order this binary does not know (a plan stored by a
// newer rebound): reading its trials in another order would run and
// count the wrong ones.
func (o TrialOrder) Check() error {
	switch o {
	case ScenarioMajor, SeedBlocks:
		return nil
	}
	return fmt.Errorf("trial_order %q is not an order this rebound knows (absent: scenario by scenario; %q: blocks of seeds); the plan was stored by a newer rebound, run its sweep with that version", string(o), string(SeedBlocks))
}

// TrialKey identifies one trial of a resolved plan.
type TrialKey struct {
	Scenario *Scenario
	Variant  Variant
	Arm      Arm
	Seed     uint64
}

// LoadPlan reads a plan and every scenario it names, validating all of them;
// errors from every file are reported together. Generated variants are
// expanded with catalog (world.Catalog; nil is ErrNoCatalog) and stored in
// the Resolved plan like hand-written ones, so workers never need the
// catalog.
func LoadPlan(path string, catalog Catalog) (*Resolved, error) {
	return LoadPlanWith(path, LoadOptions{Catalog: catalog})
}

// LoadPlanWith is LoadPlan with options.
func LoadPlanWith(path string, opts LoadOptions) (*Resolved, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	data, err := fileerr.ReadRegular(path, MaxPlanBytes, "plan file")
	if err != nil {
		return nil, err
	}
	var p Plan
	root, errs := decodeStrict(path, data, &p)
	if root == nil {
		return nil, errs
	}
	if pe := p.validate(); len(pe) > 0 {
		errs = append(errs, locate(path, root, pe)...)
	}
	r := &Resolved{Name: p.Name, Description: p.Description, File: path, Arms: append(append([]Arm(nil), p.Arms...), p.expanded...), Seeds: p.Seeds,
		ShardSize: p.ShardSize, Concurrency: p.Concurrency, MaxUSD: p.MaxUSD, TrialOrder: SeedBlocks}
	if r.ShardSize <= 0 {
		r.ShardSize, r.ShardSizeAuto = defaultShardSize(r.Arms), true
	}
	if r.Concurrency <= 0 {
		r.Concurrency, r.ConcurrencyAuto = 4, true
	}
	r.resolveCommands(path)
	if pe := r.loadPrompts(path, p.Judge); len(pe) > 0 {
		errs = append(errs, locate(path, root, pe)...)
	}
	seen := map[string]string{}
	loaded := 0
	for i, pattern := range p.Scenarios {
		full := pattern
		if !filepath.IsAbs(full) {
			full = filepath.Join(filepath.Dir(path), pattern)
		}
		matches, _ := filepath.Glob(full)
		if len(matches) == 0 {
			errs = append(errs, locate(path, root, []pathError{{path: fmt.Sprintf("scenarios[%d]", i), msg: fmt.Sprintf("no scenario file matches %q", pattern)}})...)
			continue
		}
		sort.Strings(matches)
		if loaded+len(matches) > MaxPlanScenarios {
			errs = append(errs, locate(path, root, []pathError{{path: fmt.Sprintf("scenarios[%d]", i), msg: fmt.Sprintf("a plan loads at most %d scenario files", MaxPlanScenarios)}})...)
			break
		}
		loaded += len(matches)
		for _, m := range matches {
			if err := opts.interrupted(); err != nil {
				return nil, err
			}
			s, err := LoadScenarioWith(m, opts)
			if err != nil {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return nil, err
				}
				if es, ok := err.(Errors); ok {
					errs = append(errs, es...)
				} else {
					errs = append(errs, FieldError{File: m, Msg: err.Error()})
				}
				continue
			}
			if prev, dup := seen[s.Name]; dup {
				errs = append(errs, FieldError{File: m, Line: 1, Col: 1, Field: "name", Msg: fmt.Sprintf("scenario name %q is also used by %s", s.Name, prev)})
				continue
			}
			seen[s.Name] = m
			r.Scenarios = append(r.Scenarios, s)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	r.Hash = r.computeHash()
	return r, nil
}

// ParsePlan decodes and validates plan YAML without loading the scenarios
// it names; file names the source in errors.
func ParsePlan(file string, data []byte) (*Plan, error) {
	var p Plan
	root, errs := decodeStrict(file, data, &p)
	if root == nil {
		return nil, errs
	}
	if errs := append(errs, locate(file, root, p.validate())...); len(errs) > 0 {
		return nil, errs
	}
	return &p, nil
}

func (p *Plan) validate() []pathError {
	var errs []pathError
	if p.Name == "" {
		errs = append(errs, pathError{"name", "required"})
	}
	if len(p.Scenarios) == 0 {
		errs = append(errs, pathError{"scenarios", "at least one scenario file is required"})
	}
	if len(p.Arms) == 0 && p.Matrix == nil {
		errs = append(errs, pathError{"arms", "at least one arm (or a matrix) is required"})
	}
	names := map[string]bool{}
	for i, a := range p.Arms {
		if a.Name == "" {
			errs = append(errs, pathError{fmt.Sprintf("arms[%d].name", i), "required"})
		} else if names[a.Name] {
			errs = append(errs, pathError{fmt.Sprintf("arms[%d].name", i), fmt.Sprintf("duplicate arm name %q", a.Name)})
		}
		names[a.Name] = true
		if a.Agent == "" {
			errs = append(errs, pathError{fmt.Sprintf("arms[%d].agent", i), "required"})
		}
		errs = append(errs, a.validate(i)...)
	}
	if p.Matrix != nil {
		expanded, merrs := p.Matrix.Expand()
		errs = append(errs, merrs...)
		for _, a := range expanded {
			if names[a.Name] {
				errs = append(errs, pathError{"matrix", fmt.Sprintf("arm name %q is used twice (set matrix.name to tell the arms apart)", a.Name)})
			}
			names[a.Name] = true
			if aerrs := a.validateAt("matrix.base"); len(aerrs) > 0 {
				errs = append(errs, aerrs...)
				break // every arm of the matrix shares the base's problems
			}
		}
		p.expanded = expanded
	}
	errs = append(errs, p.validateCommandShards()...)
	if len(p.Seeds) == 0 {
		errs = append(errs, pathError{"seeds", "a count or a list of seeds is required"})
	}
	if p.ShardSize < 0 || p.ShardSize > 1000 {
		errs = append(errs, pathError{"shard_size", "must be between 1 and 1000"})
	}
	if p.Judge != nil {
		errs = append(errs, validateEndpoint("judge", p.Judge.BaseURL, p.Judge.APIKeyEnv, p.Judge.Model)...)
	}
	if p.MaxUSD < 0 || math.IsNaN(p.MaxUSD) || math.IsInf(p.MaxUSD, 0) {
		errs = append(errs, pathError{"max_usd", "must be a positive amount of USD (or absent: no cap)"})
	}
	if p.Concurrency < 0 || p.Concurrency > 500 {
		errs = append(errs, pathError{"concurrency", "must be between 1 and 500"})
	}
	return errs
}

// computeHash identifies the resolved content: the same plan and scenario
// bytes give the same hash.
func (r *Resolved) computeHash() string {
	h := sha256.New()
	b, _ := json.Marshal(struct {
		Arms  []Arm
		Seeds []uint64
	}{r.Arms, r.Seeds})
	h.Write(b)
	for _, s := range r.Scenarios {
		h.Write([]byte(s.Name + "\x00" + s.Hash + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// perVariant is the number of trials one variant contributes.
func (r *Resolved) perVariant() int { return len(r.Seeds) * len(r.Arms) }

// TrialCount is the number of trials in the matrix.
func (r *Resolved) TrialCount() int { return r.caseCount() * r.perVariant() }

// caseCount is the number of (scenario, variant) cases.
func (r *Resolved) caseCount() int {
	n := 0
	for _, s := range r.Scenarios {
		n += len(s.Variants)
	}
	return n
}

// Trial returns the i-th trial of the matrix (0-based) in the plan's
// TrialOrder. In either order both arms of one (case, seed) are
// neighbours, so a shard holds matched pairs.
func (r *Resolved) Trial(i int) (TrialKey, error) { return r.TrialIn(r.TrialOrder, i) }

// TrialIn returns the i-th trial in the given order. Every order numbers
// the same TrialCount trials; a sweep runs its plan's (Trial), and a
// sample that must not depend on how a sweep runs (runner.SizeShards)
// names its own. O(scenarios).
func (r *Resolved) TrialIn(order TrialOrder, i int) (TrialKey, error) {
	if err := order.Check(); err != nil {
		return TrialKey{}, err
	}
	if i < 0 || i >= r.TrialCount() {
		return TrialKey{}, fmt.Errorf("trial index %d out of range (plan has %d trials)", i, r.TrialCount())
	}
	arms := len(r.Arms)
	arm := r.Arms[i%arms]
	if order == SeedBlocks {
		// Every block before the last holds SeedBlock seeds of every case.
		block := r.SeedBlock()
		full := r.caseCount() * block * arms
		b, j := i/full, i%full
		seeds := min(block, len(r.Seeds)-b*block) // the last block may be short
		s, v := r.caseAt(j / (seeds * arms))
		return TrialKey{Scenario: s, Variant: v, Seed: r.Seeds[b*block+j%(seeds*arms)/arms], Arm: arm}, nil
	}
	per := r.perVariant()
	s, v := r.caseAt(i / per)
	return TrialKey{Scenario: s, Variant: v, Seed: r.Seeds[i%per/arms], Arm: arm}, nil
}

// caseAt returns the c-th (scenario, variant) case in the plan's order
// (0 <= c < caseCount).
func (r *Resolved) caseAt(c int) (*Scenario, Variant) {
	for _, s := range r.Scenarios {
		if c < len(s.Variants) {
			return s, s.Variants[c]
		}
		c -= len(s.Variants)
	}
	panic(fmt.Sprintf("case %d out of range", c))
}

// Scenario returns the named scenario.
func (r *Resolved) Scenario(name string) (*Scenario, bool) {
	for _, s := range r.Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// LooksLikePlan reports whether YAML data is a plan (it has a top-level
// "arms" key) rather than a scenario.
func LooksLikePlan(data []byte) bool {
	// The node tree, not a map: decoding a map checks duplicate keys in
	// quadratic time.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 {
		return false
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "arms" || top.Content[i].Value == "matrix" {
			return true
		}
	}
	return false
}
