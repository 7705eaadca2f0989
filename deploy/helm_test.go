package deploy_test

// The chart rendered by the real helm (scripts/setup.sh builds it into
// .cache/bin/helm; make test passes it as REBOUND_HELM_BIN): `helm lint
// --strict` on the defaults and on every value set below, then `helm
// template`, whose manifests are parsed and checked for what the values ask.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"rebound/internal/devstack/devstacktest"
)

// helmBin finds helm: REBOUND_HELM_BIN, else the repository's .cache/bin/helm.
// Without it the test is skipped, or fails under REBOUND_REQUIRE_INTEGRATION=1.
func helmBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("helm: not in -short")
	}
	bin := os.Getenv("REBOUND_HELM_BIN")
	if bin == "" {
		bin, _ = filepath.Abs("../.cache/bin/helm")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := "helm not found at " + bin + " (run make setup, or set REBOUND_HELM_BIN)"
		if devstacktest.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

func runHelm(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), errors.New(strings.TrimSpace(errb.String() + "\n" + out.String()))
	}
	return out.String(), nil
}

// manifest is one rendered object.
type manifest map[string]any

func (m manifest) kind() string { s, _ := m["kind"].(string); return s }

// at walks a dotted path of map keys (and [N] indexes are not needed).
func (m manifest) at(path string) any {
	var v any = map[string]any(m)
	for _, k := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func parseManifests(t *testing.T, out string) map[string]manifest {
	t.Helper()
	objs := map[string]manifest{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		// Decoded as a plain map: yaml.v3 would give nested mappings the
		// named type of the target.
		var raw map[string]any
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template output does not parse: %v\n%s", err, out)
		}
		if raw == nil {
			continue
		}
		m := manifest(raw)
		if _, dup := objs[m.kind()]; dup {
			t.Fatalf("two %s objects rendered", m.kind())
		}
		objs[m.kind()] = m
	}
	return objs
}

func worker(t *testing.T, objs map[string]manifest) map[string]any {
	t.Helper()
	d, ok := objs["Deployment"]
	if !ok {
		t.Fatal("no Deployment rendered")
	}
	cs, _ := d.at("spec.template.spec.containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("containers %v, want the worker only", cs)
	}
	return cs[0].(map[string]any)
}

