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

{{/* The metrics port's TLS and basic auth (metrics.tls, metrics.basicAuth;
docs/security.md): the lines of a process's properties, and their Secrets' mounts and
volumes (beside the security Secret's, in every container that reads the properties). */}}
{{- define "zk2kraft.metricsConfig" -}}
{{- $m := .Values.metrics }}
{{- if $m.tls.enabled }}
{{- if not $m.tls.secretName }}
{{- fail "metrics.tls.enabled needs metrics.tls.secretName: a Secret with the port's key and certificate chain in one PEM file (metrics.tls.keystoreKey)" }}
{{- end }}
metrics.ssl.keystore.type=PEM
metrics.ssl.keystore.location=/etc/zk2kraft/metrics-tls/{{ $m.tls.keystoreKey }}
{{- end }}
{{- if $m.basicAuth.enabled }}
{{- if not $m.basicAuth.secretName }}
{{- fail "metrics.basicAuth.enabled needs metrics.basicAuth.secretName: a Secret with the users file (user:bcrypt-hash lines) under metrics.basicAuth.usersKey" }}
{{- end }}
metrics.basic.auth.users.file=/etc/zk2kraft/metrics-auth/{{ $m.basicAuth.usersKey }}
{{- end }}
{{- end -}}

{{- define "zk2kraft.metricsMount" -}}
{{- $m := .Values.metrics }}
{{- if and $m.enabled $m.tls.enabled }}
- {name: metrics-tls, mountPath: /etc/zk2kraft/metrics-tls, readOnly: true}
{{- end }}
{{- if and $m.enabled $m.basicAuth.enabled }}
- {name: metrics-auth, mountPath: /etc/zk2kraft/metrics-auth, readOnly: true}
{{- end }}
{{- end -}}

{{- define "zk2kraft.metricsVolume" -}}
{{- $m := .Values.metrics }}
{{- if and $m.enabled $m.tls.enabled }}
- name: metrics-tls
  secret:
    secretName: {{ $m.tls.secretName }}
    items: [{key: {{ $m.tls.keystoreKey }}, path: {{ $m.tls.keystoreKey }}}]
    defaultMode: 0400
{{- end }}
{{- if and $m.enabled $m.basicAuth.enabled }}
- name: metrics-auth
  secret:
    secretName: {{ $m.basicAuth.secretName }}
    items: [{key: {{ $m.basicAuth.usersKey }}, path: {{ $m.basicAuth.usersKey }}}]
    defaultMode: 0400
{{- end }}
{{- end -}}

