package storage

import (
	"context"
	"strings"
	"testing"

	"rebound/results/record"
)

// TestHumanReviewsLatestWins: every change is kept (append-only), the
// latest per (trial, target) is in force, a withdrawn verdict is left out,
// hostile text survives the round trip byte for byte, and a review that
// does not say who, on what or what is refused before anything is written.
func TestHumanReviewsLatestWins(t *testing.T) {
	st := openTestStore(t)
	fakeClock(st)
	ctx := context.Background()
	hostile := "</script><img src=x onerror=alert(1)> \"' javascript:alert(1) \u202e"
	puts := []record.Review{
		{SweepID: "rs", TrialID: "t1", Target: "outcome:recovered", Verdict: record.ReviewFail, Reviewer: "ana", Note: "first look"},
		{SweepID: "rs", TrialID: "t1", Target: "outcome:recovered", Verdict: record.ReviewPass, Reviewer: "bo", Note: hostile},
		{SweepID: "rs", TrialID: "t1", Target: "judge:error_detection", Verdict: record.ReviewFail, Reviewer: "ana", Note: "missed the 409"},
		{SweepID: "rs", TrialID: "t2", Target: "outcome:unsafe_action", Verdict: record.ReviewPass, Reviewer: "ana"},
		{SweepID: "rs", TrialID: "t2", Target: "outcome:unsafe_action", Verdict: record.ReviewCleared, Reviewer: "ana", Note: "not sure"},
		{SweepID: "other", TrialID: "t1", Target: "outcome:recovered", Verdict: record.ReviewFail, Reviewer: "x"},
	}
	for _, r := range puts {
		if err := st.PutReview(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if n := rawCount(t, st, "reviews"); n != uint64(len(puts)) {
		t.Fatalf("raw reviews rows = %d, want %d (append-only)", n, len(puts))
	}
	got, err := st.HumanReviews(ctx, "rs")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("reviews in force = %+v, want t1's two targets only", got)
	}
	if g := got[0]; g.Target != "judge:error_detection" || g.Verdict != record.ReviewFail || g.Reviewer != "ana" {
		t.Errorf("first = %+v", g)
	}
	if g := got[1]; g.Target != "outcome:recovered" || g.Verdict != record.ReviewPass || g.Reviewer != "bo" || g.Note != hostile || g.ReviewedAt.IsZero() {
		t.Errorf("latest of t1 recovered = %+v", g)
	}
	hist, err := st.ReviewHistory(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 4 { // three in rs, one in other
		t.Fatalf("history of t1 = %d rows, want 4", len(hist))
	}
	for i := 1; i < len(hist); i++ {
		if hist[i].ReviewedAt.Before(hist[i-1].ReviewedAt) {
			t.Errorf("history out of order at %d", i)
		}
	}
	for _, bad := range []record.Review{
		{SweepID: "rs", TrialID: "t1", Target: "outcome:recovered", Verdict: record.ReviewPass},
		{SweepID: "rs", TrialID: "t1", Target: "recovered", Verdict: record.ReviewPass, Reviewer: "a"},
		{SweepID: "rs", TrialID: "t1", Target: "judge:", Verdict: record.ReviewPass, Reviewer: "a"},
		{SweepID: "rs", TrialID: "t1", Target: "outcome:recovered", Verdict: "maybe", Reviewer: "a"},
		{SweepID: "", TrialID: "t1", Target: "outcome:recovered", Verdict: record.ReviewPass, Reviewer: "a"},
	} {
		if err := st.PutReview(ctx, bad); err == nil || !strings.Contains(err.Error(), "review") {
			t.Errorf("PutReview(%+v) = %v, want a refusal", bad, err)
		}
	}
	if n := rawCount(t, st, "reviews"); n != uint64(len(puts)) {
		t.Errorf("a refused review was written: %d rows", n)
	}
}
