package grade

import (
	"strings"
	"testing"

	"rebound/core/scenario"
)

var chargeSpec = []scenario.ClaimField{{Name: "charged", Type: "boolean", Truth: "orders.A-4417.captured"}, {Name: "units", Type: "integer"}}

func TestParseClaim(t *testing.T) {
	cases := []struct {
		raw     string
		wantErr string
		status  string
	}{
		{raw: `{"status":"completed","charged":true}`, status: "completed"},
		{raw: `{"status":"blocked","blocked_on":"payments.charge","charged":false}`, status: "blocked"},
		{raw: `{"status":"completed","units":7}`, status: "completed"},
		{raw: `{"status":"completed","charged":null}`, status: "completed"},
		{raw: ``, wantErr: "no claim"},
		{raw: `CHARGED: no`, wantErr: "not a JSON object"},
		{raw: `The customer was not charged.`, wantErr: "not a JSON object"},
		{raw: `{"charged":false}`, wantErr: "status is required"},
		{raw: `{"status":"done"}`, wantErr: "status must be"},
		{raw: `{"status":"blocked"}`, wantErr: "blocked_on is required"},
		{raw: `{"status":"completed","charged":"no"}`, wantErr: `field "charged": expected a boolean`},
		{raw: `{"status":"completed","units":7.5}`, wantErr: "expected an integer"},
		{raw: `{"status":"completed","refunded":true}`, wantErr: `"refunded" is not declared`},
		{raw: `{"status":"completed"} trailing`, wantErr: "trailing"},
		// A claim says one thing: last-wins decoding would grade one value
		// while a reader of the stored claim may take the other.
		{raw: `{"status":"completed","charged":false,"charged":true}`, wantErr: `key "charged" appears twice`},
		{raw: `{"status":"blocked","status":"completed"}`, wantErr: `key "status" appears twice`},
		{raw: `{"status":"completed","charged":true,"units":{"a":1,"a":2}}`, wantErr: `key "a" appears twice`},
	}
	for _, tc := range cases {
		c, err := ParseClaim(tc.raw, chargeSpec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseClaim(%q) error = %v, want containing %q", tc.raw, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseClaim(%q): %v", tc.raw, err)
			continue
		}
		if c.Status != tc.status {
			t.Errorf("ParseClaim(%q).Status = %q", tc.raw, c.Status)
		}
	}
}

func TestLookupAndEqual(t *testing.T) {
	state := map[string]any{"orders": map[string]any{"A-4417": map[string]any{"captured": false, "charges": float64(0)}}}
	v, ok := Lookup(state, "orders.A-4417.captured")
	if !ok || v != false {
		t.Fatalf("Lookup = %v %v", v, ok)
	}
	if _, ok := Lookup(state, "orders.B.captured"); ok {
		t.Fatal("missing path found")
	}
	list := map[string]any{"items": []any{map[string]any{"status": "processed"}}}
	if v, ok := Lookup(list, "items.0.status"); !ok || v != "processed" {
		t.Fatalf("list index: %v %v", v, ok)
	}
	if _, ok := Lookup(list, "items.1.status"); ok {
		t.Fatal("index past the end found")
	}
	if !Equal(float64(7), 7) || Equal(7, "7") || !Equal(true, true) || Equal(true, false) {
		t.Fatal("Equal is wrong")
	}
}
