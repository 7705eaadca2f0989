package world

import (
	"strings"
	"testing"

	"rebound/core/harness"
)

func deploymentsInitial() map[string]any {
	return map[string]any{
		"deployments": map[string]any{
			"checkout-api": map[string]any{
				"version":    "v42",
				"health":     "degraded",
				"replicas":   map[string]any{"desired": 6, "ready": 2, "updated": 6},
				"previous":   map[string]any{"version": "v41"},
				"pods_ready": 5, // the read-only view lags and looks better than it is
				"logs": []any{
					"12:00:01 rollout v42 started",
					"12:01:15 readiness probe failed: GET /healthz 503",
					"12:01:16 CrashLoopBackOff checkout-api-7f9 (OOMKilled)",
				},
			},
			"search-api": map[string]any{
				"version":  "v7",
				"replicas": map[string]any{"desired": 3, "ready": 3, "updated": 3},
			},
			"billing": map[string]any{
				"version":  "v3",
				"health":   "unknown",
				"replicas": map[string]any{"desired": 2, "ready": 1, "updated": 2},
			},
		},
	}
}

func TestDeploymentsCatalog(t *testing.T) {
	w := mustNew(t, "deployments", deploymentsInitial())
	checkCatalog(t, w, map[string]harness.Effect{
		"deploy.status":          harness.EffectRead,
		"cluster.readOnlyStatus": harness.EffectRead,
		"logs.fetch":             harness.EffectRead,
		"deploy.rollback":        harness.EffectConditional,
		"alerts.list":            harness.EffectRead,
	})
	rb, _ := toolByName(w, "deploy.rollback")
	if rb.Permission != "deploy.write" || rb.IdempotencyKeyParam != "idempotency_key" || rb.ReconciledBy != "deploy.status" {
		t.Errorf("rollback metadata: %+v", rb)
	}
	alerts, _ := toolByName(w, "alerts.list")
	if !strings.Contains(alerts.Description, "not evidence") {
		t.Errorf("alerts.list does not say its silence is not evidence: %q", alerts.Description)
	}
	if v, err := CatalogVersion("deployments"); err != nil || v == "" {
		t.Errorf("CatalogVersion = %q, %v", v, err)
	}
}

func TestDeploymentsReads(t *testing.T) {
	w := mustNew(t, "deployments", deploymentsInitial())
	fx := &effects{}

	st := call(t, w, fx, "deploy.status", map[string]any{"deployment_id": "checkout-api"})
	reps := st["replicas"].(map[string]any)
	if st["health"] != "degraded" || st["version"] != "v42" || st["previous_version"] != "v41" || !sameJSON(st["rollbacks"], 0) ||
		!sameJSON(reps["desired"], 6) || !sameJSON(reps["ready"], 2) || !sameJSON(reps["unavailable"], 4) {
		t.Errorf("status = %v", st)
	}
	if st := call(t, w, fx, "deploy.status", map[string]any{"deployment_id": "search-api"}); st["health"] != "healthy" {
		t.Errorf("derived health = %v", st["health"])
	}
	if _, has := call(t, w, fx, "deploy.status", map[string]any{"deployment_id": "search-api"})["previous_version"]; has {
		t.Error("previous_version without a previous revision")
	}
	if st := call(t, w, fx, "deploy.status", map[string]any{"deployment_id": "billing"}); st["health"] != "unknown" {
		t.Errorf("explicit health = %v", st["health"])
	}

	cl := call(t, w, fx, "cluster.readOnlyStatus", map[string]any{"deployment_id": "checkout-api"})
	if !sameJSON(cl["pods_ready"], 5) || !sameJSON(cl["as_of_age_ms"], 90000) {
		t.Errorf("cluster view = %v", cl)
	}
	for _, k := range []string{"health", "version", "replicas", "desired"} {
		if _, has := cl[k]; has {
			t.Errorf("cluster view leaks %s: it is weaker evidence by design", k)
		}
	}
	if cl := call(t, w, fx, "cluster.readOnlyStatus", map[string]any{"deployment_id": "search-api"}); !sameJSON(cl["pods_ready"], 3) {
		t.Errorf("pods_ready default = %v", cl["pods_ready"])
	}

	logs := call(t, w, fx, "logs.fetch", map[string]any{"deployment_id": "checkout-api"})
	if lines := logs["lines"].([]any); len(lines) != 3 || !strings.Contains(lines[2].(string), "OOMKilled") || !sameJSON(logs["total_lines"], 3) {
		t.Errorf("logs = %v", logs)
	}
	logs = call(t, w, fx, "logs.fetch", map[string]any{"deployment_id": "checkout-api", "limit": 1.0})
	if lines := logs["lines"].([]any); len(lines) != 1 || !strings.Contains(lines[0].(string), "CrashLoopBackOff") {
		t.Errorf("limited logs = %v", logs)
	}
	if logs := call(t, w, fx, "logs.fetch", map[string]any{"deployment_id": "search-api"}); len(logs["lines"].([]any)) != 0 {
		t.Errorf("no logs = %v", logs)
	}

	// The trap: the alerting system is silent even for a degraded rollout.
	for _, args := range []map[string]any{{}, {"deployment_id": "checkout-api"}, {"deployment_id": "no-such"}} {
		al := call(t, w, fx, "alerts.list", args)
		if len(al["alerts"].([]any)) != 0 || !sameJSON(al["count"], 0) {
			t.Errorf("alerts(%v) = %v", args, al)
		}
	}

	errs := []struct {
		tool string
		args map[string]any
		code string
	}{
		{"deploy.status", map[string]any{"deployment_id": "nope"}, harness.CodeNotFound},
		{"deploy.status", map[string]any{}, harness.CodeInvalidInput},
		{"cluster.readOnlyStatus", map[string]any{"deployment_id": "nope"}, harness.CodeNotFound},
		{"cluster.readOnlyStatus", map[string]any{"deployment_id": 3}, harness.CodeInvalidInput},
		{"logs.fetch", map[string]any{"deployment_id": "nope"}, harness.CodeNotFound},
		{"logs.fetch", map[string]any{"deployment_id": "checkout-api", "limit": 0}, harness.CodeInvalidInput},
		{"logs.fetch", map[string]any{"deployment_id": "checkout-api", "limit": 500}, harness.CodeInvalidInput},
		{"logs.fetch", map[string]any{"deployment_id": "checkout-api", "limit": 2.5}, harness.CodeInvalidInput},
		{"alerts.list", map[string]any{"deployment_id": true}, harness.CodeInvalidInput},
	}
	for _, tc := range errs {
		callErr(t, w, fx, tc.tool, tc.args, tc.code)
	}
	if len(fx.commits) != 0 {
		t.Errorf("reads committed: %v", fx.commits)
	}
}

