package world

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"rebound/core/scenario"
)

const declaredPayments = "../../examples/scenarios/worlds/payments.yaml"

func declaredRef(t testing.TB, file string) scenario.WorldRef {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return scenario.WorldRef{Name: file, File: file, Source: string(data)}
}

// The declared payments world declares the built-in one's catalog, field
// for field.
func TestDeclaredPaymentsCatalog(t *testing.T) {
	tools, err := ToolsOf(declaredRef(t, declaredPayments))
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := Tools("payments")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tools, builtin) {
		a, _ := json.MarshalIndent(tools, "", " ")
		b, _ := json.MarshalIndent(builtin, "", " ")
		t.Errorf("catalogs differ:\ndeclared %s\nbuilt-in %s", a, b)
	}
}

type fullCommits []string

func (c *fullCommits) Commit(kind, intent, object string) {
	*c = append(*c, kind+"|"+intent+"|"+object)
}

// Call for call, the declared payments world answers what the built-in one
// answers (data, error code and message), commits what it commits, and
// ends in the same state: random calls over ids that exist and ids that
// do not, keys repeated and fresh, arguments of the wrong type.
func TestDeclaredPaymentsBehaves(t *testing.T) {
	initial := map[string]any{
		"orders":    map[string]any{"A-1": map[string]any{"amount_cents": 1500}, "A-2": map[string]any{"amount_cents": 99, "captured": true, "charges": 1}},
		"invoices":  map[string]any{"inv-1": map[string]any{"amount_cents": 1200, "customer": "cus-1"}, "inv-2": map[string]any{"amount_cents": 50}, "inv-3": map[string]any{"amount_cents": 7, "customer": "cus-1"}},
		"customers": map[string]any{"cus-1": map[string]any{"email": "a@example.com"}, "cus-2": map[string]any{"email": "b@example.com"}},
	}
	ref := declaredRef(t, declaredPayments)
	pick := func(r uint64, xs ...any) any { return xs[r%uint64(len(xs))] }
	tools, _ := Tools("payments")
	for seed := uint64(1); seed <= 300; seed++ {
		b, err := New("payments", initial)
		if err != nil {
			t.Fatal(err)
		}
		d, _, err := Open(ref, initial)
		if err != nil {
			t.Fatal(err)
		}
		var bc, dc fullCommits
		r := seed * 0x9E3779B97F4A7C15
		next := func() uint64 { r ^= r << 13; r ^= r >> 7; r ^= r << 17; return r }
		for i := 0; i < 40; i++ {
			tool := tools[next()%uint64(len(tools))].Name
			args := map[string]any{}
			for _, name := range []string{"order_id", "invoice_id", "amount_cents", "idempotency_key", "email", "format"} {
				if next()%3 == 0 {
					continue
				}
				switch name {
				case "order_id":
					args[name] = pick(next(), "A-1", "A-2", "A-9", "", 7)
				case "invoice_id":
					args[name] = pick(next(), "inv-1", "inv-2", "inv-3", "nope", nil)
				case "amount_cents":
					args[name] = pick(next(), 1500, float64(1500), 99, 1.5, "1500", int64(99))
				case "idempotency_key":
					args[name] = pick(next(), "k1", "k2", "", "k3", false)
				case "email":
					args[name] = pick(next(), "a@example.com", "b@example.com", "c@example.com")
				default:
					args[name] = "legacy"
				}
			}
			bd, be := b.Invoke(tool, args, &bc)
			dd, de := d.Invoke(tool, args, &dc)
			bj, _ := json.Marshal(bd)
			dj, _ := json.Marshal(dd)
			if string(bj) != string(dj) || (be == nil) != (de == nil) || (be != nil && *be != *de) {
				t.Fatalf("seed %d call %d %s %v:\nbuilt-in %s %v\ndeclared %s %v", seed, i, tool, args, bj, be, dj, de)
			}
		}
		bs, _ := json.Marshal(b.State())
		ds, _ := json.Marshal(d.State())
		if string(bs) != string(ds) || !reflect.DeepEqual(bc, dc) {
			t.Fatalf("seed %d: states or commits differ:\nbuilt-in %s %v\ndeclared %s %v", seed, bs, bc, ds, dc)
		}
		if !reflect.DeepEqual(b.State(), d.State()) {
			t.Fatalf("seed %d: the states differ in their Go values", seed)
		}
	}
}

// BenchmarkOpen builds a payments world per op, built-in and declared,
// from a scenario-sized initial state: the per-trial cost of the seam.
//
//	go test -run '^$' -bench Open ./core/world/
func BenchmarkOpen(b *testing.B) {
	initial := map[string]any{
		"orders":    map[string]any{"A-1": map[string]any{"amount_cents": 1500}},
		"invoices":  map[string]any{"inv-1": map[string]any{"amount_cents": 1200, "customer": "cus-1"}, "inv-2": map[string]any{"amount_cents": 50}},
		"customers": map[string]any{"cus-1": map[string]any{"email": "a@example.com"}},
	}
	for _, ref := range []scenario.WorldRef{{Name: "payments"}, declaredRef(b, declaredPayments)} {
		name := "builtin"
		if ref.Declared() {
			name = "declared"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				w, _, err := Open(ref, initial)
				if err != nil {
					b.Fatal(err)
				}
				_ = w.State()
			}
		})
	}
}
