package stats

import "testing"

// The benchmarks run the full estimators over 1,000,000 synthetic trials in
// 1,000 scenarios: go test -run '^$' -bench 1M ./stats/

func BenchmarkWeightedRate1M(b *testing.B) {
	_, weighted := synthetic(1000, 1000, 1)
	for b.Loop() {
		if r := WeightedRate(weighted, 0.95, MillerSE); r.Clusters != 1000 {
			b.Fatal(r)
		}
	}
}

func BenchmarkPaired1M(b *testing.B) {
	paired, _ := synthetic(1000, 1000, 1)
	for b.Loop() {
		if r := Paired(paired, 0.95, MillerSE); !r.Binary || r.N != 1000000 {
			b.Fatal(r)
		}
	}
}
