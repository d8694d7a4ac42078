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

{{/*
The Secret the operator reads its webhook certificate from: the user's own one, or the chart's
(made at install, or written by cert-manager).
*/}}
{{- define "bottleneck-operator.webhookTlsSecret" -}}
{{- if and .Values.webhook.existingCertificate.secretName (not .Values.webhook.certManager.enabled) }}
{{- .Values.webhook.existingCertificate.secretName }}
{{- else }}
{{- include "bottleneck-operator.webhookSecretName" . }}
{{- end }}
{{- end }}

{{/*
The chart's own webhook Secret when it is in the cluster and complete, as `lookup` finds it; empty
when rendering offline or on a first install. Both the Secret and the expiry alert read it, so they
agree on whether the certificate is reused.
*/}}
{{- define "bottleneck-operator.webhookExistingSecret" -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "bottleneck-operator.webhookSecretName" .) }}
{{- if and $existing $existing.data (index $existing.data "tls.crt") (index $existing.data "tls.key") (index $existing.data "ca.crt") }}
{{- toJson $existing }}
{{- end }}
{{- end }}

{{/*
When the chart's self-signed certificate expires (RFC 3339), recorded as an annotation on its
Secret since Helm cannot read a certificate's dates: the reused Secret's annotation, or
now + the validity for a pair made in this render (genCA's own arithmetic). Empty for a reused
Secret made before the annotation existed.
*/}}
{{- define "bottleneck-operator.webhookNotAfterKey" -}}
bottleneck.dev/certificate-not-after
{{- end }}

{{- define "bottleneck-operator.webhookNotAfter" -}}
{{- $existing := include "bottleneck-operator.webhookExistingSecret" . }}
{{- if $existing }}
{{- $annotations := (($existing | fromJson).metadata).annotations | default dict }}
{{- index $annotations (include "bottleneck-operator.webhookNotAfterKey" .) | default "" }}
{{- else }}
{{- now | dateModify (printf "+%dh" (mul (int .Values.webhook.selfSignedValidityDays) 24)) | date "2006-01-02T15:04:05Z" }}
{{- end }}
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
wildcards: it reads Jobs and the claims they mount, owns BottleneckReports, and posts Events.
*/}}
{{/*
Read access to the training operators' workloads (their phase and the profiling annotation), only
for the kinds the cluster serves when the chart is installed or upgraded, unless
rbac.allWorkloadKinds grants them all (a render without the cluster's API versions, or a training
operator installed later). Each line is the kind's resource and the API versions that serve it.
*/}}
{{- define "bottleneck-operator.workloadRules" -}}
{{- $all := .Values.rbac.allWorkloadKinds }}
{{- $caps := .Capabilities.APIVersions }}
{{- $kubeflow := list }}
{{- if or $all ($caps.Has "kubeflow.org/v1/PyTorchJob") }}
{{- $kubeflow = append $kubeflow "pytorchjobs" }}
{{- end }}
{{- if or $all ($caps.Has "kubeflow.org/v2beta1/MPIJob") ($caps.Has "kubeflow.org/v1/MPIJob") }}
{{- $kubeflow = append $kubeflow "mpijobs" }}
{{- end }}
{{- with $kubeflow }}
- apiGroups: ["kubeflow.org"]
  resources: {{ toJson . }}
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if or $all ($caps.Has "jobset.x-k8s.io/v1alpha2/JobSet") }}
- apiGroups: ["jobset.x-k8s.io"]
  resources: ["jobsets"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if or $all ($caps.Has "trainer.kubeflow.org/v1alpha1/TrainJob") }}
- apiGroups: ["trainer.kubeflow.org"]
  resources: ["trainjobs"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if or $all ($caps.Has "ray.io/v1/RayJob") }}
- apiGroups: ["ray.io"]
  resources: ["rayjobs"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if or $all ($caps.Has "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet") }}
- apiGroups: ["leaderworkerset.x-k8s.io"]
  resources: ["leaderworkersets"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- end }}

{{- /* What the code uses and no more: controller/access.py is the table, tests/chart/test_chart_rbac.py the check. */}}
{{- define "bottleneck-operator.namespacedRules" -}}
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["list", "watch"]
# The storage class of each claim a profiled Job mounts, for the cluster summary's storage hot spots.
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get"]
{{- include "bottleneck-operator.workloadRules" . }}
- apiGroups: ["bottleneck.dev"]
  resources: ["bottleneckreports"]
  verbs: ["get", "list", "create", "patch", "delete"]
- apiGroups: ["bottleneck.dev"]
  resources: ["bottleneckreports/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create"]
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

{{/*
The webhook certificate's expiry alert: cert-manager's own metric when it issues the certificate,
the expiry recorded on the chart's Secret otherwise; none for a certificate the user supplies.
*/}}
{{- define "bottleneck-operator.certificateExpiryRule" -}}
{{- $r := .Values.prometheusRule }}
{{- $within := mul (int $r.certificateExpiryDays) 86400 }}
{{- $expr := "" }}
{{- if .Values.webhook.certManager.enabled }}
{{- $expr = printf "certmanager_certificate_expiration_timestamp_seconds{name=%s, namespace=%s} - time() < %d" (include "bottleneck-operator.webhookCertificateName" . | quote) (.Release.Namespace | quote) $within }}
{{- else if not .Values.webhook.existingCertificate.secretName }}
{{- with include "bottleneck-operator.webhookNotAfter" . }}
{{- $expr = printf "vector(%s) - time() < %d" (toDate "2006-01-02T15:04:05Z" . | unixEpoch) $within }}
{{- end }}
{{- end }}
{{- if $expr }}
- alert: BottleneckWebhookCertificateExpiring
  expr: {{ $expr }}
  labels:
    severity: warning
    {{- with $r.alertLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    summary: bottleneck-operator's webhook certificate expires soon
    description: >-
      The webhook certificate expires within {{ $r.certificateExpiryDays }} days; after that the API server
      admits Jobs without the collector.
      {{- if .Values.webhook.certManager.enabled }} cert-manager has not renewed it: see `kubectl describe certificate
      -n {{ .Release.Namespace }} {{ include "bottleneck-operator.webhookCertificateName" . }}`.
      {{- else }} Delete the Secret {{ include "bottleneck-operator.webhookSecretName" . }} and run `helm upgrade` to
      make a new pair.
      {{- end }}
{{- end }}
{{- end }}
