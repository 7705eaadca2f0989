package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A sampler decides when a span starts, before a trial's outcome is known,
// so it cannot prefer failed trials. REBOUND_TRACE_FAILED_TRIALS moves the
// trials' decision to their end: every trial's spans are recorded, held
// until the trial's span ends, and then exported when the trial failed (or
// falls in the REBOUND_TRACE_TRIALS fraction of the rest), or dropped.
// The sweep's own spans are never held.

// EnvTraceFailedTrials names the switch that keeps the spans of every
// failed trial (a bad outcome, attrition, or an error), on top of the
// REBOUND_TRACE_TRIALS fraction of the others.
const EnvTraceFailedTrials = "REBOUND_TRACE_FAILED_TRIALS"

// FailedAttr is the trial span's attribute that says the trial failed:
// activities set it from the verdict before the span ends. A trial span
// whose status is Error counts as failed too.
const FailedAttr = attribute.Key("rebound.failed")

// traceFailedTrials reads EnvTraceFailedTrials (a boolean, default false).
func traceFailedTrials(getenv func(string) string) (bool, error) {
	v := strings.TrimSpace(getenv(EnvTraceFailedTrials))
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want true or false", EnvTraceFailedTrials, v)
	}
	return b, nil
}

// recordTrials is the sampler under the tail decision: a trial span under
// a sampled parent is always recorded and sampled (its children follow
// it), since the decision to keep it is made when it ends; every other
// span is base's to decide.
type recordTrials struct{ base sdktrace.Sampler }

func (s recordTrials) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	parent := trace.SpanContextFromContext(p.ParentContext)
	if p.Name != TrialSpan || !parent.IsSampled() {
		return s.base.ShouldSample(p)
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: parent.TraceState()}
}

func (s recordTrials) Description() string {
	return fmt.Sprintf("RecordTrials{%s}", s.base.Description())
}

// failedTrials is a span processor in front of the exporting one. It holds
// the ended spans of each trial still running and, when the trial's span
// ends, passes them on or drops them all. Spans outside any trial pass
// straight through. Memory is bounded by the spans of the trials running
// at once.
type failedTrials struct {
	next  sdktrace.SpanProcessor
	ratio float64 // the fraction of trials that did not fail that are kept

	mu    sync.Mutex
	owner map[trace.SpanID]*heldTrial // every open span of a trial (and the trial's own) -> its trial
}

// heldTrial is one trial's spans until its decision, then the decision for
// the spans of it still open.
type heldTrial struct {
	open    int // spans of the trial started and not yet ended, its own included
	ended   bool
	keep    bool
	pending []sdktrace.ReadOnlySpan
}

func newFailedTrials(next sdktrace.SpanProcessor, ratio float64) *failedTrials {
	return &failedTrials{next: next, ratio: ratio, owner: map[trace.SpanID]*heldTrial{}}
}

func (p *failedTrials) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	id := s.SpanContext().SpanID()
	p.mu.Lock()
	if s.Name() == TrialSpan {
		p.owner[id] = &heldTrial{open: 1}
	} else if ps := trace.SpanContextFromContext(parent); ps.IsValid() {
		if h, ok := p.owner[ps.SpanID()]; ok {
			h.open++
			p.owner[id] = h
		}
	}
	p.mu.Unlock()
	p.next.OnStart(parent, s)
}

func (p *failedTrials) OnEnd(s sdktrace.ReadOnlySpan) {
	id := s.SpanContext().SpanID()
	p.mu.Lock()
	h, ok := p.owner[id]
	if !ok {
		p.mu.Unlock()
		p.next.OnEnd(s)
		return
	}
	delete(p.owner, id)
	h.open--
	var pass []sdktrace.ReadOnlySpan
	switch {
	case s.Name() == TrialSpan && !h.ended:
		h.ended = true
		h.keep = trialFailed(s) || trialFraction(s.Attributes()) < p.ratio
		if h.keep {
			pass = append(h.pending, s)
		}
		h.pending = nil
	case h.ended:
		// A child that outlived its trial follows the trial's decision.
		if h.keep {
			pass = []sdktrace.ReadOnlySpan{s}
		}
	default:
		h.pending = append(h.pending, s)
	}
	p.mu.Unlock()
	for _, s := range pass {
		p.next.OnEnd(s)
	}
}

// held reports how many spans are open or waiting for their trial (tests).
func (p *failedTrials) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.owner)
}

func (p *failedTrials) Shutdown(ctx context.Context) error   { return p.next.Shutdown(ctx) }
func (p *failedTrials) ForceFlush(ctx context.Context) error { return p.next.ForceFlush(ctx) }

// trialFailed says whether a trial's ended span is of a failed trial.
func trialFailed(s sdktrace.ReadOnlySpan) bool {
	if s.Status().Code == codes.Error {
		return true
	}
	for _, kv := range s.Attributes() {
		if kv.Key == FailedAttr {
			return kv.Value.AsBool()
		}
	}
	return false
}
