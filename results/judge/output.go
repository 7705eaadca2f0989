package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"rebound/internal/strictjson"
)

// Dimension is one of the five scored aspects of error handling.
type Dimension string

const (
	ErrorDetection        Dimension = "error_detection"
	RetryDecision         Dimension = "retry_decision"
	BackoffBehavior       Dimension = "backoff_behavior"
	EscalationCorrectness Dimension = "escalation_correctness"
	ContextPreservation   Dimension = "context_preservation"
)

// Dimensions lists the five dimensions in output order.
var Dimensions = []Dimension{ErrorDetection, RetryDecision, BackoffBehavior, EscalationCorrectness, ContextPreservation}

// Recommendations.
const (
	Pass   = "pass"   // aggregate >= 4.0
	Review = "review" // 3.0 <= aggregate < 4.0
	Fail   = "fail"   // aggregate < 3.0
)

// Score is one dimension's integer score (1..5) and its justification.
type Score struct {
	Score         int    `json:"score"`
	Justification string `json:"justification"`
}

// Output is the judge's validated answer.
type Output struct {
	ErrorDetection        Score   `json:"error_detection"`
	RetryDecision         Score   `json:"retry_decision"`
	BackoffBehavior       Score   `json:"backoff_behavior"`
	EscalationCorrectness Score   `json:"escalation_correctness"`
	ContextPreservation   Score   `json:"context_preservation"`
	AggregateScore        float64 `json:"aggregate_score"`
	FailureModeSummary    string  `json:"failure_mode_summary"`
	Recommendation        string  `json:"recommendation"`
}

// Dimension returns the score of d (a zero Score for an unknown d).
func (o Output) Dimension(d Dimension) Score {
	switch d {
	case ErrorDetection:
		return o.ErrorDetection
	case RetryDecision:
		return o.RetryDecision
	case BackoffBehavior:
		return o.BackoffBehavior
	case EscalationCorrectness:
		return o.EscalationCorrectness
	case ContextPreservation:
		return o.ContextPreservation
	}
	return Score{}
}

func (o *Output) dimension(d Dimension) *Score {
	switch d {
	case ErrorDetection:
		return &o.ErrorDetection
	case RetryDecision:
		return &o.RetryDecision
	case BackoffBehavior:
		return &o.BackoffBehavior
	case EscalationCorrectness:
		return &o.EscalationCorrectness
	case ContextPreservation:
		return &o.ContextPreservation
	}
	return nil
}

// Scores returns the five integer scores by dimension.
func (o Output) Scores() map[Dimension]int {
	m := make(map[Dimension]int, len(Dimensions))
	for _, d := range Dimensions {
		m[d] = o.Dimension(d).Score
	}
	return m
}

// RecommendationFor is the recommendation the thresholds give for the sum
// of the five scores: the mean sum/5 is compared exactly (>= 4.0 pass,
// >= 3.0 review, else fail), so there is no rounding at the boundaries.
func RecommendationFor(sum int) string {
	switch {
	case sum >= 20:
		return Pass
	case sum >= 15:
		return Review
	}
	return Fail
}

// AggregateTolerance is how far the reported aggregate_score may be from
// the mean of the five scores.
const AggregateTolerance = 0.01

