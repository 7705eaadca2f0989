{{/*
The chart name, truncated to the 63 characters a DNS label allows.
*/}}
{{- define "rebound.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full resource name: release-chart, or the release name alone when it
already contains the chart name.
*/}}
{{- define "rebound.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
chart-version label value.
*/}}
{{- define "rebound.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels on every resource.
*/}}
{{- define "rebound.labels" -}}
helm.sh/chart: {{ include "rebound.chart" . }}
{{ include "rebound.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: worker
{{- end }}

{{/*
Labels the Deployment selects its pods by (never change them after install).
*/}}
{{- define "rebound.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rebound.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The ServiceAccount the pods run as.
*/}}
{{- define "rebound.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rebound.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image reference: repository:tag, the tag defaulting to appVersion, and
@digest when image.digest is set (the digest is what is pulled).
*/}}
{{- define "rebound.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}

{{/*
The bytes of a Kubernetes memory quantity (512Mi, 1Gi, 1.5G, 1000000);
empty for what it cannot read.
*/}}
{{- define "rebound.memoryBytes" -}}
{{- $q := toString . -}}
{{- $units := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $q -}}
{{- $unit := trimPrefix $num $q -}}
{{- if and $num (hasKey $units $unit) -}}
{{- printf "%.0f" (mulf (float64 $num) (get $units $unit)) -}}
{{- end -}}
{{- end }}

{{/*
GOMEMLIMIT in bytes: worker.goMemLimitPercent of resources.limits.memory;
empty when either is unset or extraEnv sets GOMEMLIMIT itself.
*/}}
{{- define "rebound.goMemLimit" -}}
{{- $pct := int .Values.worker.goMemLimitPercent -}}
{{- $limit := dig "limits" "memory" "" (.Values.resources | default dict) -}}
{{- $own := false -}}
{{- range .Values.extraEnv }}{{ if eq .name "GOMEMLIMIT" }}{{ $own = true }}{{ end }}{{ end -}}
{{- if and (gt $pct 0) $limit (not $own) -}}
{{- $bytes := include "rebound.memoryBytes" $limit -}}
{{- if not $bytes -}}
{{- fail (printf "resources.limits.memory %q: not a quantity GOMEMLIMIT can follow (e.g. 1Gi, 512Mi); set worker.goMemLimitPercent: 0 to leave GOMEMLIMIT out" (toString $limit)) -}}
{{- end -}}
{{- printf "%.0f" (floor (divf (mulf (float64 $bytes) $pct) 100)) -}}
{{- end -}}
{{- end }}

{{/*
The pods a disruption budget counts on: replicaCount, or the autoscaler's
minimum.
*/}}
{{- define "rebound.minPods" -}}
{{- if .Values.autoscaling.enabled }}{{ int .Values.autoscaling.minReplicas }}{{ else }}{{ int .Values.replicaCount }}{{ end -}}
{{- end }}

{{/*
The worker's environment: the Secret's DSN and redaction key, the Temporal
API key. The worker and the helm test pod share it.
*/}}
{{- define "rebound.secretEnv" -}}
{{- $secret := required "secret.name is required: create a Secret with the ClickHouse DSN and the redaction key first (see values.yaml)" .Values.secret.name -}}
- name: REBOUND_CLICKHOUSE_DSN
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ required "secret.clickhouseDsnKey is required" .Values.secret.clickhouseDsnKey }}
- name: REBOUND_REDACTION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ required "secret.redactionKeyKey is required" .Values.secret.redactionKeyKey }}
{{- with .Values.temporal.apiKey }}
{{- if .secretName }}
# Named by REBOUND_TEMPORAL_API_KEY_ENV (the ConfigMap).
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ required "temporal.apiKey.key is required with temporal.apiKey.secretName" .key }}
{{- end }}
{{- end }}
{{- end }}
