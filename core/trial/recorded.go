package trial

import (
	"fmt"

	"rebound/core/harness"
	"rebound/core/scenario"
	"rebound/core/world"
	"rebound/core/world/upstream"
)

// WorldRecording is what an upstream world answered during one trial:
// the catalog it listed, every exchange of the trial's world, and those of
// each reference policy's world on the path probe. Stored with the trial's
// evidence, it lets replay and regrade rebuild the same worlds offline,
// without the upstream (upstream.Replay).
type WorldRecording struct {
	CatalogVersion string                `json:"catalog_version"`
	Tools          []harness.Tool        `json:"tools"`
	Trial          []upstream.Exchange   `json:"trial"`
	Paths          [][]upstream.Exchange `json:"paths,omitempty"`
}

// exchanger is a world that records what its upstream answered.
type exchanger interface {
	Exchanges() []upstream.Exchange
}

// worldSource opens a trial's worlds: live (rec nil), or, for an upstream
// scenario, from a recording.
type worldSource struct {
	sc  *scenario.Scenario
	rec *WorldRecording
}

// offline reports whether the worlds come from a recording.
func (s worldSource) offline() bool { return s.rec != nil && s.sc.World == scenario.UpstreamWorld }

// open builds the trial's world (path < 0) or the world of the path
// probe's policy number path.
func (s worldSource) open(path int) (harness.World, error) {
	if !s.offline() {
		w, _, err := world.Open(s.sc.WorldRef(), s.sc.Initial)
		return w, err
	}
	cfg, err := world.UpstreamConfig(s.sc.Upstream)
	if err != nil {
		return nil, err
	}
	ex := s.rec.Trial
	if path >= 0 {
		if path >= len(s.rec.Paths) {
			return nil, fmt.Errorf("the recording holds no path probe %d", path)
		}
		ex = s.rec.Paths[path]
	}
	return upstream.Replay(cfg, s.rec.Tools, ex), nil
}

// catalogVersion is the world's catalog version, recorded or live.
func (s worldSource) catalogVersion() (string, error) {
	if s.offline() {
		return s.rec.CatalogVersion, nil
	}
	return world.VersionOf(s.sc.WorldRef())
}

// tools is the world's catalog, recorded or live.
func (s worldSource) tools() ([]harness.Tool, error) {
	if s.offline() {
		return s.rec.Tools, nil
	}
	return world.ToolsOf(s.sc.WorldRef())
}
