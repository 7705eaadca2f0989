// Package activities holds rebound's Temporal activities: register a sweep,
// run a shard of trials and persist its rows, record the final status. They
// run at least once, so every write is idempotent: trial ids are derived from
// the trial's coordinates and storage deduplicates on them.
package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"rebound/core/agent"
	armpkg "rebound/core/agent/arm"
	"rebound/core/agent/command"
	"rebound/core/agent/llm"
	"rebound/core/bounds"
	"rebound/core/outcome"
	"rebound/core/scenario"
	"rebound/core/trial"
	"rebound/internal/redact"
	"rebound/internal/sweepstatus"
	"rebound/internal/telemetry"
	"rebound/results/estimate"
	"rebound/results/judge"
	"rebound/results/record"
	"rebound/storage"
	"rebound/workflows"
)

var tracer = otel.Tracer("rebound/activities")

// AgentResolver builds the agent of an arm.
type AgentResolver func(arm scenario.Arm) (agent.Agent, error)

// Activities are registered on a worker as methods of one struct.
type Activities struct {
	Store storage.Store
	// Agents resolves an arm to its agent; nil means scripted agents only.
	Agents AgentResolver
	// RedactionKey (REBOUND_REDACTION_KEY, at least 32 bytes) keys the
	// hashes that replace idempotency keys in stored arguments and seals the
	// original plan in storage. Every worker and client of a deployment
	// needs the same key; activities refuse to run without one.
	RedactionKey []byte
	// RedactPatterns are extra secret patterns on top of the defaults.
	RedactPatterns []string
	// FailAfterWrite, when set, runs after a shard's rows are written and
	// before the activity returns; an error makes Temporal retry the
	// activity. It exists to prove that retries never double-count.
	FailAfterWrite func(ctx context.Context, in workflows.ShardInput) error
	// JudgeOptions are extra options for the plan's LLM judge (tests
	// replace its sleep).
	JudgeOptions []judge.Option
	// HeartbeatEvery is how often a running shard heartbeats besides per
	// trial and per model turn (default 5s; the heartbeat timeout is
	// workflows.HeartbeatTimeout).
	HeartbeatEvery time.Duration
	// StoreWait is how long shards wait for a store that is full or
	// unreachable before they fail (storewait.go; default
	// DefaultStoreWait, at most MaxStoreWait); StoreBackoff caps the pause
	// between two tries (default DefaultStoreBackoff).
	StoreWait, StoreBackoff time.Duration

	inflight sync.WaitGroup
	halt     haltSignal
	ran      atomic.Int64 // trials run and stored by these activities
	// sweeps holds the opened plans of the sweeps this worker runs (bounded,
	// least recently used first out; a finished sweep leaves at once).
	sweepsOnce sync.Once
	sweeps     *sweepCache
}

func (a *Activities) sweepCache() *sweepCache {
	a.sweepsOnce.Do(func() { a.sweeps = newSweepCache(sweepCacheCap) })
	return a.sweeps
}

// checkOnce runs CheckPlan once per cached plan of a sweep on this worker.
func (a *Activities) checkOnce(sweepID string, plan *scenario.Resolved) error {
	return a.sweepCache().check(sweepID, plan, CheckPlan)
}

