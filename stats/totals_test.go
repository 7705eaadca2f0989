package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The totals forms must give what the per-observation estimators give on
// the same data, to rounding: random data sets of every shape that matters
// (one cluster, all agreeing, weighted, several observations per cluster,
// many clusters for the normal and Monte Carlo sign-flip paths).

type totalsShape struct {
	name          string
	clusters, per int     // clusters, observations per cluster (max)
	p             float64 // success probability; 0 and 1 give no variation
	weights       bool
}

var totalsShapes = []totalsShape{
	{"one cluster", 1, 5, 0.4, false},
	{"one per cluster", 30, 1, 0.3, false},
	{"seeds", 12, 6, 0.5, true},
	{"all fail", 8, 4, 0, true},
	{"all succeed", 8, 4, 1, false},
	{"many clusters", 700, 3, 0.2, true},
	{"monte carlo", 40, 7, 0.45, true},
}

func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func checkSame(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !sameFloat(got, want) {
		t.Errorf("%s = %.17g, want %.17g", what, got, want)
	}
}

func TestRateFromClusterCounts(t *testing.T) {
	for _, s := range totalsShapes {
		t.Run(s.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(s.clusters), uint64(s.per)))
			var outcomes []Outcome
			var counts []ClusterCount
			var wobs []WeightedObs
			var wtot []WeightedClusterTotal
			for c := range s.clusters {
				name := fmt.Sprintf("c%d", c)
				n := 1 + rng.IntN(s.per)
				var cc ClusterCount
				var wt WeightedClusterTotal
				for range n {
					y := rng.Float64() < s.p
					outcomes = append(outcomes, Outcome{Cluster: name, Success: y})
					cc.N++
					w := 1.0
					if s.weights {
						w = float64(1 + rng.IntN(3))
					}
					yf := 0.0
					if y {
						cc.K++
						yf = 1
					}
					wobs = append(wobs, WeightedObs{Cluster: name, Y: yf, W: w})
					wt.Obs++
					wt.SumW += w
					wt.SumWY += w * yf
					wt.SumWW += w * w
				}
				counts = append(counts, cc, ClusterCount{}) // an empty cluster is ignored
				wtot = append(wtot, wt, WeightedClusterTotal{})
			}
			want := RateFromOutcomes("m", outcomes, 0.95, MillerSE)
			got := RateFromClusterCounts("m", counts, 0.95, MillerSE)
			if got.N != want.N || got.Successes != want.Successes || got.Clusters != want.Clusters {
				t.Fatalf("counts %d/%d in %d clusters, want %d/%d in %d", got.Successes, got.N, got.Clusters, want.Successes, want.N, want.Clusters)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"estimate", got.Estimate, want.Estimate}, {"SE", got.SE, want.SE}, {"DE", got.DesignEffect, want.DesignEffect},
				{"lo", got.CI.Lo, want.CI.Lo}, {"hi", got.CI.Hi, want.CI.Hi},
				{"clustered lo", got.ClusteredCI.Lo, want.ClusteredCI.Lo}, {"clustered hi", got.ClusteredCI.Hi, want.ClusteredCI.Hi},
			} {
				checkSame(t, f.name, f.got, f.want)
			}
			ww := WeightedRateInterval(wobs, 0.95, MillerSE, want.DesignEffect)
			wg := WeightedRateIntervalFromTotals(wtot, 0.95, MillerSE, want.DesignEffect)
			if wg.NotEstimable != ww.NotEstimable || wg.Floored != ww.Floored || wg.Clusters != ww.Clusters || wg.N != ww.N {
				t.Fatalf("weighted: %+v, want %+v", wg, ww)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"weighted", wg.Value, ww.Value}, {"weighted SE", wg.SE, ww.SE}, {"kish", wg.KishN, ww.KishN},
				{"floor lo", wg.Floor.Lo, ww.Floor.Lo}, {"floor hi", wg.Floor.Hi, ww.Floor.Hi},
				{"shown lo", wg.Shown.Lo, ww.Shown.Lo}, {"shown hi", wg.Shown.Hi, ww.Shown.Hi},
			} {
				checkSame(t, f.name, f.got, f.want)
			}
		})
	}
}

