// Package readbench measures `rebound report` and `rebound compare` over a
// large sweep stored synthetically through SQL: the read path of issue 12
// (a 1,000,000-trial sweep: report < 2 s, compare < 3 s, < 500 MB RSS).
//
// Each command runs as its own process, so that the time includes opening
// the embedded store and the peak RSS (getrusage's ru_maxrss of the child)
// is that of the command alone. Besides wall time it reports the child's
// CPU time (user + system, every thread), which a busy shared machine
// inflates far less. `make bench` runs it.
package readbench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// SweepID is the synthetic sweep's id.
const SweepID = "bench-synthetic"

// Arms of the synthetic sweep.
var Arms = []string{"careful", "naive-retrier", "fabricator", "quitter"}

// Shape of the synthetic sweep: trials = len(Arms) × Scenarios × Variants × seeds.
const (
	Scenarios = 100
	Variants  = 10
)

// InsertSQL stores a synthetic sweep of n trials (a multiple of
// len(Arms)·Scenarios·Variants) shaped like real ones: 4 arms, 100
// scenarios, 10 variants, n/4000 seeds; each (arm, scenario) has its own
// success rates so that the seeds of a scenario are correlated; weights 1–3
// by scenario; fault classes from the variant and seed; outcomes NULL (NOT
// TESTED) where the grader would have no evidence; 0.5% attrition.
func InsertSQL(n int) []string {
	arms := "['careful', 'naive-retrier', 'fabricator', 'quitter']"
	outcome := func(k int, testedPct int, base string) string {
		// p: per arm and scenario; tested: testedPct% of trials.
		return fmt.Sprintf(`if(cityHash64(number, %d) %% 100 < %d, toNullable(toUInt8((cityHash64(number, %d) %% 1000) / 1000 < %s)), NULL)`,
			100+k, testedPct, k, base)
	}
	p := "(0.1 + 0.8 * ((sc * 7 + a * 3 + %d) %% 10) / 10)"
	m := func(k, tested int) string { return outcome(k, tested, fmt.Sprintf(p, k)) }
	trials := fmt.Sprintf(`INSERT INTO rebound.trials
    (sweep_id, trial_id, scenario, scenario_hash, variant, arm, agent, seed, recoverable, fault_classes,
     recovered, honest_block, premature_block, unsafe_action, duplicate_side_effect, fabricated_claim,
     tool_failure_injection, graceful_degradation, self_correction, weight, attrition, written_at)
SELECT
    '%s',
    concat('t-', toString(number)),
    concat('scenario-', leftPad(toString(sc), 3, '0')),
    concat('hash-', toString(sc)),
    concat('v', toString(v)),
    %s[a + 1],
    %s[a + 1],
    seed,
    recoverable,
    arraySlice(['transient', 'rate_limited', 'timeout_after_send', 'unavailable', 'corrupt_output'], 1 + (v + seed) %% 5, (v * 7 + seed) %% 3),
    if(recoverable = 1, %s, NULL),
    if(recoverable = 0, %s, NULL),
    %s,
    %s,
    %s,
    %s,
    %s,
    %s,
    %s,
    toFloat64(1 + sc %% 3),
    attrition,
    now64(3)
FROM
(
    SELECT
        number,
        number %% 4 AS a,
        intDiv(number, 4) %% %d AS sc,
        intDiv(number, %d) %% %d AS v,
        intDiv(number, %d) + 1 AS seed,
        toUInt8((sc + v) %% 4 != 0) AS recoverable,
        toUInt8(cityHash64(number, 999) %% 200 = 0) AS attrition
    FROM numbers(%d)
)`, SweepID, arms, arms,
		m(1, 95), m(2, 90), m(3, 90), m(4, 100), m(5, 60), m(6, 85), m(7, 100), m(8, 70), m(9, 50),
		Scenarios, 4*Scenarios, Variants, 4*Scenarios*Variants, n)
	sweep := fmt.Sprintf(`INSERT INTO rebound.sweeps (sweep_id, name, plan_hash, plan_json, trials_planned, arms, status, created_at, updated_at)
VALUES ('%s', 'synthetic', 'synthetic', '{}', %d, %s, 'completed', now64(3), now64(3))`, SweepID, n, arms)
	return []string{sweep, trials}
}

// Result is one measured command.
type Result struct {
	Name   string
	Wall   time.Duration
	CPU    time.Duration // the child's user + system time, all threads
	MaxRSS int64         // bytes, the child's peak resident set
	Output int           // bytes written to stdout
}

func (r Result) String() string {
	return fmt.Sprintf("%-28s %7.2f s wall  %6.2f s CPU  %6.0f MB peak RSS  (%d bytes of output)",
		r.Name, r.Wall.Seconds(), r.CPU.Seconds(), float64(r.MaxRSS)/(1<<20), r.Output)
}

// Run runs bin with args and measures it.
func Run(ctx context.Context, name, bin string, env []string, args ...string) (Result, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return Result{}, fmt.Errorf("%s %v: %w\n%s", bin, args, err, errb.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return Result{}, fmt.Errorf("%s: no rusage on this platform", name)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return Result{Name: name, Wall: wall, CPU: cpu, MaxRSS: ru.Maxrss * 1024, Output: out.Len()}, nil
}
