package llm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"rebound/core/agent/llm/llmtest"
)

// memJournal is an in-memory Journal; crashAfter > 0 cancels the run once
// that many entries are stored (the worker dies right after a save).
type memJournal struct {
	mu         sync.Mutex
	entries    []JournalEntry
	sends      []JournalSend
	crashAfter int
	crash      context.CancelFunc
	// sentErr, when set, refuses every send; onSend sees each send before
	// it is journaled.
	sentErr error
	onSend  func(JournalSend)
}

func (j *memJournal) Sent(_ context.Context, s JournalSend) error {
	if j.onSend != nil {
		j.onSend(s)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.sentErr != nil {
		return j.sentErr
	}
	j.sends = append(j.sends, s)
	return nil
}

func (j *memJournal) Load(context.Context) ([]JournalEntry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]JournalEntry(nil), j.entries...), nil
}

func (j *memJournal) Save(_ context.Context, e JournalEntry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, e)
	if j.crashAfter > 0 && len(j.entries) == j.crashAfter && j.crash != nil {
		j.crash()
	}
	return nil
}

func scriptUsage(replies []llmtest.Reply) (total int64) {
	for _, r := range replies {
		total += int64(r.Usage.PromptTokens + r.Usage.CompletionTokens)
	}
	return total
}

// A trial that crashed after two answered turns is run again: it replays
// the two stored responses, pays only for the four turns never answered,
// ends with the claim a crash-free run makes, and counts every billed
// token exactly once.
func TestJournalResumesAfterCrash(t *testing.T) {
	srv := llmtest.New(t)
	script := chargeScript()
	srv.Push(script...)
	base, _ := newAgent(t, srv, nil)

	j := &memJournal{crashAfter: 2}
	ctx, crash := context.WithCancel(context.Background())
	j.crash = crash
	env, _ := newEnv(t, badGatewayOnFirstCharge)
	if _, err := base.WithJournal(j).Run(ctx, env, testTask); !errors.Is(err, context.Canceled) {
		t.Fatalf("crashed run: err = %v", err)
	}
	if got := len(srv.Requests()); got != 2 {
		t.Fatalf("the crashed run made %d requests, want 2", got)
	}

	again := base.WithJournal(j)
	env2, w := newEnv(t, badGatewayOnFirstCharge)
	out, err := again.Run(context.Background(), env2, testTask)
	if err != nil {
		t.Fatal(err)
	}
	if out.Claim != goodClaim || w.charges != 1 {
		t.Fatalf("resumed run: claim %q, %d charges", out.Claim, w.charges)
	}
	if got := len(srv.Requests()); got != len(script) {
		t.Fatalf("the model got %d requests in all, a crash-free trial makes %d", got, len(script))
	}
	rec := again.Recording()
	if rec.JournalSteps != 2 || len(rec.Steps) != len(script) {
		t.Fatalf("recording: %d journal steps of %d, want 2 of %d", rec.JournalSteps, len(rec.Steps), len(script))
	}
	billed := srv.Stats().BilledTokens()
	if billed != scriptUsage(script) || out.Tokens != billed {
		t.Fatalf("tokens: outcome %d, billed %d, script %d", out.Tokens, billed, scriptUsage(script))
	}
	if len(j.entries) != len(script) {
		t.Fatalf("journal holds %d entries, want one per response: %d", len(j.entries), len(script))
	}
	for i, e := range j.entries {
		if e.Step != i+1 || e.Generation != 0 {
			t.Fatalf("entry %d: step %d generation %d", i, e.Step, e.Generation)
		}
	}
}

