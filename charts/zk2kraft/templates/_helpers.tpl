{{/* Names: room is left for the longest suffix ("-controller-headless"). */}}
{{- define "zk2kraft.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "zk2kraft.selectorLabels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "zk2kraft.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "zk2kraft.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "zk2kraft.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Controllers run from the `controllers` phase on. */}}
{{- define "zk2kraft.controllersEnabled" -}}
{{- if ne .Values.migration.phase "zookeeper" -}}true{{- end -}}
{{- end -}}

{{/* The mode `zk2kraft broker-mode --to` gives the brokers in each phase. */}}
{{- define "zk2kraft.brokerMode" -}}
{{- $modes := dict "zookeeper" "zookeeper" "controllers" "zookeeper" "migration" "migrating" "kraft-brokers" "kraft" "kraft" "kraft" -}}
{{- get $modes .Values.migration.phase -}}
{{- end -}}

{{/* The mode `zk2kraft controller-mode --to` gives the controllers: finalized in `kraft`. */}}
{{- define "zk2kraft.controllerMode" -}}
{{- if eq .Values.migration.phase "kraft" -}}kraft{{- else -}}migrating{{- end -}}
{{- end -}}

{{- define "zk2kraft.controllerHeadless" -}}
{{ include "zk2kraft.fullname" . }}-controller-headless
{{- end -}}

{{- define "zk2kraft.brokerHeadless" -}}
{{ include "zk2kraft.fullname" . }}-broker-headless
{{- end -}}

{{/* controller.quorum.voters: one voter per controller replica. */}}
{{- define "zk2kraft.voters" -}}
{{- $voters := list -}}
{{- $fullname := include "zk2kraft.fullname" . -}}
{{- $headless := include "zk2kraft.controllerHeadless" . -}}
{{- range $i := until (int .Values.controllers.replicas) -}}
{{- $host := printf "%s-controller-%d.%s.%s.svc.%s" $fullname $i $headless $.Release.Namespace $.Values.clusterDomain -}}
{{- $voters = append $voters (printf "%d@%s:%d" (add $.Values.controllers.idOffset $i | int) $host (int $.Values.controllers.port)) -}}
{{- end -}}
{{- join "," $voters -}}
{{- end -}}

{{/* The controllers' endpoints, for `--bootstrap-controller`. */}}
{{- define "zk2kraft.bootstrapControllers" -}}
{{- $out := list -}}
{{- range (splitList "," (include "zk2kraft.voters" .)) -}}
{{- $out = append $out (regexReplaceAll "^[0-9]+@" . "") -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/* Shell that renders a pod's properties: @ID@ becomes the ordinal plus the id offset,
     @POD@ the pod's name; then the mode rewrite of zk2kraft itself. */}}
{{- define "zk2kraft.renderConfig" -}}
set -eu
ordinal="${HOSTNAME##*-}"
id=$((ordinal + OFFSET))
sed -e "s/@ID@/${id}/g" -e "s/@POD@/${HOSTNAME}/g" "/etc/zk2kraft/${FILE}" > "/var/run/zk2kraft/${FILE}"
{{- end -}}

{{/* The security Secret (security.secretName), read-only in every pod that talks to
ZooKeeper, the controllers or Kafka clients: a volume mount, and its volume. */}}
{{- define "zk2kraft.securityMount" -}}
{{- if .Values.security.secretName }}
- {name: security, mountPath: /etc/zk2kraft/security, readOnly: true}
{{- end }}
{{- end }}

{{- define "zk2kraft.securityVolume" -}}
{{- if .Values.security.secretName }}
- name: security
  secret:
    secretName: {{ .Values.security.secretName }}
    defaultMode: 0400
{{- end }}
{{- end }}