// RegisterSweep stores the sweep's resolved plan and planned size.
func (a *Activities) RegisterSweep(ctx context.Context, in workflows.RegisterSweepInput) error {
	var plan scenario.Resolved
	if err := json.Unmarshal([]byte(in.PlanJSON), &plan); err != nil {
		// Not JSON, or an order of trials this worker does not know.
		return temporal.NewNonRetryableApplicationError("plan cannot be read: "+err.Error(), workflows.ErrInvalidPlan, err)
	}
	if plan.TrialCount() != in.Trials {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("plan has %d trials, sweep says %d", plan.TrialCount(), in.Trials), workflows.ErrInvalidPlan, nil)
	}
	arms := make([]string, len(plan.Arms))
	for i, arm := range plan.Arms {
		arms[i] = arm.Name
	}
	red, err := a.redactor(&plan)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	if err := CheckPlan(&plan); err != nil {
		return temporal.NewNonRetryableApplicationError(red.String(err.Error()), workflows.ErrInvalidPlan, nil)
	}
	if plan.MaxUSD > 0 {
		// A sweep whose projected cost (recorded history of the same
		// models) exceeds the plan's cap does not start.
		est, err := estimate.ForPlan(ctx, &plan, a.Store)
		if err != nil {
			return fmt.Errorf("max_usd: project the cost: %w", err)
		}
		if err := est.CheckBudget(plan.MaxUSD); err != nil {
			return temporal.NewNonRetryableApplicationError(red.String(err.Error()), workflows.ErrOverBudget, nil)
		}
	}
	sealer, err := redact.NewSealer(a.RedactionKey, scenario.PlanSealPurpose)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	// People read the plan redacted; workers open the sealed original.
	stored, err := redact.SealDocument(red, sealer, in.PlanJSON)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	sw := record.Sweep{
		SweepID: in.SweepID, Name: red.String(plan.Name), PlanHash: plan.Hash, PlanJSON: stored,
		TrialsPlanned: uint64(in.Trials), Arms: arms, Status: sweepstatus.Running,
	}
	return a.waiter(ctx).do(ctx, "register the sweep", func(ctx context.Context) error { return a.Store.PutSweep(ctx, sw) })
}

// FinishSweep records the final status of a sweep.
//
// A store that is full or unreachable is waited for (storewait.go), so the
// stored status ends as the workflow's does.
func (a *Activities) FinishSweep(ctx context.Context, in workflows.FinishSweepInput) error {
	if in.Status == sweepstatus.Cancelled && a.halt.fired() {
		// This process was interrupted (Ctrl-C) and records the sweep
		// stopped itself (runner.MarkStopped), while this runs: nothing to
		// write, nothing to race.
		a.sweepCache().drop(in.SweepID)
		return nil
	}
	wait := a.waiter(ctx)
	var sw record.Sweep
	err := wait.do(ctx, "read the sweep", func(ctx context.Context) error {
		var err error
		sw, err = a.Store.Sweep(ctx, in.SweepID)
		return err
	})
	if err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return temporal.NewNonRetryableApplicationError("unknown sweep "+in.SweepID, workflows.ErrUnknownSweep, err)
		}
		return err
	}
	if in.Status == sweepstatus.Cancelled && sw.Status == sweepstatus.Stopped {
		// Stopped on purpose (Ctrl-C: runner.StopSweep marked it before it
		// cancelled the workflow): it stays resumable as stopped.
		a.sweepCache().drop(in.SweepID)
		return nil
	}
	sw.Status = in.Status
	if err := wait.do(ctx, "record the final status", func(ctx context.Context) error { return a.Store.PutSweep(ctx, sw) }); err != nil {
		return err
	}
	// No shard of a finished sweep runs again: its plan need not stay.
	a.sweepCache().drop(in.SweepID)
	return nil
}

