package world

import (
	"testing"

	"rebound/core/harness"
)

type commits []string

func (c *commits) Commit(kind, intent, object string) { *c = append(*c, intent) }

func newTestPayments(t *testing.T) *Payments {
	t.Helper()
	w, err := New("payments", map[string]any{
		"orders":    map[string]any{"A-1": map[string]any{"amount_cents": 15000}},
		"invoices":  map[string]any{"inv-9": map[string]any{"amount_cents": 4200, "customer": "cus-1"}},
		"customers": map[string]any{"cus-1": map[string]any{"email": "ana@example.com"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return w.(*Payments)
}

// A second refund with the same idempotency key commits nothing and answers
// the first result; without a key every refund commits.
func TestRefundIdempotency(t *testing.T) {
	p := newTestPayments(t)
	var fx commits
	first, err := p.Invoke("payments.refund", map[string]any{"invoice_id": "inv-9", "idempotency_key": "k1"}, &fx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Invoke("payments.refund", map[string]any{"invoice_id": "inv-9", "idempotency_key": "k1"}, &fx)
	if err != nil || again["refund_id"] != first["refund_id"] || len(fx) != 1 || p.Invoices["inv-9"].Refunds != 1 {
		t.Fatalf("same key: %v %v, commits %v, refunds %d", again, err, fx, p.Invoices["inv-9"].Refunds)
	}
	if _, err := p.Invoke("payments.refund", map[string]any{"invoice_id": "inv-9"}, &fx); err != nil || len(fx) != 2 || p.Invoices["inv-9"].Refunds != 2 {
		t.Fatalf("keyless refund: %v, commits %v", err, fx)
	}
	st, _ := p.Invoke("payments.refund_status", map[string]any{"idempotency_key": "k1"}, &fx)
	none, _ := p.Invoke("payments.refund_status", map[string]any{"idempotency_key": "k2"}, &fx)
	if st["status"] != "completed" || none["status"] != "not_found" {
		t.Fatalf("status: %v %v", st, none)
	}
}

func TestChargeIdempotencyAndValidation(t *testing.T) {
	p := newTestPayments(t)
	var fx commits
	if _, err := p.Invoke("payments.charge", map[string]any{"order_id": "A-1", "amount_cents": 100}, &fx); err == nil || err.Code != harness.CodeInvalidInput {
		t.Fatalf("wrong amount: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := p.Invoke("payments.charge", map[string]any{"order_id": "A-1", "amount_cents": 15000, "idempotency_key": "c1"}, &fx); err != nil {
			t.Fatal(err)
		}
	}
	if len(fx) != 1 || p.Orders["A-1"].Charges != 1 || !p.Orders["A-1"].Captured {
		t.Fatalf("charges %d, commits %v", p.Orders["A-1"].Charges, fx)
	}
}

// The seed's plan: search customer -> invoice -> refund -> notify. A
// notification is its own intent: it never refunds, and a repeated
// notification with the same key sends nothing more.
func TestSearchAndNotify(t *testing.T) {
	p := newTestPayments(t)
	var fx commits
	found, err := p.Invoke("payments.search_customer", map[string]any{"email": "ana@example.com"}, &fx)
	if err != nil || found["customer_id"] != "cus-1" || found["invoice_id"] != "inv-9" {
		t.Fatalf("search: %v %v", found, err)
	}
	if _, err := p.Invoke("payments.search_customer", map[string]any{"email": "nobody@example.com"}, &fx); err == nil || err.Code != harness.CodeNotFound {
		t.Fatalf("unknown email: %v", err)
	}
	if _, err := p.Invoke("payments.notify_customer", map[string]any{"invoice_id": "inv-9", "idempotency_key": "n1"}, &fx); err == nil || err.Code != harness.CodeConflict {
		t.Fatalf("notify before refund: %v", err)
	}
	p.Invoke("payments.refund", map[string]any{"invoice_id": "inv-9", "idempotency_key": "k1"}, &fx)
	for i := 0; i < 2; i++ {
		if _, err := p.Invoke("payments.notify_customer", map[string]any{"invoice_id": "inv-9", "idempotency_key": "n1"}, &fx); err != nil {
			t.Fatal(err)
		}
	}
	if p.Customers["cus-1"].Notified != 1 || p.Invoices["inv-9"].Refunds != 1 || len(fx) != 2 {
		t.Fatalf("notified %d, refunds %d, commits %v", p.Customers["cus-1"].Notified, p.Invoices["inv-9"].Refunds, fx)
	}
}
