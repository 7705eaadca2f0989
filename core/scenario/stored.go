package scenario

import (
	"encoding/json"

	"rebound/internal/redact"
)

// PlanSealPurpose derives the key that seals a stored plan: people read the
// plan redacted, workers and offline tools open the sealed original.
const PlanSealPurpose = "plan"

// OpenStoredPlan decodes a sweep's stored plan_json, opening its sealed
// original with the redaction key (a plan stored before sealing is read as
// it is).
func OpenStoredPlan(stored string, redactionKey []byte) (*Resolved, error) {
	var sealer *redact.Sealer
	if redact.CheckKey(redactionKey) == nil {
		s, err := redact.NewSealer(redactionKey, PlanSealPurpose)
		if err != nil {
			return nil, err
		}
		sealer = s
	}
	doc, err := redact.OpenDocument(sealer, stored)
	if err != nil {
		return nil, err
	}
	p := &Resolved{}
	if err := json.Unmarshal([]byte(doc), p); err != nil {
		return nil, err
	}
	return p, nil
}