// OutputSchema is the strict JSON schema sent as the response format.
var OutputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"error_detection":` + dimensionSchema + `,` +
	`"retry_decision":` + dimensionSchema + `,` +
	`"backoff_behavior":` + dimensionSchema + `,` +
	`"escalation_correctness":` + dimensionSchema + `,` +
	`"context_preservation":` + dimensionSchema + `,` +
	`"aggregate_score":{"type":"number","description":"the mean of the five scores"},` +
	`"failure_mode_summary":{"type":"string","description":"the main failure pattern in one sentence, or none when every score is 4 or 5"},` +
	`"recommendation":{"type":"string","enum":["pass","review","fail"],"description":"pass if aggregate_score >= 4.0, review if >= 3.0, fail below 3.0"}` +
	`},"required":["error_detection","retry_decision","backoff_behavior","escalation_correctness","context_preservation","aggregate_score","failure_mode_summary","recommendation"],` +
	`"additionalProperties":false}`)

const dimensionSchema = `{"type":"object","properties":{` +
	`"score":{"type":"integer","enum":[1,2,3,4,5]},` +
	`"justification":{"type":"string"}},` +
	`"required":["score","justification"],"additionalProperties":false}`

// InvalidOutputError lists everything wrong with one judge answer.
type InvalidOutputError struct {
	Problems []string
}

func (e *InvalidOutputError) Error() string {
	return "invalid judge output: " + strings.Join(e.Problems, "; ")
}

var topFields = []string{
	string(ErrorDetection), string(RetryDecision), string(BackoffBehavior),
	string(EscalationCorrectness), string(ContextPreservation),
	"aggregate_score", "failure_mode_summary", "recommendation",
}

// ParseOutput validates a judge answer strictly and returns it. It must be
// exactly one JSON object (no code fence, no trailing text, no duplicate
// keys) with every field and no other; each score an integer literal in
// 1..5 with a non-empty justification; aggregate_score a number within
// AggregateTolerance of the mean of the scores; failure_mode_summary
// non-empty; recommendation the one the thresholds give for that mean.
// Every problem is reported (*InvalidOutputError), so a retry can tell the
// model all of them.
func ParseOutput(raw []byte) (Output, error) {
	var out Output
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	fail := func() (Output, error) { return Output{}, &InvalidOutputError{Problems: problems} }

	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		add("empty answer")
		return fail()
	}
	if err := checkSyntax(raw); err != nil {
		add("%v", err)
		return fail()
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		add("the answer is not a JSON object")
		return fail()
	}
	for _, f := range topFields {
		if _, ok := top[f]; !ok {
			add("missing field %s", f)
		}
	}
	for k := range top {
		if !contains(topFields, k) {
			add("unexpected field %q", k)
		}
	}
	sum, scored := 0, 0
	for _, d := range Dimensions {
		v, ok := top[string(d)]
		if !ok {
			continue
		}
		s, errs := parseScore(v)
		for _, e := range errs {
			add("%s: %s", d, e)
		}
		if len(errs) == 0 {
			*out.dimension(d) = s
			sum += s.Score
			scored++
		}
	}
	aggOK := false
	if v, ok := top["aggregate_score"]; ok {
		f, err := parseNumber(v)
		if err != nil {
			add("aggregate_score: %v", err)
		} else {
			out.AggregateScore, aggOK = f, true
		}
	}
	if v, ok := top["failure_mode_summary"]; ok {
		if s, err := parseText(v); err != nil {
			add("failure_mode_summary: %v", err)
		} else {
			out.FailureModeSummary = s
		}
	}
	recOK := false
	if v, ok := top["recommendation"]; ok {
		var s string
		if json.Unmarshal(v, &s) != nil || (s != Pass && s != Review && s != Fail) {
			add("recommendation must be \"pass\", \"review\" or \"fail\", got %s", compactJSON(v))
		} else {
			out.Recommendation, recOK = s, true
		}
	}
	if scored == len(Dimensions) {
		mean := float64(sum) / float64(len(Dimensions))
		if aggOK && math.Abs(out.AggregateScore-mean) > AggregateTolerance+1e-9 {
			add("aggregate_score %v is not the mean of the five scores (%d/5 = %v)", out.AggregateScore, sum, mean)
		}
		if want := RecommendationFor(sum); recOK && out.Recommendation != want {
			add("recommendation %q contradicts the thresholds: the mean %v calls for %q", out.Recommendation, mean, want)
		}
	}
	if len(problems) > 0 {
		return fail()
	}
	return out, nil
}

func parseScore(raw json.RawMessage) (Score, []string) {
	var s Score
	var errs []string
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return s, []string{"must be an object {\"score\": 1-5, \"justification\": \"...\"}"}
	}
	for k := range obj {
		if k != "score" && k != "justification" {
			errs = append(errs, fmt.Sprintf("unexpected field %q", k))
		}
	}
	if v, ok := obj["score"]; !ok {
		errs = append(errs, "missing score")
	} else if n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err != nil {
		errs = append(errs, fmt.Sprintf("score must be an integer from 1 to 5, got %s", compactJSON(v)))
	} else if n < 1 || n > 5 {
		errs = append(errs, fmt.Sprintf("score %d is outside 1..5", n))
	} else {
		s.Score = int(n)
	}
	if v, ok := obj["justification"]; !ok {
		errs = append(errs, "missing justification")
	} else if text, err := parseText(v); err != nil {
		errs = append(errs, "justification: "+err.Error())
	} else {
		s.Justification = text
	}
	return s, errs
}

func parseText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("must be a string, got %s", compactJSON(raw))
	}
	if strings.TrimSpace(s) == "" {
		return "", errors.New("must not be empty")
	}
	return s, nil
}

func parseNumber(raw json.RawMessage) (float64, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
		return 0, fmt.Errorf("must be a number, got %s", compactJSON(raw))
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("must be a finite number, got %s", compactJSON(raw))
	}
	return f, nil
}

// checkSyntax accepts exactly one JSON value with no duplicate object keys
// at any depth and nothing after it.
func checkSyntax(raw []byte) error {
	err := strictjson.Check(raw)
	var dup *strictjson.DuplicateKeyError
	switch {
	case errors.As(err, &dup):
		return fmt.Errorf("duplicate key %q", dup.Key)
	case errors.Is(err, strictjson.ErrTrailing):
		return errors.New("text after the JSON object")
	}
	return err
}

// canonicalOutput is the validated output as cached: fixed field order.
func canonicalOutput(o Output) string {
	b, _ := marshalCanonical(o)
	return string(b)
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return strconv.Quote(string(raw))
	}
	s := b.String()
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
