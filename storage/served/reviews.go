package served

// The review endpoint: the one write a served store takes. While a worker
// or `rebound run` holds the data dir, `rebound ui` reads through the
// served store like any read command, and stores a reviewer's verdict by
// posting it here: POST /rebound/reviews, one review as JSON, with the data
// dir's credential. The holding process validates it (a known target and
// verdict, a reviewer, bounded note and name, a trial of that sweep) and
// appends it to the reviews table through its store's PutReview; nothing
// else can be written this way, and the SQL door stays read-only.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"rebound/results/record"
	"rebound/storage"
)

// ReviewPath is where a served store takes human verdicts.
const ReviewPath = "/rebound/reviews"

// Reviews is what the review endpoint reads and writes: the trial a review
// is about (to check it is of the review's sweep) and the append to the
// reviews table. storage.Store implements it.
type Reviews interface {
	Trial(ctx context.Context, trialID string) (record.Trial, []record.ToolCall, error)
	PutReview(ctx context.Context, r record.Review) error
}

// ReviewRequest is the body of POST /rebound/reviews: one change to a
// trial's human verdict (record.Review without its time, which the store
// sets).
type ReviewRequest struct {
	SweepID  string `json:"sweep_id"`
	TrialID  string `json:"trial_id"`
	Target   string `json:"target"`
	Verdict  string `json:"verdict"`
	Reviewer string `json:"reviewer"`
	Note     string `json:"note"`
}

// maxReviewBody bounds the body: a note and a name at their limits, JSON
// escaped, with room to spare.
const maxReviewBody = 64 << 10

// withReviews answers ReviewPath with the review endpoint and every other
// path with the served store's handler.
func withReviews(h *handler, store Reviews) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ReviewPath {
			h.ServeHTTP(w, r)
			return
		}
		status, err := h.putReview(r, store)
		if err != nil {
			if h.log != nil {
				h.log.Warn("served store: review refused", "status", status, "err", err)
			}
			w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, err.Error()+"\n")
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"stored":true}`+"\n")
	})
}

// putReview checks and stores one review; the status says why not.
func (h *handler) putReview(r *http.Request, store Reviews) (int, error) {
	if r.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, fmt.Errorf("%s takes POST", ReviewPath)
	}
	if !h.authenticated(r, r.URL.Query()) {
		return http.StatusUnauthorized, errors.New(User + ": authentication failed (the served store's user is " + User + ", its password the data dir's credential)")
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q: a review is application/json", ct)
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxReviewBody+1))
	dec.DisallowUnknownFields()
	var req ReviewRequest
	if err := dec.Decode(&req); err != nil {
		return http.StatusBadRequest, fmt.Errorf("review: %v (one JSON object with sweep_id, trial_id, target, verdict, reviewer, note)", err)
	}
	if dec.More() {
		return http.StatusBadRequest, errors.New("review: one JSON object, nothing after it")
	}
	rv := record.Review{SweepID: req.SweepID, TrialID: req.TrialID, Target: req.Target, Verdict: req.Verdict,
		Reviewer: strings.TrimSpace(req.Reviewer), Note: req.Note}
	if !storage.KnownReviewTarget(rv.Target) {
		return http.StatusBadRequest, fmt.Errorf("review of trial %s: unknown target %q", rv.TrialID, rv.Target)
	}
	if err := rv.Validate(); err != nil {
		return http.StatusBadRequest, err
	}
	t, _, err := store.Trial(r.Context(), rv.TrialID)
	switch {
	case errors.Is(err, record.ErrNotFound):
		return http.StatusNotFound, fmt.Errorf("review: no trial %q", rv.TrialID)
	case err != nil:
		return http.StatusInternalServerError, fmt.Errorf("review: reading trial %s: %w", rv.TrialID, err)
	case t.SweepID != rv.SweepID:
		return http.StatusBadRequest, fmt.Errorf("review: trial %s is of sweep %s, not %s", rv.TrialID, t.SweepID, rv.SweepID)
	}
	if err := store.PutReview(r.Context(), rv); err != nil {
		return http.StatusInternalServerError, fmt.Errorf("review: %w", err)
	}
	return http.StatusCreated, nil
}

// ReviewWriter stores human verdicts through the process that serves a
// data dir's store (its review endpoint): what `rebound ui` writes with
// while a worker or `rebound run` holds the data dir.
type ReviewWriter struct {
	url, secret string
	client      *http.Client
}

// NewReviewWriter writes to the review endpoint of e with the data dir's
// credential.
func NewReviewWriter(e Endpoint, secret string) *ReviewWriter {
	return &ReviewWriter{url: "http://" + e.Address + ReviewPath, secret: secret, client: &http.Client{Timeout: time.Minute}}
}

// PutReview posts one review; an answer other than 201 is an error
// carrying the endpoint's reason.
func (w *ReviewWriter) PutReview(ctx context.Context, r record.Review) error {
	body, err := json.Marshal(ReviewRequest{SweepID: r.SweepID, TrialID: r.TrialID, Target: r.Target, Verdict: r.Verdict, Reviewer: r.Reviewer, Note: r.Note})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(User, w.secret)
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("storing the review through the process that holds the data dir: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("storing the review through the process that holds the data dir: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