// RunShard runs trials [From, To) of a sweep and stores each trial as it
// finishes, so a retried shard never redoes finished work: it skips the
// trials its heartbeat details say are stored and the ones storage already
// holds (a crash between a write and the next heartbeat), and an LLM trial
// answers the model requests it already paid for from the model journal.
// A trial that paid a model is written at once (one insert per trial);
// scripted trials, which cost nothing to redo, are written in batches of at
// most flushEvery of wall time or flushRows trials, so ClickHouse is not
// flooded with tiny parts. The shard heartbeats per trial, per model turn
// and every heartbeatEvery. It returns counts only.
func (a *Activities) RunShard(ctx context.Context, in workflows.ShardInput) (workflows.ShardResult, error) {
	a.inflight.Add(1)
	defer a.inflight.Done()
	ctx, span := tracer.Start(ctx, "shard", trace.WithAttributes(
		attribute.String("rebound.sweep_id", in.SweepID), attribute.Int("rebound.shard.from", in.From), attribute.Int("rebound.shard.to", in.To)))
	defer span.End()
	plan, err := a.plan(ctx, in.SweepID)
	if err != nil {
		return workflows.ShardResult{}, err
	}
	isActivity := activity.IsActivity(ctx)
	attempt := uint32(1)
	if isActivity {
		attempt = uint32(activity.GetInfo(ctx).Attempt)
	}
	rr, err := a.rowRedactor(in.SweepID, plan)
	if err != nil {
		return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	red := rr.Redactor()
	if err := a.checkOnce(in.SweepID, plan); err != nil {
		// This worker cannot run the plan (an agent it does not know, a
		// world that refuses the initial state): retrying will not help.
		return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(red.String(err.Error()), workflows.ErrInvalidPlan, nil)
	}
	specs := make([]trial.Spec, 0, in.To-in.From)
	for i := in.From; i < in.To; i++ {
		key, err := plan.Trial(i)
		if err != nil {
			return workflows.ShardResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
		}
		specs = append(specs, trial.Spec{SweepID: in.SweepID, Scenario: key.Scenario, Variant: key.Variant, Arm: key.Arm, Seed: key.Seed})
	}

	// Where an earlier attempt got to: its heartbeat, then storage.
	cp := ShardCheckpoint{Next: in.From}
	if isActivity && activity.HasHeartbeatDetails(ctx) {
		var prev ShardCheckpoint
		if err := activity.GetHeartbeatDetails(ctx, &prev); err == nil && prev.Next > in.From && prev.Next <= in.To {
			cp = prev
		}
	}
	keys := make([]storage.TrialKey, 0, in.To-cp.Next)
	for i := cp.Next; i < in.To; i++ {
		s := specs[i-in.From]
		keys = append(keys, storage.TrialKey{Arm: s.Arm.Name, Scenario: s.Scenario.Name, Variant: s.Variant.Name, Seed: s.Seed, TrialID: s.ID()})
	}
	prog := &shardProgress{ctx: ctx, beat: isActivity, cp: cp}
	if isActivity {
		stop := prog.every(a.heartbeatEvery())
		defer stop()
	}
	wait := &storeWaiter{limit: a.storeWait(), backoff: a.storeBackoff(), since: cp.WaitingSince, red: red, report: prog.waiting, stop: a.halt.done()}
	var storedRows []storage.StoredTrial
	if err := wait.do(ctx, "read stored trials", func(ctx context.Context) error {
		var err error
		storedRows, err = a.Store.StoredTrials(ctx, in.SweepID, keys)
		return err
	}); err != nil {
		return workflows.ShardResult{}, fmt.Errorf("shard %d of %s: read stored trials: %w", in.Shard, in.SweepID, err)
	}
	stored := make(map[string]bool, len(storedRows)) // trial id -> attrition
	for _, st := range storedRows {
		stored[st.TrialID] = st.Attrition
	}
	next := cp.Next // first trial not yet known stored
	batch := &shardBatch{a: a, ctx: ctx, in: in, wait: wait, red: red, prog: prog}
	flush := func() error { return batch.flush(next) }
	var stopping <-chan struct{}
	if isActivity {
		stopping = activity.GetWorkerStopChannel(ctx)
	}
	for i := cp.Next; i < in.To; i++ {
		if err := ctx.Err(); err != nil {
			return workflows.ShardResult{}, errors.Join(err, flush())
		}
		if a.halt.fired() {
			return workflows.ShardResult{}, errors.Join(ErrHalted, flush())
		}
		select {
		case <-stopping:
			// A graceful stop: keep what is finished, hand the rest back at
			// once instead of waiting for the heartbeat timeout.
			if err := flush(); err != nil {
				return workflows.ShardResult{}, err
			}
			return workflows.ShardResult{}, temporal.NewApplicationError(
				fmt.Sprintf("worker stopping: shard %d of %s handed back at trial %d of [%d, %d)", in.Shard, in.SweepID, i, in.From, in.To), ErrWorkerStopping)
		default:
		}
		spec := specs[i-in.From]
		if att, ok := stored[spec.ID()]; ok {
			// Stored by an earlier attempt: counted, not redone. Rows still
			// pending go first, so the checkpoint never passes them.
			if err := flush(); err != nil {
				return workflows.ShardResult{}, err
			}
			next = i + 1
			prog.skip(next, att)
			continue
		}
		tctx, release := a.haltable(ctx)
		row, calls, paid, err := a.runTrial(tctx, spec, attempt, rr, prog)
		if err != nil {
			err = halted(tctx, err)
		}
		release()
		if err != nil {
			if ferr := flush(); ferr != nil {
				return workflows.ShardResult{}, errors.Join(err, ferr)
			}
			return workflows.ShardResult{}, err
		}
		batch.add(row, calls)
		next = i + 1
		if paid || batch.full() {
			if err := flush(); err != nil {
				return workflows.ShardResult{}, err
			}
		}
	}
	if err := flush(); err != nil {
		return workflows.ShardResult{}, err
	}
	if a.FailAfterWrite != nil {
		if err := a.FailAfterWrite(ctx, in); err != nil {
			return workflows.ShardResult{}, err
		}
	}
	done := prog.checkpoint()
	return workflows.ShardResult{Trials: done.Trials, Attrition: done.Attrition, CostUSD: done.CostUSD}, nil
}

// shardBatch holds a shard's finished trials until they are written.
type shardBatch struct {
	a     *Activities
	ctx   context.Context
	in    workflows.ShardInput
	wait  *storeWaiter
	red   *redact.Redactor
	prog  *shardProgress
	rows  []record.Trial
	calls []record.ToolCall
	bytes int
	since time.Time
}

func (b *shardBatch) add(row record.Trial, calls []record.ToolCall) {
	if len(b.rows) == 0 {
		b.since = time.Now()
	}
	b.rows = append(b.rows, row)
	b.calls = append(b.calls, calls...)
	b.bytes += rowBytes(row, calls)
}

// full says the batch is due: flushRows trials, flushBytes of text, or
// flushEvery old.
func (b *shardBatch) full() bool {
	return len(b.rows) >= flushRows || b.bytes >= flushBytes || time.Since(b.since) >= flushEvery
}

func (b *shardBatch) write(ctx context.Context) error {
	err := b.a.Store.WriteTrials(ctx, b.rows, b.calls)
	if err == nil || ctx.Err() != nil || storage.IsUnavailable(err) {
		return err
	}
	return writeEach(ctx, b.a.Store, b.rows, b.calls, b.red)
}

// flush writes the batch (waiting for a store that is full or unreachable)
// and moves the checkpoint to next.
func (b *shardBatch) flush(next int) error {
	if len(b.rows) > 0 {
		var err error
		if b.ctx.Err() != nil || b.a.halt.fired() {
			// Finished trials are written even when the shard is being
			// cancelled or halted (they were run, some were paid for),
			// within a bound of their own and without waiting.
			wctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), flushTimeout)
			defer cancel()
			err = b.write(wctx)
		} else {
			err = b.wait.do(b.ctx, "write trials", b.write)
		}
		if err != nil {
			return fmt.Errorf("write shard %d of %s: %w", b.in.Shard, b.in.SweepID, err)
		}
	}
	b.a.ran.Add(int64(len(b.rows)))
	att, cost := 0, 0.0
	for _, t := range b.rows {
		if t.Attrition {
			att++
		}
		cost += t.CostUSD
	}
	b.prog.advance(next, len(b.rows), att, cost)
	b.rows, b.calls, b.bytes = b.rows[:0], b.calls[:0], 0
	return nil
}