func TestPairedClusteredFromTotals(t *testing.T) {
	for _, s := range totalsShapes {
		t.Run(s.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(s.clusters)+7, uint64(s.per)))
			var obs []WeightedPair
			var tot []PairedClusterTotal
			var num, den, wnum, wden []float64
			var pobs []PairedObs
			for c := range s.clusters {
				name := fmt.Sprintf("c%d", c)
				var ct PairedClusterTotal
				var sd float64
				for range 1 + rng.IntN(s.per) {
					a, b := 0.0, 0.0
					if rng.Float64() < s.p {
						a = 1
					}
					if rng.Float64() < s.p*0.8 || (s.p == 1) {
						b = 1
					}
					w := 1.0
					if s.weights {
						w = 0.5 + float64(rng.IntN(4))/2
					}
					d := b - a
					obs = append(obs, WeightedPair{Cluster: name, A: a, B: b, W: w})
					pobs = append(pobs, PairedObs{Cluster: name, A: a, B: b})
					ct.Add(PairedClusterTotal{N: 1, SumW: w, SumWA: w * a, SumWB: w * b, SumWD: w * d, SumW2: w * w, SumW2D: w * w * d, SumW2D2: w * w * d * d})
					sd += d
				}
				tot = append(tot, ct)
				num, den = append(num, sd), append(den, float64(ct.N))
				wnum, wden = append(wnum, ct.SumWD), append(wden, ct.SumW)
			}
			for _, seed := range []uint64{1, 9} {
				want := PairedClustered(obs, 0.95, seed)
				got := PairedClusteredFromTotals(tot, 0.95, seed)
				if got.N != want.N || got.Clusters != want.Clusters || got.DF != want.DF || got.NotEstimable != want.NotEstimable || got.PMethod != want.PMethod {
					t.Fatalf("got %+v, want %+v", got, want)
				}
				for _, f := range []struct {
					name      string
					got, want float64
				}{
					{"diff", got.Diff, want.Diff}, {"mean a", got.MeanA, want.MeanA}, {"mean b", got.MeanB, want.MeanB},
					{"SE", got.SE, want.SE}, {"lo", got.CI.Lo, want.CI.Lo}, {"hi", got.CI.Hi, want.CI.Hi}, {"tp", got.TP, want.TP},
					{"p", got.P, want.P}, {"midp", got.MidP, want.MidP}, {"DE", got.DesignEffect, want.DesignEffect},
					{"effective n", got.EffectiveN, want.EffectiveN}, {"sum w", got.SumW, want.SumW},
				} {
					checkSame(t, f.name, f.got, f.want)
				}
			}
			for _, reps := range []int{0, 300} {
				bw := BootstrapPairedDiff(pobs, reps, 0.9, 3)
				bg := BootstrapRatioTotals(num, den, reps, 0.9, 3)
				if bg.Reps != bw.Reps {
					t.Fatalf("bootstrap reps %d, want %d", bg.Reps, bw.Reps)
				}
				checkSame(t, "bootstrap estimate", bg.Estimate, bw.Estimate)
				checkSame(t, "bootstrap lo", bg.CI.Lo, bw.CI.Lo)
				checkSame(t, "bootstrap hi", bg.CI.Hi, bw.CI.Hi)
				checkSame(t, "bootstrap SE", bg.SE, bw.SE)
				ww := BootstrapWeightedPairedDiff(obs, reps, 0.9, 3)
				wg := BootstrapRatioTotals(wnum, wden, reps, 0.9, 3)
				checkSame(t, "weighted bootstrap lo", wg.CI.Lo, ww.CI.Lo)
				checkSame(t, "weighted bootstrap hi", wg.CI.Hi, ww.CI.Hi)
			}
		})
	}
	if r := PairedClusteredFromTotals(nil, 0.95, 1); r.NotEstimable != NoObservations || !math.IsNaN(r.Diff) {
		t.Errorf("no clusters: %+v", r)
	}
}