func TestHelmChart(t *testing.T) {
	bin := helmBin(t)
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, objs map[string]manifest)
	}{
		{"defaults", nil, func(t *testing.T, objs map[string]manifest) {
			c := worker(t, objs)
			if !strings.Contains(strings.Join(toStrings(c["args"]), " "), "--listen=:9090") {
				t.Errorf("args %v: no --listen=:9090", c["args"])
			}
			for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
				p, _ := c[probe].(map[string]any)
				if got := manifest(p).at("httpGet.path"); got != path {
					t.Errorf("%s path %v, want %s", probe, got, path)
				}
				if got := manifest(p).at("httpGet.port"); got != "metrics" {
					t.Errorf("%s port %v, want the named port metrics", probe, got)
				}
			}
			pdb, ok := objs["PodDisruptionBudget"]
			if !ok || pdb.at("spec.maxUnavailable") != 1 || pdb.at("spec.selector.matchLabels") == nil {
				t.Errorf("PodDisruptionBudget %v, want maxUnavailable 1 with a selector", pdb)
			}
			if _, ok := objs["Service"]; !ok {
				t.Error("no Service for the health endpoint")
			}
			if _, ok := objs["ServiceMonitor"]; ok {
				t.Error("a ServiceMonitor is rendered though serviceMonitor.enabled is false")
			}
			// The sandbox of command arms (on by default): root in a
			// privileged, unconfined container, the root filesystem still
			// read-only.
			sc := manifest(c["securityContext"].(map[string]any))
			if sc.at("privileged") != true || sc.at("runAsUser") != 0 || sc.at("runAsNonRoot") != false ||
				sc.at("seccompProfile.type") != "Unconfined" || sc.at("readOnlyRootFilesystem") != true {
				t.Errorf("securityContext %v, want what the sandbox needs (privileged root, unconfined, read-only root)", sc)
			}
			if add := strings.Join(toStrings(sc.at("capabilities.add")), ","); add != "SYS_ADMIN,SETUID,SETGID" {
				t.Errorf("capabilities.add %q, want SYS_ADMIN,SETUID,SETGID", add)
			}
			vols, _ := objs["Deployment"].at("spec.template.spec.volumes").([]any)
			if got := manifest(vols[0].(map[string]any)).at("emptyDir.sizeLimit"); got != "4Gi" {
				t.Errorf("/tmp emptyDir sizeLimit %v, want the 4Gi default", got)
			}
			args := strings.Join(toStrings(c["args"]), " ")
			if !strings.Contains(args, "--log-format=json") || !strings.Contains(args, "--log-level=info") {
				t.Errorf("args %q: want the worker logging JSON at info", args)
			}
			// GOMEMLIMIT: 90% of the 1Gi memory limit, in bytes.
			if got := envValue(c, "GOMEMLIMIT"); got != "966367641" {
				t.Errorf("GOMEMLIMIT %q, want 966367641 (90%% of 1Gi)", got)
			}
			// helm test: a pod with the workers' configuration reaching
			// Temporal and ClickHouse, run only as the test hook.
			pod, ok := objs["Pod"]
			if !ok {
				t.Fatalf("no helm test pod: %v", pod)
			}
			if ann, _ := pod.at("metadata.annotations").(map[string]any); ann["helm.sh/hook"] != "test" {
				t.Errorf("test pod annotations %v, want helm.sh/hook: test", ann)
			}
			sel, _ := objs["Deployment"].at("spec.selector.matchLabels").(map[string]any)
			labels, _ := pod.at("metadata.labels").(map[string]any)
			matches := len(sel) > 0
			for k, v := range sel {
				matches = matches && labels[k] == v
			}
			if matches {
				t.Errorf("the test pod %v carries the workers' selector %v: their ReplicaSet would adopt it", labels, sel)
			}
			tc := manifest(pod.at("spec.containers").([]any)[0].(map[string]any))
			script := strings.Join(toStrings(tc.at("args")), " ")
			if !strings.Contains(script, "rebound schedule list") || !strings.Contains(script, `rebound sql "SELECT 1`) || tc.at("image") != c["image"] {
				t.Errorf("test pod: image %v, args %q: want the worker's image checking Temporal and ClickHouse", tc.at("image"), script)
			}
			if envValue(map[string]any(tc), "REBOUND_REDACTION_KEY") != "secret:rebound/redaction-key" || envValue(map[string]any(tc), "REBOUND_CLICKHOUSE_DSN") != "secret:rebound/clickhouse-dsn" {
				t.Errorf("test pod env %v: want the workers' Secret", tc.at("env"))
			}
			if manifest(tc.at("securityContext").(map[string]any)).at("privileged") != nil {
				t.Errorf("the test pod is privileged: %v", tc.at("securityContext"))
			}
		}},
		{"image digest, GOMEMLIMIT given or off", []string{
			"--set", "image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"--set", "resources.limits.memory=1536Mi", "--set", "worker.logFormat=text", "--set", "helmTest.enabled=false",
		}, func(t *testing.T, objs map[string]manifest) {
			c := worker(t, objs)
			if c["image"] != "rebound:0.1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
				t.Errorf("image %v, want it pinned by digest", c["image"])
			}
			if got := envValue(c, "GOMEMLIMIT"); got != "1449551462" {
				t.Errorf("GOMEMLIMIT %q, want 1449551462 (90%% of 1536Mi)", got)
			}
			if !strings.Contains(strings.Join(toStrings(c["args"]), " "), "--log-format=text") {
				t.Errorf("args %v: want --log-format=text", c["args"])
			}
			if _, ok := objs["Pod"]; ok {
				t.Error("a test pod is rendered though helmTest.enabled is false")
			}
		}},
		{"GOMEMLIMIT from extraEnv", []string{"--set-json", `extraEnv=[{"name":"GOMEMLIMIT","value":"700MiB"}]`}, func(t *testing.T, objs map[string]manifest) {
			n := 0
			for _, e := range worker(t, objs)["env"].([]any) {
				if e.(map[string]any)["name"] == "GOMEMLIMIT" {
					n++
				}
			}
			if n != 1 || envValue(worker(t, objs), "GOMEMLIMIT") != "700MiB" {
				t.Errorf("%d GOMEMLIMIT variables, want extraEnv's alone", n)
			}
		}},
		{"GOMEMLIMIT off", []string{"--set", "worker.goMemLimitPercent=0"}, func(t *testing.T, objs map[string]manifest) {
			if got := envValue(worker(t, objs), "GOMEMLIMIT"); got != "" {
				t.Errorf("GOMEMLIMIT %q with goMemLimitPercent 0", got)
			}
		}},
		{"monitoring, volumes, secrets, spread", []string{
			"--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.labels.release=prom",
			"--set", "tmp.sizeLimit=10Gi", "--set", "podDisruptionBudget.minAvailable=50%",
			"--set-json", `extraVolumes=[{"name":"redact","secret":{"secretName":"rebound-redact"}}]`,
			"--set-json", `extraVolumeMounts=[{"name":"redact","mountPath":"/etc/rebound/redact","readOnly":true}]`,
			"--set-json", `extraEnv=[{"name":"REBOUND_REDACT_FILE","value":"/etc/rebound/redact/patterns"},{"name":"OPENAI_API_KEY","valueFrom":{"secretKeyRef":{"name":"llm","key":"openai"}}}]`,
			"--set-json", `topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}]`,
		}, func(t *testing.T, objs map[string]manifest) {
			sm, ok := objs["ServiceMonitor"]
			if !ok {
				t.Fatal("no ServiceMonitor")
			}
			if sm.at("metadata.labels.release") != "prom" {
				t.Errorf("ServiceMonitor labels %v: the extra label is missing", sm.at("metadata.labels"))
			}
			eps, _ := sm.at("spec.endpoints").([]any)
			if len(eps) != 1 || manifest(eps[0].(map[string]any)).at("port") != "metrics" || manifest(eps[0].(map[string]any)).at("path") != "/metrics" {
				t.Errorf("ServiceMonitor endpoints %v", eps)
			}
			if pdb := objs["PodDisruptionBudget"]; pdb.at("spec.minAvailable") != "50%" || pdb.at("spec.maxUnavailable") != nil {
				t.Errorf("PodDisruptionBudget spec %v, want minAvailable 50%% only", pdb.at("spec"))
			}
			d := objs["Deployment"]
			vols, _ := d.at("spec.template.spec.volumes").([]any)
			names := map[string]map[string]any{}
			for _, v := range vols {
				names[v.(map[string]any)["name"].(string)] = v.(map[string]any)
			}
			if manifest(names["tmp"]).at("emptyDir.sizeLimit") != "10Gi" || manifest(names["redact"]).at("secret.secretName") != "rebound-redact" {
				t.Errorf("volumes %v", vols)
			}
			c := worker(t, objs)
			mounts := map[string]string{}
			for _, m := range c["volumeMounts"].([]any) {
				mounts[m.(map[string]any)["name"].(string)] = m.(map[string]any)["mountPath"].(string)
			}
			if mounts["redact"] != "/etc/rebound/redact" || mounts["tmp"] != "/tmp" {
				t.Errorf("volumeMounts %v", mounts)
			}
			env := map[string]any{}
			for _, e := range c["env"].([]any) {
				env[e.(map[string]any)["name"].(string)] = e
			}
			if manifest(env["OPENAI_API_KEY"].(map[string]any)).at("valueFrom.secretKeyRef.name") != "llm" || env["REBOUND_REDACT_FILE"] == nil {
				t.Errorf("env %v: the Secret key or the redact file is missing", env)
			}
			tsc, _ := d.at("spec.template.spec.topologySpreadConstraints").([]any)
			if len(tsc) != 1 || manifest(tsc[0].(map[string]any)).at("labelSelector.matchLabels") == nil {
				t.Errorf("topologySpreadConstraints %v: want one, with the chart's selector filled in", tsc)
			}
		}},
		{"sandbox off", []string{"--set", "sandbox.enabled=false"}, func(t *testing.T, objs map[string]manifest) {
			sc := manifest(worker(t, objs)["securityContext"].(map[string]any))
			if sc.at("privileged") != nil || sc.at("runAsUser") != nil || sc.at("allowPrivilegeEscalation") != false || sc.at("readOnlyRootFilesystem") != true {
				t.Errorf("sandbox.enabled=false: securityContext %v, want the locked-down one", sc)
			}
			if drop := toStrings(sc.at("capabilities.drop")); len(drop) != 1 || drop[0] != "ALL" {
				t.Errorf("capabilities %v, want every capability dropped", sc.at("capabilities"))
			}
		}},
		{"health off", []string{"--set", "health.enabled=false", "--set", "podDisruptionBudget.enabled=false"}, func(t *testing.T, objs map[string]manifest) {
			c := worker(t, objs)
			if c["livenessProbe"] != nil || c["readinessProbe"] != nil || strings.Contains(strings.Join(toStrings(c["args"]), " "), "--listen") {
				t.Errorf("health.enabled=false still probes or listens: %v", c)
			}
			for _, k := range []string{"Service", "PodDisruptionBudget"} {
				if _, ok := objs[k]; ok {
					t.Errorf("%s rendered though disabled", k)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{chartDir}, tc.args...)
			if out, err := runHelm(t, bin, append([]string{"lint", "--strict"}, args...)...); err != nil {
				t.Fatalf("helm lint --strict: %v\n%s", err, out)
			}
			out, err := runHelm(t, bin, append([]string{"template", "rel", "--namespace", "ns"}, args...)...)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			tc.check(t, parseManifests(t, out))
		})
	}
}

