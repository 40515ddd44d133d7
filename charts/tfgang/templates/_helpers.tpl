{{/* Chart name, overridable. */}}
{{- define "tfgang.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Prefix of every object name: the release name, plus the chart name unless the release name
already contains it. Truncated so that the longest suffix ("-controller-metrics") still fits 63.
*/}}
{{- define "tfgang.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tfgang.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Immutable selector labels; call with (dict "ctx" $ "component" "webhook"). */}}
{{- define "tfgang.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tfgang.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Every object's labels; call with (dict "ctx" $ "component" "webhook"). */}}
{{- define "tfgang.labels" -}}
{{ include "tfgang.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: tfgang
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ include "tfgang.chart" .ctx }}
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "tfgang.image" -}}
{{- $image := .Values.image }}
{{- if $image.digest }}
{{- printf "%s@%s" $image.repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) }}
{{- end }}
{{- end }}

{{/* Object names. */}}
{{- define "tfgang.webhook.name" -}}
{{- printf "%s-webhook" (include "tfgang.fullname" .) }}
{{- end }}

{{- define "tfgang.controller.name" -}}
{{- printf "%s-controller" (include "tfgang.fullname" .) }}
{{- end }}

{{- define "tfgang.webhook.serviceName" -}}
{{- include "tfgang.webhook.name" . }}
{{- end }}

{{- define "tfgang.mutatingWebhookConfigurationName" -}}
{{- printf "%s-mutating" (include "tfgang.fullname" .) }}
{{- end }}

{{- define "tfgang.validatingWebhookConfigurationName" -}}
{{- printf "%s-validating" (include "tfgang.fullname" .) }}
{{- end }}

{{- define "tfgang.webhook.serviceAccountName" -}}
{{- if .Values.webhook.serviceAccount.create }}
{{- default (include "tfgang.webhook.name" .) .Values.webhook.serviceAccount.name }}
{{- else }}
{{- required "webhook.serviceAccount.name is required when webhook.serviceAccount.create is false" .Values.webhook.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tfgang.controller.serviceAccountName" -}}
{{- if .Values.controller.serviceAccount.create }}
{{- default (include "tfgang.controller.name" .) .Values.controller.serviceAccount.name }}
{{- else }}
{{- required "controller.serviceAccount.name is required when controller.serviceAccount.create is false" .Values.controller.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding tls.crt, tls.key (and ca.crt) that the webhook serves with. */}}
{{- define "tfgang.certs.secretName" -}}
{{- if eq .Values.certs.mode "secret" }}
{{- required "certs.secretName is required when certs.mode is secret" .Values.certs.secretName }}
{{- else }}
{{- default (printf "%s-webhook-tls" (include "tfgang.fullname" .)) .Values.certs.secretName }}
{{- end }}
{{- end }}

{{- define "tfgang.certs.certificateName" -}}
{{- printf "%s-webhook" (include "tfgang.fullname" .) }}
{{- end }}

{{/* "true" when the chart runs in namespace-scoped mode. */}}
{{- define "tfgang.namespaced" -}}
{{- if .Values.watchNamespaces }}true{{ end }}
{{- end }}

{{/*
tfgang's scope (values `scope`, `watchNamespaces` and the older `webhook.excludedNamespaces` and
`webhook.namespaceSelectorExpressions`): the one namespaceSelector both webhook configurations
carry and the controller gets as --namespace-selector, so a namespace is served by all three or by
none. Never kube-system nor the release namespace (the webhook must never gate its own pods); in
namespace-scoped mode only the watched namespace.
*/}}
{{- define "tfgang.scope.namespaceSelector" -}}
{{- $excluded := concat (list "kube-system" .Release.Namespace) .Values.scope.excludedNamespaces .Values.webhook.excludedNamespaces | uniq -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      {{- toYaml $excluded | nindent 6 }}
  {{- with .Values.watchNamespaces }}
  - key: kubernetes.io/metadata.name
    operator: In
    values:
      {{- toYaml . | nindent 6 }}
  {{- end }}
  {{- with concat .Values.scope.namespaceSelectorExpressions .Values.webhook.namespaceSelectorExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/* The webhooks' namespaceSelector: tfgang's scope. */}}
{{- define "tfgang.webhook.namespaceSelector" -}}
{{- include "tfgang.scope.namespaceSelector" . }}
{{- end }}

{{/* caBundle / CA injection per certificate mode: the clientConfig line. */}}
{{- define "tfgang.webhook.caBundle" -}}
{{- if eq .Values.certs.mode "secret" -}}
caBundle: {{ required "certs.caBundle is required when certs.mode is secret" .Values.certs.caBundle }}
{{- end }}
{{- end }}

{{/* Annotations of the two webhook configurations. */}}
{{- define "tfgang.webhook.configurationAnnotations" -}}
{{- if eq .Values.certs.mode "certManager" -}}
cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "tfgang.certs.certificateName" .) }}
{{- end }}
{{- end }}

{{/* Pod anti-affinity by hostname; call with (dict "ctx" $ "component" "webhook" "mode" "preferred"). */}}
{{- define "tfgang.affinity" -}}
{{- if eq .mode "preferred" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "tfgang.selectorLabels" . | nindent 12 }}
{{- else if eq .mode "required" -}}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "tfgang.selectorLabels" . | nindent 10 }}
{{- end }}
{{- end }}

