package stats

import (
	"math"
	"slices"
)

// HolmAdjust returns Holm's (1979) step-down adjusted p-values, in the order
// of p; use them for release-blocking metrics (family-wise error control).
// With the m non-NaN p-values sorted ascending, p_(1) ≤ … ≤ p_(m),
//
//	adj_(i) = max_{j ≤ i} min(1, (m − j + 1) · p_(j)).
//
// Reject hypothesis i at level α when adj_i ≤ α. As in R's p.adjust, NaN
// entries stay NaN and do not count in m. A p-value outside [0, 1] makes every
// result NaN.
func HolmAdjust(p []float64) []float64 {
	order, out, ok := adjustSetup(p)
	if !ok {
		return out
	}
	m := float64(len(order))
	running := 0.0
	for i, k := range order {
		running = math.Max(running, math.Min(1, (m-float64(i))*p[k]))
		out[k] = running
	}
	return out
}

// BHAdjust returns Benjamini & Hochberg's (1995) adjusted p-values (the
// false-discovery-rate "q-values" of the step-up procedure), in the order of
// p; use them for exploratory flags. With the m non-NaN p-values sorted
// ascending,
//
//	adj_(i) = min_{j ≥ i} min(1, m/j · p_(j)),
//
// which is monotone in p. Flag hypothesis i at FDR q when adj_i ≤ q. NaN
// handling and validation are as in [HolmAdjust].
func BHAdjust(p []float64) []float64 {
	order, out, ok := adjustSetup(p)
	if !ok {
		return out
	}
	m := float64(len(order))
	running := 1.0
	for i := len(order) - 1; i >= 0; i-- {
		k := order[i]
		running = math.Min(running, math.Min(1, m/float64(i+1)*p[k]))
		out[k] = running
	}
	return out
}

// adjustSetup returns the indices of the non-NaN p-values sorted by p
// (stable) and an output slice pre-filled with NaN. ok is false, with an
// all-NaN output, when some p-value lies outside [0, 1].
func adjustSetup(p []float64) (order []int, out []float64, ok bool) {
	out = make([]float64, len(p))
	for i := range out {
		out[i] = math.NaN()
	}
	for i, v := range p {
		if math.IsNaN(v) {
			continue
		}
		if v < 0 || v > 1 {
			return nil, out, false
		}
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	return order, out, true
}
