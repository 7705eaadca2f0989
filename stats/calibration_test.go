package stats

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The calibration of the paired decision itself (issue 16): null data with
// two equal arms, in designs from 10 to 200 scenarios, 1 to 50 seeds, an
// intra-cluster correlation from 0 to 0.9, deterministic and stochastic
// arms. The decision must raise a false alarm at most 6% of the time at
// α = 0.05 in every design.
//
// `make test` runs a modest number of replications per design; the long run
// that the README quotes is
//
//	go test ./stats/ -run Calibration -v -calibration.reps 2000
var calibrationReps = flag.Int("calibration.reps", 0, "replications per design of the decision calibration (0: a fast default)")

// simDesign is one simulated experiment.
type simDesign struct {
	Scenarios, Variants, Seeds int
	ICC                        float64 // intra-cluster correlation of outcomes (scenario and case level)
	Deterministic              bool    // an arm repeats one outcome on every seed of a case
	Base                       float64 // mean success rate of the baseline
	Delta                      float64 // planted difference candidate − baseline (0: the null)
}

func (d simDesign) String() string {
	kind := "stochastic"
	if d.Deterministic {
		kind = "deterministic"
	}
	return fmt.Sprintf("%d scen × %d var × %d seeds, ICC %.1f, %s", d.Scenarios, d.Variants, d.Seeds, d.ICC, kind)
}

// betaDraw draws from Beta(mean m, ICC ρ): a = m(1−ρ)/ρ, b = (1−m)(1−ρ)/ρ,
// so that Bernoulli draws sharing it have correlation ρ. ρ = 0 returns m.
func betaDraw(rng *rand.Rand, m, rho float64) float64 {
	if rho <= 0 || m <= 0 || m >= 1 {
		return m
	}
	s := (1 - rho) / rho
	return gammaDraw(rng, m*s) / (gammaDraw(rng, m*s) + gammaDraw(rng, (1-m)*s))
}

