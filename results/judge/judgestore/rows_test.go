package judgestore

import (
	"testing"

	"rebound/results/judge"
)

// A result converts only to the row of its status: a judged one to
// judgements, one that needs review to the review queue.
func TestRowsFollowStatus(t *testing.T) {
	judged := judge.Result{Status: judge.Judged, Scenario: "s", TraceHash: "h", Model: "m", PromptHash: "p", Attempts: 300}
	j, err := Judgement(judged, "sw", "tr")
	if err != nil || j.SweepID != "sw" || j.TrialID != "tr" || j.TraceHash != "h" || j.Attempts != 255 {
		t.Fatalf("judgement %+v, %v", j, err)
	}
	if _, err := ReviewItem(judged, "sw", "tr"); err == nil {
		t.Fatal("a judged result converted to a review item")
	}
	review := judge.Result{Status: judge.ReviewNeeded, Reason: "invalid output", Document: "{}", PartialOutput: "{", Attempts: 3}
	item, err := ReviewItem(review, "sw", "tr")
	if err != nil || item.RawTrace != "{}" || item.PartialOutput != "{" || item.Attempts != 3 || item.Reason != "invalid output" {
		t.Fatalf("review item %+v, %v", item, err)
	}
	if _, err := Judgement(review, "sw", "tr"); err == nil {
		t.Fatal("a review-needed result converted to a judgement")
	}
}
