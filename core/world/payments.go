package world

import (
	"fmt"
	"maps"
	"slices"

	"rebound/core/harness"
)

func init() { register("payments", newPayments) }

// Payments simulates a payment provider: charges on orders, refunds on
// invoices, status lookups by idempotency key. A call carrying an
// idempotency key that was seen before returns the first result and commits
// nothing; a call without one commits every time it reaches the provider.
type Payments struct {
	Orders   map[string]*Order   `json:"orders"`
	Invoices map[string]*Invoice `json:"invoices"`
	// Customers are the billing contacts, by customer id.
	Customers map[string]*BillingCustomer `json:"customers"`
	// keys maps an idempotency key to the result it produced.
	keys map[string]map[string]any
}

// BillingCustomer is a customer of the payment provider.
type BillingCustomer struct {
	Email string `json:"email"`
	// Notified counts the refund notifications sent to the customer.
	Notified int `json:"notified"`
}

// Order is a payable order.
type Order struct {
	AmountCents int64 `json:"amount_cents"`
	Captured    bool  `json:"captured"`
	Charges     int   `json:"charges"`
}

// Invoice is a paid invoice that can be refunded.
type Invoice struct {
	AmountCents int64  `json:"amount_cents"`
	Customer    string `json:"customer,omitempty"`
	Refunded    bool   `json:"refunded"`
	Refunds     int    `json:"refunds"`
	// Notified is set once the customer was told about the refund.
	Notified bool `json:"notified"`
}

func newPayments(initial map[string]any) (harness.World, error) {
	p := &Payments{Orders: map[string]*Order{}, Invoices: map[string]*Invoice{}, Customers: map[string]*BillingCustomer{}, keys: map[string]map[string]any{}}
	if err := decodeInitial("payments", initial, p); err != nil {
		return nil, err
	}
	return p, nil
}

var paymentErrors = []harness.DocumentedError{
	{Code: harness.CodeBadGateway, Retryable: true},
	{Code: harness.CodeUnavailable, Retryable: true},
	{Code: harness.CodeTimeout, Retryable: true},
	{Code: harness.CodeTimeoutAfterSend, Retryable: true},
	{Code: harness.CodeRateLimited, Retryable: true},
	{Code: harness.CodeInvalidInput, Retryable: false},
	{Code: harness.CodeForbidden, Retryable: false},
	{Code: harness.CodeNotFound, Retryable: false},
}

// Tools implements harness.World.
func (p *Payments) Tools() []harness.Tool {
	return []harness.Tool{
		{
			Name:        "payments.charge",
			Description: "Capture payment for an order. Pass an idempotency_key: a repeated call with the same key returns the first result and never charges twice. Without a key every call that reaches the provider charges again. An ambiguous result (TIMEOUT_AFTER_SEND) is reconciled with payments.charge_status.",
			Effect:      harness.EffectConditional, Permission: "payments.write", IdempotencyKeyParam: "idempotency_key",
			ReconciledBy: "payments.charge_status", Errors: paymentErrors, LatencyMs: 300, DeadlineMs: 2000, CostUSD: 0.002,
			Params: []harness.Param{
				{Name: "order_id", Type: "string", Required: true, Description: "order to charge"},
				{Name: "amount_cents", Type: "integer", Required: true, Description: "amount in cents; must equal the order amount"},
				{Name: "idempotency_key", Type: "string", Description: "client-chosen key that makes the call idempotent"},
			},
		},
		{
			Name:        "payments.charge_status",
			Description: "Look up whether a charge was captured, by idempotency key or order id. Read-only.",
			Effect:      harness.EffectRead, Permission: "payments.read", Errors: paymentErrors, LatencyMs: 100, DeadlineMs: 2000,
			Params: []harness.Param{
				{Name: "idempotency_key", Type: "string", Description: "key of the charge request"},
				{Name: "order_id", Type: "string", Description: "order whose charge to look up"},
			},
		},
		{
			Name:        "payments.get_invoice",
			Description: "Fetch an invoice: amount, customer, refund state. Read-only.",
			Effect:      harness.EffectRead, Permission: "payments.read", Errors: paymentErrors, LatencyMs: 100, DeadlineMs: 2000,
			Params: []harness.Param{{Name: "invoice_id", Type: "string", Required: true}},
		},
		{
			Name:        "payments.refund",
			Description: "Refund a paid invoice in full. Pass an idempotency_key; a repeated call with the same key never refunds twice. An ambiguous result (TIMEOUT_AFTER_SEND) is reconciled with payments.refund_status using the same key.",
			Effect:      harness.EffectConditional, Permission: "payments.write", IdempotencyKeyParam: "idempotency_key",
			ReconciledBy: "payments.refund_status", Errors: paymentErrors, LatencyMs: 300, DeadlineMs: 2000, CostUSD: 0.002,
			Params: []harness.Param{
				{Name: "invoice_id", Type: "string", Required: true},
				{Name: "idempotency_key", Type: "string", Description: "client-chosen key that makes the call idempotent"},
			},
		},
		{
			Name:        "payments.search_customer",
			Description: "Find a billing customer by email: customer_id and the customer's latest invoice_id. Read-only. NOT_FOUND when no customer has that email.",
			Effect:      harness.EffectRead, Permission: "payments.read", Errors: paymentErrors, LatencyMs: 100, DeadlineMs: 2000,
			Params: []harness.Param{{Name: "email", Type: "string", Required: true}},
		},
		{
			Name:        "payments.notify_customer",
			Description: "Email the customer that an invoice was refunded. Pass an idempotency_key: a repeated call with the same key sends nothing more. It never refunds anything; a failed notification does not undo or redo the refund.",
			Effect:      harness.EffectConditional, Permission: "payments.notify", IdempotencyKeyParam: "idempotency_key",
			Errors: paymentErrors, LatencyMs: 200, DeadlineMs: 2000,
			Params: []harness.Param{
				{Name: "invoice_id", Type: "string", Required: true},
				{Name: "idempotency_key", Type: "string", Description: "client-chosen key that makes the call idempotent"},
			},
		},
		{
			Name:        "payments.refund_status",
			Description: "Look up a refund by idempotency key: completed, pending or not_found. Read-only.",
			Effect:      harness.EffectRead, Permission: "payments.read", Errors: paymentErrors, LatencyMs: 100, DeadlineMs: 2000,
			Params: []harness.Param{{Name: "idempotency_key", Type: "string", Required: true}},
		},
	}
}

