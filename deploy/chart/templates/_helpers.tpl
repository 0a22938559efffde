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
KAFKA_SASL_USERNAME: {{ required "kafka.sasl.username is required with kafka.sasl.mechanism" .Values.kafka.sasl.username | quote }}
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
{{- range $name, $value := .Values.env }}
{{- if not (kindIs "invalid" $value) }}
{{ $name }}: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Settings from Secrets, and DATABASE_URL, as container env entries (infrastructure part). */}}
{{- define "mds.infraSecretEnv" -}}
{{- if and .Values.uses.kafka .Values.kafka.sasl.mechanism }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ required "kafka.sasl.passwordSecret.name is required with kafka.sasl.mechanism" .Values.kafka.sasl.passwordSecret.name }}
      key: {{ .Values.kafka.sasl.passwordSecret.key }}
{{- end }}
{{- if .Values.uses.database }}
{{- if .Values.database.urlSecret.name }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.database.urlSecret.name }}
      key: {{ .Values.database.urlSecret.key }}
{{- else }}
- name: DATABASE_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ required "database.passwordSecret.name (or database.urlSecret.name) is required" .Values.database.passwordSecret.name }}
      key: {{ .Values.database.passwordSecret.key }}
{{- $query := list (printf "sslmode=%s" .Values.database.sslMode) }}
{{- if .Values.database.caSecret.name }}
{{- $query = append $query (printf "sslrootcert=%s" (include "mds.databaseCaPath" .)) }}
{{- end }}
- name: DATABASE_URL
  value: {{ printf "postgresql://%s:$(DATABASE_PASSWORD)@%s:%v/%s?%s" (required "database.user is required" .Values.database.user) (required "database.host (or database.urlSecret.name) is required" .Values.database.host) .Values.database.port .Values.database.name (join "&" $query) | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Settings from Secrets (the service's part). */}}
{{- define "mds.serviceSecretEnv" -}}
{{- if .Values.uses.internalGrpc }}
- name: INTERNAL_GRPC_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ required "internalGrpc.tokenSecret.name is required" .Values.internalGrpc.tokenSecret.name }}
      key: {{ .Values.internalGrpc.tokenSecret.key }}
{{- end }}
{{- range $name, $ref := .Values.secretEnv }}
{{- if $ref }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ required (printf "secretEnv.%s.secret is required" $name) $ref.secret }}
      key: {{ required (printf "secretEnv.%s.key is required" $name) $ref.key }}
      {{- if $ref.optional }}
      optional: true
      {{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Volumes every pod of the release has: /tmp (the root file system is read-only) and the CAs. */}}
{{- define "mds.volumes" -}}
- name: tmp
  emptyDir: {}
{{- if and .Values.uses.kafka .Values.kafka.tls.caSecret.name }}
- name: kafka-ca
  secret:
    secretName: {{ .Values.kafka.tls.caSecret.name }}
    items:
      - key: {{ .Values.kafka.tls.caSecret.key }}
        path: {{ .Values.kafka.tls.caSecret.key }}
{{- end }}
{{- if and .Values.uses.database .Values.database.caSecret.name }}
- name: database-ca
  secret:
    secretName: {{ .Values.database.caSecret.name }}
    items:
      - key: {{ .Values.database.caSecret.key }}
        path: {{ .Values.database.caSecret.key }}
{{- end }}
{{- end -}}

{{- define "mds.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if and .Values.uses.kafka .Values.kafka.tls.caSecret.name }}
- name: kafka-ca
  mountPath: /etc/mds/kafka-ca
  readOnly: true
{{- end }}
{{- if and .Values.uses.database .Values.database.caSecret.name }}
- name: database-ca
  mountPath: /etc/mds/database-ca
  readOnly: true
{{- end }}
{{- end -}}

{{- define "mds.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "mds.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}
