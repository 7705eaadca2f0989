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
The image reference: repository:tag, the tag defaulting to appVersion.
*/}}
{{- define "rebound.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