// Batching of scripted trials' rows: a batch is written when it has
// flushRows trials, flushBytes of text (two trials' bound: an insert stays
// the size of a few trials whatever the agents did; 2,000 of the library's
// trials hold about 8 MB), or is flushEvery old. Every insert makes a part
// of each table that the engine merges again later: with the library's
// rows, writing 60,760 trials and merging them cost 0.26 ms of CPU per
// trial in batches of 500, 0.19 in batches of 1,000 and 0.16 in batches of
// 2,000 as JSONEachRow (sweepbench's insert row, one run), 0.13-0.15 and
// 0.10-0.12 as RowBinary (two runs each). A shard holds at most 2,000
// trials (internal/runner's sizing) and about 1.5 s of them, so a scripted
// shard is mostly one batch; a crash loses at most flushEvery of trials
// that are free to redo.
const (
	flushRows  = 2000
	flushBytes = 2 * bounds.Trial
	flushEvery = 2 * time.Second
	// flushTimeout bounds a write of finished trials that goes on after
	// the shard was cancelled.
	flushTimeout = 30 * time.Second
)

// rowBytes is the text a trial's rows hold, for batching.
func rowBytes(t record.Trial, calls []record.ToolCall) int {
	n := len(t.Error) + len(t.Claim) + len(t.Answer) + len(t.Recording) + len(t.Process) +
		len(t.Verdicts) + len(t.FaultSchedule) + len(t.Evidence)
	for _, c := range calls {
		n += len(c.Tool) + len(c.Args) + len(c.Code) + len(c.Result)
	}
	return n
}

