package reviewui

import (
	"context"

	"rebound/results/artifact"
	"rebound/results/record"
	"rebound/results/replay"
	"rebound/results/report"
)

// summary is report.Load of a sweep (the code behind rebound report),
// kept while the sweep's stored version holds.
func (s *Server) summary(ctx context.Context, sweepID string) (report.Summary, error) {
	version, err := s.src.SweepVersion(ctx, sweepID)
	if err != nil {
		return report.Summary{}, err
	}
	if sum, ok := s.summaries.get(sweepID, version); ok {
		return sum, nil
	}
	sum, err := report.Load(ctx, s.src, sweepID)
	if err != nil {
		return sum, err
	}
	s.summaries.put(sweepID, version, sum)
	return sum, nil
}

// comparison is report.LoadComparison (the code behind rebound compare),
// kept while both sweeps' stored versions hold.
func (s *Server) comparison(ctx context.Context, req report.CompareRequest) (report.Comparison, error) {
	version, err := s.src.SweepVersion(ctx, req.SweepID)
	if err != nil {
		return report.Comparison{}, err
	}
	if req.BaselineSweep != "" && req.BaselineSweep != req.SweepID {
		other, err := s.src.SweepVersion(ctx, req.BaselineSweep)
		if err != nil {
			return report.Comparison{}, err
		}
		version += " " + other
	}
	if c, ok := s.comparisons.get(req, version); ok {
		return c, nil
	}
	c, err := report.LoadComparison(ctx, s.src, req)
	if err != nil {
		return c, err
	}
	s.comparisons.put(req, version, c)
	return c, nil
}

// artifact reads one trial and builds its artifact (replay.Artifact, the
// code behind rebound trial show), reading the trial once.
func (s *Server) artifact(ctx context.Context, id string) (artifact.Artifact, record.Trial, error) {
	t, calls, err := s.src.Trial(ctx, id)
	if err != nil {
		return artifact.Artifact{}, t, err
	}
	a, err := replay.Artifact(ctx, readTrial{s.src, t, calls}, id)
	return a, t, err
}

// readTrial answers Trial with the trial already read.
type readTrial struct {
	Source
	t     record.Trial
	calls []record.ToolCall
}

func (o readTrial) Trial(ctx context.Context, id string) (record.Trial, []record.ToolCall, error) {
	if id == o.t.TrialID {
		return o.t, o.calls, nil
	}
	return o.Source.Trial(ctx, id)
}
