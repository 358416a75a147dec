{{- define "reverser.name" -}}{{ .Release.Name }}{{- end -}}
{{- define "reverser.labels" -}}
app.kubernetes.io/name: reverser-apiserver
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