// A stored response that no longer matches the request (the agent changed
// under a running sweep) is not replayed: the run goes live from there in a
// new generation, and the superseded responses still count as spent.
func TestJournalDivergenceStartsANewGeneration(t *testing.T) {
	srv := llmtest.New(t)
	script := chargeScript()
	srv.Push(script...)
	base, _ := newAgent(t, srv, nil)
	j := &memJournal{}
	env, _ := newEnv(t, badGatewayOnFirstCharge)
	if _, err := base.WithJournal(j).Run(context.Background(), env, testTask); err != nil {
		t.Fatal(err)
	}
	j.entries[2].RequestHash = "changed" // step 3's request differs now

	srv.Push(script[2:]...)
	again := base.WithJournal(j)
	env2, _ := newEnv(t, badGatewayOnFirstCharge)
	out, err := again.Run(context.Background(), env2, testTask)
	if err != nil || out.Claim != goodClaim {
		t.Fatalf("claim %q, %v", out.Claim, err)
	}
	if got := len(srv.Requests()); got != len(script)+len(script)-2 {
		t.Fatalf("requests = %d, want %d", got, 2*len(script)-2)
	}
	if out.Tokens != srv.Stats().BilledTokens() {
		t.Fatalf("outcome tokens %d, billed %d: superseded responses must count", out.Tokens, srv.Stats().BilledTokens())
	}
	var newGen int
	for _, e := range j.entries[len(script):] {
		if e.Generation != 1 || e.Step < 3 {
			t.Fatalf("new entry step %d generation %d, want steps 3.. in generation 1", e.Step, e.Generation)
		}
		newGen++
	}
	if newGen != len(script)-2 {
		t.Fatalf("%d new entries, want %d", newGen, len(script)-2)
	}

	// A third run replays the new chain: steps 1-2 of generation 0, then
	// generation 1, and asks nothing.
	third := base.WithJournal(j)
	env3, _ := newEnv(t, badGatewayOnFirstCharge)
	before := len(srv.Requests())
	out3, err := third.Run(context.Background(), env3, testTask)
	if err != nil || out3.Claim != goodClaim || len(srv.Requests()) != before {
		t.Fatalf("third run: claim %q, %v, %d new requests", out3.Claim, err, len(srv.Requests())-before)
	}
	if out3.Tokens != out.Tokens {
		t.Fatalf("third run counts %d tokens, the second %d: spend must not depend on how often a trial is replayed", out3.Tokens, out.Tokens)
	}
}

// An attrition keeps what its answered requests cost.
func TestAttritionKeepsSpend(t *testing.T) {
	srv := llmtest.New(t)
	script := chargeScript()
	srv.Push(script[0], script[1])
	srv.Always(llmtest.Error(503))
	a, _ := newAgent(t, srv, func(c *Config) { c.MaxRetries = 1 })
	env, _ := newEnv(t, badGatewayOnFirstCharge)
	if _, err := a.Run(context.Background(), env, testTask); !errors.Is(err, ErrAttrition) {
		t.Fatalf("err = %v, want attrition", err)
	}
	tokens, cost := a.Spent()
	if tokens != scriptUsage(script[:2]) || tokens != srv.Stats().BilledTokens() || cost <= 0 {
		t.Fatalf("spent %d tokens ($%f), billed %d", tokens, cost, srv.Stats().BilledTokens())
	}
}

// A stored response that no longer decodes is not trusted: the run asks
// the provider again from that step, in a new generation.
func TestJournalMangledEntryGoesLive(t *testing.T) {
	srv := llmtest.New(t)
	script := chargeScript()
	srv.Push(script...)
	base, _ := newAgent(t, srv, nil)
	j := &memJournal{}
	env, _ := newEnv(t, badGatewayOnFirstCharge)
	if _, err := base.WithJournal(j).Run(context.Background(), env, testTask); err != nil {
		t.Fatal(err)
	}
	j.entries[1].Response = []byte(`{"choices": [REDACTED]}`)
	srv.Push(script[1:]...)
	again := base.WithJournal(j)
	env2, _ := newEnv(t, badGatewayOnFirstCharge)
	out, err := again.Run(context.Background(), env2, testTask)
	if err != nil || out.Claim != goodClaim {
		t.Fatalf("claim %q, %v", out.Claim, err)
	}
	if got := len(srv.Requests()); got != 2*len(script)-1 || again.Recording().JournalSteps != 1 {
		t.Fatalf("%d requests, %d journal steps; want %d and 1", got, again.Recording().JournalSteps, 2*len(script)-1)
	}
	if out.Tokens != srv.Stats().BilledTokens() {
		t.Fatalf("tokens %d, billed %d", out.Tokens, srv.Stats().BilledTokens())
	}
}

