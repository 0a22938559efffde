{{/*
OpenTelemetry tracing: the standard OTEL_* variables, set only when otel.endpoint is (the services trace
nothing, and load nothing of the SDK, without an OTLP endpoint). The service's name names its spans unless
otel.env gives OTEL_SERVICE_NAME.
*/}}
{{- define "mds.otelEnv" -}}
{{- if .Values.otel.endpoint }}
OTEL_EXPORTER_OTLP_ENDPOINT: {{ .Values.otel.endpoint | quote }}
{{- if not (hasKey .Values.otel.env "OTEL_SERVICE_NAME") }}
OTEL_SERVICE_NAME: {{ .Values.service.name | quote }}
{{- end }}
{{- range $name, $value := .Values.otel.env }}
{{- if not (kindIs "invalid" $value) }}
{{ $name }}: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