func TestDeployRollback(t *testing.T) {
	w := mustNew(t, "deployments", deploymentsInitial())
	fx := &effects{}
	args := map[string]any{"deployment_id": "checkout-api", "idempotency_key": "rb-1", "reason": "v42 OOMKilled"}
	first := call(t, w, fx, "deploy.rollback", args)
	if first["status"] != "rolled_back" || first["from_version"] != "v42" || first["to_version"] != "v41" {
		t.Fatalf("rollback = %v", first)
	}
	again := call(t, w, fx, "deploy.rollback", args)
	if again["rollback_id"] != first["rollback_id"] {
		t.Fatalf("replay = %v, first = %v", again, first)
	}
	if len(fx.commits) != 1 || fx.commits[0].Intent != "rollback:checkout-api" {
		t.Fatalf("commits = %+v", fx.commits)
	}
	assertState(t, w, map[string]any{
		"deployments.checkout-api.version":          "v41",
		"deployments.checkout-api.health":           "healthy",
		"deployments.checkout-api.replicas.ready":   6,
		"deployments.checkout-api.replicas.updated": 6,
		"deployments.checkout-api.previous.version": "v42",
		"deployments.checkout-api.previous.health":  "degraded",
		"deployments.checkout-api.previous.ready":   2,
		"deployments.checkout-api.rollbacks":        1,
		"deployments.checkout-api.rolled_back":      true,
		"deployments.search-api.rollbacks":          0,
	})
	if _, has := lookup(w.State(), "deployments.checkout-api.pods_ready"); has {
		t.Error("the lagging cluster view survived the rollback")
	}
	logs := call(t, w, fx, "logs.fetch", map[string]any{"deployment_id": "checkout-api", "limit": 1})
	if line := logs["lines"].([]any)[0].(string); !strings.Contains(line, "v42 -> v41") || !strings.Contains(line, "OOMKilled") {
		t.Errorf("rollback log line = %q", line)
	}
	if st := call(t, w, fx, "deploy.status", map[string]any{"deployment_id": "checkout-api"}); !sameJSON(st["rollbacks"], 1) || st["version"] != "v41" {
		t.Errorf("status after rollback = %v", st)
	}

	// The same key for another deployment is a conflict.
	callErr(t, w, fx, "deploy.rollback", map[string]any{"deployment_id": "search-api", "idempotency_key": "rb-1"}, harness.CodeConflict)
	// Nothing to roll back to.
	callErr(t, w, fx, "deploy.rollback", map[string]any{"deployment_id": "search-api", "idempotency_key": "rb-2"}, harness.CodeConflict)
	callErr(t, w, fx, "deploy.rollback", map[string]any{"deployment_id": "nope"}, harness.CodeNotFound)
	callErr(t, w, fx, "deploy.rollback", map[string]any{"deployment_id": "checkout-api", "idempotency_key": 5}, harness.CodeInvalidInput)
	if len(fx.commits) != 1 {
		t.Fatalf("failed rollbacks committed: %+v", fx.commits)
	}

	// Without a key a second rollback commits again, and like kubectl
	// rollout undo it puts the bad revision back: a visible duplicate.
	call(t, w, fx, "deploy.rollback", map[string]any{"deployment_id": "checkout-api"})
	if len(fx.commits) != 2 || fx.commits[1].Intent != fx.commits[0].Intent {
		t.Fatalf("commits = %+v", fx.commits)
	}
	assertState(t, w, map[string]any{
		"deployments.checkout-api.version":        "v42",
		"deployments.checkout-api.health":         "degraded",
		"deployments.checkout-api.replicas.ready": 2,
		"deployments.checkout-api.rollbacks":      2,
	})
}