// writeEach writes a batch the store refused, trial by trial. A trial the
// store still refuses whose text is over refusedLimit may have been refused
// for its size, which retrying cannot fix: it is fitted into refusedLimit
// (fitRows, the store's refusal in its error column) and written once
// more. Any other refusal is returned, and the shard is retried as usual
// (the trials written meanwhile are stored and deduplicated by id).
func writeEach(ctx context.Context, st storage.Store, trials []record.Trial, calls []record.ToolCall, red *redact.Redactor) error {
	byTrial := make(map[string][]record.ToolCall, len(trials))
	for _, c := range calls {
		byTrial[c.TrialID] = append(byTrial[c.TrialID], c)
	}
	for _, t := range trials {
		cs := byTrial[t.TrialID]
		err := st.WriteTrials(ctx, []record.Trial{t}, cs)
		if err == nil {
			continue
		}
		if ctx.Err() != nil || rowBytes(t, cs) <= refusedLimit {
			return err
		}
		note := mustJSON(map[string]any{"store_refused": bounds.Cut(red.String(err.Error()), 1*bounds.KiB)})
		if t.Error != "" {
			note = t.Error + "\n" + note
		}
		t.Error = note
		cs = slices.Clone(cs)
		fitRows(&t, cs, refusedLimit)
		if rerr := st.WriteTrials(ctx, []record.Trial{t}, cs); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return nil
}

// refusedLimit is the text bound of a trial stored after the store refused
// it at its full bound.
const refusedLimit = bounds.Trial / 8

// ErrWorkerStopping is the (retryable) error type of a shard handed back
// by a worker that is stopping.
const ErrWorkerStopping = "WorkerStopping"

// ShardCheckpoint is a shard's heartbeat detail: trials [From, Next) are
// stored, Trials of them (all, when Next = To) and Attrition of those lost
// to the provider. A retried attempt starts at Next.
type ShardCheckpoint struct {
	Next      int `json:"next"`
	Trials    int `json:"trials"`
	Attrition int `json:"attrition"`
	// CostUSD is the model spend of the trials written so far, for the
	// sweep's max_usd. A trial stored by an attempt that died before its
	// next heartbeat is counted by no checkpoint: its cost is missed (its
	// trial is not).
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Waiting says why the shard is waiting for the store ("waiting for
	// the store since ...: NOT_ENOUGH_SPACE ..."), empty while it answers;
	// WaitingSince is when the store first failed, carried to the next
	// attempt so the wait's limit counts from there.
	Waiting      string    `json:"waiting,omitempty"`
	WaitingSince time.Time `json:"waiting_since,omitzero"`
}

// shardProgress is a running shard's checkpoint; it heartbeats it.
type shardProgress struct {
	ctx  context.Context
	beat bool
	mu   sync.Mutex
	cp   ShardCheckpoint
}

func (p *shardProgress) checkpoint() ShardCheckpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cp
}

// skip counts a trial an earlier attempt stored.
func (p *shardProgress) skip(next int, attrition bool) {
	p.mu.Lock()
	p.cp.Next = next
	p.cp.Trials++
	if attrition {
		p.cp.Attrition++
	}
	p.mu.Unlock()
	p.heartbeat()
}

// waiting records (or clears) why the shard waits for the store, and
// heartbeats it.
func (p *shardProgress) waiting(why string, since time.Time) {
	p.mu.Lock()
	p.cp.Waiting, p.cp.WaitingSince = why, since
	p.mu.Unlock()
	p.heartbeat()
}

// advance records trials written up to next.
func (p *shardProgress) advance(next, trials, attrition int, costUSD float64) {
	p.mu.Lock()
	p.cp.Next = max(p.cp.Next, next)
	p.cp.Trials += trials
	p.cp.Attrition += attrition
	p.cp.CostUSD += costUSD
	p.mu.Unlock()
	p.heartbeat()
}

// heartbeat records the checkpoint (the SDK throttles what it sends and
// always sends the latest details); it also carries cancellation back.
func (p *shardProgress) heartbeat() {
	if p.beat {
		activity.RecordHeartbeat(p.ctx, p.checkpoint())
	}
}

// every heartbeats at the interval until stopped: a trial or a model
// request can take longer than the heartbeat timeout, and a live worker
// must not lose its shard for it.
func (p *shardProgress) every(d time.Duration) (stop func()) {
	return every(d, p.heartbeat)
}

// every calls f every d until stop is called; stop returns once f will not
// be called again.
func every(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() { close(done); <-finished }
}

func (a *Activities) heartbeatEvery() time.Duration {
	if a.HeartbeatEvery > 0 {
		return a.HeartbeatEvery
	}
	return 5 * time.Second
}

// runTrial runs one trial and returns its rows; paid says it called a
// model (its row is written at once).
func (a *Activities) runTrial(ctx context.Context, spec trial.Spec, attempt uint32, rr *RowRedactor, prog *shardProgress) (record.Trial, []record.ToolCall, bool, error) {
	red := rr.Redactor()
	ag, err := a.resolve(spec.Arm)
	if err != nil {
		return record.Trial{}, nil, false, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrInvalidPlan, err)
	}
	var model *llm.Agent
	if la, ok := ag.(*llm.Agent); ok {
		model = la.WithJournal(&modelJournal{store: a.Store, sweepID: spec.SweepID, trialID: spec.ID(), attempt: attempt, red: red, beat: prog.heartbeat})
		ag = model
	}
	// A trial that may have paid a model (an LLM arm, a recording agent, an
	// external agent's process) is written at once; scripted ones batch.
	_, paid := ag.(trial.Recorder)
	paid = paid || spec.Arm.Agent == scenario.AgentLLM || spec.Arm.Agent == scenario.AgentCommand
	tctx, span := tracer.Start(ctx, "trial", trace.WithAttributes(
		attribute.String("rebound.scenario", spec.Scenario.Name), attribute.String("rebound.variant", spec.Variant.Name),
		attribute.String("rebound.arm", spec.Arm.Name), attribute.Int64("rebound.seed", int64(spec.Seed))))
	defer span.End()
	res, err := trial.Run(command.WithAttempt(tctx, int(attempt)), spec, ag)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "trial: "+errorKind(err))
		switch {
		case errors.Is(err, llm.ErrAttrition), errors.Is(err, agent.ErrAttrition):
			// The provider (or an external agent's infrastructure), not the
			// agent, failed: count it per arm, never grade it, and keep
			// what the answered requests cost.
			row := AttritionRow(spec, ag.Name(), err, red)
			row.ActivityAttempt = attempt
			if p, _ := command.IsAttrition(err); p != nil {
				row.Process = processJSON(p, red)
			}
			if model != nil {
				tokens, cost := model.Spent()
				row.Tokens, row.CostUSD, row.PromptHash = uint64(tokens), cost, model.PromptHash()
				if rec, rerr := model.RecordingJSON(); rerr == nil {
					row.Recording = red.String(rec)
				}
			}
			fitRows(&row, nil, textLimit(0))
			recordTrial(ctx, row, nil)
			span.SetAttributes(telemetry.FailedAttr.Bool(true))
			return row, nil, true, nil
		case errors.Is(err, llm.ErrConfig), errors.Is(err, agent.ErrConfig):
			return record.Trial{}, nil, paid, temporal.NewNonRetryableApplicationError(red.String(err.Error()), workflows.ErrAgentConfig, nil)
		case ctx.Err() != nil:
			return record.Trial{}, nil, paid, err
		}
		// Retried; the message reaches Temporal, so it is redacted.
		return record.Trial{}, nil, paid, errors.New(red.String(err.Error()))
	}
	span.SetAttributes(attribute.String("rebound.trial_id", res.TrialID), attribute.Int("rebound.tool_calls", res.Verdict.Counts.ToolCalls))
	t, cs := rr.Rows(res)
	t.ActivityAttempt = attempt
	recordTrial(ctx, t, cs)
	// A failed trial is one `rebound trials --failing` lists; with
	// REBOUND_TRACE_FAILED_TRIALS its spans are always kept.
	span.SetAttributes(telemetry.FailedAttr.Bool(len(t.BadOutcomes()) > 0))
	return t, cs, paid, nil
}

