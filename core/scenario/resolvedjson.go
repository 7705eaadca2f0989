package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// A resolved plan's JSON (stored with the sweep, read by every worker, in
// one payload of at most 1 MiB) holds each declared world's content once:
// many scenarios share one world file, so each names its content by hash
// (world_source_of, by scenario name) in world_sources. A plan without
// declared worlds reads and writes as it always did.

type resolvedJSON struct {
	resolvedPlain
	WorldSources  map[string]string `json:"world_sources,omitempty"`
	WorldSourceOf map[string]string `json:"world_source_of,omitempty"`
}

type resolvedPlain Resolved

// MarshalJSON implements json.Marshaler.
func (r Resolved) MarshalJSON() ([]byte, error) {
	out := resolvedJSON{resolvedPlain: resolvedPlain(r)}
	for i, s := range r.Scenarios {
		if s == nil || s.WorldSource == "" {
			continue
		}
		if out.WorldSources == nil {
			out.WorldSources, out.WorldSourceOf = map[string]string{}, map[string]string{}
			out.Scenarios = append([]*Scenario(nil), r.Scenarios...)
		}
		sum := sha256.Sum256([]byte(s.WorldSource))
		h := hex.EncodeToString(sum[:8])
		out.WorldSources[h] = s.WorldSource
		out.WorldSourceOf[s.Name] = h
		c := *s
		c.WorldSource = ""
		out.Scenarios[i] = &c
	}
	return json.Marshal(out)
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *Resolved) UnmarshalJSON(b []byte) error {
	var in resolvedJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	if err := in.TrialOrder.Check(); err != nil {
		return fmt.Errorf("resolved plan: %w", err)
	}
	*r = Resolved(in.resolvedPlain)
	for _, s := range r.Scenarios {
		h, ok := in.WorldSourceOf[s.Name]
		if s == nil || !ok {
			continue
		}
		src, ok := in.WorldSources[h]
		if !ok {
			return fmt.Errorf("resolved plan: scenario %s names world content %s, which the plan does not hold", s.Name, h)
		}
		s.WorldSource = src
	}
	return nil
}
