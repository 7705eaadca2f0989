package agent

import (
	"context"
	"fmt"
	"maps"

	"rebound/core/harness"
	"rebound/core/scenario"
)

// reconcile asks the tool's status tool about an ambiguous write, with the
// same idempotency key and whatever arguments of the write the status tool
// also takes (the deployment, the order, the file). By convention a status
// tool asked with a key answers status completed (or captured) or
// not_found; a keyless write is read back: the write landed when the answer
// carries what was written. A status call that fails is retried like any
// call (bounded, with backoff); one that keeps failing settles nothing.
// settled is true when the write is confirmed; blockedOn names the
// dependency when the ambiguity cannot be resolved; neither means nothing
// was committed and resending is safe.
func (r *carefulRun) reconcile(ctx context.Context, tool harness.Tool, args map[string]any) (settled bool, data map[string]any, blockedOn string) {
	status, offered := r.tools[tool.ReconciledBy]
	if tool.ReconciledBy == "" || !offered {
		return false, nil, tool.Name
	}
	q := r.statusQuestion(tool, status, args)
	if len(q.query) == 0 {
		return false, nil, tool.Name
	}
	r.replan(fmt.Sprintf("reconcile %s %v through %s before any resubmission", tool.Name, q.query, tool.ReconciledBy))
	for retries := 0; ; retries++ {
		if !r.affordable(status) || r.isDown(tool.ReconciledBy, q.query) {
			return false, nil, tool.ReconciledBy
		}
		r.spent += status.CostUSD
		st := r.call(ctx, tool.ReconciledBy, q.query)
		r.noteStanding(tool.ReconciledBy, q.query, st)
		if st.OK && hasResultFields(scenario.Step{}, st.Data) {
			end, askAgain := r.readStatus(q, st)
			if end != nil {
				return end.settled, end.data, end.blockedOn
			}
			if askAgain {
				continue
			}
			st = harness.Failed("STALE_EVIDENCE", true, "the status answer is older data")
		}
		if st.Code == harness.CodeNotFound {
			return false, nil, "" // nothing was committed
		}
		if !r.retryStatus(q, st, retries) {
			return false, nil, tool.ReconciledBy
		}
	}
}

// statusQuestion is the reconciliation of one ambiguous write.
type statusQuestion struct {
	tool   harness.Tool   // the write's tool
	status harness.Tool   // its status tool
	args   map[string]any // the write's arguments
	key    any            // the write's idempotency key (nil: a keyless write)
	// keyed is the question asked with the write's key; query the one
	// being asked (keyed, or first the plan's own next read).
	keyed, query map[string]any
}

// statusQuestion builds the question about a write: its key and those of
// its arguments the status tool takes. The economical twin first asks the
// plan's own next read when that read asks the status tool about this
// write's object: one call may settle the write and serve the read. An
// answer that cannot settle a keyed write (no status) sends the keyed
// question after it.
func (r *carefulRun) statusQuestion(tool, status harness.Tool, args map[string]any) *statusQuestion {
	q := &statusQuestion{tool: tool, status: status, args: args, keyed: map[string]any{}}
	keyParam := tool.IdempotencyKeyParam
	if keyParam != "" {
		q.key = args[keyParam]
	}
	for _, p := range status.Params {
		if q.key != nil && (p.Name == keyParam || p.Name == "idempotency_key") {
			q.keyed[p.Name] = q.key
		} else if v, ok := args[p.Name]; ok && p.Name != keyParam {
			q.keyed[p.Name] = v
		}
	}
	q.query = q.keyed
	if r.economical && r.next != nil && r.next.Tool == tool.ReconciledBy && sameObject(r.next.Args, q.keyed, keyParam) && harness.ArgsKey(r.next.Args) != harness.ArgsKey(q.keyed) {
		q.query = maps.Clone(r.next.Args)
	}
	return q
}

// reconciled is how a reconciliation ended (reconcile's results).
type reconciled struct {
	settled   bool
	data      map[string]any
	blockedOn string
}

