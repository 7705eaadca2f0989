package stats

import (
	"math"
	"testing"
)

// flip returns the table with the arms swapped: A ↔ B exchanges N12 and N21.
func flip(t Table2x2) Table2x2 { return Table2x2{t.N11, t.N21, t.N12, t.N22} }

// neg returns the interval of −δ.
func neg(iv Interval) Interval { return Interval{-iv.Hi, -iv.Lo} }

// TestPairedPublishedVectors checks every published paired vector of
// reference/statistics.md, in both orientations.
//
// Orientation: this package reports δ = p_B − p_A = (N21 − N12)/N (candidate
// minus baseline). A source that reports (n12 − n21)/N (Fagerland et al.,
// Newcombe/Altman) has aMinusB = true: for the table as published we must
// return the negated interval, and for the table with the arms swapped we
// must return the published interval itself. PropCIs and PMC10763857 report
// (c − b)/n with b = N12, c = N21, which is our orientation.
//
// Each vector is asserted to the precision it was published at (half a unit
// of its last digit), and additionally to 1e-6 against an independent
// 30-digit mpmath evaluation of the same formulas (Tango by mpmath.findroot
// on the score statistic, not by bisection).
func TestPairedPublishedVectors(t *testing.T) {
	tests := []struct {
		name    string
		source  string
		fn      func(Table2x2, float64) Interval
		table   Table2x2
		aMinusB bool
		est     float64  // published estimate, in the source's orientation (NaN if none)
		want    Interval // published, in the source's orientation
		tol     float64  // half a unit of the last published digit
		precise Interval // mpmath value, in the source's orientation
	}{
		{
			name:   "Tango (1,1,7,12)",
			source: "Fagerland, Lydersen & Laake 2014, Stat Med 33:2850, Table V (AHR data, Bentur et al. 2009)",
			fn:     TangoPaired, table: Table2x2{1, 1, 7, 12}, aMinusB: true,
			est: math.NaN(), want: Interval{-0.517, -0.026}, tol: 5e-4,
			precise: Interval{-0.517232276421, -0.0260030324809},
		},
		{
			name:   "Newcombe (59,6,16,80)",
			source: "contingencytables R package, tests/testthat/test-ch8.R: estimate = -0.0621 (95% CI -0.1186 to -0.0046)",
			fn:     NewcombePaired, table: Table2x2{59, 6, 16, 80}, aMinusB: true,
			est: -0.0621, want: Interval{-0.1186, -0.0046}, tol: 5e-5,
			precise: Interval{-0.118621195639, -0.00462511393305},
		},
		{
			name:   "Newcombe (14,5,0,22)",
			source: "Altman et al. 2000, Statistics with Confidence, 2nd ed., ch. 6 (Newcombe's method 10)",
			fn:     NewcombePaired, table: Table2x2{14, 5, 0, 22}, aMinusB: true,
			est: math.NaN(), want: Interval{0.011, 0.226}, tol: 5e-4,
			precise: Interval{0.011483241383, 0.226492684351},
		},
		{
			name:   "Tango b=2 c=25 N=102",
			source: "PMC10763857, Table 2: Tango interval for (c − b)/N",
			fn:     TangoPaired, table: Table2x2{0, 2, 25, 75}, aMinusB: false,
			est: math.NaN(), want: Interval{0.139, 0.321}, tol: 5e-4,
			precise: Interval{0.139182546327, 0.321329750592},
		},
		{
			name:   "Agresti-Min b=40 c=20 n=160",
			source: "R PropCIs documentation, diffpropci.mp(b = 40, c = 20, n = 160, conf.level = 0.95)",
			fn:     AgrestiMinPaired, table: Table2x2{0, 40, 20, 100}, aMinusB: false,
			est: math.NaN(), want: Interval{-0.21601726, -0.03089632}, tol: 5e-9,
			precise: Interval{-0.21601726, -0.03089632},
		},
		{
			name:   "Wald b=3 c=9 n=32",
			source: "R PropCIs documentation, diffpropci.Wald.mp(b = 3, c = 9, n = 32, conf.level = 0.95)",
			fn:     WaldPaired, table: Table2x2{0, 3, 9, 20}, aMinusB: false,
			est: math.NaN(), want: Interval{-0.01448204, 0.38948204}, tol: 5e-9,
			precise: Interval{-0.01448204, 0.38948204},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Logf("source: %s", tt.source)
			// asPublished is the table whose B − A is the source's quantity;
			// swapped is the same data with the arms exchanged.
			asPublished, swapped := tt.table, flip(tt.table)
			if tt.aMinusB {
				asPublished, swapped = swapped, asPublished
			}
			got := tt.fn(asPublished, 0.95)
			checkInterval(t, "published orientation", got, tt.want, tt.tol)
			checkInterval(t, "published orientation (mpmath)", got, tt.precise, 1e-6)
			checkInterval(t, "opposite orientation", tt.fn(swapped, 0.95), neg(tt.want), tt.tol)
			if !math.IsNaN(tt.est) && !near(asPublished.Diff(), tt.est, 5e-5) {
				t.Errorf("estimate = %.6f, want %.4f", asPublished.Diff(), tt.est)
			}
			if !near(swapped.Diff(), -asPublished.Diff(), 0) {
				t.Errorf("Diff not antisymmetric: %g vs %g", swapped.Diff(), asPublished.Diff())
			}
		})
	}
}