// TestHelmChartRefuses: values the chart must reject, with the reason.
func TestHelmChartRefuses(t *testing.T) {
	bin := helmBin(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "serviceMonitor.enabled=true", "--set", "health.enabled=false"}, "serviceMonitor.enabled needs health.enabled"},
		{[]string{"--set", "tmp.sizeLimit=lots"}, "sizeLimit"},
		{[]string{"--set", "health.port=70000"}, "port"},
		{[]string{"--set", "podDisruptionBudget.maxUnavailable=", "--set", "podDisruptionBudget.minAvailable="}, "set maxUnavailable or minAvailable"},
		// What the worker refuses (--max-concurrent-shards 0..4096) the
		// chart refuses too, instead of pods that crash-loop.
		{[]string{"--set", "worker.maxConcurrentShards=100000"}, "maxConcurrentShards"},
		{[]string{"--set", "worker.maxConcurrentShards=4097"}, "maxConcurrentShards"},
		{[]string{"--set", "worker.logLevel=loud"}, "logLevel"},
		{[]string{"--set", "image.digest=sha256:abc"}, "digest"},
		// A budget no eviction could ever satisfy.
		{[]string{"--set", "podDisruptionBudget.minAvailable=2"}, "minAvailable 2 with 2 pod(s)"},
		{[]string{"--set", "replicaCount=3", "--set", "podDisruptionBudget.minAvailable=5"}, "minAvailable 5 with 3 pod(s)"},
		{[]string{"--set", "autoscaling.enabled=true", "--set", "autoscaling.minReplicas=3", "--set", "podDisruptionBudget.minAvailable=3"}, "minAvailable 3 with 3 pod(s)"},
		{[]string{"--set", "podDisruptionBudget.minAvailable=100%"}, "minAvailable 100% keeps every pod"},
		{[]string{"--set", "podDisruptionBudget.maxUnavailable=0"}, "maxUnavailable 0 keeps every pod"},
		{[]string{"--set", "resources.limits.memory=lots"}, "not a quantity GOMEMLIMIT can follow"},
	} {
		_, err := runHelm(t, bin, append([]string{"template", "rel", chartDir}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template %v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, x := range l {
		out[i], _ = x.(string)
	}
	return out
}

// envValue is the value of the container's variable name: its value, or
// "secret:NAME/KEY" for one read from a Secret; "" when it is not set.
func envValue(c map[string]any, name string) string {
	env, _ := c["env"].([]any)
	for _, e := range env {
		m := manifest(e.(map[string]any))
		if m["name"] != name {
			continue
		}
		if v, ok := m["value"].(string); ok {
			return v
		}
		if ref, ok := m.at("valueFrom.secretKeyRef").(map[string]any); ok {
			return "secret:" + ref["name"].(string) + "/" + ref["key"].(string)
		}
	}
	return ""
}
