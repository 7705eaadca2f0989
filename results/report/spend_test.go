package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"rebound/results/record"
)

func TestSpendLine(t *testing.T) {
	for _, c := range []struct {
		sp   record.Spend
		want string
	}{
		{record.Spend{}, "spend: $0 (no model requests)"},
		{record.Spend{ExactUSD: 0.5, ExactTokens: 1200}, "spend: $0.50 exact (1,200 tokens)"},
		{record.Spend{ExactUSD: 1.234, ExactTokens: 36000, RequestsSent: 240},
			"spend: $1.23 exact (36,000 tokens); none of 240 model requests lost in flight"},
		{record.Spend{ExactUSD: 1.234, EstimatedUSD: 0.0412, ExactTokens: 36000, EstimatedTokens: 9600, RequestsSent: 243, RequestsLost: 3},
			"spend: $1.23 exact + ≤ $0.04 estimated (36,000 tokens + ≤ 9,600; 3 of 243 model requests lost in flight, each counted at its prompt's size and max_tokens)"},
		{record.Spend{ExactUSD: 2, EstimatedUSD: 0.004, EstimatedTokens: 4200, RequestsSent: 10, RequestsLost: 1, RequestsLostWithoutMaxTokens: 1},
			"spend: $2.00 exact + ≤ $0.0040 estimated (0 tokens + ≤ 4,200; 1 of 10 model requests lost in flight, each counted at its prompt's size and max_tokens; 1 without max_tokens, counted at 4,096 completion tokens)"},
	} {
		if got := SpendLine(c.sp); got != c.want {
			t.Errorf("SpendLine(%+v) =\n%s\nwant\n%s", c.sp, got, c.want)
		}
	}
}

type spendSource record.Spend

func (s spendSource) Spend(context.Context, string) (record.Spend, error) {
	return record.Spend(s), nil
}

// The report carries the spend in every output once read, in snake_case
// JSON, and says nothing of it when it was not read.
func TestSummarySpend(t *testing.T) {
	sum := Summary{SweepID: "s", Name: "n", Status: "completed"}
	var b bytes.Buffer
	if err := sum.WriteJSON(&b); err != nil || strings.Contains(b.String(), "spend") {
		t.Fatalf("unread spend in JSON: %v\n%s", err, b.String())
	}
	if err := sum.AddSpend(context.Background(), spendSource{ExactUSD: 1, EstimatedUSD: 0.25, ExactTokens: 10, EstimatedTokens: 5, RequestsSent: 4, RequestsLost: 1}); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := sum.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Spend map[string]float64 `json:"spend"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"exact_usd": 1, "estimated_usd": 0.25, "exact_tokens": 10, "estimated_tokens": 5,
		"requests_sent": 4, "requests_lost": 1, "requests_lost_without_max_tokens": 0}
	if len(got.Spend) != len(want) {
		t.Fatalf("spend = %v, want %v", got.Spend, want)
	}
	for k, v := range want {
		if g, ok := got.Spend[k]; !ok || g != v {
			t.Fatalf("spend = %v, want %v", got.Spend, want)
		}
	}
	b.Reset()
	if err := sum.WriteText(&b); err != nil || !strings.Contains(b.String(), "spend: $1.00 exact + ≤ $0.25 estimated") {
		t.Fatalf("text: %v\n%s", err, b.String())
	}
}

type spendBySweep map[string]record.Spend

func (s spendBySweep) Spend(_ context.Context, id string) (record.Spend, error) { return s[id], nil }

// A comparison carries the spend of its sweeps: one line for one sweep,
// one per sweep (named) across two, in text, Markdown and JSON.
func TestComparisonSpend(t *testing.T) {
	src := spendBySweep{
		"cand": {ExactUSD: 2, EstimatedUSD: 0.5, RequestsSent: 10, RequestsLost: 1},
		"base": {ExactUSD: 1, RequestsSent: 5},
	}
	c := Comparison{Candidate: Side{SweepID: "cand", Arm: "b"}, Baseline: Side{SweepID: "cand", Arm: "a"}}
	if err := c.AddSpend(context.Background(), src); err != nil || len(c.Spend) != 1 {
		t.Fatalf("one sweep: %+v, %v", c.Spend, err)
	}
	c.Baseline.SweepID = "base"
	if err := c.AddSpend(context.Background(), src); err != nil || len(c.Spend) != 2 {
		t.Fatalf("two sweeps: %+v, %v", c.Spend, err)
	}
	var text, md, js bytes.Buffer
	if err := c.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		flat := strings.Join(strings.Fields(out), " ")
		if !strings.Contains(flat, "sweep cand spend: $2.00 exact + ≤ $0.50 estimated") || !strings.Contains(flat, "sweep base spend: $1.00 exact") {
			t.Errorf("%s does not give each sweep's spend:\n%s", name, out)
		}
	}
	var got struct {
		Spend []map[string]any `json:"spend"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || len(got.Spend) != 2 || got.Spend[0]["sweep_id"] != "cand" ||
		got.Spend[0]["estimated_usd"] != 0.5 || got.Spend[1]["exact_usd"] != 1.0 {
		t.Errorf("JSON spend: %+v, %v\n%s", got.Spend, err, js.String())
	}
}