// readStatus reads a clean status answer st to the question q. end is how
// the reconciliation ends, if it does; askAgain that the plan's own read
// did not say and the keyed question comes next. Neither: older data that
// settles nothing (asked again like a failure). Older data may confirm the
// write (a replica that shows the capture shows it happened) but never
// that it did not land.
func (r *carefulRun) readStatus(q *statusQuestion, st harness.Result) (end *reconciled, askAgain bool) {
	current := st.Evidence == nil || st.Evidence.Strength != "stale"
	keep := func() { // a current answer also serves a later read of the plan
		if current {
			r.answers = append(r.answers, answer{tool: q.tool.ReconciledBy, query: q.query, data: st.Data})
		}
	}
	switch {
	case harness.Landed(st.Data):
		keep() // older data confirms the write, but is no exact read for a later step
		return &reconciled{settled: true, data: st.Data}, false
	case st.Data[harness.ReconcileStatus] == harness.ReconcileNotFound:
		if current {
			return &reconciled{}, false
		}
		return nil, false
	case q.key != nil && harness.ArgsKey(q.query) != harness.ArgsKey(q.keyed):
		// The plan's own read answered: it serves that read (if
		// current) even though it cannot settle the write; ask with
		// the key.
		keep()
		q.query = q.keyed
		return nil, true
	case q.key != nil:
		return &reconciled{blockedOn: q.tool.ReconciledBy}, false
	case readBack(q.args, q.query, st.Data):
		keep()
		return &reconciled{settled: true, data: st.Data}, false
	case !current:
		return nil, false
	case contradicts(q.args, st.Data):
		return &reconciled{}, false // what is there is not our write
	}
	return &reconciled{blockedOn: q.tool.ReconciledBy}, false // the answer shows nothing either way
}

// retryStatus decides whether a failed or corrupt status answer is asked
// again, like any call, boundedly, and waits the backoff if so.
func (r *carefulRun) retryStatus(q *statusQuestion, st harness.Result, retries int) bool {
	if (!st.OK && (!st.Retryable || st.Code == harness.CodeBudgetExhausted)) || retries >= r.task.retryLimit() {
		return false
	}
	wait := r.backoff(retries, st.RetryAfterMs)
	if d := r.task.Budget.DeadlineMs; d > 0 && r.env.Now()+wait+r.expectedLatency(q.status.Name) > d {
		return false
	}
	r.env.Sleep(wait)
	return true
}

// answer is a clean status answer the agent got while reconciling.
type answer struct {
	tool  string
	query map[string]any
	data  map[string]any
}

// answered returns the data of a reconciliation answer that already
// answers a read step: the same tool, asked about the same object (an
// argument the step declares, with the same value). Each answer serves
// once.
func (r *carefulRun) answered(step scenario.Step) (map[string]any, bool) {
	for i, an := range r.answers {
		if an.tool != step.Tool || len(step.Args) == 0 {
			continue
		}
		shared := false
		for k, v := range step.Args {
			if q, ok := an.query[k]; ok && fmt.Sprint(q) == fmt.Sprint(v) {
				shared = true
				break
			}
		}
		// It serves the read even without a field the read takes from
		// its result (the claim leaves that field out), unless the goal
		// needs one: then only the read itself can reach the goal.
		if shared && (hasResultFields(step, an.data) || !readsGoalField(step, r.task.Claim)) {
			r.answers = append(r.answers[:i], r.answers[i+1:]...)
			return an.data, true
		}
	}
	return nil, false
}

// sameObject reports whether a plan read asks the status tool about the
// object the keyed reconciliation query names: every non-key argument of
// that query (the order, the deployment, the path) with the same value,
// and no idempotency key of its own.
func sameObject(read, query map[string]any, keyParam string) bool {
	for k := range read {
		if k == keyParam || k == "idempotency_key" {
			return false
		}
	}
	compared := 0
	for k, v := range query {
		if k == keyParam || k == "idempotency_key" {
			continue
		}
		if r, ok := read[k]; !ok || fmt.Sprint(r) != fmt.Sprint(v) {
			return false
		}
		compared++
	}
	return compared > 0
}

// readBack reports whether a read-back answer shows the write landed:
// every argument of the write that the answer also carries is equal, and
// at least one of them is more than the query itself asked about (the
// content, not only the path or the deployment).
func readBack(args, query, data map[string]any) bool {
	evidence := 0
	for k, v := range args {
		if d, ok := data[k]; ok {
			if fmt.Sprint(d) != fmt.Sprint(v) {
				return false
			}
			if q, asked := query[k]; !asked || fmt.Sprint(q) != fmt.Sprint(v) {
				evidence++
			}
		}
	}
	return evidence > 0
}

// contradicts reports whether a current read-back shows another value than
// the write's for one of its arguments: the write did not land.
func contradicts(args, data map[string]any) bool {
	for k, v := range args {
		if d, ok := data[k]; ok && fmt.Sprint(d) != fmt.Sprint(v) {
			return true
		}
	}
	return false
}