{{/*
RBAC rules, shared by the cluster-wide ClusterRoles and the namespace-scoped Roles so that both
modes grant exactly the same verbs. docs/rbac.md justifies each one.
*/}}
{{/*
The controller reads TFJobs only through its watch-fed store (no single-object GET); `get` on pods,
services and PodGroups is the re-read after a create that found the object already there.
*/}}
{{- define "tfgang.controller.namespacedRules" -}}
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs"]
  verbs: ["list", "watch", "delete"]
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "delete"]
{{- with include "tfgang.podGroupApiGroup" . }}
- apiGroups: [{{ . | quote }}]
  resources: ["podgroups"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
{{- end }}
{{- if eq (include "tfgang.podGroupApiGroup" .) "scheduling.volcano.sh" }}
# Volcano says why it does not admit a gang only in events on the PodGroup: watched, then reported
# on the TFJob.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch", "list", "watch"]
{{- else }}
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
{{- end }}

{{- define "tfgang.controller.clusterRules" -}}
- apiGroups: ["scheduling.k8s.io"]
  resources: ["priorityclasses"]
  verbs: ["list", "watch"]
# The scope's selector is matched against namespace labels.
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["list", "watch"]
{{- end }}

{{/* The PodGroup API of the gang scheduler; empty when gang scheduling is off. */}}
{{- define "tfgang.podGroupApiGroup" -}}
{{- $scheduler := .Values.gangSchedulerName | trim | lower }}
{{- if eq $scheduler "volcano" }}scheduling.volcano.sh
{{- else if not (or (eq $scheduler "") (eq $scheduler "none")) }}scheduling.x-k8s.io
{{- end }}
{{- end }}

{{- define "tfgang.webhook.namespacedRules" -}}
- apiGroups: ["kubeflow.org"]
  resources: ["tfjobs"]
  verbs: ["get", "list", "watch"]
{{- end }}

{{/*
Only the selfManaged mode writes caBundle into the webhook configurations: a resourceVersion-guarded
read-modify-replace (get + update), never a patch, so concurrent replicas cannot clobber each other.
*/}}
{{- define "tfgang.webhook.clusterRules" -}}
{{- if eq .Values.certs.mode "selfManaged" -}}
- apiGroups: ["admissionregistration.k8s.io"]
  resources: ["mutatingwebhookconfigurations"]
  resourceNames: [{{ include "tfgang.mutatingWebhookConfigurationName" . | quote }}]
  verbs: ["get", "update"]
- apiGroups: ["admissionregistration.k8s.io"]
  resources: ["validatingwebhookconfigurations"]
  resourceNames: [{{ include "tfgang.validatingWebhookConfigurationName" . | quote }}]
  verbs: ["get", "update"]
{{- end }}
{{- end }}

{{/* The namespace the helm test dry-run-creates its TFJob in. */}}
{{- define "tfgang.helmTest.namespace" -}}
{{- if .Values.helmTest.namespace }}
{{- .Values.helmTest.namespace }}
{{- else if .Values.watchNamespaces }}
{{- first .Values.watchNamespaces }}
{{- else }}
{{- "default" }}
{{- end }}
{{- end }}
