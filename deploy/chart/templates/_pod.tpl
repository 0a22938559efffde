{{/*
Where and how a pod of the release is scheduled, the same for the service's pods and the deploy-step Job's:
nodeSelector, tolerations, affinity, priorityClassName (values, empty by default). Indented by the caller.
*/}}
{{- define "mds.podScheduling" -}}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Annotations as Kubernetes wants them, every value a string (a --set false or 1 would be a bool or a number). */}}
{{- define "mds.annotations" -}}
{{- range $key, $value := . }}
{{ $key }}: {{ $value | toString | quote }}
{{- end }}
{{- end -}}
