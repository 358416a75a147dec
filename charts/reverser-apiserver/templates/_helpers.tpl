{{- define "reverser.name" -}}{{ .Release.Name }}{{- end -}}
{{- define "reverser.labels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/name: reverser-apiserver
{{- end -}}
{{- define "reverser.tlsSecretName" -}}{{ .Values.tlsSecretName | default (printf "%s-tls" .Release.Name) }}{{- end -}}
{{- define "reverser.embeddedOnEmptyDir" -}}
{{- if and (eq .Values.storage.kind "embedded") (not .Values.storage.embedded.existingClaim) (not .Values.storage.embedded.allowEphemeral) -}}
{{- fail "storage.kind=embedded keeps every object under the data directory, and without storage.embedded.existingClaim that is an emptyDir: all data would be lost on every restart. Set storage.embedded.existingClaim to a PersistentVolumeClaim, or storage.embedded.allowEphemeral=true for a throw-away demo." -}}
{{- end -}}
{{- end -}}