// errorKind names a trial's error for its span's status without its text
// (which may quote what the agent sent): attrition, configuration, or an
// error the shard retries.
func errorKind(err error) string {
	switch {
	case errors.Is(err, llm.ErrAttrition), errors.Is(err, agent.ErrAttrition):
		return "attrition"
	case errors.Is(err, llm.ErrConfig), errors.Is(err, agent.ErrConfig):
		return "agent configuration"
	}
	return "retried"
}

// recordTrial counts a finished trial in the OpenTelemetry metrics: its
// outcomes, the faults injected into its calls, its tokens and cost, or
// its attrition.
func recordTrial(ctx context.Context, t record.Trial, calls []record.ToolCall) {
	m := telemetry.Trial{Arm: t.Arm, Tokens: t.Tokens, CostUSD: t.CostUSD, Attrition: t.Attrition}
	if !t.Attrition {
		m.Outcomes = make(map[string]*bool, len(outcome.Stored))
		for _, metric := range outcome.Stored {
			m.Outcomes[string(metric)] = t.Outcome(metric)
		}
	}
	for _, c := range calls {
		if c.FaultClass != "" {
			m.Faults = append(m.Faults, c.FaultClass)
		}
	}
	telemetry.RecordTrial(ctx, m)
}

// modelJournal stores an LLM trial's model responses in model_calls as
// they arrive, and heartbeats the shard per model turn.
type modelJournal struct {
	store            storage.Store
	sweepID, trialID string
	attempt          uint32
	red              *redact.Redactor
	beat             func()
}

