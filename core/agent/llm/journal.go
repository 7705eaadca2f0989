package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// Journal keeps a trial's model responses durably, each stored as it
// arrives, before the agent acts on it. A trial run again after a crash
// (its shard retried on another worker) answers its requests from the
// journal, in order, for as long as they match what was stored, and pays
// only for the requests never answered. The sweep's activities implement
// it over the model_calls table; one Journal serves one trial.
type Journal interface {
	// Load returns every entry stored for the trial, in any order.
	Load(ctx context.Context) ([]JournalEntry, error)
	// Save stores one entry durably; the agent does not go on before it
	// returns. An error stops the trial (its shard is retried).
	Save(ctx context.Context, e JournalEntry) error
	// Sent stores, durably, that a request is about to be sent; the agent
	// sends it only after Sent returned nil (an error stops the trial).
	// A send with no stored answer was paid for by nobody the store knows:
	// the worker died with it in flight, or its answer could not be
	// stored. Its spend is then counted at the send's upper bound.
	Sent(ctx context.Context, s JournalSend) error
}

// DefaultCompletionAllowance bounds the completion of a request sent
// without max_tokens, in tokens: not a bound the provider enforces, but the
// allowance a lost request of such an arm is estimated at (the count of
// those is reported beside the estimate).
const DefaultCompletionAllowance = 4096

// JournalSend is one model request as it leaves: which step of the trial
// it asks, and an upper bound of what the provider may bill for it.
type JournalSend struct {
	Step       int
	Generation int
	Kind       string
	// RequestHash is that of the JournalEntry its answer is stored as.
	RequestHash string
	// PromptTokensBound bounds the prompt tokens: the length in bytes of
	// the request's JSON body. A byte-level BPE token (every OpenAI-style
	// tokenizer) covers at least one byte of the text it encodes, and the
	// body holds every message, tool definition and name the prompt is
	// rendered from plus the JSON syntax around them, which outweighs the
	// few tokens of chat formatting each message adds.
	PromptTokensBound int64
	// MaxTokens is the completion limit the request carries (0: none);
	// CompletionTokensBound is MaxTokens, or DefaultCompletionAllowance
	// without one.
	MaxTokens             int64
	CompletionTokensBound int64
	// Prices are the arm's: BoundUSD prices the bound with them.
	Prices Prices
}

// BoundUSD is the upper bound of the send's cost at its prices.
func (s JournalSend) BoundUSD() float64 {
	return s.Prices.Cost(s.PromptTokensBound, s.CompletionTokensBound)
}

// newSend is the journal row of a request with a body of bodyBytes.
func newSend(index, gen int, kind, hash string, bodyBytes, maxTokens int, prices Prices) JournalSend {
	s := JournalSend{Step: index, Generation: gen, Kind: kind, RequestHash: hash,
		PromptTokensBound: int64(bodyBytes), MaxTokens: int64(maxTokens), CompletionTokensBound: int64(maxTokens), Prices: prices}
	if maxTokens <= 0 {
		s.MaxTokens, s.CompletionTokensBound = 0, DefaultCompletionAllowance
	}
	return s
}

// JournalEntry is one model response of a trial.
type JournalEntry struct {
	// Step is the 1-based request of the trial. Generation grows when a
	// run diverged from the stored entries (the agent's code or prompt
	// changed under a running sweep): the entries it superseded stay
	// stored, since they were paid for.
	Step       int
	Generation int
	Kind       string // "turn" or "claim"
	// RequestHash identifies the request (RequestHash of its StepRequest);
	// a stored response answers only an identical request.
	RequestHash      string
	Response         json.RawMessage
	PromptTokens     int64
	CompletionTokens int64
	ProviderRetries  int
}

// RequestHash is the fingerprint a journal entry is matched on: the
// request's kind, model, parameters, tool definitions, response format and
// the messages sent since the previous response (earlier messages are the
// previous steps', so equal chains of hashes mean equal conversations).
func RequestHash(sr StepRequest) string {
	b, _ := json.Marshal(sr) // StepRequest holds only strings and slices of them
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// WithJournal returns an agent for one trial that stores every model
// response in j as it arrives and, when j already holds responses (a
// retried trial), answers from them first. The new agent shares the
// configuration, HTTP client and rate limiter.
func (a *Agent) WithJournal(j Journal) *Agent {
	b := &Agent{cfg: a.cfg, opts: a.opts, key: a.key, client: a.client, params: a.params, journal: j}
	return b
}

// journalState is a Run's view of its journal.
type journalState struct {
	j Journal
	// chain is the stored conversation the run replays: for each step the
	// entry of the highest generation, as long as generations do not
	// decrease (an entry of an older generation beyond a newer one belongs
	// to a superseded conversation).
	chain []JournalEntry
	// gen is the generation new entries are stored with.
	gen    int
	maxGen int
	// diverged: the run stopped replaying; every later request is live.
	diverged bool
	// loaded is the billed usage of every stored entry; replayed the part
	// the run used. The difference was paid for superseded responses.
	loadedPrompt, loadedCompletion     int64
	replayedPrompt, replayedCompletion int64
	replayed                           int
}

func loadJournal(ctx context.Context, j Journal) (*journalState, error) {
	entries, err := j.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("model journal: %w", err)
	}
	st := &journalState{j: j}
	best := map[int]JournalEntry{}
	for _, e := range entries {
		st.loadedPrompt += e.PromptTokens
		st.loadedCompletion += e.CompletionTokens
		st.maxGen = max(st.maxGen, e.Generation)
		if cur, ok := best[e.Step]; !ok || e.Generation > cur.Generation {
			best[e.Step] = e
		}
	}
	steps := make([]int, 0, len(best))
	for s := range best {
		steps = append(steps, s)
	}
	sort.Ints(steps)
	for i, s := range steps {
		e := best[s]
		if s != i+1 || (i > 0 && e.Generation < st.chain[i-1].Generation) {
			break
		}
		st.chain = append(st.chain, e)
	}
	if n := len(st.chain); n > 0 {
		st.gen = st.chain[n-1].Generation
	}
	return st, nil
}

// next returns the stored response for request index when the run is still
// replaying and the request matches; otherwise it switches the run to live
// requests (a new generation when a stored response did not match).
func (st *journalState) next(index int, kind, hash string) (JournalEntry, bool) {
	if st.diverged || index > len(st.chain) {
		st.diverged = true
		return JournalEntry{}, false
	}
	e := st.chain[index-1]
	if e.Kind != kind || e.RequestHash != hash {
		st.diverged = true
		st.maxGen++
		st.gen = st.maxGen
		return JournalEntry{}, false
	}
	st.replayed++
	st.replayedPrompt += e.PromptTokens
	st.replayedCompletion += e.CompletionTokens
	return e, true
}

// reject takes back an entry next returned (it could not be used) and
// switches the run to live requests in a new generation.
func (st *journalState) reject(e JournalEntry) {
	st.replayed--
	st.replayedPrompt -= e.PromptTokens
	st.replayedCompletion -= e.CompletionTokens
	st.diverged = true
	st.maxGen++
	st.gen = st.maxGen
}

// superseded is the usage of stored responses the run did not use: paid
// for, so counted in the trial's tokens and cost.
func (st *journalState) superseded() (prompt, completion int64) {
	if st == nil {
		return 0, 0
	}
	return st.loadedPrompt - st.replayedPrompt, st.loadedCompletion - st.replayedCompletion
}