// Every request is journaled before it leaves: the server has not seen it
// when Sent is called, a replayed step sends nothing, a send refused by
// the journal is never sent, and the step the worker died in has a send
// and no answer.
func TestJournalSendsBeforeSending(t *testing.T) {
	srv := llmtest.New(t)
	script := chargeScript()
	srv.Push(script...)
	base, _ := newAgent(t, srv, func(c *Config) { c.MaxTokens = 256 })

	j := &memJournal{crashAfter: 2}
	j.onSend = func(s JournalSend) {
		if got := len(srv.Requests()); got != s.Step-1 {
			t.Errorf("send of step %d journaled after the server saw %d requests: it must precede the request", s.Step, got)
		}
	}
	ctx, crash := context.WithCancel(context.Background())
	j.crash = crash
	env, _ := newEnv(t, badGatewayOnFirstCharge)
	if _, err := base.WithJournal(j).Run(ctx, env, testTask); !errors.Is(err, context.Canceled) {
		t.Fatalf("crashed run: err = %v", err)
	}
	if len(j.sends) != 2 || len(j.entries) != 2 {
		t.Fatalf("crashed run: %d sends, %d answers; want 2 and 2", len(j.sends), len(j.entries))
	}
	for i, s := range j.sends {
		req := srv.Requests()[i]
		if s.Step != i+1 || s.RequestHash != j.entries[i].RequestHash || s.Kind != "turn" {
			t.Fatalf("send %d = %+v, answer %+v", i, s, j.entries[i])
		}
		if s.PromptTokensBound != int64(len(req.Body)) || s.MaxTokens != 256 || s.CompletionTokensBound != 256 {
			t.Fatalf("send %d bounds = %+v; body is %d bytes", i, s, len(req.Body))
		}
		if want := (float64(len(req.Body))*2.5 + 256*10) / 1e6; s.BoundUSD() != want {
			t.Fatalf("send %d bound $%g, want $%g", i, s.BoundUSD(), want)
		}
	}

	// The resumed run replays two answers and sends the rest, each once.
	j.onSend = nil
	env2, _ := newEnv(t, badGatewayOnFirstCharge)
	if _, err := base.WithJournal(j).Run(context.Background(), env2, testTask); err != nil {
		t.Fatal(err)
	}
	if len(j.sends) != len(script) || len(srv.Requests()) != len(script) {
		t.Fatalf("%d sends, %d requests; want %d of each", len(j.sends), len(srv.Requests()), len(script))
	}

	// A journal that cannot store the send stops the trial before it sends.
	refused := &memJournal{sentErr: errors.New("store full")}
	before := len(srv.Requests())
	env3, _ := newEnv(t, badGatewayOnFirstCharge)
	_, err := base.WithJournal(refused).Run(context.Background(), env3, testTask)
	if err == nil || !strings.Contains(err.Error(), "store full") || len(srv.Requests()) != before {
		t.Fatalf("refused send: err %v, %d requests sent", err, len(srv.Requests())-before)
	}
}

// Without max_tokens, a send's completion is bounded by the documented
// allowance and says it had no limit.
func TestJournalSendWithoutMaxTokens(t *testing.T) {
	s := newSend(1, 0, "turn", "h", 1000, 0, Prices{InputPerMTok: 1, OutputPerMTok: 2})
	if s.MaxTokens != 0 || s.CompletionTokensBound != DefaultCompletionAllowance || s.PromptTokensBound != 1000 {
		t.Fatalf("%+v", s)
	}
	if want := (1000.0 + 2*DefaultCompletionAllowance) / 1e6; s.BoundUSD() != want {
		t.Fatalf("bound $%g, want $%g", s.BoundUSD(), want)
	}
}
