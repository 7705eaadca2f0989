package storage

import (
	"context"
	"fmt"
	"testing"
)

// Benchmarks on the embedded engine (go test -bench . ./storage/).

func benchWrite(b *testing.B, n int) {
	st := openTestStore(b)
	ctx := context.Background()
	trials, calls := makeTrials("bench", n, 3)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := st.WriteTrials(ctx, trials, calls); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteTrials1(b *testing.B)   { benchWrite(b, 1) }
func BenchmarkWriteTrials100(b *testing.B) { benchWrite(b, 100) }

func BenchmarkReads(b *testing.B) {
	st := openTestStore(b)
	ctx := context.Background()
	trials, calls := makeTrials("bench", 1000, 3)
	if err := st.WriteTrials(ctx, trials, calls); err != nil {
		b.Fatal(err)
	}
	for _, r := range []struct {
		name string
		f    func() error
	}{
		{"CountTrials", func() error { _, err := st.CountTrials(ctx, "bench"); return err }},
		{"Trials", func() error { _, err := st.Trials(ctx, "bench"); return err }},
		{"Trial", func() error { _, _, err := st.Trial(ctx, "bench-t500"); return err }},
		{"Cells", func() error { _, err := st.Cells(ctx, "bench"); return err }},
	} {
		b.Run(fmt.Sprintf("%s/1000trials", r.name), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := r.f(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