// TestTangoAllConcordant checks Tango's interval with no discordant pairs,
// where the score equation has the closed form δ = ±z²/(N + z²).
func TestTangoAllConcordant(t *testing.T) {
	z := zCrit(0.95)
	bound := z * z / (20 + z*z) // 0.161125158053 (mpmath)
	checkInterval(t, "Tango (10,0,0,10)", TangoPaired(Table2x2{10, 0, 0, 10}, 0.95), Interval{-bound, bound}, 1e-12)
}

// TestPairedEdges checks empty, invalid and extreme tables for all intervals.
func TestPairedEdges(t *testing.T) {
	fns := map[string]func(Table2x2, float64) Interval{
		"Newcombe": NewcombePaired, "Tango": TangoPaired, "Wald": WaldPaired, "AgrestiMin": AgrestiMinPaired,
	}
	for name, fn := range fns {
		if got := fn(Table2x2{}, 0.95); got != (Interval{-1, 1}) {
			t.Errorf("%s(empty) = %v, want [-1, 1]", name, got)
		}
		if got := fn(Table2x2{1, -1, 2, 3}, 0.95); !math.IsNaN(got.Lo) {
			t.Errorf("%s(invalid) = %v, want NaN", name, got)
		}
		if got := fn(Table2x2{1, 2, 3, 4}, 1.5); !math.IsNaN(got.Lo) {
			t.Errorf("%s(conf 1.5) = %v, want NaN", name, got)
		}
		// All pairs favour B: δ = 1 must be inside, with limits in range.
		for _, tb := range []Table2x2{{0, 0, 12, 0}, {0, 12, 0, 0}, {3, 0, 9, 0}, {0, 0, 0, 7}} {
			iv := fn(tb, 0.95)
			if iv.Lo < -1 || iv.Hi > 1 || iv.Lo > iv.Hi {
				t.Errorf("%s(%v) = %v out of range", name, tb, iv)
			}
			if name != "AgrestiMin" && !iv.Contains(tb.Diff()) {
				t.Errorf("%s(%v) = %v excludes the estimate %g", name, tb, iv, tb.Diff())
			}
		}
	}
	if iv := TangoPaired(Table2x2{0, 0, 12, 0}, 0.95); iv.Hi != 1 {
		t.Errorf("Tango all-B upper = %g, want 1", iv.Hi)
	}
	if d := (Table2x2{}).Diff(); !math.IsNaN(d) {
		t.Errorf("empty Diff = %g", d)
	}
}

