{{/*
Secrets reach the services as files, never as environment variables: each secret setting NAME is one file
/etc/mds/secrets/NAME of a projected volume, and the container gets NAME_FILE (every service reads NAME_FILE in
place of NAME, see @mds/config). A file follows its Secret when the Secret changes (no subPath), so what a
service re-reads while running (the registry's caller list, TLS certificates) needs no restart.
*/}}

{{- define "mds.secretsDir" -}}/etc/mds/secrets{{- end -}}
{{- define "mds.grpcTlsDir" -}}/etc/mds/grpc-tls{{- end -}}

{{/* The infrastructure's secret settings (Kafka, PostgreSQL) as YAML: NAME: {secret, key}. */}}
{{- define "mds.infraSecretFiles" -}}
{{- if and .Values.uses.kafka .Values.kafka.sasl.mechanism }}
KAFKA_SASL_PASSWORD:
  {{- /* Strimzi names the user's Secret after the user. */}}
  secret: {{ required "kafka.sasl.passwordSecret.name is required with kafka.sasl.mechanism" (ternary (default (include "mds.kafkaUsername" .) .Values.kafka.sasl.passwordSecret.name) .Values.kafka.sasl.passwordSecret.name .Values.kafkaUser.create) }}
  key: {{ .Values.kafka.sasl.passwordSecret.key }}
{{- end }}
{{- if .Values.uses.database }}
{{- if .Values.database.urlSecret.name }}
DATABASE_URL:
  secret: {{ .Values.database.urlSecret.name }}
  key: {{ .Values.database.urlSecret.key }}
{{- else }}
DATABASE_PASSWORD:
  secret: {{ required "database.passwordSecret.name (or database.urlSecret.name) is required" .Values.database.passwordSecret.name }}
  key: {{ .Values.database.passwordSecret.key }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The service's own secret settings: its gRPC token or the registry's caller list, and secretEnv. */}}
{{- define "mds.serviceSecretFiles" -}}
{{- if .Values.uses.internalGrpc }}
INTERNAL_GRPC_TOKEN:
  secret: {{ default (printf "mds-grpc-%s" (include "mds.name" .)) .Values.internalGrpc.tokenSecret.name }}
  key: {{ .Values.internalGrpc.tokenSecret.key }}
{{- end }}
{{- if .Values.ports.grpc }}
REGISTRY_CALLERS:
  secret: {{ required "internalGrpc.callersSecret.name is required for a gRPC server" .Values.internalGrpc.callersSecret.name }}
  key: {{ .Values.internalGrpc.callersSecret.key }}
{{- end }}
{{- range $name, $ref := .Values.secretEnv }}
{{- if $ref }}
{{ $name }}:
  secret: {{ required (printf "secretEnv.%s.secret is required" $name) $ref.secret }}
  key: {{ required (printf "secretEnv.%s.key is required" $name) $ref.key }}
  optional: {{ $ref.optional | default false }}
{{- end }}
{{- end }}
{{- end -}}

{{/* NAME_FILE entries for a set of secret files (and DATABASE_URL without its password, in parts mode). */}}
{{- define "mds.secretFileEnv" -}}
{{- $root := .root -}}
{{- range $name, $_ := .files }}
- name: {{ $name }}_FILE
  value: {{ printf "%s/%s" (include "mds.secretsDir" $root) $name | quote }}
{{- end }}
{{- end -}}

{{/* The infrastructure's settings from Secrets, as container env entries (the deploy step's too). */}}
{{- define "mds.infraSecretEnv" -}}
{{- include "mds.secretFileEnv" (dict "root" . "files" (include "mds.infraSecretFiles" . | fromYaml)) }}
{{- if and .Values.uses.database (not .Values.database.urlSecret.name) }}
{{- $query := list (printf "sslmode=%s" .Values.database.sslMode) }}
{{- if .Values.database.caSecret.name }}
{{- $query = append $query (printf "sslrootcert=%s" (include "mds.databaseCaPath" .)) }}
{{- end }}
- name: DATABASE_URL
  value: {{ printf "postgresql://%s@%s:%v/%s?%s" (required "database.user is required" .Values.database.user) (required "database.host (or database.urlSecret.name) is required" .Values.database.host) .Values.database.port .Values.database.name (join "&" $query) | quote }}
{{- end }}
{{- end -}}

{{/* The service's settings from Secrets, and its gRPC TLS files, as container env entries. */}}
{{- define "mds.serviceSecretEnv" -}}
{{- include "mds.secretFileEnv" (dict "root" . "files" (include "mds.serviceSecretFiles" . | fromYaml)) }}
{{- if .Values.ports.grpc }}
- name: REGISTRY_REQUIRE_CALLERS
  value: "true"
{{- end }}
{{- if include "mds.grpcTls" . }}
{{- $dir := include "mds.grpcTlsDir" . }}
{{- if .Values.ports.grpc }}
- name: GRPC_TLS_CERT_FILE
  value: {{ printf "%s/tls.crt" $dir | quote }}
- name: GRPC_TLS_KEY_FILE
  value: {{ printf "%s/tls.key" $dir | quote }}
{{- if .Values.internalGrpc.tls.mutual }}
- name: GRPC_TLS_CLIENT_CA_FILE
  value: {{ printf "%s/ca.crt" $dir | quote }}
{{- end }}
{{- end }}
{{- if .Values.uses.internalGrpc }}
- name: REGISTRY_GRPC_TLS
  value: "true"
