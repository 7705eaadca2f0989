// Package report turns stored sweep cells into what people and machines
// read: per arm and metric, the rate with its 95% interval and the number of
// trials where the metric was tested (NOT TESTED trials are excluded, never
// counted as zero).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"rebound/grade"
	"rebound/stats"
	"rebound/storage"
)

// Confidence is the level of every interval in reports.
const Confidence = 0.95

// Cell is one metric of one arm.
type Cell struct {
	Successes int     `json:"successes"`
	N         int     `json:"n"`
	Rate      float64 `json:"rate"`
	Lo        float64 `json:"ci_lo"`
	Hi        float64 `json:"ci_hi"`
	// Weighted is the consequence-weighted rate sum(w*y)/sum(w).
	Weighted float64 `json:"weighted_rate"`
}

// ArmSummary is one arm's trials, attrition and metrics.
type ArmSummary struct {
	Arm       string          `json:"arm"`
	Trials    int             `json:"trials"`
	Attrition int             `json:"attrition"`
	Metrics   map[string]Cell `json:"metrics"`
}

// Summary is the report of one sweep.
type Summary struct {
	SweepID       string       `json:"sweep_id"`
	Name          string       `json:"name"`
	Status        string       `json:"status"`
	TrialsPlanned uint64       `json:"trials_planned"`
	TrialsStored  uint64       `json:"trials_stored"`
	Confidence    float64      `json:"confidence"`
	Arms          []ArmSummary `json:"arms"`
}

// Build aggregates cells (one per arm, scenario, variant, seed) into the
// summary. Arms appear in the sweep's order.
func Build(sw storage.Sweep, stored uint64, cells []storage.Cell) Summary {
	s := Summary{SweepID: sw.SweepID, Name: sw.Name, Status: sw.Status, TrialsPlanned: sw.TrialsPlanned, TrialsStored: stored, Confidence: Confidence}
	type acc struct {
		trials, attrition int
		succ, n           map[string]int
		sw, swy           map[string]float64
	}
	byArm := map[string]*acc{}
	order := append([]string(nil), sw.Arms...)
	for _, c := range cells {
		a, ok := byArm[c.Arm]
		if !ok {
			a = &acc{succ: map[string]int{}, n: map[string]int{}, sw: map[string]float64{}, swy: map[string]float64{}}
			byArm[c.Arm] = a
			if !containsString(order, c.Arm) {
				order = append(order, c.Arm)
			}
		}
		a.trials += int(c.Trials)
		a.attrition += int(c.Attrition)
		for m, mc := range c.Metrics {
			a.succ[string(m)] += int(mc.Successes)
			a.n[string(m)] += int(mc.N)
			a.sw[string(m)] += mc.SumWeight
			a.swy[string(m)] += mc.SumWeightY
		}
	}
	for _, arm := range order {
		a, ok := byArm[arm]
		if !ok {
			continue
		}
		as := ArmSummary{Arm: arm, Trials: a.trials, Attrition: a.attrition, Metrics: map[string]Cell{}}
		for _, m := range grade.Metrics {
			n, k := a.n[m], a.succ[m]
			c := Cell{Successes: k, N: n, Rate: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Weighted: math.NaN()}
			if n > 0 {
				iv := stats.Wilson(k, n, Confidence)
				c.Rate, c.Lo, c.Hi = float64(k)/float64(n), iv.Lo, iv.Hi
				if a.sw[m] > 0 {
					c.Weighted = a.swy[m] / a.sw[m]
				}
			}
			as.Metrics[m] = c
		}
		s.Arms = append(s.Arms, as)
	}
	return s
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// WriteText renders the terminal table: metrics down, arms across; each
// cell is "rate [lo-hi] n=N", "not tested" when no trial had evidence.
func (s Summary) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "sweep %s (%s): %s, %d of %d trials stored\n", s.SweepID, s.Name, s.Status, s.TrialsStored, s.TrialsPlanned)
	fmt.Fprintf(w, "rates with %.0f%% Wilson intervals; n counts trials where the metric was tested; arrows say which way is better\n\n", s.Confidence*100)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	header := []string{"metric"}
	for _, a := range s.Arms {
		header = append(header, a.Arm)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, m := range grade.Metrics {
		arrow := "↑"
		if !grade.HigherIsBetter(m) {
			arrow = "↓"
		}
		row := []string{m + " " + arrow}
		for _, a := range s.Arms {
			row = append(row, a.Metrics[m].String())
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	row := []string{"trials (attrition)"}
	for _, a := range s.Arms {
		row = append(row, fmt.Sprintf("%d (%d)", a.Trials, a.Attrition))
	}
	fmt.Fprintln(tw, strings.Join(row, "\t"))
	return tw.Flush()
}

// String renders one cell for the terminal.
func (c Cell) String() string {
	if c.N == 0 {
		return "not tested"
	}
	return fmt.Sprintf("%5.1f%% [%.0f-%.0f] n=%d", 100*c.Rate, 100*c.Lo, 100*c.Hi, c.N)
}

// WriteJSON renders the summary for machines; untested rates are null.
func (s Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// MarshalJSON writes NaN (not tested) as null.
func (c Cell) MarshalJSON() ([]byte, error) {
	num := func(f float64) any {
		if math.IsNaN(f) {
			return nil
		}
		return f
	}
	return json.Marshal(map[string]any{
		"successes": c.Successes, "n": c.N, "rate": num(c.Rate), "ci_lo": num(c.Lo), "ci_hi": num(c.Hi), "weighted_rate": num(c.Weighted),
	})
}

// Metric returns the cell of one arm and metric.
func (s Summary) Metric(arm, metric string) (Cell, bool) {
	for _, a := range s.Arms {
		if a.Arm == arm {
			c, ok := a.Metrics[metric]
			return c, ok
		}
	}
	return Cell{}, false
}

// ArmNames lists the arms in report order.
func (s Summary) ArmNames() []string {
	out := make([]string, len(s.Arms))
	for i, a := range s.Arms {
		out[i] = a.Arm
	}
	return out
}
