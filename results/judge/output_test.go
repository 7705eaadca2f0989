package judge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseOutputAcceptsValid(t *testing.T) {
	for _, scores := range [][]int{
		{5, 5, 5, 5, 5}, // 5.0 pass
		{4, 4, 4, 4, 4}, // 4.0 exactly: pass
		{4, 4, 4, 4, 3}, // 3.8 review
		{3, 3, 3, 3, 3}, // 3.0 exactly: review
		{3, 3, 3, 3, 2}, // 2.8 fail
		{1, 1, 1, 1, 1}, // 1.0 fail
	} {
		raw := outputJSON(scores...)
		out, err := ParseOutput([]byte("\n  " + raw + "\n"))
		if err != nil {
			t.Fatalf("%v: %v\n%s", scores, err, raw)
		}
		for i, d := range Dimensions {
			if out.Dimension(d).Score != scores[i] || out.Dimension(d).Justification == "" {
				t.Fatalf("%v: %s = %+v", scores, d, out.Dimension(d))
			}
		}
		if out.Scores()[ContextPreservation] != scores[4] {
			t.Fatalf("Scores() = %v", out.Scores())
		}
		// The canonical form round-trips.
		again, err := ParseOutput([]byte(canonicalOutput(out)))
		if err != nil || again != out {
			t.Fatalf("canonical round trip: %+v, %v", again, err)
		}
	}
	// Within the 0.01 tolerance: a mean of 3.4 reported as 3.41 or 3.39.
	for _, agg := range []string{"3.41", "3.39", "3.4", "3.400"} {
		raw := strings.Replace(outputJSON(4, 4, 3, 3, 3), `"aggregate_score":3.4`, `"aggregate_score":`+agg, 1)
		if _, err := ParseOutput([]byte(raw)); err != nil {
			t.Errorf("aggregate %s: %v", agg, err)
		}
	}
}

func TestRecommendationFor(t *testing.T) {
	for sum, want := range map[int]string{25: Pass, 20: Pass, 19: Review, 15: Review, 14: Fail, 5: Fail} {
		if got := RecommendationFor(sum); got != want {
			t.Errorf("sum %d: %s, want %s", sum, got, want)
		}
	}
}

