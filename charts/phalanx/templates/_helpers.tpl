{{/* The namespace of every namespaced object. */}}
{{- define "phalanx.namespace" -}}
{{- .Values.namespace.name -}}
{{- end }}

{{/* Labels of every object: manifests/ gives them app.kubernetes.io/part-of, Helm adds its own. */}}
{{- define "phalanx.labels" -}}
app.kubernetes.io/part-of: phalanx
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The operator pods, as the Deployment, Service, PodDisruptionBudget and ServiceMonitor select them. */}}
{{- define "phalanx.selectorLabels" -}}
app.kubernetes.io/name: phalanx
app.kubernetes.io/component: operator
{{- end }}

{{/*
The settings: files/config.yaml (manifests/operator/config.yaml) with .Values.config over it,
as a YAML document. One definition: the ConfigMap holds it, and the lease name, the metrics
port and the replica check read it.
*/}}
{{- define "phalanx.config" -}}
{{- $shipped := .Files.Get "files/config.yaml" | fromYaml -}}
{{- if hasKey $shipped "Error" -}}
{{- fail (printf "files/config.yaml is not valid YAML: %s" $shipped.Error) -}}
{{- end -}}
{{- mergeOverwrite $shipped (deepCopy (.Values.config | default dict)) | toYaml -}}
{{- end }}

{{- define "phalanx.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end }}

{{/* The port the operator serves the webhooks on: the settings' webhook.port. */}}
{{- define "phalanx.webhookPort" -}}
{{- $config := include "phalanx.config" . | fromYaml -}}
{{- (($config.webhook | default dict).port | default 9443) -}}
{{- end }}

{{/* Each webhook as phalanx.webhooks.configurations builds it, called through the Service. */}}
{{- define "phalanx.webhookCommon" -}}
failurePolicy: {{ .failure }}
matchPolicy: Equivalent
namespaceSelector:
  matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
    - kube-system
    - {{ .ns }}
sideEffects: None
timeoutSeconds: {{ .timeout }}
admissionReviewVersions:
- v1
{{- end }}
{{- define "phalanx.webhookClient" -}}
clientConfig:
  service:
    name: phalanx-webhook
    namespace: {{ .ns }}
    path: {{ .path }}
    port: 443
  {{- with .caBundle }}
  caBundle: {{ . }}
  {{- end }}
{{- end }}
