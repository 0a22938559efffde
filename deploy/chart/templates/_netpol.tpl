{{/*
Where a release's pods may open connections (networkPolicy.egress): the cluster's DNS; Kafka and PostgreSQL on
their ports (to the peers named, or any address when none is); the services of the namespace it calls, by name
and port (networkPolicy.egress.services: the registry's gRPC for its callers, the admin APIs for the
dashboard); the OTLP collector's port when tracing is on; the public internet, never the private, link-local
(cloud metadata) or loopback ranges, for a release that talks to it (the messengers' APIs, companies' webhook
URLs: networkPolicy.egress.internet); and networkPolicy.egress.extraTo.
*/}}
{{- define "mds.egressRules" -}}
{{- $egress := .Values.networkPolicy.egress -}}
- to:
    {{- toYaml $egress.dns.to | nindent 4 }}
  ports:
    - { port: 53, protocol: UDP }
    - { port: 53, protocol: TCP }
{{- if .Values.uses.kafka }}
- ports:
    {{- range $egress.kafka.ports }}
    - { port: {{ . }}, protocol: TCP }
    {{- end }}
  {{- with $egress.kafka.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- if .Values.uses.database }}
- ports:
    - { port: {{ .Values.database.port }}, protocol: TCP }
  {{- with $egress.database.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- range $egress.services }}
- to:
    - podSelector:
        matchLabels:
          app.kubernetes.io/name: {{ .name }}
  ports:
    - { port: {{ .port }}, protocol: TCP }
{{- end }}
{{- if .Values.otel.endpoint }}
- ports:
    - { port: {{ include "mds.otelPort" . }}, protocol: TCP }
  {{- with $egress.otel.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- if $egress.internet.enabled }}
- to:
    - ipBlock:
        cidr: 0.0.0.0/0
        except: [10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, 169.254.0.0/16, 127.0.0.0/8, 0.0.0.0/8]
    - ipBlock:
        cidr: ::/0
        except: ["fc00::/7", "fe80::/10", "::1/128", "::ffff:0:0/96", "64:ff9b::/96"]
  {{- with $egress.internet.ports }}
  ports:
    {{- range . }}
    - { port: {{ . }}, protocol: TCP }
    {{- end }}
  {{- end }}
{{- end }}
{{- with $egress.extraTo }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The OTLP endpoint's port: the one it names, or its scheme's (http 80, https 443). */}}
{{- define "mds.otelPort" -}}
{{- $url := urlParse .Values.otel.endpoint -}}
{{- $port := regexFind ":[0-9]+$" $url.host | trimPrefix ":" -}}
{{- if $port -}}{{ $port }}{{- else if eq $url.scheme "https" -}}443{{- else -}}80{{- end -}}
{{- end -}}