- name: REGISTRY_GRPC_TLS_CA_FILE
  value: {{ printf "%s/ca.crt" $dir | quote }}
{{- if .Values.internalGrpc.tls.mutual }}
- name: REGISTRY_GRPC_TLS_CERT_FILE
  value: {{ printf "%s/tls.crt" $dir | quote }}
- name: REGISTRY_GRPC_TLS_KEY_FILE
  value: {{ printf "%s/tls.key" $dir | quote }}
{{- end }}
{{- with .Values.internalGrpc.tls.serverName }}
- name: REGISTRY_GRPC_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* A projected volume of secret files; nothing when there are none. */}}
{{- define "mds.secretVolume" -}}
{{- if .files }}
- name: secrets
  projected:
    defaultMode: 288 # 0440: owner and the pod's fsGroup read
    sources:
      {{- range $name, $ref := .files }}
      - secret:
          name: {{ $ref.secret }}
          items:
            - key: {{ $ref.key }}
              path: {{ $name }}
          {{- if $ref.optional }}
          optional: true
          {{- end }}
      {{- end }}
{{- end }}
{{- end -}}

{{- define "mds.caVolumes" -}}
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

{{- define "mds.caVolumeMounts" -}}
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

{{/* Volumes of the service's pods: /tmp (the root file system is read-only), the CAs, the secrets, gRPC TLS. */}}
{{- define "mds.volumes" -}}
- name: tmp
  emptyDir: {}
{{- include "mds.caVolumes" . }}
{{- $files := merge (include "mds.infraSecretFiles" . | fromYaml) (include "mds.serviceSecretFiles" . | fromYaml) }}
{{- include "mds.secretVolume" (dict "files" $files) }}
{{- if include "mds.grpcTls" . }}
- name: grpc-tls
  secret:
    secretName: {{ required "internalGrpc.tls.secretName is required with internalGrpc.tls.enabled" .Values.internalGrpc.tls.secretName }}
    defaultMode: 288 # 0440: owner and the pod's fsGroup read
    {{- if and (not .Values.ports.grpc) (not .Values.internalGrpc.tls.mutual) }}
    # A caller that presents no certificate needs the CA only, never the key beside it.
    items:
      - key: ca.crt
        path: ca.crt
    {{- end }}
{{- end }}
{{- end -}}

{{- define "mds.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- include "mds.caVolumeMounts" . }}
{{- $files := merge (include "mds.infraSecretFiles" . | fromYaml) (include "mds.serviceSecretFiles" . | fromYaml) }}
{{- if $files }}
- name: secrets
  mountPath: {{ include "mds.secretsDir" . }}
  readOnly: true
{{- end }}
{{- if include "mds.grpcTls" . }}
- name: grpc-tls
  mountPath: {{ include "mds.grpcTlsDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* Non-empty when the release speaks gRPC over TLS: it serves gRPC (ports.grpc) or calls it (uses.internalGrpc). */}}
{{- define "mds.grpcTls" -}}
{{- if and .Values.internalGrpc.tls.enabled (or .Values.ports.grpc .Values.uses.internalGrpc) -}}true{{- end -}}
{{- end -}}

{{/*
The deploy step's secret files: the infrastructure's, with the Kafka password of the deploy step's own user
(mds.deployStepKafkaUsername) in place of the service's.
*/}}
{{- define "mds.deployStepSecretFiles" -}}
{{- $files := include "mds.infraSecretFiles" . | fromYaml -}}
{{- if hasKey $files "KAFKA_SASL_PASSWORD" -}}
{{- $secret := .Values.deployStep.kafka.sasl.passwordSecret -}}
{{- $name := $secret.name | default (ternary (include "mds.deployStepKafkaUsername" .) (get $files "KAFKA_SASL_PASSWORD").secret .Values.kafkaUser.create) -}}
{{- $_ := set $files "KAFKA_SASL_PASSWORD" (dict "secret" $name "key" ($secret.key | default .Values.kafka.sasl.passwordSecret.key)) -}}
{{- end -}}
{{- toYaml $files -}}
{{- end -}}

{{/* The deploy step's: only what migrations and topics need (no service secret, no gRPC). */}}
{{- define "mds.deployStepVolumes" -}}
- name: tmp
  emptyDir: {}
{{- include "mds.caVolumes" . }}
{{- include "mds.secretVolume" (dict "files" (include "mds.deployStepSecretFiles" . | fromYaml)) }}
{{- end -}}

{{- define "mds.deployStepVolumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- include "mds.caVolumeMounts" . }}
{{- if (include "mds.deployStepSecretFiles" . | fromYaml) }}
- name: secrets
  mountPath: {{ include "mds.secretsDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/*
The deploy step's Kafka user name: deployStep.kafka.sasl.username, or <release>-deploy with kafkaUser.create (the
release's second KafkaUser), or else the service's own (which then needs the deploy step's rights too).
*/}}
{{- define "mds.deployStepKafkaUsername" -}}
{{- if .Values.deployStep.kafka.sasl.username -}}
{{- .Values.deployStep.kafka.sasl.username -}}
{{- else if .Values.kafkaUser.create -}}
{{- printf "%s-deploy" (include "mds.kafkaUsername" .) | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- include "mds.kafkaUsername" . -}}
{{- end -}}
{{- end -}}

{{/* The release's Kafka user name: kafka.sasl.username, or the release's name with kafkaUser.create. */}}
{{- define "mds.kafkaUsername" -}}
{{- if .Values.kafkaUser.create -}}
{{- default (include "mds.fullname" .) .Values.kafka.sasl.username -}}
{{- else -}}
{{- .Values.kafka.sasl.username -}}
{{- end -}}
{{- end -}}