// State implements harness.World.
func (p *Payments) State() map[string]any { return toState(p) }

// Invoke implements harness.World.
func (p *Payments) Invoke(tool string, args map[string]any, fx harness.Effects) (map[string]any, *harness.ToolError) {
	switch tool {
	case "payments.charge":
		return p.charge(args, fx)
	case "payments.charge_status":
		return p.chargeStatus(args)
	case "payments.get_invoice":
		id, err := str(args, "invoice_id", true)
		if err != nil {
			return nil, err
		}
		inv, ok := p.Invoices[id]
		if !ok {
			return nil, harness.Errorf(harness.CodeNotFound, "no invoice %q", id)
		}
		return map[string]any{"invoice_id": id, "amount_cents": inv.AmountCents, "customer": inv.Customer, "refunded": inv.Refunded}, nil
	case "payments.refund":
		return p.refund(args, fx)
	case "payments.search_customer":
		email, err := str(args, "email", true)
		if err != nil {
			return nil, err
		}
		for _, id := range slices.Sorted(maps.Keys(p.Customers)) {
			if p.Customers[id].Email == email {
				out := map[string]any{"customer_id": id}
				for _, inv := range slices.Sorted(maps.Keys(p.Invoices)) {
					if p.Invoices[inv].Customer == id {
						out["invoice_id"] = inv
					}
				}
				return out, nil
			}
		}
		return nil, harness.Errorf(harness.CodeNotFound, "no customer with email %q", email)
	case "payments.notify_customer":
		return p.notify(args, fx)
	case "payments.refund_status":
		key, err := str(args, "idempotency_key", true)
		if err != nil {
			return nil, err
		}
		if r, ok := p.keys["refund:"+key]; ok {
			return map[string]any{harness.ReconcileStatus: harness.ReconcileCompleted, "invoice_id": r["invoice_id"], "refund_id": r["refund_id"]}, nil
		}
		return map[string]any{harness.ReconcileStatus: harness.ReconcileNotFound}, nil
	}
	return nil, harness.Errorf(harness.CodeToolUnavailable, "payments has no method %q", tool)
}

func (p *Payments) charge(args map[string]any, fx harness.Effects) (map[string]any, *harness.ToolError) {
	orderID, err := str(args, "order_id", true)
	if err != nil {
		return nil, err
	}
	amount, err := integer(args, "amount_cents")
	if err != nil {
		return nil, err
	}
	key, err := str(args, "idempotency_key", false)
	if err != nil {
		return nil, err
	}
	if prior, ok := p.replayed("charge", key); ok {
		return prior, nil
	}
	o, ok := p.Orders[orderID]
	if !ok {
		return nil, harness.Errorf(harness.CodeNotFound, "no order %q", orderID)
	}
	if amount != o.AmountCents {
		return nil, harness.Errorf(harness.CodeInvalidInput, "amount_cents %d does not match the order amount %d", amount, o.AmountCents)
	}
	o.Charges++
	o.Captured = true
	chargeID := fmt.Sprintf("ch_%s_%d", orderID, o.Charges)
	fx.Commit("charge", "charge:"+orderID, chargeID)
	res := map[string]any{harness.ReconcileStatus: harness.ReconcileCaptured, "charge_id": chargeID, "order_id": orderID, "amount_cents": amount}
	p.remember("charge", key, res)
	return res, nil
}

