package upstream

import (
	"fmt"
	"sync"

	"rebound/core/harness"
)

// Replay is a world that answers from a stored trial's exchanges, without
// the upstream: rebound replay re-runs the trial against it. A call is
// answered by the first recorded exchange of the same tool and arguments
// not yet used (so retries get their own answers, in order); a call the
// recording does not hold is a divergence, answered UNAVAILABLE and
// reported by Divergence. Commits and state follow the same rules as the
// live world, so the same trial gets the same verdicts.
func Replay(cfg Config, tools []harness.Tool, exchanges []Exchange) *World {
	w := &World{cfg: cfg, committed: map[string]bool{}, tools: tools, byName: make(map[string]harness.Tool, len(tools)),
		replay: &recorded{exchanges: exchanges, used: make([]bool, len(exchanges))}}
	for _, t := range tools {
		w.byName[t.Name] = t
	}
	return w
}

// Divergence names the first call the recording did not hold ("" when
// every call was answered from it).
func (w *World) Divergence() string {
	if w.replay == nil {
		return ""
	}
	w.replay.mu.Lock()
	defer w.replay.mu.Unlock()
	return w.replay.divergence
}

type recorded struct {
	mu         sync.Mutex
	exchanges  []Exchange
	used       []bool
	divergence string
}

func (r *recorded) answer(tool string, args map[string]any, probe bool) (map[string]any, *harness.ToolError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	digest := argsDigest(args)
	for i, ex := range r.exchanges {
		if r.used[i] || ex.Setup || ex.Probe != probe || ex.Tool != tool || argsDigest(ex.Args) != digest {
			continue
		}
		r.used[i] = true
		if ex.Code != "" {
			return nil, &harness.ToolError{Code: ex.Code, Retryable: ex.Retry, Message: ex.Error}
		}
		return ex.Data, nil
	}
	if r.divergence == "" {
		r.divergence = fmt.Sprintf("%s with arguments %s: the recording holds no such call", tool, digest)
	}
	return nil, harness.Errorf(harness.CodeUnavailable, "replay: the recorded upstream never answered this call")
}