func TestParseOutputRejects(t *testing.T) {
	valid := outputJSON(4, 4, 3, 3, 3) // mean 3.4, review
	mutate := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(valid), &m); err != nil {
			panic(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	dim := func(m map[string]any, d Dimension) map[string]any { return m[string(d)].(map[string]any) }
	cases := map[string]struct {
		raw  string
		want string
	}{
		"empty":              {"", "empty answer"},
		"prose":              {"The agent did fine.", "not valid JSON"},
		"code fence":         {"```json\n" + valid + "\n```", "not valid JSON"},
		"trailing text":      {valid + " Hope this helps!", "text after the JSON object"},
		"two objects":        {valid + valid, "text after the JSON object"},
		"array":              {"[" + valid + "]", "not a JSON object"},
		"null":               {"null", "not a JSON object"},
		"duplicate key":      {strings.Replace(valid, `{"aggregate_score"`, `{"recommendation":"pass","aggregate_score"`, 1), `duplicate key "recommendation"`},
		"missing field":      {mutate(func(m map[string]any) { delete(m, "failure_mode_summary") }), "missing field failure_mode_summary"},
		"missing dimension":  {mutate(func(m map[string]any) { delete(m, "backoff_behavior") }), "missing field backoff_behavior"},
		"extra field":        {mutate(func(m map[string]any) { m["confidence"] = 0.9 }), `unexpected field "confidence"`},
		"extra in dimension": {mutate(func(m map[string]any) { dim(m, RetryDecision)["evidence"] = []int{1} }), `retry_decision: unexpected field "evidence"`},
		"score 0":            {mutate(func(m map[string]any) { dim(m, ErrorDetection)["score"] = 0 }), "score 0 is outside 1..5"},
		"score 6":            {mutate(func(m map[string]any) { dim(m, ErrorDetection)["score"] = 6 }), "score 6 is outside 1..5"},
		"fractional score":   {mutate(func(m map[string]any) { dim(m, ErrorDetection)["score"] = 4.5 }), "score must be an integer from 1 to 5, got 4.5"},
		"score 4.0":          {strings.Replace(valid, `"error_detection":{"justification":"error_detection scored 4: see calls 1-3.","score":4}`, `"error_detection":{"justification":"j","score":4.0}`, 1), "got 4.0"},
		"string score":       {mutate(func(m map[string]any) { dim(m, ErrorDetection)["score"] = "4" }), `got "4"`},
		"null score":         {mutate(func(m map[string]any) { dim(m, ErrorDetection)["score"] = nil }), "got null"},
		"missing score":      {mutate(func(m map[string]any) { delete(dim(m, ContextPreservation), "score") }), "context_preservation: missing score"},
		"empty justif":       {mutate(func(m map[string]any) { dim(m, BackoffBehavior)["justification"] = "  " }), "backoff_behavior: justification: must not be empty"},
		"dimension a number": {mutate(func(m map[string]any) { m[string(EscalationCorrectness)] = 4 }), "escalation_correctness: must be an object"},
		"aggregate off":      {mutate(func(m map[string]any) { m["aggregate_score"] = 3.42 }), "aggregate_score 3.42 is not the mean"},
		"aggregate string":   {mutate(func(m map[string]any) { m["aggregate_score"] = "3.4" }), "aggregate_score: must be a number"},
		"aggregate rounded":  {mutate(func(m map[string]any) { m["aggregate_score"] = 3 }), "aggregate_score 3 is not the mean"},
		"recommendation":     {mutate(func(m map[string]any) { m["recommendation"] = "pass" }), `recommendation "pass" contradicts the thresholds`},
		"unknown rec":        {mutate(func(m map[string]any) { m["recommendation"] = "PASS" }), `recommendation must be "pass", "review" or "fail"`},
		"empty summary":      {mutate(func(m map[string]any) { m["failure_mode_summary"] = "" }), "failure_mode_summary: must not be empty"},
	}
	for name, c := range cases {
		_, err := ParseOutput([]byte(c.raw))
		var inv *InvalidOutputError
		if !errors.As(err, &inv) {
			t.Errorf("%s: accepted (err %v)\n%s", name, err, c.raw)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not say %q", name, err, c.want)
		}
	}
	// Every problem is reported at once.
	raw := mutate(func(m map[string]any) {
		dim(m, ErrorDetection)["score"] = 9
		delete(m, "recommendation")
		m["extra"] = true
	})
	_, err := ParseOutput([]byte(raw))
	var inv *InvalidOutputError
	if !errors.As(err, &inv) || len(inv.Problems) != 3 {
		t.Fatalf("problems: %v", err)
	}
}

// TestOutputSchemaIsStrict: the schema sent to the provider requires every
// property and forbids others, at both levels, in the output's field order.
func TestOutputSchemaIsStrict(t *testing.T) {
	var s struct {
		Type                 string                     `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(OutputSchema, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || len(s.Properties) != len(topFields) || strings.Join(s.Required, ",") != strings.Join(topFields, ",") ||
		s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Fatalf("schema %s", OutputSchema)
	}
	for _, d := range Dimensions {
		var ds struct {
			Required             []string `json:"required"`
			AdditionalProperties *bool    `json:"additionalProperties"`
			Properties           struct {
				Score struct {
					Type string `json:"type"`
					Enum []int  `json:"enum"`
				} `json:"score"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(s.Properties[string(d)], &ds); err != nil {
			t.Fatal(err)
		}
		if strings.Join(ds.Required, ",") != "score,justification" || ds.AdditionalProperties == nil || *ds.AdditionalProperties ||
			ds.Properties.Score.Type != "integer" || len(ds.Properties.Score.Enum) != 5 {
			t.Fatalf("%s schema %s", d, s.Properties[string(d)])
		}
	}
}
