package storage

import (
	"context"
	"encoding/json"
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

// BenchmarkDecodeJSONEachRow decodes 6 MB of rows shaped like a
// comparison's at a million trials (a few counts and per-metric arrays per
// row). Above parallelDecodeBytes the rows are decoded on every processor:
//
//	go test -run '^$' -bench DecodeJSONEachRow -cpu 1,2 ./storage/
func BenchmarkDecodeJSONEachRow(b *testing.B) {
	type row struct {
		Kind     uint8     `json:"group_kind"`
		Scenario string    `json:"scenario"`
		Keys     uint64    `json:"key_count"`
		N11      []uint64  `json:"n11"`
		N12      []uint64  `json:"n12"`
		SumW     []float64 `json:"sum_w"`
		SumWD    []float64 `json:"sum_wd"`
	}
	var data []byte
	for i := 0; len(data) < 6<<20; i++ {
		r := row{Kind: uint8(i % 2), Scenario: fmt.Sprintf("scenario-%03d", i%100), Keys: uint64(i)}
		for m := range 10 {
			r.N11 = append(r.N11, uint64(i*m%250))
			r.N12 = append(r.N12, uint64(i*m%17))
			r.SumW = append(r.SumW, float64(i*m%250)*1.5)
			r.SumWD = append(r.SumWD, float64(i*m%31)-15)
		}
		line, _ := json.Marshal(r)
		data = append(append(data, line...), '\n')
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var rows []row
		if err := decodeJSONEachRow(data, &rows); err != nil {
			b.Fatal(err)
		}
	}
}