// TestMcNemarExact checks exact and mid-p values against exact binomial sums
// (X ~ Binomial(b + c, 1/2), k = min(b, c)), computed by hand. The first two
// tables are the worked examples of Fagerland, Lydersen & Laake (2013, BMC
// Med Res Methodol 13:91, and its supplement "How to calculate the McNemar
// mid-p test", Bentur et al. data) and of their book (Cavo et al. data):
//
//	(1,1,7,12): P(X ≤ 1) = 9/256, P(X = 1) = 8/256 → p = 18/256, mid-p = 10/256
//	(59,6,16,80): P(X ≤ 6) = 110056/2²², P(X = 6) = 74613/2²²
//	  → p = 220112/4194304 = 0.0524788, mid-p = 145499/4194304 = 0.0346897
//	(5,4,4,5): tie, p = 1, mid-p = 1 − ½·C(8,4)/2⁸ = 1 − 35/256 (their tie rule)
func TestMcNemarExact(t *testing.T) {
	tests := []struct {
		table    Table2x2
		wantP    float64
		wantMidP float64
	}{
		{Table2x2{1, 1, 7, 12}, 18.0 / 256, 10.0 / 256},
		{Table2x2{1, 7, 1, 12}, 18.0 / 256, 10.0 / 256}, // orientation does not matter
		{Table2x2{59, 6, 16, 80}, 220112.0 / 4194304, 145499.0 / 4194304},
		{Table2x2{5, 4, 4, 5}, 1, 221.0 / 256},
		{Table2x2{5, 0, 0, 5}, 1, 1},               // no discordant pairs
		{Table2x2{0, 0, 5, 0}, 1.0 / 16, 1.0 / 32}, // 2·(1/32), 2/32 − 1/32
	}
	for _, tt := range tests {
		p, mid := McNemarExact(tt.table)
		if !near(p, tt.wantP, 1e-12) || !near(mid, tt.wantMidP, 1e-12) {
			t.Errorf("McNemarExact(%v) = %.10g, %.10g; want %.10g, %.10g", tt.table, p, mid, tt.wantP, tt.wantMidP)
		}
	}
	// Large discordant counts stay accurate: b = 4900, c = 5100 gives a normal
	// approximation z = 200/√10000 = 2, two-sided ≈ 0.0455 (exact ≈ 0.0466).
	p, _ := McNemarExact(Table2x2{0, 4900, 5100, 0})
	if p < 0.044 || p > 0.048 {
		t.Errorf("McNemar large = %g, want ≈ 0.046", p)
	}
	if p, mid := McNemarExact(Table2x2{-1, 0, 0, 0}); !math.IsNaN(p) || !math.IsNaN(mid) {
		t.Error("McNemar invalid table should be NaN")
	}
}

// expand turns a table into pairs spread over clusters round-robin.
func expand(t Table2x2, clusters []string) []PairedObs {
	var out []PairedObs
	add := func(n int, a, b float64) {
		for range n {
			out = append(out, PairedObs{Cluster: clusters[len(out)%len(clusters)], A: a, B: b})
		}
	}
	add(t.N11, 1, 1)
	add(t.N12, 1, 0)
	add(t.N21, 0, 1)
	add(t.N22, 0, 0)
	return out
}