// gammaDraw is Marsaglia & Tsang's (2000) Gamma(k, 1) sampler.
func gammaDraw(rng *rand.Rand, k float64) float64 {
	if k < 1 {
		return gammaDraw(rng, k+1) * math.Pow(rng.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// simulate fills pairs for one replication. Scenario s has difficulty
// p_s ~ Beta(Base, ICC), shared by both arms (so the arms are positively
// correlated, as two agents on the same case are). Each arm has its own
// case-level rate p_{c,arm} ~ Beta(p_s, ICC) (the candidate's centred on
// p_s + Delta); a deterministic arm draws one outcome per case and repeats
// it on every seed, a stochastic arm draws each seed from p_{c,arm}. Under
// Delta = 0 the arms are exchangeable within every case.
func simulate(rng *rand.Rand, d simDesign, keysCase, keysScen []string, pairs []simPair) []simPair {
	pairs = pairs[:0]
	for s := range d.Scenarios {
		ps := betaDraw(rng, d.Base, d.ICC)
		pb := math.Min(1, math.Max(0, ps+d.Delta))
		for v := range d.Variants {
			c := s*d.Variants + v
			pa, pc := betaDraw(rng, ps, d.ICC), betaDraw(rng, pb, d.ICC)
			var ya, yb float64
			if d.Deterministic {
				ya, yb = bern(rng, pa), bern(rng, pc)
			}
			for range d.Seeds {
				if !d.Deterministic {
					ya, yb = bern(rng, pa), bern(rng, pc)
				}
				pairs = append(pairs, simPair{caseKey: keysCase[c], scenKey: keysScen[s], a: ya, b: yb})
			}
		}
	}
	return pairs
}

type simPair struct {
	caseKey, scenKey string
	a, b             float64
}

func bern(rng *rand.Rand, p float64) float64 {
	if rng.Float64() < p {
		return 1
	}
	return 0
}

// simRates is one design's decision rates.
type simRates struct {
	Old, Case, Scenario float64 // fraction of replications flagged
}

// runDesign replicates a design and returns how often each decision called
// the candidate different (two-sided) at α: the old iid rule (McNemar mid-p
// ≤ α and the Tango interval excluding 0, over all pairs), the new rule
// clustered by case, and by scenario (--generalize).
func runDesign(d simDesign, reps int, alpha float64, seed uint64) simRates {
	rng := rand.New(rand.NewPCG(seed, 7))
	keysCase := make([]string, d.Scenarios*d.Variants)
	keysScen := make([]string, d.Scenarios)
	for s := range d.Scenarios {
		keysScen[s] = fmt.Sprintf("s%03d", s)
		for v := range d.Variants {
			keysCase[s*d.Variants+v] = fmt.Sprintf("s%03d/v%d", s, v)
		}
	}
	var pairs []simPair
	byCase := make([]WeightedPair, 0, d.Scenarios*d.Variants*d.Seeds)
	byScen := make([]WeightedPair, 0, d.Scenarios*d.Variants*d.Seeds)
	var old, cse, scn int
	for r := range reps {
		pairs = simulate(rng, d, keysCase, keysScen, pairs)
		byCase, byScen = byCase[:0], byScen[:0]
		var t Table2x2
		for _, p := range pairs {
			byCase = append(byCase, WeightedPair{Cluster: p.caseKey, A: p.a, B: p.b, W: 1})
			byScen = append(byScen, WeightedPair{Cluster: p.scenKey, A: p.a, B: p.b, W: 1})
			switch {
			case p.a == 1 && p.b == 1:
				t.N11++
			case p.a == 1:
				t.N12++
			case p.b == 1:
				t.N21++
			default:
				t.N22++
			}
		}
		_, mid := McNemarExact(t)
		if iv := TangoPaired(t, 1-alpha); mid <= alpha && (iv.Lo > 0 || iv.Hi < 0) {
			old++
		}
		if PairedClustered(byCase, 1-alpha, uint64(r)).Significant(alpha) {
			cse++
		}
		if PairedClustered(byScen, 1-alpha, uint64(r)).Significant(alpha) {
			scn++
		}
	}
	n := float64(reps)
	return simRates{float64(old) / n, float64(cse) / n, float64(scn) / n}
}

// calibrationDesigns spans the grid: 10..200 scenarios, 1..50
// seeds, ICC 0..0.9, deterministic and stochastic arms (two variants per
// scenario, so a case is not a scenario).
func calibrationDesigns(delta float64) []simDesign {
	var out []simDesign
	for _, scen := range []int{10, 50, 200} {
		for _, seeds := range []int{1, 5, 50} {
			for _, icc := range []float64{0, 0.3, 0.9} {
				for _, det := range []bool{true, false} {
					if det && seeds > 1 && icc == 0.3 {
						continue // deterministic arms: ICC only moves scenario difficulty; 0 and 0.9 bracket it
					}
					out = append(out, simDesign{Scenarios: scen, Variants: 2, Seeds: seeds, ICC: icc,
						Deterministic: det, Base: 0.5, Delta: delta})
				}
			}
		}
	}
	return out
}

// binomUpper returns the smallest k with P(Binomial(n, p) > k) ≤ tail: a
// count of false alarms above it is evidence, at level tail, that the true
// rate exceeds p.
func binomUpper(n int, p, tail float64) int {
	cdf, pmf := 0.0, math.Pow(1-p, float64(n))
	for k := 0; k <= n; k++ {
		cdf += pmf
		if 1-cdf <= tail {
			return k
		}
		pmf *= float64(n-k) / float64(k+1) * p / (1 - p)
	}
	return n
}

func TestDecisionCalibration(t *testing.T) {
	reps := *calibrationReps
	if reps == 0 {
		reps = 150
		if testing.Short() {
			reps = 40
		}
	}
	const alpha, bound = 0.05, 0.06
	// With few replications the observed rate is noisy; the test fails when
	// the count is implausible (one-sided 0.1%) for a true rate of 6%.
	limit := binomUpper(reps, bound, 0.001)
	worstOld := 0.0
	var sumCase, sumScen float64
	designs := calibrationDesigns(0)
	for i, d := range designs {
		r := runDesign(d, reps, alpha, uint64(1000+i))
		t.Logf("%-50s old %.3f  case %.3f  scenario %.3f", d, r.Old, r.Case, r.Scenario)
		worstOld = math.Max(worstOld, r.Old)
		sumCase += r.Case
		sumScen += r.Scenario
		for name, rate := range map[string]float64{"by case": r.Case, "by scenario": r.Scenario} {
			if k := int(math.Round(rate * float64(reps))); k > limit {
				t.Errorf("%s, clustered %s: %d false alarms in %d null replications (%.3f), more than a 6%% rate allows (%d)",
					d, name, k, reps, rate, limit)
			}
		}
	}
	n := float64(len(designs))
	t.Logf("mean false-alarm rate over %d designs × %d reps: case %.4f, scenario %.4f; worst old (iid) %.3f",
		len(designs), reps, sumCase/n, sumScen/n, worstOld)
	// Pooled over designs the estimate is precise: it must respect α itself.
	if pooled := binomUpper(reps*len(designs), bound, 0.001); sumCase*float64(reps) > float64(pooled) || sumScen*float64(reps) > float64(pooled) {
		t.Errorf("pooled false-alarm rates %.4f (case), %.4f (scenario) exceed 6%%", sumCase/n, sumScen/n)
	}
	// The simulation has teeth: the old iid decision, which counts repeated
	// seeds as evidence, must be caught over the bound in some design.
	if k := int(math.Round(worstOld * float64(reps))); k <= limit {
		t.Errorf("the old iid decision stayed within the bound everywhere (worst %.3f): the simulation cannot tell a miscalibrated decision", worstOld)
	}
}

// TestDecisionPower measures the power of the clustered decision against a
// planted difference of −10 points (candidate worse), and checks that it
// grows with the number of scenarios and is high with 200.
func TestDecisionPower(t *testing.T) {
	reps := *calibrationReps
	if reps == 0 {
		reps = 60
		if testing.Short() {
			reps = 20
		}
	}
	designs := []simDesign{
		{Scenarios: 10, Variants: 2, Seeds: 5, ICC: 0.3, Base: 0.5, Delta: -0.1},
		{Scenarios: 50, Variants: 2, Seeds: 5, ICC: 0.3, Base: 0.5, Delta: -0.1},
		{Scenarios: 200, Variants: 2, Seeds: 5, ICC: 0.3, Base: 0.5, Delta: -0.1},
		{Scenarios: 200, Variants: 2, Seeds: 5, ICC: 0.3, Base: 0.5, Delta: -0.1, Deterministic: true},
	}
	var prev float64
	for i, d := range designs {
		r := runDesign(d, reps, 0.05, uint64(5000+i))
		t.Logf("%-50s Δ %+.2f power: old %.3f case %.3f scenario %.3f", d, d.Delta, r.Old, r.Case, r.Scenario)
		if i < 3 && r.Case+0.15 < prev {
			t.Errorf("%s: power %.3f fell below the smaller design's %.3f", d, r.Case, prev)
		}
		if i < 3 {
			prev = r.Case
		}
		if d.Scenarios == 200 && !d.Deterministic && r.Case < 0.8 {
			t.Errorf("%s: power %.3f against −10 points, want ≥ 0.8", d, r.Case)
		}
	}
}

// TestPairedSampleSizeByPower checks the power calculator against the
// decision it plans for: deterministic arms (ICC = 1, five seeds per case
// that repeat one outcome), independent within a case, baseline 0.5 and a
// difference of −0.2. At the recommended number of cases the simulated power
// of the clustered decision is near the 80% target (the exact test is a
// little conservative), and half as many cases fall well short.
func TestPairedSampleSizeByPower(t *testing.T) {
	plan, err := PairedSampleSize(PairedDesign{Baseline: 0.5, Diff: -0.2, ICC: 1, Seeds: 5, Alpha: 0.05, Power: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	reps := 300
	if testing.Short() {
		reps = 100
	}
	power := func(cases int, seed uint64) float64 {
		rng := rand.New(rand.NewPCG(seed, 3))
		obs := make([]WeightedPair, 0, cases*5)
		keys := make([]string, cases)
		for c := range keys {
			keys[c] = fmt.Sprintf("c%d", c)
		}
		hits := 0
		for r := range reps {
			obs = obs[:0]
			for c := range cases {
				a, b := bern(rng, 0.5), bern(rng, 0.3)
				for range 5 {
					obs = append(obs, WeightedPair{Cluster: keys[c], A: a, B: b, W: 1})
				}
			}
			if PairedClustered(obs, 0.95, uint64(r)).Significant(0.05) {
				hits++
			}
		}
		return float64(hits) / float64(reps)
	}
	full, half := power(plan.Clusters, 1), power(plan.Clusters/2, 2)
	t.Logf("plan %+v: simulated power %.3f at %d cases, %.3f at %d", plan, full, plan.Clusters, half, plan.Clusters/2)
	if full < 0.7 || full > 0.92 {
		t.Errorf("power at the recommended %d cases = %.3f, want about 0.8", plan.Clusters, full)
	}
	if half > full-0.15 {
		t.Errorf("power at half the cases = %.3f, not clearly below %.3f", half, full)
	}
}