{{- define "zk2kraft.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ default (include "zk2kraft.fullname" .) .Values.serviceAccount.name }}
{{- else -}}
{{ default "default" .Values.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{/* What every pod of the chart says about its account: the name, and no API token
unless serviceAccount.automountServiceAccountToken. */}}
{{- define "zk2kraft.podAccount" -}}
serviceAccountName: {{ include "zk2kraft.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.serviceAccount.automountServiceAccountToken }}
{{- end -}}

{{/* A workload's scheduling, (dict "root" $ "values" .Values.controllers "component"
"controller"): nodeSelector and tolerations as given; affinity as given, else the
anti-affinity preset (pods of the component apart, by hostname); spread constraints
as given, else the zone preset. */}}
{{- define "zk2kraft.scheduling" -}}
{{- $v := .values -}}
{{- $selector := dict "matchLabels" (merge (fromYaml (include "zk2kraft.selectorLabels" .root)) (dict "app.kubernetes.io/component" .component)) -}}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $v.affinity }}
affinity:
  {{- toYaml $v.affinity | nindent 2 }}
{{- else if eq $v.podAntiAffinityPreset "soft" }}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            {{- toYaml $selector | nindent 12 }}
{{- else if eq $v.podAntiAffinityPreset "hard" }}
affinity:
  podAntiAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector:
          {{- toYaml $selector | nindent 10 }}
{{- end }}
{{- if $v.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml $v.topologySpreadConstraints | nindent 2 }}
{{- else if eq $v.topologySpreadPreset "soft" }}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      {{- toYaml $selector | nindent 6 }}
{{- end }}
{{- end -}}

{{/* Readiness and liveness probes, (dict "root" $ "port" NAME "tcpLive" BOOL): HTTP on
the metrics port (the paths migration/observability/health.py serves; HTTPS with
metrics.tls, which the kubelet does not verify; never behind metrics.basicAuth) when
metrics are on; else TCP on `port`, and liveness only when tcpLive (a KRaft-mode broker
opens its port only once caught up, which a liveness probe must not cut short). */}}
{{- define "zk2kraft.probes" -}}
{{- if .root.Values.metrics.enabled }}
readinessProbe:
  httpGet:
    path: /ready
    port: metrics
    {{- if .root.Values.metrics.tls.enabled }}
    scheme: HTTPS
    {{- end }}
  periodSeconds: 5
  timeoutSeconds: 3
livenessProbe:
  httpGet:
    path: /live
    port: metrics
    {{- if .root.Values.metrics.tls.enabled }}
    scheme: HTTPS
    {{- end }}
  initialDelaySeconds: 30
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 6
{{- else }}
readinessProbe:
  tcpSocket:
    port: {{ .port }}
  periodSeconds: 5
{{- if .tcpLive }}
livenessProbe:
  tcpSocket:
    port: {{ .port }}
  initialDelaySeconds: 30
  periodSeconds: 10
{{- end }}
{{- end }}
{{- end -}}

{{/* The brokers' stop budget in seconds, as `zk2kraft broker` computes it for the
config this phase gives them (BrokerConfig.stop_budget_s): 30 s to close after the
controlled shutdown; the controlled shutdown itself (when controlled.shutdown.enable)
300 s through the KRaft controller (KRaft mode), controlled.shutdown.max.retries x
controller.socket.timeout.ms through the ZooKeeper controller, and the larger of the
two while migrating. Rounded up to whole seconds. Held equal to the code by
tests/integration/test_helm_chart_operations.py (a change to either fails it). */}}
{{- define "zk2kraft.brokerStopBudget" -}}
{{- $config := .Values.brokers.config -}}
{{- $graceMs := 30000 -}}
{{- $kraftMs := 300000 -}}
{{- $mode := include "zk2kraft.brokerMode" . -}}
{{- $ms := $graceMs -}}
{{- $enabled := true -}}
{{- if hasKey $config "controlled.shutdown.enable" -}}
{{- $enabled = ne (get $config "controlled.shutdown.enable" | toString | trim | lower) "false" -}}
{{- end -}}
{{- if $enabled -}}
{{- $retries := 3 -}}
{{- if hasKey $config "controlled.shutdown.max.retries" -}}
{{- $retries = get $config "controlled.shutdown.max.retries" | int -}}
{{- end -}}
{{- $timeoutMs := 30000 -}}
{{- if hasKey $config "controller.socket.timeout.ms" -}}
{{- $timeoutMs = get $config "controller.socket.timeout.ms" | int -}}
{{- end -}}
{{- $attempts := mul $retries $timeoutMs -}}
{{- if eq $mode "kraft" -}}
{{- $attempts = $kraftMs -}}
{{- else if eq $mode "migrating" -}}
{{- $attempts = max $attempts $kraftMs -}}
{{- end -}}
{{- $ms = add $ms $attempts -}}
{{- end -}}
{{- div (add $ms 999) 1000 -}}
{{- end -}}

{{/* A local Spark master (local, local[N], local[*], local[N,F]): executors in the
audit's own pod (the rule of migration/audit/handoff.py's is_local_master). */}}
{{- define "zk2kraft.localSparkMaster" -}}
{{- if regexMatch "^local(\\[(\\*|[1-9][0-9]*)(,[1-9][0-9]*)?\\])?$" .Values.audit.sparkMaster -}}true{{- end -}}
{{- end -}}