// TestPairedFromObs checks that Paired builds the table, agrees with the
// raw-count functions, and is antisymmetric in the arms.
func TestPairedFromObs(t *testing.T) {
	table := Table2x2{59, 6, 16, 80}
	obs := expand(table, []string{"s1", "s2", "s3", "s4", "s5"})
	r := Paired(obs, 0.95, MillerSE)
	if !r.Binary || r.Table != table || r.N != 161 || r.Clusters != 5 {
		t.Fatalf("Paired table = %+v", r)
	}
	if !near(r.Diff, table.Diff(), 1e-15) || !near(r.MeanB-r.MeanA, r.Diff, 1e-15) {
		t.Errorf("Diff = %g, want %g", r.Diff, table.Diff())
	}
	checkInterval(t, "Newcombe", r.Newcombe, NewcombePaired(table, 0.95), 0)
	checkInterval(t, "Tango", r.Tango, TangoPaired(table, 0.95), 0)
	checkInterval(t, "Wald", r.Wald, WaldPaired(table, 0.95), 0)
	checkInterval(t, "AgrestiMin", r.AgrestiMin, AgrestiMinPaired(table, 0.95), 0)
	if p, mid := McNemarExact(table); r.McNemarP != p || r.McNemarMidP != mid {
		t.Errorf("McNemar = %g, %g", r.McNemarP, r.McNemarMidP)
	}
	// φ coefficient: (ad − bc)/√((a+b)(c+d)(a+c)(b+d)) = 4624/√(65·96·75·86).
	if want := 4624 / math.Sqrt(65*96*75*86); !near(r.Correlation, want, 1e-12) {
		t.Errorf("Correlation = %g, want %g", r.Correlation, want)
	}

	// Swap the arms: every difference changes sign, the p-values do not.
	swapped := make([]PairedObs, len(obs))
	for i, o := range obs {
		swapped[i] = PairedObs{Cluster: o.Cluster, A: o.B, B: o.A}
	}
	s := Paired(swapped, 0.95, MillerSE)
	if s.Table != flip(table) || !near(s.Diff, -r.Diff, 1e-15) || !near(s.SE, r.SE, 1e-15) {
		t.Errorf("swapped: table %v diff %g se %g", s.Table, s.Diff, s.SE)
	}
	for name, pair := range map[string][2]Interval{
		"CI": {s.CI, r.CI}, "Newcombe": {s.Newcombe, r.Newcombe}, "Tango": {s.Tango, r.Tango},
		"Wald": {s.Wald, r.Wald}, "AgrestiMin": {s.AgrestiMin, r.AgrestiMin},
	} {
		checkInterval(t, "swapped "+name, pair[0], neg(pair[1]), 1e-12)
	}
	if s.McNemarP != r.McNemarP || s.Correlation != r.Correlation {
		t.Error("swapped McNemar or correlation changed")
	}
}

// TestPairedClusteredSE checks the clustered SE of the paired difference by
// hand. Differences d = B − A by cluster: s1: {1, 1, 0}, s2: {0, −1},
// s3: {1, 0, 0, 0}; n = 9, mean = 2/9. Cluster residual sums
// Σ(d − 2/9): s1: 2 − 6/9 = 4/3, s2: −1 − 4/9 = −13/9, s3: 1 − 8/9 = 1/9.
// Σ² = 144/81 + 169/81 + 1/81 = 314/81, so SE = √(314/81)/9 = √314/81 and,
// with Inspect's factor 3/2, SE = √(471)/81.
func TestPairedClusteredSE(t *testing.T) {
	obs := []PairedObs{
		{"s1", 0, 1}, {"s1", 0, 1}, {"s1", 1, 1},
		{"s2", 0, 0}, {"s2", 1, 0},
		{"s3", 0, 1}, {"s3", 1, 1}, {"s3", 0, 0}, {"s3", 1, 1},
	}
	r := Paired(obs, 0.95, MillerSE)
	if !near(r.Diff, 2.0/9, 1e-15) || !near(r.SE, math.Sqrt(314)/81, 1e-15) {
		t.Errorf("Diff, SE = %g, %g; want %g, %g", r.Diff, r.SE, 2.0/9, math.Sqrt(314)/81)
	}
	z := zCrit(0.95)
	checkInterval(t, "CI", r.CI, Interval{2.0/9 - z*r.SE, 2.0/9 + z*r.SE}, 1e-15)
	if ri := Paired(obs, 0.95, InspectSE); !near(ri.SE, math.Sqrt(471)/81, 1e-15) {
		t.Errorf("InspectSE = %g, want %g", ri.SE, math.Sqrt(471)/81)
	}
	// The clustered SE equals ClusteredMean on the differences.
	d := make([]Obs, len(obs))
	for i, o := range obs {
		d[i] = Obs{o.Cluster, o.B - o.A}
	}
	if cm := ClusteredMean(d, 0.95, MillerSE); !near(cm.SE, r.SE, 1e-15) {
		t.Errorf("ClusteredMean SE %g != Paired SE %g", cm.SE, r.SE)
	}
}