func (j *modelJournal) Load(ctx context.Context) ([]llm.JournalEntry, error) {
	rows, err := j.store.ModelCalls(ctx, j.sweepID, j.trialID)
	if err != nil {
		return nil, err
	}
	out := make([]llm.JournalEntry, len(rows))
	for i, r := range rows {
		out[i] = llm.JournalEntry{
			Step: int(r.Step), Generation: int(r.Generation), Kind: r.Kind, RequestHash: r.RequestHash,
			Response: json.RawMessage(r.Response), PromptTokens: int64(r.PromptTokens),
			CompletionTokens: int64(r.CompletionTokens), ProviderRetries: int(r.ProviderRetries),
		}
	}
	return out, nil
}

func (j *modelJournal) Save(ctx context.Context, e llm.JournalEntry) error {
	// The response is paid for: store it even when the shard is being
	// cancelled (a stopping worker), within a bound of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := j.store.PutModelCall(ctx, record.ModelCall{
		SweepID: j.sweepID, TrialID: j.trialID, Step: uint32(e.Step), Generation: uint32(e.Generation),
		Kind: e.Kind, RequestHash: e.RequestHash, Response: j.red.String(string(e.Response)),
		PromptTokens: uint64(e.PromptTokens), CompletionTokens: uint64(e.CompletionTokens),
		ProviderRetries: uint32(e.ProviderRetries), ActivityAttempt: j.attempt,
	})
	if err == nil && j.beat != nil {
		j.beat()
	}
	return err
}

// Sent journals a model request before the agent sends it (model_requests):
// a send whose answer never reaches model_calls is counted, estimated at its
// bound, in the sweep's spend. Unlike Save it is not detached from a
// cancelled shard: a request that cannot be journaled is not sent.
func (j *modelJournal) Sent(ctx context.Context, s llm.JournalSend) error {
	return j.store.PutModelRequest(ctx, record.ModelRequest{
		SweepID: j.sweepID, TrialID: j.trialID, Step: uint32(s.Step), Generation: uint32(s.Generation),
		Kind: s.Kind, RequestHash: s.RequestHash, PromptTokensBound: uint64(s.PromptTokensBound),
		MaxTokens: uint64(s.MaxTokens), CompletionTokensBound: uint64(s.CompletionTokensBound),
		InputUSDPerMTok: s.Prices.InputPerMTok, OutputUSDPerMTok: s.Prices.OutputPerMTok, ActivityAttempt: j.attempt,
	})
}

