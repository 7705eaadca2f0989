package report

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"rebound/results/record"
)

// SpendSource reads a sweep's model spend; storage.Store implements it.
type SpendSource interface {
	Spend(ctx context.Context, sweepID string) (record.Spend, error)
}

// AddSpend reads the sweep's spend into s.Spend (see Spend).
func (s *Summary) AddSpend(ctx context.Context, src SpendSource) error {
	sp, err := src.Spend(ctx, s.SweepID)
	if err != nil {
		return err
	}
	s.Spend = &sp
	return nil
}

// SpendLine says what a sweep's model requests cost: exact, plus an upper
// bound of the requests sent whose answers never reached the store, e.g.
// "spend: $1.23 exact + ≤ $0.04 estimated (3 of 240 model requests lost in
// flight, each counted at its prompt's size and max_tokens)".
func SpendLine(sp record.Spend) string {
	if sp.RequestsSent == 0 && sp.ExactUSD == 0 && sp.ExactTokens == 0 {
		return "spend: $0 (no model requests)"
	}
	line := fmt.Sprintf("spend: %s exact (%s tokens)", usd(sp.ExactUSD), thousands(sp.ExactTokens))
	switch {
	case sp.RequestsLost > 0:
		line = fmt.Sprintf("spend: %s exact + ≤ %s estimated (%s tokens + ≤ %s; %s of %s model requests lost in flight, each counted at its prompt's size and max_tokens",
			usd(sp.ExactUSD), usd(sp.EstimatedUSD), thousands(sp.ExactTokens), thousands(sp.EstimatedTokens),
			thousands(sp.RequestsLost), thousands(sp.RequestsSent))
		if sp.RequestsLostWithoutMaxTokens > 0 {
			line += fmt.Sprintf("; %s without max_tokens, counted at 4,096 completion tokens", thousands(sp.RequestsLostWithoutMaxTokens))
		}
		line += ")"
	case sp.RequestsSent > 0:
		line += fmt.Sprintf("; none of %s model requests lost in flight", thousands(sp.RequestsSent))
	}
	return line
}

// jsonSpend is the spend in the JSON report.
type jsonSpend struct {
	ExactUSD                     float64 `json:"exact_usd"`
	EstimatedUSD                 float64 `json:"estimated_usd"`
	ExactTokens                  uint64  `json:"exact_tokens"`
	EstimatedTokens              uint64  `json:"estimated_tokens"`
	RequestsSent                 uint64  `json:"requests_sent"`
	RequestsLost                 uint64  `json:"requests_lost"`
	RequestsLostWithoutMaxTokens uint64  `json:"requests_lost_without_max_tokens"`
}

// SpendJSON is a spend as the JSON outputs write it.
func SpendJSON(sp *record.Spend) any {
	if sp == nil {
		return nil
	}
	return jsonSpend{ExactUSD: sp.ExactUSD, EstimatedUSD: sp.EstimatedUSD, ExactTokens: sp.ExactTokens,
		EstimatedTokens: sp.EstimatedTokens, RequestsSent: sp.RequestsSent, RequestsLost: sp.RequestsLost,
		RequestsLostWithoutMaxTokens: sp.RequestsLostWithoutMaxTokens}
}

// usd prints an amount in dollars: cents, or four decimals below a cent.
func usd(v float64) string {
	if v != 0 && math.Abs(v) < 0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// thousands prints n with thousands separators.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// SweepSpend is the spend of one sweep a comparison reads.
type SweepSpend struct {
	SweepID string
	Spend   record.Spend
}

// AddSpend reads the spend of the comparison's sweeps: the candidate's,
// and the baseline's when it is another sweep.
func (c *Comparison) AddSpend(ctx context.Context, src SpendSource) error {
	ids := []string{c.Candidate.SweepID}
	if c.Baseline.SweepID != c.Candidate.SweepID {
		ids = append(ids, c.Baseline.SweepID)
	}
	c.Spend = nil
	for _, id := range ids {
		sp, err := src.Spend(ctx, id)
		if err != nil {
			return err
		}
		c.Spend = append(c.Spend, SweepSpend{SweepID: id, Spend: sp})
	}
	return nil
}

// spendLines says what each compared sweep spent, one line per sweep.
func (c *Comparison) spendLines() []string {
	var out []string
	for _, s := range c.Spend {
		line := SpendLine(s.Spend)
		if len(c.Spend) > 1 {
			line = "sweep " + s.SweepID + " " + line
		}
		out = append(out, line)
	}
	return out
}

// spendJSON is the comparison's spend per sweep for JSON (nil when not read).
func (c *Comparison) spendJSON() any {
	if c.Spend == nil {
		return nil
	}
	type sweepSpend struct {
		SweepID string `json:"sweep_id"`
		jsonSpend
	}
	out := make([]sweepSpend, len(c.Spend))
	for i, s := range c.Spend {
		out[i] = sweepSpend{SweepID: s.SweepID, jsonSpend: SpendJSON(&s.Spend).(jsonSpend)}
	}
	return out
}
