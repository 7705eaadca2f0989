package readbench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkReadMillion stores a synthetic sweep (READBENCH_TRIALS trials,
// default 1,000,000) through SQL, then runs `rebound report` and `rebound
// compare` on it as separate processes and reports their wall time and peak
// RSS. REBOUND_BIN is the binary under test (make bench builds it);
// READBENCH_BASELINE_BIN, when set, is measured on the same data too (e.g. a
// build of an older commit, for before/after numbers).
//
//	make bench
func BenchmarkReadMillion(b *testing.B) {
	bin := os.Getenv("REBOUND_BIN")
	if bin == "" {
		b.Skip("REBOUND_BIN is not set (make bench sets it)")
	}
	n := 1_000_000
	if s := os.Getenv("READBENCH_TRIALS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 || v%(len(Arms)*Scenarios*Variants) != 0 {
			b.Fatalf("READBENCH_TRIALS=%q: want a positive multiple of %d", s, len(Arms)*Scenarios*Variants)
		}
		n = v
	}
	ctx := context.Background()
	dir := b.TempDir()
	env := append(os.Environ(), "REBOUND_REDACTION_KEY=readbench-redaction-key-0123456789abcdef")
	data := []string{"--data-dir", dir}
	for _, q := range InsertSQL(n) {
		if _, err := Run(ctx, "insert", bin, env, append(append([]string{"sql", "--write"}, data...), q)...); err != nil {
			b.Fatal(err)
		}
	}
	count, err := exec.CommandContext(ctx, bin, append(append([]string{"sql"}, data...), "SELECT count() FROM rebound.trials FINAL")...).Output()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("stored %d synthetic trials: %s", n, count)

	bins := [][2]string{{"", bin}}
	if base := os.Getenv("READBENCH_BASELINE_BIN"); base != "" {
		bins = append(bins, [2]string{" (baseline " + filepath.Base(base) + ")", base})
	}
	b.ResetTimer()
	for range b.N {
		for _, bb := range bins {
			cmds := []struct {
				name string
				args []string
			}{
				{"report", []string{"report", "--output", "json"}},
				{"compare", []string{"compare", "--baseline", Arms[0], "--candidate", Arms[1], "--output", "json"}},
			}
			for _, c := range cmds {
				args := append(append(append([]string{}, c.args...), data...), SweepID)
				r, err := Run(ctx, c.name+bb[0], bb[1], env, args...)
				if err != nil {
					b.Fatal(err)
				}
				b.Log(r)
				if bb[0] == "" {
					b.ReportMetric(r.Wall.Seconds(), c.name+"-s")
					b.ReportMetric(r.CPU.Seconds(), c.name+"-cpu-s")
					b.ReportMetric(float64(r.MaxRSS)/(1<<20), c.name+"-maxrss-MB")
				}
			}
		}
	}
}
