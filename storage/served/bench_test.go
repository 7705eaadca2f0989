package served_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"rebound/results/report"
	"rebound/results/report/readbench"
	"rebound/storage"
	"rebound/storage/served"
)

// benchSizes are the sweeps the served-read benchmark reads, smallest
// first (each stored over the last: the synthetic trials of a smaller size
// are the first of a larger), with how many times each read runs each way:
// sweepbench's largest end-to-end sweep, and issue 35's million trials.
var benchSizes = []struct{ trials, rounds int }{{60_720, 9}, {1_000_000, 3}}

// BenchmarkServedRead: a report and a comparison of a synthetic sweep
// (readbench's shape) at 60,720 and at 1,000,000 trials, read in the
// process that holds the store and through the store it serves
// (clickhouse-go over HTTP, the door at the server, opening the client
// connection included), alternately; it reports the medians of wall time
// and of the process's CPU time (client and server both run here; CPU is
// what a shared machine's load distorts least) and their ratios. The bar
// (issue 30): at most 1.5x. REBOUND_SERVED_TRIALS=60720
// reads the smaller sweep only.
//
//	make bench-served
func BenchmarkServedRead(b *testing.B) {
	need(b)
	ctx := context.Background()
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
	only := os.Getenv("REBOUND_SERVED_TRIALS")
	b.ResetTimer()
	for range b.N {
		for _, size := range benchSizes {
			if only != "" && only != strconv.Itoa(size.trials) {
				continue
			}
			start := time.Now()
			for _, q := range readbench.InsertSQL(size.trials) {
				if _, err := fx.st.Query(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			b.Logf("stored %d trials in %.1f s", size.trials, time.Since(start).Seconds())
			for _, r := range reads {
				if err := r.do(fx.st); err != nil { // warm both paths once
					b.Fatal(err)
				}
				var local, remote, localCPU, remoteCPU []time.Duration
				for range size.rounds {
					start, cpu := time.Now(), processCPU(b)
					if err := r.do(fx.st); err != nil {
						b.Fatal(err)
					}
					local, localCPU = append(local, time.Since(start)), append(localCPU, processCPU(b)-cpu)
					start, cpu = time.Now(), processCPU(b)
					st := open()
					err := r.do(st)
					st.Close()
					if err != nil {
						b.Fatal(err)
					}
					remote, remoteCPU = append(remote, time.Since(start)), append(remoteCPU, processCPU(b)-cpu)
				}
				l, s := median(local), median(remote)
				lc, sc := median(localCPU), median(remoteCPU)
				ratio, cpuRatio := s.Seconds()/l.Seconds(), sc.Seconds()/lc.Seconds()
				b.Logf("%-8s %9d trials: in process %6.3f s (CPU %6.3f s), served %6.3f s (CPU %6.3f s), medians of %d; ratio %.2f (CPU %.2f)",
					r.name, size.trials, l.Seconds(), lc.Seconds(), s.Seconds(), sc.Seconds(), size.rounds, ratio, cpuRatio)
				key := fmt.Sprintf("%s-%d", r.name, size.trials)
				b.ReportMetric(l.Seconds(), key+"-local-s")
				b.ReportMetric(s.Seconds(), key+"-served-s")
				b.ReportMetric(ratio, key+"-ratio")
				b.ReportMetric(cpuRatio, key+"-cpu-ratio")
			}
		}
	}
}

// processCPU is this process's CPU time so far, every thread (the client
// and the server of a served read both run here): what a busy machine
// inflates far less than wall time.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkServedReadCommands: `rebound report` and `rebound compare` of
// the 1,000,000-trial synthetic sweep as separate processes (REBOUND_BIN),
// as readbench measures them: first through the store this process holds
// and serves (the command finds served.json and reads over HTTP, so its
// wall time, CPU and peak RSS are the read command's, the engine's work
// the holder's), then, this process having released the data dir, opening
// the store themselves. Three runs each way, medians. It releases the
// package's fixture, so it runs after BenchmarkServedRead and nothing
// after it: make bench-served.
func BenchmarkServedReadCommands(b *testing.B) {
	bin := os.Getenv("REBOUND_BIN")
	if bin == "" {
		b.Skip("REBOUND_BIN is not set (make bench-served sets it)")
	}
	need(b)
	ctx := context.Background()
	const trials = 1_000_000
	if n, err := fx.st.CountTrials(ctx, readbench.SweepID); err != nil || n != trials {
		for _, q := range readbench.InsertSQL(trials) {
			if _, err := fx.st.Query(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	}
	env := append(os.Environ(), "REBOUND_REDACTION_KEY=readbench-redaction-key-0123456789abcdef")
	cmds := []struct {
		name string
		args []string
	}{
		{"report", []string{"report", "--output", "json", "--data-dir", fx.dataDir, readbench.SweepID}},
		{"compare", []string{"compare", "--baseline", readbench.Arms[0], "--candidate", readbench.Arms[1], "--output", "json", "--data-dir", fx.dataDir, readbench.SweepID}},
	}
	// A child of this process, which holds the engine, starts with this
	// process's peak RSS as its own (the kernel carries it over the
	// vfork and exec), so the children's peak RSS is GNU time's report of
	// its own child (/usr/bin/time -f %M), when it is installed.
	timeBin, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		b.Log("no /usr/bin/time (Debian's time): peak RSS not measured")
	}
	rssFile := filepath.Join(b.TempDir(), "maxrss")
	run := func(name string, args []string) readbench.Result {
		if timeBin == "" {
			r, err := readbench.Run(ctx, name, bin, env, args...)
			if err != nil {
				b.Fatal(err)
			}
			r.MaxRSS = 0
			return r
		}
		r, err := readbench.Run(ctx, name, timeBin, env, append([]string{"-f", "%M", "-o", rssFile, bin}, args...)...)
		if err != nil {
			b.Fatal(err)
		}
		kb, err := os.ReadFile(rssFile)
		if err != nil {
			b.Fatal(err)
		}
		lines := strings.Fields(string(kb))
		n, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
		if err != nil {
			b.Fatalf("GNU time wrote %q", kb)
		}
		r.MaxRSS = n * 1024
		return r
	}
	measure := func(how string) map[string]readbench.Result {
		out := map[string]readbench.Result{}
		for _, c := range cmds {
			var runs []readbench.Result
			for range 3 {
				runs = append(runs, run(c.name+" "+how, c.args))
			}
			slices.SortFunc(runs, func(x, y readbench.Result) int { return cmp.Compare(x.Wall, y.Wall) })
			m := runs[1]
			m.MaxRSS = slices.MaxFunc(runs, func(x, y readbench.Result) int { return cmp.Compare(x.MaxRSS, y.MaxRSS) }).MaxRSS
			b.Logf("%s (median of 3 by wall time; peak RSS the largest)", m)
			out[c.name] = m
		}
		return out
	}
	// One iteration whatever b.N (-benchtime 1x): it releases the fixture.
	b.ResetTimer()
	servedRuns := measure("served")
	// Release the data dir: the commands then open the store themselves.
	if err := fx.srv.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if err := fx.st.Close(); err != nil {
		b.Fatal(err)
	}
	fx.err = errors.New("BenchmarkServedReadCommands released the fixture's store")
	local := measure("in process")
	for _, c := range cmds {
		s, l := servedRuns[c.name], local[c.name]
		b.Logf("%-8s %d trials: %.2f s in process, %.2f s served (ratio %.2f); peak RSS %.0f MB and %.0f MB", c.name, trials,
			l.Wall.Seconds(), s.Wall.Seconds(), s.Wall.Seconds()/l.Wall.Seconds(), float64(l.MaxRSS)/(1<<20), float64(s.MaxRSS)/(1<<20))
		b.ReportMetric(s.Wall.Seconds()/l.Wall.Seconds(), c.name+"-cmd-ratio")
		b.ReportMetric(float64(s.MaxRSS)/(1<<20), c.name+"-served-maxrss-MB")
	}
}
