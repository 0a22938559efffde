{{/* The service's name; every service's values file sets it. */}}
{{- define "mds.name" -}}
{{- required "service.name is required: install with the service's values file, -f deploy/values/<service>.yaml" .Values.service.name -}}
{{- end -}}

{{/* Object names: the release name unless overridden (install each service as the release of its own name). */}}
{{- define "mds.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mds.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mds.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The deploy-step Job's pod labels: the release's, but never the Deployment's selector (name and instance together),
so that the PodDisruptionBudget, the autoscaler (which counts the pods the Deployment's selector finds), the
Service and the topology spread never take a migration pod for one of the service's.
*/}}
{{- define "mds.deployStepPodLabels" -}}
app.kubernetes.io/name: {{ include "mds.name" . }}-deploy-step
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: deploy-step
app.kubernetes.io/part-of: messenger-delivery
{{- end -}}

{{- define "mds.labels" -}}
{{ include "mds.selectorLabels" . }}
app.kubernetes.io/version: {{ include "mds.imageTag" . | quote }}
app.kubernetes.io/part-of: messenger-delivery
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "mds.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{- define "mds.image" -}}
{{- $repository := required "image.repository is required" .Values.image.repository -}}
{{- if .Values.image.registry -}}
{{ .Values.image.registry }}/{{ $repository }}:{{ include "mds.imageTag" . }}
{{- else -}}
{{ $repository }}:{{ include "mds.imageTag" . }}
{{- end -}}
{{- end -}}

{{/* Refuses to render a local/dev-only service unless asked to. */}}
{{- define "mds.checkDevOnly" -}}
{{- if and .Values.service.devOnly (not .Values.devOnly.allowed) -}}
{{- fail (printf "%s is a local/dev-only component (a fake of the messengers), not for production: set devOnly.allowed=true to install it in a test cluster" (include "mds.name" .)) -}}
{{- end -}}
{{- end -}}

{{- define "mds.kafkaCaPath" -}}/etc/mds/kafka-ca/{{ .Values.kafka.tls.caSecret.key }}{{- end -}}
{{- define "mds.databaseCaPath" -}}/etc/mds/database-ca/{{ .Values.database.caSecret.key }}{{- end -}}

{{/*
Plain settings of the infrastructure (Kafka, PostgreSQL) as a YAML map of environment variables: the
Deployment reads them from its ConfigMap, the deploy-step Job (a pre-install hook, which runs before the
ConfigMap exists) has them inline.
*/}}
{{- define "mds.infraEnv" -}}
LOG_LEVEL: {{ .Values.logLevel | quote }}
{{- if .Values.uses.kafka }}
KAFKA_BROKERS: {{ required "kafka.bootstrapServers is required (host:port of the brokers)" (join "," .Values.kafka.bootstrapServers) | quote }}
KAFKA_SSL: {{ .Values.kafka.tls.enabled | quote }}
KAFKA_TOPIC_PREFIX: {{ .Values.kafka.topicPrefix | quote }}
KAFKA_REPLICATION_FACTOR: {{ .Values.kafka.replicationFactor | quote }}
MDS_HISTORY_RETENTION_DAYS: {{ .Values.kafka.historyRetentionDays | quote }}
{{- if .Values.kafka.sasl.mechanism }}
KAFKA_SASL_MECHANISM: {{ .Values.kafka.sasl.mechanism | quote }}
KAFKA_SASL_USERNAME: {{ required "kafka.sasl.username is required with kafka.sasl.mechanism" (include "mds.kafkaUsername" .) | quote }}
{{- end }}
{{- if .Values.kafka.tls.caSecret.name }}
NODE_EXTRA_CA_CERTS: {{ include "mds.kafkaCaPath" . | quote }}
{{- end }}
{{- end }}
{{- if .Values.uses.database }}
DATABASE_POOL_MAX: {{ .Values.database.poolMax | quote }}
{{- end }}
{{- end -}}

{{/* Plain settings of the service itself: ports, shutdown, and its own env. */}}
{{- define "mds.serviceEnv" -}}
HTTP_PORT: {{ .Values.ports.http | quote }}
OPS_PORT: {{ .Values.ports.ops | quote }}
SHUTDOWN_TIMEOUT_MS: {{ mul .Values.shutdown.timeoutSeconds 1000 | quote }}
{{- if .Values.ports.grpc }}
GRPC_PORT: {{ .Values.ports.grpc | quote }}
{{- end }}
{{- if .Values.ports.operator }}
OPERATOR_PORT: {{ .Values.ports.operator | quote }}
OPERATOR_HOST: "0.0.0.0"
{{- end }}
{{- with .Values.trustedProxies }}
TRUST_PROXY: {{ . | quote }}
{{- end }}
{{- range $name, $value := .Values.env }}
{{- if not (kindIs "invalid" $value) }}
{{ $name }}: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Secret settings, volumes and mounts: see _secrets.tpl. */}}

{{/* Overridable through values (podSecurityContext, containerSecurityContext); the defaults are the hardened ones. */}}
{{- define "mds.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext -}}
{{- end -}}

{{- define "mds.containerSecurityContext" -}}
{{- toYaml .Values.containerSecurityContext -}}
{{- end -}}
