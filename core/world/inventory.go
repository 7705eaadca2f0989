package world

import "rebound/core/harness"

func init() { register("inventory", newInventory) }

// Inventory simulates a live stock service and a replicated catalog that
// lags behind it: the live lookup returns exact quantities, the catalog only
// an in-stock flag of uncertain freshness.
type Inventory struct {
	SKUs map[string]*SKU `json:"skus"`
	// CatalogAgeMs is how far the replicated catalog lags the live service.
	CatalogAgeMs int64 `json:"catalog_age_ms,omitempty"`
}

// SKU is one stock-keeping unit.
type SKU struct {
	Available int64 `json:"available"`
	// CatalogInStock is what the replicated catalog believes; it may be out
	// of date. Defaults to Available > 0.
	CatalogInStock *bool `json:"catalog_in_stock,omitempty"`
}

func newInventory(initial map[string]any) (harness.World, error) {
	inv := &Inventory{SKUs: map[string]*SKU{}}
	if err := decodeInitial("inventory", initial, inv); err != nil {
		return nil, err
	}
	if inv.CatalogAgeMs == 0 {
		inv.CatalogAgeMs = 6 * 60 * 1000
	}
	return inv, nil
}

// Tools implements harness.World.
func (i *Inventory) Tools() []harness.Tool {
	errs := []harness.DocumentedError{
		{Code: harness.CodeTimeout, Retryable: true},
		{Code: harness.CodeUnavailable, Retryable: true},
		{Code: harness.CodeNotFound, Retryable: false},
	}
	return []harness.Tool{
		{
			Name:        "inventory.lookup",
			Description: "Live stock service: exact units available for a SKU. Read-only.",
			Effect:      harness.EffectRead, Permission: "inventory.read", Errors: errs, LatencyMs: 200, DeadlineMs: 2000,
			Params: []harness.Param{{Name: "sku", Type: "string", Required: true}},
		},
		{
			Name:        "catalog.lookup",
			Description: "Replicated product catalog: an in-stock flag only, which can be several minutes old. Read-only; weaker evidence than inventory.lookup.",
			Effect:      harness.EffectRead, Permission: "inventory.read", Errors: errs, LatencyMs: 50, DeadlineMs: 2000,
			StaleAgeMs: 6 * 60 * 1000,
			Params:     []harness.Param{{Name: "sku", Type: "string", Required: true}},
		},
	}
}

// State implements harness.World.
func (i *Inventory) State() map[string]any { return toState(i) }

// Invoke implements harness.World.
func (i *Inventory) Invoke(tool string, args map[string]any, _ harness.Effects) (map[string]any, *harness.ToolError) {
	sku, err := str(args, "sku", true)
	if err != nil {
		return nil, err
	}
	s, ok := i.SKUs[sku]
	if !ok {
		return nil, harness.Errorf(harness.CodeNotFound, "unknown sku %q", sku)
	}
	switch tool {
	case "inventory.lookup":
		return map[string]any{"sku": sku, "available": s.Available}, nil
	case "catalog.lookup":
		inStock := s.Available > 0
		if s.CatalogInStock != nil {
			inStock = *s.CatalogInStock
		}
		return map[string]any{"sku": sku, "in_stock": inStock, "as_of_age_ms": i.CatalogAgeMs}, nil
	}
	return nil, harness.Errorf(harness.CodeToolUnavailable, "inventory has no method %q", tool)
}
