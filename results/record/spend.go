package record

import "time"

// ModelRequest is one model request of a trial, journaled before it was
// sent: with the answer stored for its (trial, step, generation), the
// request is paid for exactly; without, it is counted at its bound.
type ModelRequest struct {
	SweepID    string
	TrialID    string
	Step       uint32
	Generation uint32
	// SendID tells sends of the same request apart (a request reissued
	// after its first answer was lost); empty: storage draws one.
	SendID      string
	Kind        string // "turn" or "claim"
	RequestHash string // that of the answer stored for it, if any
	// PromptTokensBound and CompletionTokensBound bound what the provider
	// may bill for the send; MaxTokens is the limit it carried (0: none).
	PromptTokensBound     uint64
	MaxTokens             uint64
	CompletionTokensBound uint64
	// The arm's prices, per million tokens.
	InputUSDPerMTok  float64
	OutputUSDPerMTok float64
	ActivityAttempt  uint32
	SentAt           time.Time // set by PutModelRequest
}

// Spend is what a sweep's model requests cost. Exact is what its stored
// trials recorded (every answer they used, replayed ones once, superseded
// ones too; an external agent's reported cost) plus the answers stored for
// trials that are not stored. Estimated is an upper bound of the requests
// sent whose answers never reached the store (a worker killed with them in
// flight, an answer the store refused): each at its prompt's bound plus
// max_tokens, at the arm's prices. The provider's bill lies between Exact
// and Exact + Estimated.
type Spend struct {
	ExactTokens     uint64
	ExactUSD        float64
	EstimatedTokens uint64
	EstimatedUSD    float64
	// RequestsSent counts the journaled sends; RequestsLost those never
	// answered in the store; RequestsLostWithoutMaxTokens those of the lost
	// that carried no max_tokens (their completion is estimated at the LLM
	// agent's default allowance, not bounded by the provider).
	RequestsSent                 uint64
	RequestsLost                 uint64
	RequestsLostWithoutMaxTokens uint64
}

// TotalUSD is Exact + Estimated: the most the sweep can have cost.
func (s Spend) TotalUSD() float64 { return s.ExactUSD + s.EstimatedUSD }
