package served_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"rebound/results/report"
	"rebound/results/report/readbench"
	"rebound/storage"
	"rebound/storage/served"
)

// benchTrials is the size of the sweep the served-read benchmark reads:
// that of sweepbench's largest end-to-end sweep.
const benchTrials = 60_720

// BenchmarkServedRead: a report and a comparison of a 60,720-trial sweep
// (readbench's synthetic shape), read in the process that holds the store
// and through the store it serves (clickhouse-go over HTTP, the door at the
// server, opening the client connection included), alternately, five times
// each; it reports the medians and their ratio. The bar (issue 30): at most
// 1.5x.
//
//	make bench-served
func BenchmarkServedRead(b *testing.B) {
	need(b)
	ctx := context.Background()
	for _, q := range readbench.InsertSQL(benchTrials) {
		if _, err := fx.st.Query(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	ep, found, err := served.Find(fx.dataDir)
	if err != nil || !found {
		b.Fatalf("Find: %v", err)
	}
	open := func() storage.Store {
		st, err := storage.Open(ctx, storage.Config{DSN: ep.DSN(fx.secret), ReadOnly: true, DoorAtServer: true})
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	reads := []struct {
		name string
		do   func(src report.Source) error
	}{
		{"report", func(src report.Source) error { _, err := report.Load(ctx, src, readbench.SweepID); return err }},
		{"compare", func(src report.Source) error {
			_, err := report.LoadComparison(ctx, src, report.CompareRequest{SweepID: readbench.SweepID,
				Baseline: readbench.Arms[0], Candidate: readbench.Arms[1], Confidence: 0.95, FaultClasses: true})
			return err
		}},
	}
	b.ResetTimer()
	for range b.N {
		for _, r := range reads {
			if err := r.do(fx.st); err != nil { // warm both paths once
				b.Fatal(err)
			}
			var local, remote []time.Duration
			for range 5 {
				start := time.Now()
				if err := r.do(fx.st); err != nil {
					b.Fatal(err)
				}
				local = append(local, time.Since(start))
				start = time.Now()
				st := open()
				err := r.do(st)
				st.Close()
				if err != nil {
					b.Fatal(err)
				}
				remote = append(remote, time.Since(start))
			}
			l, s := median(local), median(remote)
			ratio := s.Seconds() / l.Seconds()
			b.Logf("%-8s %d trials: in process %6.3f s, served %6.3f s (median of 5), ratio %.2f", r.name, benchTrials, l.Seconds(), s.Seconds(), ratio)
			b.ReportMetric(l.Seconds(), r.name+"-local-s")
			b.ReportMetric(s.Seconds(), r.name+"-served-s")
			b.ReportMetric(ratio, r.name+"-ratio")
		}
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
