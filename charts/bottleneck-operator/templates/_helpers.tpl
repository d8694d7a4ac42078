{{/*
Names, labels and small computed values shared by the templates.
*/}}

{{- define "bottleneck-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: release-chart, unless the release name already contains the chart name. Kept to 51
characters so that suffixed names ("-webhook-tls", "-metrics") stay within the 63 of a DNS label.
*/}}
{{- define "bottleneck-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 51 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 51 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 51 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "bottleneck-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "bottleneck-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bottleneck-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "bottleneck-operator.labels" -}}
helm.sh/chart: {{ include "bottleneck-operator.chart" . }}
{{ include "bottleneck-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: bottleneck-operator
{{- end }}

{{- define "bottleneck-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "bottleneck-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference: by digest when one is given, else by tag (default: the appVersion). */}}
{{- define "bottleneck-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "bottleneck-operator.sidecarImage" -}}
{{- default (include "bottleneck-operator.image" .) .Values.sidecar.image }}
{{- end }}

{{- define "bottleneck-operator.webhookServiceName" -}}
{{- printf "%s-webhook" (include "bottleneck-operator.fullname" .) }}
{{- end }}

{{- define "bottleneck-operator.webhookSecretName" -}}
{{- printf "%s-webhook-tls" (include "bottleneck-operator.fullname" .) }}
{{- end }}

{{- define "bottleneck-operator.webhookCertificateName" -}}
{{- printf "%s-webhook" (include "bottleneck-operator.fullname" .) }}
{{- end }}

{{/* Where the webhook's tls.crt and tls.key are mounted: BOTTLENECK_WEBHOOK_CERT_DIR. */}}
{{- define "bottleneck-operator.webhookCertDir" -}}
/etc/bottleneck-operator/webhook-tls
{{- end }}

{{- define "bottleneck-operator.prometheusTokenDir" -}}
/etc/bottleneck-operator/prometheus-token
{{- end }}

{{- define "bottleneck-operator.prometheusCaDir" -}}
/etc/bottleneck-operator/prometheus-ca
{{- end }}

{{/*
The names under which the API server reaches the webhook Service: the certificate's SANs.
*/}}
{{- define "bottleneck-operator.webhookDnsNames" -}}
{{- $svc := include "bottleneck-operator.webhookServiceName" . }}
{{- $ns := .Release.Namespace }}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.webhook.clusterDomain) | toJson }}
{{- end }}

{{/*
The rules the operator needs in each namespace it watches (or cluster-wide). Least privilege, no
wildcards: it reads Jobs and Pods, owns BottleneckReports, and posts Events.
*/}}
{{- define "bottleneck-operator.namespacedRules" -}}
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["bottleneck.dev"]
  resources: ["bottleneckreports"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["bottleneck.dev"]
  resources: ["bottleneckreports/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if .Values.kopfPeering.enabled }}
- apiGroups: ["kopf.dev"]
  resources: ["kopfpeerings"]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
{{- end }}

{{/*
A number as an environment value. Helm reads every number in the values as a float, which would
print 2592000 as "2.592e+06": whole numbers are printed as integers.
*/}}
{{- define "bottleneck-operator.num" -}}
{{- if eq (float64 .) (floor .) }}{{ int64 . }}{{ else }}{{ . }}{{ end }}
{{- end }}
