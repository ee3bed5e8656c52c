{{/*
Names, labels and the pieces the workload templates share.
*/}}

{{- define "prima.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* At most 40 characters: a LeaderWorkerSet's pods are named NAME-GROUP-INDEX and its
StatefulSets carry a revision label, so the name leaves room for both. */}}
{{- define "prima.fullname" -}}
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

{{- define "prima.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "prima.selectorLabels" -}}
app.kubernetes.io/name: {{ include "prima.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "prima.labels" -}}
helm.sh/chart: {{ include "prima.chart" . }}
{{ include "prima.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: inference
{{- end -}}

{{/* Labels of the pods: the selector, the role (server: a one-pod replica; leader / worker:
the pods of a multi-pod group) and the GPU type. Call with (dict "ctx" $ "role" "leader"). */}}
{{- define "prima.podLabels" -}}
{{- $v := .ctx.Values -}}
{{ include "prima.selectorLabels" .ctx }}
prima/role: {{ .role }}
{{- if $v.gpuType }}
prima/gpu-type: {{ $v.gpuType | quote }}
{{- end }}
{{- with $v.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "prima.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Ranks in all, and per pod. */}}
{{- define "prima.ranks" -}}
{{- mul (int .Values.parallel.tensorParallel) (int .Values.parallel.pipelineParallel) -}}
{{- end -}}
{{- define "prima.ranksPerPod" -}}
{{- div (int (include "prima.ranks" .)) (max 1 (int .Values.podsPerReplica)) -}}
{{- end -}}

{{/* "true" when one pod runs several ranks or the replica spans pods: the pods start with
launch.sh (mpirun), else with `prima serve` directly. */}}
{{- define "prima.usesMpi" -}}
{{- if and (eq .Values.serve.backend "real") (gt (int (include "prima.ranks" .)) 1) -}}true{{- end -}}
{{- end -}}

{{- define "prima.multiPod" -}}
{{- if gt (int .Values.podsPerReplica) 1 -}}true{{- end -}}
{{- end -}}

{{/* HPA metrics prima exports, as the Prometheus adapter configuration in
deploy/prometheus-adapter/values.yaml serves them (Prometheus name with ':' -> '_'). Gauges
only: an HPA averages a current value per pod. tests/deploy/helm_chart_test.py checks each
against a running `prima serve` and against the adapter configuration. */}}
{{- define "prima.hpaMetrics" -}}
prima_num_requests_waiting prima_num_requests_running prima_kv_cache_usage_perc prima_gpu_utilization_perc vllm_num_requests_waiting vllm_num_requests_running vllm_kv_cache_usage_perc vllm_gpu_cache_usage_perc
{{- end -}}
{{- define "prima.gpuUtilMetric" -}}DCGM_FI_DEV_GPU_UTIL{{- end -}}

{{/* The replicas the PDB and the capacity check count on: the HPA's bounds when it is on. */}}
{{- define "prima.minReplicas" -}}
{{- if .Values.autoscaling.enabled -}}{{ int .Values.autoscaling.minReplicas }}{{- else -}}{{ int .Values.replicaCount }}{{- end -}}
{{- end -}}
{{- define "prima.maxReplicas" -}}
{{- if .Values.autoscaling.enabled -}}{{ int .Values.autoscaling.maxReplicas }}{{- else -}}{{ int .Values.replicaCount }}{{- end -}}
{{- end -}}

{{/* Model file name and the path prima opens (KServe: under /mnt/models). */}}
{{- define "prima.modelFile" -}}{{ base .Values.model.path }}{{- end -}}
{{- define "prima.kserveModelPath" -}}
{{- if eq .Values.model.source "url" -}}
/mnt/models/{{ base (first (splitList "?" .Values.model.url)) }}
{{- else if eq .Values.model.source "pvc" -}}
/mnt/models/{{ include "prima.modelFile" . }}
{{- else -}}
{{ .Values.model.path }}
{{- end -}}
{{- end -}}

{{/* The path prima opens the model at. */}}
{{- define "prima.modelPath" -}}
{{- if .Values.kserve.enabled -}}{{ include "prima.kserveModelPath" . }}{{- else -}}{{ .Values.model.path }}{{- end -}}
{{- end -}}

{{/* Flags the chart sets: serve.extraArgs may not repeat them. */}}
{{- define "prima.chartFlags" -}}
--backend --host --port --model --manifest --tp --pp --max-num-seqs --max-model-len --device --scenario --served-model-name --kernel-threads --max-concurrent --default-max-tokens --drain-timeout --speed --api-key
{{- end -}}

{{/* `prima serve` arguments as a JSON list. Call with (dict "ctx" $ "modelPath" PATH
"device" DEVICE): DEVICE "" leaves --device to launch.sh (one GPU per local rank). */}}
{{- define "prima.serveArgs" -}}
{{- $v := .ctx.Values -}}
{{- $s := $v.serve -}}
{{- $a := list "serve" "--backend" $s.backend "--host" $s.host "--port" (toString (int $s.port)) -}}
{{- if eq $s.backend "real" -}}
{{- $a = concat $a (list "--model" .modelPath) -}}
{{- if $v.model.sha256 -}}{{- $a = concat $a (list "--manifest" "/etc/prima/model/model.sha256") -}}{{- end -}}
{{- if $s.servedModelName -}}{{- $a = concat $a (list "--served-model-name" $s.servedModelName) -}}{{- end -}}
{{- $a = concat $a (list "--tp" (toString (int $v.parallel.tensorParallel)) "--pp" (toString (int $v.parallel.pipelineParallel))) -}}
{{- $a = concat $a (list "--max-num-seqs" (toString (int $s.maxNumSeqs))) -}}
{{- if gt (int $s.maxModelLen) 0 -}}{{- $a = concat $a (list "--max-model-len" (toString (int $s.maxModelLen))) -}}{{- end -}}
{{- if gt (int $s.kernelThreads) 0 -}}{{- $a = concat $a (list "--kernel-threads" (toString (int $s.kernelThreads))) -}}{{- end -}}
{{- if .device -}}{{- $a = concat $a (list "--device" .device) -}}{{- end -}}
{{- else -}}
{{- if $s.scenario -}}{{- $a = concat $a (list "--scenario" "/etc/prima/scenario/scenario.json") -}}{{- end -}}
{{- $a = concat $a (list "--speed" (toString $s.speed)) -}}
{{- end -}}
{{- $a = concat $a (list "--max-concurrent" (toString (int $s.maxConcurrent)) "--default-max-tokens" (toString (int $s.defaultMaxTokens)) "--drain-timeout" (toString (int $s.drainTimeout))) -}}
{{- range $s.extraArgs -}}{{- $a = append $a (toString .) -}}{{- end -}}
{{- toJson $a -}}
{{- end -}}

{{/* The GPUs and RDMA devices of one pod, merged into resources.limits (and requests). */}}
{{- define "prima.resources" -}}
{{- $v := .Values -}}
{{- $r := deepCopy (default (dict) $v.resources) -}}
{{- $extra := dict -}}
{{- if gt (int $v.gpusPerPod) 0 -}}{{- $_ := set $extra $v.gpuResourceName (int $v.gpusPerPod) -}}{{- end -}}
{{- if gt (int $v.rdma.count) 0 -}}{{- $_ := set $extra $v.rdma.resourceName (int $v.rdma.count) -}}{{- end -}}
{{- if $extra -}}
{{- $_ := set $r "limits" (merge (default (dict) $r.limits) $extra) -}}
{{- $_ := set $r "requests" (merge (default (dict) $r.requests) $extra) -}}
{{- end -}}
{{- if $r -}}{{ toYaml $r }}{{- else -}}{}{{- end -}}
{{- end -}}

{{- define "prima.nodeSelector" -}}
{{- $v := .Values -}}
{{- $ns := deepCopy (default (dict) $v.nodeSelector) -}}
{{- if $v.gpuNodeSelector.labelKey -}}
{{- $_ := set $ns $v.gpuNodeSelector.labelKey (default $v.gpuType $v.gpuNodeSelector.labelValue) -}}
{{- end -}}
{{- if $ns }}
nodeSelector:
  {{- toYaml $ns | nindent 2 }}
{{- end -}}
{{- end -}}

{{/* Scheduling and pod-level settings shared by every pod template. Call with
(dict "ctx" $ "role" ROLE). */}}
{{- define "prima.podCommon" -}}
{{- $v := .ctx.Values -}}
automountServiceAccountToken: false
enableServiceLinks: false
terminationGracePeriodSeconds: {{ add (int $v.serve.drainTimeout) 30 }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $v.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
{{- with $v.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- include "prima.nodeSelector" .ctx }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $v.topologySpread }}
topologySpreadConstraints:
{{- range $v.topologySpread }}
  - topologyKey: {{ required "topologySpread[].topologyKey is required" .topologyKey }}
    maxSkew: {{ default 1 .maxSkew }}
    whenUnsatisfiable: {{ default "ScheduleAnyway" .whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "prima.selectorLabels" $.ctx | nindent 8 }}
        prima/role: {{ $.role }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Annotations of every pod: config checksum (a changed script, scenario or manifest rolls
the pods) and, on the pod that serves HTTP, Prometheus' scrape annotations. Call with
(dict "ctx" $ "role" ROLE). */}}
{{- define "prima.podAnnotations" -}}
{{- $v := .ctx.Values -}}
checksum/config: {{ include (print .ctx.Template.BasePath "/configmap.yaml") .ctx | sha256sum }}
{{- if and $v.metrics.podAnnotations (ne .role "worker") }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ $v.serve.port | quote }}
prometheus.io/path: {{ $v.metrics.path | quote }}
{{- end }}
{{- with $v.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volumes: launch script, scenario, manifest, model, /tmp, /dev/shm, ssh key. */}}
{{- define "prima.volumes" -}}
{{- $v := .Values -}}
- name: tmp
  emptyDir: {}
- name: config
  configMap:
    name: {{ include "prima.fullname" . }}
    defaultMode: 0555
{{- if include "prima.usesMpi" . }}
- name: shm
  emptyDir:
    medium: Memory
    sizeLimit: {{ $v.mpi.shmSizeLimit }}
{{- end }}
{{- if include "prima.multiPod" . }}
- name: ssh-key
  secret:
    secretName: {{ include "prima.fullname" . }}-ssh
    defaultMode: 0444
{{- end }}
{{- if eq $v.serve.backend "real" }}
{{- if eq $v.model.source "url" }}
- name: model
  emptyDir:
    {{- if $v.model.sizeLimit }}
    sizeLimit: {{ $v.model.sizeLimit }}
    {{- else }}
    {}
    {{- end }}
{{- else if eq $v.model.source "pvc" }}
- name: model
  persistentVolumeClaim:
    claimName: {{ $v.model.claimName }}
    readOnly: true
{{- else if eq $v.model.source "hostPath" }}
- name: model
  hostPath:
    path: {{ $v.model.hostPath }}
    type: Directory
{{- end }}
{{- end }}
{{- end -}}

{{- define "prima.volumeMounts" -}}
{{- $v := .Values -}}
- name: tmp
  mountPath: /tmp
- name: config
  mountPath: /etc/prima/launch/launch.sh
  subPath: launch.sh
{{- if and (eq $v.serve.backend "sim") $v.serve.scenario }}
- name: config
  mountPath: /etc/prima/scenario/scenario.json
  subPath: scenario.json
{{- end }}
{{- if and (eq $v.serve.backend "real") $v.model.sha256 }}
- name: config
  mountPath: /etc/prima/model/model.sha256
  subPath: model.sha256
{{- end }}
{{- if include "prima.usesMpi" . }}
- name: shm
  mountPath: /dev/shm
{{- end }}
{{- if include "prima.multiPod" . }}
- name: ssh-key
  mountPath: /etc/prima/ssh
  readOnly: true
{{- end }}
{{- if and (eq $v.serve.backend "real") (has $v.model.source (list "url" "pvc" "hostPath")) }}
- name: model
  mountPath: {{ dir $v.model.path }}
  readOnly: {{ ne $v.model.source "url" }}
{{- end }}
{{- end -}}

{{/* The init container that downloads model.url into the model volume (source url). */}}
{{- define "prima.fetchModel" -}}
{{- $v := .Values -}}
{{- if and (eq $v.serve.backend "real") (eq $v.model.source "url") }}
initContainers:
  - name: fetch-model
    image: {{ printf "%s:%s" $v.model.fetchImage.repository $v.model.fetchImage.tag }}
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "/etc/prima/launch/launch.sh", "fetch"]
    env:
      - name: PRIMA_MODEL_URL
        value: {{ $v.model.url | quote }}
      - name: PRIMA_MODEL_FILE
        value: {{ $v.model.path | quote }}
    securityContext:
      {{- toYaml $v.securityContext | nindent 6 }}
      runAsUser: 65532                 # any non-root user: curl writes into the emptyDir
      runAsGroup: 65532
    volumeMounts:
      - name: tmp
        mountPath: /tmp
      - name: config
        mountPath: /etc/prima/launch/launch.sh
        subPath: launch.sh
      - name: model
        mountPath: {{ dir $v.model.path }}
{{- end }}
{{- end -}}

{{/* Environment of the serving container (leader / one-pod replica) and of the workers. */}}
{{- define "prima.env" -}}
{{- $v := .Values -}}
{{- $names := list -}}
{{- if include "prima.usesMpi" . }}
- name: PRIMA_RANKS
  value: {{ include "prima.ranks" . | quote }}
- name: PRIMA_RANKS_PER_POD
  value: {{ include "prima.ranksPerPod" . | quote }}
- name: PRIMA_PODS
  value: {{ $v.podsPerReplica | int | quote }}
- name: PRIMA_DEVICE
  value: {{ $v.serve.device | quote }}
{{- if include "prima.multiPod" . }}
- name: PRIMA_SSH_PORT
  value: {{ $v.mpi.sshPort | int | quote }}
- name: PRIMA_WORKER_WAIT_S
  value: {{ $v.mpi.workerWaitSeconds | int | quote }}
{{- end }}
- name: PRIMA_KILL_TIMEOUT_S
  value: {{ add (int $v.serve.drainTimeout) 10 | quote }}
{{- with $v.mpi.extraArgs }}
- name: PRIMA_MPI_EXTRA_ARGS
  value: {{ join " " . | quote }}
{{- end }}
{{- range $k, $val := $v.mpi.rankEnv }}
{{- $names = append $names $k }}
- name: {{ $k }}
  value: {{ $val | toString | quote }}
{{- end }}
{{- end }}
{{- if $v.serve.apiKeySecret.name }}
{{- $names = append $names "PRIMA_API_KEY" }}
- name: PRIMA_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $v.serve.apiKeySecret.name }}
      key: {{ $v.serve.apiKeySecret.key }}
{{- end }}
{{- range $v.env }}
{{- $names = append $names .name }}
{{- end }}
{{- if include "prima.usesMpi" . }}
- name: PRIMA_RANK_ENV
  value: {{ join " " $names | quote }}
{{- end }}
{{- with $v.env }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Probes of the container that serves HTTP (rank 0). */}}
{{- define "prima.probes" -}}
{{- $v := .Values -}}
startupProbe:
  httpGet:
    path: /health
    port: http
  periodSeconds: {{ $v.probes.periodSeconds }}
  failureThreshold: {{ max 1 (div (int $v.probes.startupSeconds) (int $v.probes.periodSeconds)) }}
livenessProbe:
  httpGet:
    path: /health
    port: http
  periodSeconds: {{ $v.probes.periodSeconds }}
  timeoutSeconds: 5
  failureThreshold: 6
readinessProbe:
  httpGet:
    path: /v2/health/ready
    port: http
  periodSeconds: 5
  timeoutSeconds: 5
  failureThreshold: 2
{{- end -}}

{{/* The pods that serve HTTP: a one-pod replica's pod, or a group's leader. */}}
{{- define "prima.servingRole" -}}
{{- if include "prima.multiPod" . -}}leader{{- else -}}server{{- end -}}
{{- end -}}

{{/* What the HPA scales. */}}
{{- define "prima.scaleTarget" -}}
{{- if .Values.kserve.enabled -}}
apiVersion: apps/v1
kind: Deployment
name: {{ include "prima.fullname" . }}-predictor
{{- else if include "prima.multiPod" . -}}
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
name: {{ include "prima.lwsName" . }}
{{- else -}}
apiVersion: apps/v1
kind: Deployment
name: {{ include "prima.fullname" . }}
{{- end -}}
{{- end -}}

{{/* The LeaderWorkerSet's name: not the fullname, which the chart's Service has (the LWS
controller makes a headless Service of the LWS's own name). Pods: NAME-GROUP[-INDEX]. */}}
{{- define "prima.lwsName" -}}
{{- printf "%s-group" (include "prima.fullname" .) -}}
{{- end -}}