// TrialsRun is how many trials these activities ran and stored (trials an
// earlier attempt or process stored are skipped, not counted): what a
// process that runs a sweep's worker ran itself.
func (a *Activities) TrialsRun() int { return int(a.ran.Load()) }

// Drain waits until no shard is running on these activities (after the
// worker stopped), or ctx ends: the store must outlive the last write.
func (a *Activities) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		a.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *Activities) resolve(arm scenario.Arm) (agent.Agent, error) {
	if a.Agents != nil {
		return a.Agents(arm)
	}
	return armpkg.Resolve(arm)
}

// rowRedactor returns the row redactor of a sweep, built once per cached
// plan on this worker: its redactor's memo of strings and its memo of
// documents stay warm from one shard to the next.
func (a *Activities) rowRedactor(sweepID string, plan *scenario.Resolved) (*RowRedactor, error) {
	return a.sweepCache().rowRedactor(sweepID, plan, func(p *scenario.Resolved) (*RowRedactor, error) {
		red, err := a.redactor(p)
		if err != nil {
			return nil, err
		}
		return NewRowRedactor(red), nil
	})
}

// Redactor returns the redactor of a sweep's rows: the same one for every
// writer of the sweep (workers, regrade), so keyed hashes compare equal.
func (a *Activities) Redactor(plan *scenario.Resolved) (*redact.Redactor, error) {
	return a.redactor(plan)
}

// OpenPlan opens a stored plan_json with this deployment's redaction key.
func (a *Activities) OpenPlan(stored string) (*scenario.Resolved, error) {
	return scenario.OpenStoredPlan(stored, a.RedactionKey)
}

// redactor builds the redactor of a sweep: the default and configured
// patterns, the values of the API keys the plan's arms and judge read from
// the environment, and the deployment's hash key.
func (a *Activities) redactor(plan *scenario.Resolved) (*redact.Redactor, error) {
	if err := redact.CheckKey(a.RedactionKey); err != nil {
		return nil, err
	}
	return redact.NewWith(redact.Options{
		Patterns: a.RedactPatterns,
		Values:   KnownSecrets(plan),
		HashKey:  redact.DeriveKey(a.RedactionKey, "idempotency-key-hash"),
	})
}

// KnownSecrets returns the values of the API keys a plan names
// (api_key_env of its LLM arms and judge, env_from of its command arms) as
// this process sees them: they are redacted by value wherever they appear,
// whatever their shape.
func KnownSecrets(plan *scenario.Resolved) []string {
	var names []string
	for _, arm := range plan.Arms {
		if arm.LLM != nil && arm.LLM.APIKeyEnv != "" {
			names = append(names, arm.LLM.APIKeyEnv)
		}
		for _, worker := range arm.EnvFrom { // a command arm's secrets
			names = append(names, worker)
		}
	}
	if plan.Judge != nil && plan.Judge.APIKeyEnv != "" {
		names = append(names, plan.Judge.APIKeyEnv)
	}
	var out []string
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// plan returns the sweep's resolved plan, read from storage once per worker.
func (a *Activities) plan(ctx context.Context, sweepID string) (*scenario.Resolved, error) {
	if p, ok := a.sweepCache().plan(sweepID); ok {
		return p, nil
	}
	sw, err := a.Store.Sweep(ctx, sweepID)
	if err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return nil, temporal.NewNonRetryableApplicationError("unknown sweep "+sweepID, workflows.ErrUnknownSweep, err)
		}
		return nil, err
	}
	p, err := scenario.OpenStoredPlan(sw.PlanJSON, a.RedactionKey)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("stored plan of sweep "+sweepID+": "+err.Error(), workflows.ErrInvalidPlan, err)
	}
	return a.sweepCache().putPlan(sweepID, p), nil
}
