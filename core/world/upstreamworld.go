package world

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/world/upstream"
)

// upstreamKey caches an upstream definition by everything that shapes it.
func upstreamKey(ref scenario.WorldRef) string {
	b, _ := json.Marshal(ref.Upstream)
	return "upstream\x00" + string(b)
}

// upstreamDefinition lists an upstream's tools once (it starts the
// upstream for that) and builds a fresh world for each trial: a new
// process for a command, a reset for a url.
func upstreamDefinition(ref scenario.WorldRef) (*definition, error) {
	if ref.Upstream == nil {
		return nil, errors.New("world mcp: the scenario has no upstream block")
	}
	cfg, err := UpstreamConfig(ref.Upstream)
	if err != nil {
		return nil, err
	}
	listing := cfg
	listing.Setup, listing.Probes = nil, nil // listing changes nothing
	w, err := upstream.Open(context.Background(), listing)
	if err != nil {
		return nil, fmt.Errorf("world mcp: %w", err)
	}
	tools := w.Tools()
	_ = w.Close()
	// Probes must be reads of listed tools: checked here, once, so a bad
	// probe is a load error, not a failure of every trial.
	byName := map[string]harness.Tool{}
	for _, t := range tools {
		byName[t.Name] = t
	}
	for _, p := range cfg.Probes {
		t, ok := byName[p.Tool]
		switch {
		case !ok:
			return nil, fmt.Errorf("world mcp: probe %s: the upstream has no tool %s", p.Name, p.Tool)
		case t.Effect != harness.EffectRead:
			return nil, fmt.Errorf("world mcp: probe %s: %s is a %s, not a read (probes must not change the upstream)", p.Name, p.Tool, t.Effect)
		}
	}
	version, err := versionOf(tools, upstreamKey(ref))
	if err != nil {
		return nil, err
	}
	build := func(map[string]any) (harness.World, error) {
		w, err := upstream.Open(context.Background(), cfg)
		if err != nil {
			return nil, fmt.Errorf("world mcp: %w", err)
		}
		return w, nil
	}
	return &definition{tools: tools, version: "u" + version[1:], build: build}, nil
}

// UpstreamConfig turns a scenario's upstream block into the world's
// configuration.
func UpstreamConfig(u *scenario.Upstream) (upstream.Config, error) {
	cfg := upstream.Config{
		Command: u.Command, Env: u.Env, Dir: u.Dir, Unsealed: u.Sandbox == "none", ReadOnly: u.ReadOnly, Reuse: u.Reuse,
		URL: u.URL, Reset: u.Reset, Isolated: u.Isolated,
		CallTimeout: time.Duration(u.CallTimeoutMs) * time.Millisecond,
		Tools:       map[string]upstream.Override{},
	}
	for _, c := range u.Setup {
		cfg.Setup = append(cfg.Setup, upstream.Probe{Tool: c.Tool, Args: c.Args})
	}
	for _, p := range u.Probes {
		cfg.Probes = append(cfg.Probes, upstream.Probe{Name: p.Name, Tool: p.Tool, Args: p.Args})
	}
	for name, t := range u.Tools {
		o := upstream.Override{
			Effect: t.Effect, IdempotencyKeyParam: t.IdempotencyKey, ReconciledBy: t.ReconciledBy, Permission: t.Permission, Guards: t.Guards,
			LatencyMs: t.LatencyMs, DeadlineMs: t.DeadlineMs, StaleAgeMs: t.StaleAgeMs, CostUSD: t.CostUSD,
		}
		for _, e := range t.Errors {
			re, err := regexp.Compile(e.Match)
			if err != nil {
				return cfg, fmt.Errorf("upstream.tools.%s.errors: %w", name, err)
			}
			o.Errors = append(o.Errors, upstream.ErrorRule{Code: e.Code, Match: re, Retryable: e.Retryable})
		}
		cfg.Tools[name] = o
	}
	return cfg, nil
}