// TestPairedNonBinaryAndEmpty checks general-valued outcomes and edge cases.
func TestPairedNonBinaryAndEmpty(t *testing.T) {
	obs := []PairedObs{{"a", 0.5, 0.7}, {"a", 0.2, 0.4}, {"b", 0.9, 0.8}, {"c", 3, 5}}
	r := Paired(obs, 0.95, MillerSE)
	if r.Binary || r.Table != (Table2x2{}) {
		t.Errorf("non-binary reported as binary: %+v", r)
	}
	if !near(r.Diff, (0.2+0.2-0.1+2)/4, 1e-15) {
		t.Errorf("Diff = %g", r.Diff)
	}
	// Outcomes outside [0, 1]: the interval is not clipped.
	z := zCrit(0.95)
	checkInterval(t, "unclipped CI", r.CI, Interval{r.Diff - z*r.SE, r.Diff + z*r.SE}, 1e-15)

	e := Paired(nil, 0.95, MillerSE)
	if !math.IsNaN(e.Diff) || !math.IsNaN(e.SE) || e.Binary || e.N != 0 {
		t.Errorf("empty = %+v", e)
	}
	bad := Paired([]PairedObs{{"a", math.NaN(), 1}}, 0.95, MillerSE)
	if !math.IsNaN(bad.Diff) || bad.Binary {
		t.Errorf("NaN input = %+v", bad)
	}
	// A constant arm has no correlation.
	c := Paired([]PairedObs{{"a", 1, 0}, {"a", 1, 1}}, 0.95, MillerSE)
	if !math.IsNaN(c.Correlation) {
		t.Errorf("constant arm correlation = %g", c.Correlation)
	}
}

// TestTangoInvertsScore checks, for every table with N ≤ 12, that the
// interval is exactly the set {δ : |Z(δ)| ≤ z} of the score statistic: the
// limits solve the score equation, and on a grid of δ values the statistic
// is within ±z inside the interval and beyond it outside. This guards the
// bisection's assumption that Z decreases in δ.
func TestTangoInvertsScore(t *testing.T) {
	z := zCrit(0.95)
	for n := 1; n <= 12; n++ {
		for b := 0; b <= n; b++ {
			for c := 0; b+c <= n; c++ {
				tb := Table2x2{N11: n - b - c, N12: b, N21: c}
				iv := TangoPaired(tb, 0.95)
				bf, cf, nf := float64(b), float64(c), float64(n)
				if iv.Lo > -1 && !near(tangoScore(iv.Lo, bf, cf, nf), z, 1e-6) {
					t.Errorf("%v: Z(Lo=%g) = %g", tb, iv.Lo, tangoScore(iv.Lo, bf, cf, nf))
				}
				if iv.Hi < 1 && !near(tangoScore(iv.Hi, bf, cf, nf), -z, 1e-6) {
					t.Errorf("%v: Z(Hi=%g) = %g", tb, iv.Hi, tangoScore(iv.Hi, bf, cf, nf))
				}
				for i := 1; i < 400; i++ {
					d := -1 + float64(i)/200
					if math.Abs(d-iv.Lo) < 1e-9 || math.Abs(d-iv.Hi) < 1e-9 {
						continue
					}
					inside := math.Abs(tangoScore(d, bf, cf, nf)) <= z
					if inside != iv.Contains(d) {
						t.Errorf("%v: δ = %g inside=%v but interval %v", tb, d, inside, iv)
						break
					}
				}
			}
		}
	}
}
