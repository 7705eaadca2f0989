// Package histories holds the recorded workflow histories that guard the
// sweep workflow against non-deterministic changes: what each recorded case
// must show, how history files are named, read and written, and a replayer
// configured like a production worker.
//
// The histories live in workflows/testdata/histories/<set>/, one directory
// per recording (a set), one file per workflow run:
//
//	<case>.run<N>.json    run N (1-based) of the sweep of <case>
//
// A sweep that continued as new has one file per run. The format is the one
// `temporal workflow show --output json` writes, so a history downloaded
// from a real cluster can be replayed the same way.
//
// workflows' TestReplayHistories replays every file against the current
// workflow code; record_test.go in this directory records a new set from a
// real Temporal dev server (`make histories`).
package histories

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/reflect/protoreflect"

	"rebound/internal/runner"
	"rebound/workflows"
)

// MaxFileBytes bounds one committed history file: histories are recorded
// from tiny sweeps, so a large one means a payload grew (a plan or a trace
// in the workflow's history, which the design forbids).
const MaxFileBytes = 256 << 10

// Case is one representative sweep that a set of histories records.
type Case struct {
	Name        string
	Description string
	check       func(runs []*historypb.History) error
}

// Check reports whether runs (the histories of one sweep, in run order)
// show what the case is about: a cancelled case that completed instead
// proves nothing.
func (c Case) Check(runs []*historypb.History) error {
	if len(runs) == 0 {
		return fmt.Errorf("%s: no runs", c.Name)
	}
	for i, h := range runs {
		if err := checkRun(h); err != nil {
			return fmt.Errorf("%s: run %d: %w", c.Name, i+1, err)
		}
	}
	if err := c.check(runs); err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	return nil
}