func (p *Payments) chargeStatus(args map[string]any) (map[string]any, *harness.ToolError) {
	key, err := str(args, "idempotency_key", false)
	if err != nil {
		return nil, err
	}
	orderID, err := str(args, "order_id", false)
	if err != nil {
		return nil, err
	}
	switch {
	case key != "":
		if r, ok := p.keys["charge:"+key]; ok {
			return map[string]any{harness.ReconcileStatus: harness.ReconcileCaptured, "charge_id": r["charge_id"], "order_id": r["order_id"]}, nil
		}
		return map[string]any{harness.ReconcileStatus: harness.ReconcileNotFound}, nil
	case orderID != "":
		o, ok := p.Orders[orderID]
		if !ok {
			return nil, harness.Errorf(harness.CodeNotFound, "no order %q", orderID)
		}
		status := harness.ReconcileNotFound
		if o.Captured {
			status = harness.ReconcileCaptured
		}
		return map[string]any{harness.ReconcileStatus: status, "order_id": orderID, "charges": o.Charges}, nil
	}
	return nil, harness.Errorf(harness.CodeInvalidInput, "pass idempotency_key or order_id")
}

// replayed returns the first result of a keyed call of this kind: the
// provider's idempotency. An empty key never replays.
func (p *Payments) replayed(kind, key string) (map[string]any, bool) {
	if key == "" {
		return nil, false
	}
	r, ok := p.keys[kind+":"+key]
	return r, ok
}

// remember stores a keyed call's result for replay.
func (p *Payments) remember(kind, key string, res map[string]any) {
	if key != "" {
		p.keys[kind+":"+key] = res
	}
}

// keyedInvoiceCall reads the arguments of a keyed call on an invoice: the
// invoice, which must exist, and the idempotency key. prior is the result
// of an earlier call of the kind with the same key, returned again as it
// was (before the invoice is looked up, as the first call saw it).
func (p *Payments) keyedInvoiceCall(kind string, args map[string]any) (inv *Invoice, invoiceID, key string, prior map[string]any, err *harness.ToolError) {
	if invoiceID, err = str(args, "invoice_id", true); err != nil {
		return nil, "", "", nil, err
	}
	if key, err = str(args, "idempotency_key", false); err != nil {
		return nil, "", "", nil, err
	}
	if prior, ok := p.replayed(kind, key); ok {
		return nil, invoiceID, key, prior, nil
	}
	inv, ok := p.Invoices[invoiceID]
	if !ok {
		return nil, "", "", nil, harness.Errorf(harness.CodeNotFound, "no invoice %q", invoiceID)
	}
	return inv, invoiceID, key, nil, nil
}

func (p *Payments) notify(args map[string]any, fx harness.Effects) (map[string]any, *harness.ToolError) {
	inv, invoiceID, key, prior, err := p.keyedInvoiceCall("notify", args)
	if err != nil || prior != nil {
		return prior, err
	}
	if !inv.Refunded {
		return nil, harness.Errorf(harness.CodeConflict, "invoice %q has not been refunded; there is nothing to notify", invoiceID)
	}
	c, ok := p.Customers[inv.Customer]
	if !ok {
		return nil, harness.Errorf(harness.CodeNotFound, "invoice %q has no billing customer to notify", invoiceID)
	}
	c.Notified++
	inv.Notified = true
	fx.Commit("notify", "notify:"+invoiceID, inv.Customer)
	res := map[string]any{"status": "sent", "invoice_id": invoiceID, "customer_id": inv.Customer}
	p.remember("notify", key, res)
	return res, nil
}

func (p *Payments) refund(args map[string]any, fx harness.Effects) (map[string]any, *harness.ToolError) {
	inv, invoiceID, key, prior, err := p.keyedInvoiceCall("refund", args)
	if err != nil || prior != nil {
		return prior, err
	}
	inv.Refunds++
	inv.Refunded = true
	refundID := fmt.Sprintf("re_%s_%d", invoiceID, inv.Refunds)
	fx.Commit("refund", "refund:"+invoiceID, refundID)
	res := map[string]any{harness.ReconcileStatus: harness.ReconcileCompleted, "refund_id": refundID, "invoice_id": invoiceID, "amount_cents": inv.AmountCents}
	p.remember("refund", key, res)
	return res, nil
}
