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