// Cases are the sweeps every recording covers. Adding a case means
// recording a new set (`make histories`); a committed set recorded before
// the case existed stays valid.
var Cases = []Case{
	{
		Name:        "quickstart-completed",
		Description: "examples/plans/quickstart.yaml run to completion, no shard retried",
		check: func(runs []*historypb.History) error {
			s, err := single(runs, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
			if err != nil {
				return err
			}
			return all(
				s.want(workflows.RegisterSweepActivity, s.scheduled, 1),
				s.want(workflows.FinishSweepActivity, s.scheduled, 1),
				s.want(workflows.JudgeShardActivity, s.scheduled, 0),
				s.atLeast(workflows.RunShardActivity, s.completed, 2),
				s.same(workflows.RunShardActivity),
				s.firstAttempts(workflows.RunShardActivity),
			)
		},
	},
	{
		Name:        "continued-as-new",
		Description: "a sweep that continued as new after every two shards",
		check: func(runs []*historypb.History) error {
			if len(runs) < 2 {
				return fmt.Errorf("%d run, want at least 2", len(runs))
			}
			for i, h := range runs {
				s := summarize(h)
				want := enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
				if i == len(runs)-1 {
					want = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
				}
				if s.close != want {
					return fmt.Errorf("run %d closed with %s, want %s", i+1, s.close, want)
				}
				register := 0
				if i == 0 {
					register = 1
				}
				if err := all(
					s.want(workflows.RegisterSweepActivity, s.scheduled, register),
					s.atLeast(workflows.RunShardActivity, s.completed, 1),
				); err != nil {
					return fmt.Errorf("run %d: %w", i+1, err)
				}
			}
			return nil
		},
	},
	{
		Name:        "cancelled",
		Description: "a sweep cancelled while shards were in flight",
		check: func(runs []*historypb.History) error {
			s, err := single(runs, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED)
			if err != nil {
				return err
			}
			if !s.cancelRequested {
				return errors.New("no WorkflowExecutionCancelRequested event")
			}
			if s.activityCancelRequests == 0 {
				return errors.New("no shard was in flight when the sweep was cancelled")
			}
			return s.want(workflows.FinishSweepActivity, s.completed, 1)
		},
	},
	{
		Name:        "shard-retried",
		Description: "a shard whose first attempt failed after writing its rows, retried by Temporal",
		check: func(runs []*historypb.History) error {
			s, err := single(runs, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
			if err != nil {
				return err
			}
			if s.maxAttempt[workflows.RunShardActivity] < 2 {
				return errors.New("no RunShard attempt after the first")
			}
			return s.same(workflows.RunShardActivity)
		},
	},
	{
		Name:        "judge",
		Description: "a sweep with the LLM judge phase (judge served by llmtest)",
		check: func(runs []*historypb.History) error {
			s, err := single(runs, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
			if err != nil {
				return err
			}
			if err := all(s.atLeast(workflows.JudgeShardActivity, s.completed, 1), s.same(workflows.JudgeShardActivity), s.same(workflows.RunShardActivity)); err != nil {
				return err
			}
			if s.firstScheduled[workflows.JudgeShardActivity] < s.lastCompleted[workflows.RunShardActivity] {
				return errors.New("a JudgeShard was scheduled before every RunShard completed")
			}
			return nil
		},
	},
	{
		Name:        "agent-config-failed",
		Description: "a sweep stopped by a non-retryable agent configuration error (HTTP 401 from the model)",
		check: func(runs []*historypb.History) error {
			s, err := single(runs, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED)
			if err != nil {
				return err
			}
			if !slices.Contains(s.failureTypes[workflows.RunShardActivity], workflows.ErrAgentConfig) {
				return fmt.Errorf("no RunShard failed with %s (failures: %v)", workflows.ErrAgentConfig, s.failureTypes)
			}
			return s.want(workflows.FinishSweepActivity, s.completed, 1)
		},
	},
	{
		Name:        "all-attrition",
		Description: "a sweep whose every trial was lost to attrition (the model answers 429, retry after an hour): version 1 of all-attrition-fails fails it",
		check: func(runs []*historypb.History) error {
			s, err := single(runs, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED)
			if err != nil {
				return err
			}
			if !slices.Contains(s.markers, "all-attrition-fails") {
				return fmt.Errorf("no all-attrition-fails version marker (markers: %v)", s.markers)
			}
			if s.failureType != workflows.ErrAllAttrition {
				return fmt.Errorf("the sweep failed with %q, want %s", s.failureType, workflows.ErrAllAttrition)
			}
			return all(s.atLeast(workflows.RunShardActivity, s.completed, 1), s.want(workflows.FinishSweepActivity, s.completed, 1))
		},
	},
}

// CaseByName returns the case called name.
func CaseByName(name string) (Case, bool) {
	for _, c := range Cases {
		if c.Name == name {
			return c, true
		}
	}
	return Case{}, false
}

// FileName is the name of run (1-based) of a case's sweep.
func FileName(caseName string, run int) string {
	return fmt.Sprintf("%s.run%d.json", caseName, run)
}

var fileNameRe = regexp.MustCompile(`^([a-z0-9][a-z0-9-]*)\.run([1-9][0-9]*)\.json$`)

// ParseFileName splits a history file name into its case and run.
func ParseFileName(name string) (caseName string, run int, err error) {
	m := fileNameRe.FindStringSubmatch(name)
	if m == nil {
		return "", 0, fmt.Errorf("history file %q is not named <case>.run<N>.json", name)
	}
	run, _ = strconv.Atoi(m[2])
	return m[1], run, nil
}

var setNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ValidSetName reports whether name can name a set directory.
func ValidSetName(name string) bool { return setNameRe.MatchString(name) }

// Marshal encodes a history as `temporal workflow show --output json` does.
func Marshal(h *historypb.History) ([]byte, error) {
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Unmarshal decodes a history written by Marshal or by the Temporal CLI.
func Unmarshal(data []byte) (*historypb.History, error) {
	return client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
}

// Run is one history file of a set.
type Run struct {
	Path    string
	Case    string
	Run     int
	Raw     []byte
	History *historypb.History
}

// Set is one recording: a directory of history files.
type Set struct {
	Name string
	Dir  string
	// Cases maps a case name to its runs, in run order.
	Cases map[string][]Run
}

// LoadSets reads every set under root (one directory per set). A file
// that is not a history, or a case whose runs are not numbered 1..N, is
// an error.
func LoadSets(root string) ([]Set, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var sets []Set
	for _, e := range entries {
		if !e.IsDir() {
			return nil, fmt.Errorf("%s: only set directories belong in %s", filepath.Join(root, e.Name()), root)
		}
		s, err := LoadSet(filepath.Join(root, e.Name()))
		if err != nil {
			return nil, err
		}
		sets = append(sets, s)
	}
	return sets, nil
}

// LoadSet reads the history files of one set directory.
func LoadSet(dir string) (Set, error) {
	s := Set{Name: filepath.Base(dir), Dir: dir, Cases: map[string][]Run{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return s, err
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		name, run, err := ParseFileName(e.Name())
		if err != nil || e.IsDir() {
			return s, fmt.Errorf("%s: not a history file (want <case>.run<N>.json)", path)
		}
		r, err := ReadRun(path)
		if err != nil {
			return s, err
		}
		r.Case, r.Run = name, run
		s.Cases[name] = append(s.Cases[name], r)
	}
	for name, runs := range s.Cases {
		sort.Slice(runs, func(i, j int) bool { return runs[i].Run < runs[j].Run })
		for i, r := range runs {
			if r.Run != i+1 {
				return s, fmt.Errorf("%s: case %s has runs %v, want 1..%d", dir, name, runNumbers(runs), len(runs))
			}
		}
	}
	if len(s.Cases) == 0 {
		return s, fmt.Errorf("%s: empty set", dir)
	}
	return s, nil
}

// ReadRun reads one history file.
func ReadRun(path string) (Run, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Run{}, err
	}
	h, err := Unmarshal(raw)
	if err != nil {
		return Run{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(h.GetEvents()) == 0 {
		return Run{}, fmt.Errorf("%s: no events", path)
	}
	return Run{Path: path, Raw: raw, History: h}, nil
}

func runNumbers(runs []Run) []int {
	n := make([]int, len(runs))
	for i, r := range runs {
		n[i] = r.Run
	}
	return n
}

// Histories returns the runs' histories in run order.
func Histories(runs []Run) []*historypb.History {
	hs := make([]*historypb.History, len(runs))
	for i, r := range runs {
		hs[i] = r.History
	}
	return hs
}

var absPathRe = regexp.MustCompile(`(^|[^A-Za-z0-9_.~-])/(home|root|tmp|work|Users|var/folders|private)/`)

// CheckPortable rejects a history file that is larger than MaxFileBytes or
// that carries what belongs to the machine it was recorded on: an absolute
// path, or any of extra (a host name, the repository's location), in the
// file or inside a payload of h (payloads are base64 in the file).
func CheckPortable(raw []byte, h *historypb.History, extra ...string) error {
	if len(raw) > MaxFileBytes {
		return fmt.Errorf("%d bytes, more than %d: record a smaller sweep", len(raw), MaxFileBytes)
	}
	if err := portable("file", raw, extra); err != nil {
		return err
	}
	codec, err := runner.NewCodec([]byte(Key))
	if err != nil {
		return err
	}
	eachPayload(h.ProtoReflect(), func(p *commonpb.Payload) {
		if err != nil {
			return
		}
		// Encrypted payloads are checked in the clear.
		plain, derr := codec.Decode([]*commonpb.Payload{p})
		if derr != nil {
			err = derr
			return
		}
		err = portable("payload", plain[0].GetData(), extra)
	})
	return err
}

func portable(where string, b []byte, extra []string) error {
	if loc := absPathRe.FindIndex(b); loc != nil {
		return fmt.Errorf("machine-specific absolute path in a %s at byte %d: %q", where, loc[0], excerpt(b, loc[0]))
	}
	for _, s := range extra {
		if s == "" {
			continue
		}
		if i := bytes.Index(b, []byte(s)); i >= 0 {
			return fmt.Errorf("machine-specific %q in a %s at byte %d: %q", s, where, i, excerpt(b, i))
		}
	}
	return nil
}

// eachPayload calls fn with every Payload message reachable from m.
func eachPayload(m protoreflect.Message, fn func(*commonpb.Payload)) {
	if p, ok := m.Interface().(*commonpb.Payload); ok {
		fn(p)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i, l := 0, v.List(); i < l.Len(); i++ {
				eachPayload(l.Get(i).Message(), fn)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				eachPayload(mv.Message(), fn)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			eachPayload(v.Message(), fn)
		}
		return true
	})
}

func excerpt(raw []byte, at int) string {
	from, to := max(0, at-40), min(len(raw), at+60)
	return string(raw[from:to])
}

// Key is the redaction key of recorded histories. Workers encrypt every
// Temporal payload with a key derived from REBOUND_REDACTION_KEY, so the
// histories are recorded, and replayed, with this one: it is public on
// purpose, because histories come from tiny test sweeps that hold nothing
// secret. Histories recorded before payloads were encrypted replay as they
// are (the codec passes plain payloads through).
const Key = "rebound-workflow-histories-public-test-key"

// Replay replays one history against the current sweep workflow, as a
// production worker would (runner.NewWorker: same registered name, same
// tracing interceptor), and returns the non-determinism error, if any.
func Replay(h *historypb.History) error { return ReplayWith(workflows.Sweep, h) }

// ReplayWith is Replay with another function registered as the sweep
// workflow (tests use it to prove what the replay catches).
func ReplayWith(sweep any, h *historypb.History) error { return ReplayKeyed([]byte(Key), sweep, h) }

// ReplayKeyed replays with the payload key of a deployment (a history
// downloaded from a cluster is encrypted with its REBOUND_REDACTION_KEY).
func ReplayKeyed(key []byte, sweep any, h *historypb.History) error {
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{})
	if err != nil {
		return err
	}
	secure, err := runner.SecureClientOptions(client.Options{}, key)
	if err != nil {
		return err
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
		Interceptors:     []interceptor.WorkerInterceptor{tracing},
		DataConverter:    secure.DataConverter,
		FailureConverter: secure.FailureConverter,
	})
	if err != nil {
		return err
	}
	r.RegisterWorkflowWithOptions(sweep, workflow.RegisterOptions{Name: workflows.SweepWorkflowName})
	// The error carries the mismatch; the replayer's own log would repeat
	// it with a stack trace.
	return r.ReplayWorkflowHistory(quietLogger, h)
}

var quietLogger = log.NewStructuredLogger(slog.New(slog.DiscardHandler))

// summary is what a run's history did, per activity type.
type summary struct {
	close                  enumspb.EventType
	scheduled, completed   map[string]int
	maxAttempt             map[string]int32
	failureTypes           map[string][]string
	firstScheduled         map[string]int64 // event id
	lastCompleted          map[string]int64 // event id
	cancelRequested        bool
	activityCancelRequests int
	markers                []string // version markers: change ids
	failureType            string   // the workflow's failure, when it failed
}

func summarize(h *historypb.History) summary {
	s := summary{
		scheduled: map[string]int{}, completed: map[string]int{}, maxAttempt: map[string]int32{},
		failureTypes: map[string][]string{}, firstScheduled: map[string]int64{}, lastCompleted: map[string]int64{},
	}
	typeOf := map[int64]string{} // scheduled event id -> activity type
	for _, e := range h.GetEvents() {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			name := e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			typeOf[e.GetEventId()] = name
			s.scheduled[name]++
			if _, ok := s.firstScheduled[name]; !ok {
				s.firstScheduled[name] = e.GetEventId()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := e.GetActivityTaskStartedEventAttributes()
			name := typeOf[a.GetScheduledEventId()]
			s.maxAttempt[name] = max(s.maxAttempt[name], a.GetAttempt())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			name := typeOf[e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]
			s.completed[name]++
			s.lastCompleted[name] = e.GetEventId()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			a := e.GetActivityTaskFailedEventAttributes()
			name := typeOf[a.GetScheduledEventId()]
			s.failureTypes[name] = append(s.failureTypes[name], a.GetFailure().GetApplicationFailureInfo().GetType())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
			s.activityCancelRequests++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
			s.cancelRequested = true
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			a := e.GetMarkerRecordedEventAttributes()
			if p := a.GetDetails()["change-id"]; p != nil && len(p.GetPayloads()) > 0 {
				s.markers = append(s.markers, changeID(p.GetPayloads()[0]))
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			s.failureType = e.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetApplicationFailureInfo().GetType()
		}
	}
	if events := h.GetEvents(); len(events) > 0 {
		s.close = events[len(events)-1].GetEventType()
	}
	return s
}

// changeID reads a version marker's change id, decrypting the payload
// when the history was recorded with encrypted payloads.
func changeID(p *commonpb.Payload) string {
	if codec, err := runner.NewCodec([]byte(Key)); err == nil {
		if plain, err := codec.Decode([]*commonpb.Payload{p}); err == nil && len(plain) == 1 {
			p = plain[0]
		}
	}
	var id string
	if err := json.Unmarshal(p.GetData(), &id); err != nil {
		return string(p.GetData())
	}
	return id
}

var closeEvents = []enumspb.EventType{
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
}

// checkRun holds for every recorded run: a whole, closed run of the sweep
// workflow (a replay of an open run proves less).
func checkRun(h *historypb.History) error {
	events := h.GetEvents()
	if len(events) == 0 {
		return errors.New("no events")
	}
	start := events[0].GetWorkflowExecutionStartedEventAttributes()
	if start == nil {
		return fmt.Errorf("first event is %s, want WorkflowExecutionStarted", events[0].GetEventType())
	}
	if got := start.GetWorkflowType().GetName(); got != workflows.SweepWorkflowName {
		return fmt.Errorf("workflow type %q, want %q", got, workflows.SweepWorkflowName)
	}
	if last := events[len(events)-1].GetEventType(); !slices.Contains(closeEvents, last) {
		return fmt.Errorf("last event is %s: the run was still open when it was recorded", last)
	}
	return nil
}

func single(runs []*historypb.History, close enumspb.EventType) (summary, error) {
	if len(runs) != 1 {
		return summary{}, fmt.Errorf("%d runs, want 1", len(runs))
	}
	s := summarize(runs[0])
	if s.close != close {
		return s, fmt.Errorf("closed with %s, want %s", s.close, close)
	}
	return s, nil
}

func (s summary) want(activity string, counts map[string]int, n int) error {
	if counts[activity] != n {
		return fmt.Errorf("%s: %d, want %d", activity, counts[activity], n)
	}
	return nil
}

func (s summary) atLeast(activity string, counts map[string]int, n int) error {
	if counts[activity] < n {
		return fmt.Errorf("%s: %d, want at least %d", activity, counts[activity], n)
	}
	return nil
}

// same holds when every scheduled activity of that type completed.
func (s summary) same(activity string) error {
	if s.scheduled[activity] != s.completed[activity] {
		return fmt.Errorf("%s: %d scheduled, %d completed", activity, s.scheduled[activity], s.completed[activity])
	}
	return nil
}

// firstAttempts holds when no activity of that type was retried.
func (s summary) firstAttempts(activity string) error {
	if s.maxAttempt[activity] > 1 {
		return fmt.Errorf("%s: retried (attempt %d)", activity, s.maxAttempt[activity])
	}
	return nil
}

func all(errs ...error) error { return errors.Join(errs...) }

// CaseNames lists the case names of a set, sorted.
func (s Set) CaseNames() []string {
	names := make([]string, 0, len(s.Cases))
	for n := range s.Cases {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