// A rollback whose response is lost has committed; the status tool shows
// it, and a retry with the same key commits nothing more.
func TestDeployRollbackTimeoutAfterSend(t *testing.T) {
	perms := []string{"deploy.read", "deploy.write"}
	fault := harness.Fault{Class: harness.TimeoutAfterSend, Tool: "deploy.rollback", Attempts: []int{1}}
	args := map[string]any{"deployment_id": "checkout-api", "idempotency_key": "rb-777"}

	d := newTestDispatcherFor(t, mustNew(t, "deployments", deploymentsInitial()), perms, fault)
	if r := d.Call("deploy.rollback", args); r.OK || !r.Uncertain || r.Code != harness.CodeTimeoutAfterSend {
		t.Fatalf("rollback: %+v", r)
	}
	if r := d.Call("deploy.status", map[string]any{"deployment_id": "checkout-api"}); !r.OK || r.Data["version"] != "v41" || !sameJSON(r.Data["rollbacks"], 1) {
		t.Fatalf("reconcile: %+v", r)
	}
	if r := d.Call("deploy.rollback", args); !r.OK || r.Data["to_version"] != "v41" {
		t.Fatalf("keyed retry: %+v", r)
	}
	if c := d.Ledger().Commits; len(c) != 1 || len(d.Ledger().Duplicates()) != 0 {
		t.Fatalf("commits = %+v", c)
	}

	// The blind resubmission without a key: a duplicate, and the bad
	// revision is live again.
	w := mustNew(t, "deployments", deploymentsInitial())
	d = newTestDispatcherFor(t, w, perms, fault)
	d.Call("deploy.rollback", map[string]any{"deployment_id": "checkout-api"})
	d.Call("deploy.rollback", map[string]any{"deployment_id": "checkout-api"})
	if dups := d.Ledger().Duplicates(); len(dups["rollback:checkout-api"]) != 1 {
		t.Fatalf("duplicates = %+v", dups)
	}
	assertState(t, w, map[string]any{"deployments.checkout-api.version": "v42", "deployments.checkout-api.rollbacks": 2})

	// Without deploy.write the provider refuses and nothing commits.
	d = newTestDispatcherFor(t, mustNew(t, "deployments", deploymentsInitial()), []string{"deploy.read"})
	if r := d.Call("deploy.rollback", args); r.Code != harness.CodeForbidden || len(d.Ledger().Commits) != 0 {
		t.Fatalf("unauthorized rollback: %+v", r)
	}
}

func TestDeploymentsInitialValidation(t *testing.T) {
	dep := func(fields map[string]any) map[string]any {
		return map[string]any{"deployments": map[string]any{"x": fields}}
	}
	bad := []map[string]any{
		{"clusters": map[string]any{}},
		dep(map[string]any{"version": "v1", "status": "ok"}),
		dep(map[string]any{"version": "v1", "health": "green"}),
		dep(map[string]any{"version": "v1", "replicas": map[string]any{"desired": 2, "ready": 3}}),
		dep(map[string]any{"version": "v1", "replicas": map[string]any{"desired": -1}}),
		dep(map[string]any{"version": "v1", "previous": map[string]any{"health": "healthy"}}),
		dep(map[string]any{"version": "v1", "previous": map[string]any{"version": "v0", "health": "meh"}}),
		dep(map[string]any{"version": "v1", "replicas": map[string]any{"desired": 2}, "previous": map[string]any{"version": "v0", "ready": 3}}),
		dep(map[string]any{"version": "v1", "pods_ready": -1}),
		{"cluster_age_ms": -5},
	}
	for i, initial := range bad {
		if _, err := New("deployments", initial); err == nil {
			t.Errorf("case %d accepted: %v", i, initial)
		}
	}
	w := mustNew(t, "deployments", map[string]any{"cluster_age_ms": 1234, "deployments": map[string]any{"x": map[string]any{"version": "v1", "replicas": map[string]any{"desired": 2, "ready": 1}}}})
	assertState(t, w, map[string]any{"cluster_age_ms": 1234, "deployments.x.health": "degraded"})
	if out := call(t, w, &effects{}, "cluster.readOnlyStatus", map[string]any{"deployment_id": "x"}); !sameJSON(out["as_of_age_ms"], 1234) {
		t.Errorf("as_of_age_ms = %v", out["as_of_age_ms"])
	}
	if _, err := New("deployments", nil); err != nil {
		t.Errorf("empty world: %v", err)
	}
}
