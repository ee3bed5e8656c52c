{{/*
Render-time checks of value combinations that cannot work on a cluster (values.schema.json
checks each value's type and range first). Each message names the value to change.
templates/validate.yaml calls this before anything renders.
*/}}
{{- define "prima.validate" -}}
{{- $v := .Values -}}
{{- $tp := int $v.parallel.tensorParallel -}}
{{- $pp := int $v.parallel.pipelineParallel -}}
{{- $ranks := mul $tp $pp -}}
{{- $pods := int $v.podsPerReplica -}}
{{- $gpus := int $v.gpusPerPod -}}
{{- $real := eq $v.serve.backend "real" -}}

{{- /* ranks, pods and GPUs */ -}}
{{- if $real -}}
{{- if gt $gpus 0 -}}
{{- if ne $ranks (mul $pods $gpus) -}}
{{- fail (printf "parallel.tensorParallel x parallel.pipelineParallel = %d x %d = %d ranks, but podsPerReplica x gpusPerPod = %d x %d = %d GPUs: prima runs one rank per GPU, so they must be equal (change parallel.*, podsPerReplica or gpusPerPod)" $tp $pp $ranks $pods $gpus (mul $pods $gpus)) -}}
{{- end -}}
{{- else if ne (mod $ranks $pods) 0 -}}
{{- fail (printf "podsPerReplica %d does not divide the %d ranks (parallel.tensorParallel x parallel.pipelineParallel = %d x %d): every pod of a replica runs the same number of ranks" $pods $ranks $tp $pp) -}}
{{- end -}}
{{- if and (eq $v.serve.device "cuda") (eq $gpus 0) -}}
{{- fail "serve.device is cuda but gpusPerPod is 0: a pod gets no GPU (set gpusPerPod, or serve.device=cpu)" -}}
{{- end -}}
{{- if and (eq $v.serve.device "cpu") (gt $gpus 0) -}}
{{- fail (printf "gpusPerPod is %d but serve.device is cpu: the GPUs would sit idle (set serve.device=cuda, or gpusPerPod=0)" $gpus) -}}
{{- end -}}
{{- if $v.serve.scenario -}}
{{- fail "serve.scenario is set but serve.backend is real: a scenario drives the sim backend only (set serve.backend=sim, or remove serve.scenario)" -}}
{{- end -}}
{{- else -}}
{{- if gt $pods 1 -}}
{{- fail (printf "podsPerReplica is %d but serve.backend is sim: the simulator serves a whole replica in one process (set podsPerReplica=1; the scenario carries TP and PP)" $pods) -}}
{{- end -}}
{{- if gt $gpus 0 -}}
{{- fail (printf "gpusPerPod is %d but serve.backend is sim: the simulator needs no GPU (set gpusPerPod=0)" $gpus) -}}
{{- end -}}
{{- end -}}
{{- if and (gt (int $v.rdma.count) 0) (not $v.rdma.resourceName) -}}
{{- fail "rdma.count is set but rdma.resourceName is empty (e.g. rdma/shared)" -}}
{{- end -}}

{{- /* model source */ -}}
{{- if $real -}}
{{- $src := $v.model.source -}}
{{- if eq $src "none" -}}
{{- fail "model.source is none but serve.backend is real: the real backend serves a GGUF file (model.source url, pvc, hostPath or image)" -}}
{{- else if and (eq $src "url") (not $v.model.url) -}}
{{- fail "model.url is empty but model.source is url: set model.url (and model.sha256), or another model.source (pvc, hostPath, image)" -}}
{{- else if and (eq $src "url") (not $v.kserve.enabled) (not (regexMatch "^https?://" $v.model.url)) -}}
{{- fail (printf "model.url %s: the chart downloads it with curl, so it must be http:// or https:// (KServe's storageUri also takes s3:// and gs:// with kserve.enabled)" $v.model.url) -}}
{{- else if and (eq $src "pvc") (not $v.model.claimName) -}}
{{- fail "model.claimName is empty but model.source is pvc: name the PersistentVolumeClaim that holds model.path" -}}
{{- else if and (eq $src "hostPath") (not $v.model.hostPath) -}}
{{- fail "model.hostPath is empty but model.source is hostPath: name the node directory that holds the model file" -}}
{{- end -}}
{{- if and (has $src (list "url" "pvc" "hostPath")) (eq (dir $v.model.path) "/") -}}
{{- fail (printf "model.path %s is at the file system root: the model volume is mounted at its directory (e.g. /models/model.gguf)" $v.model.path) -}}
{{- end -}}
{{- end -}}

{{- /* serve.extraArgs */ -}}
{{- $chartFlags := splitList " " (include "prima.chartFlags" .) -}}
{{- range $v.serve.extraArgs -}}
{{- $flag := first (splitList "=" (toString .)) -}}
{{- if has $flag $chartFlags -}}
{{- fail (printf "serve.extraArgs has %s, which the chart sets from its own values (docs/deploy.md, 'Values'): set that value instead" $flag) -}}
{{- end -}}
{{- end -}}

{{- /* capacity */ -}}
{{- $maxR := int (include "prima.maxReplicas" .) -}}
{{- $perReplica := mul $pods $gpus -}}
{{- if and (gt (int $v.clusterGpus) 0) (gt (mul $maxR $perReplica) (int $v.clusterGpus)) -}}
{{- $what := "replicaCount" -}}
{{- if $v.autoscaling.enabled -}}{{- $what = "autoscaling.maxReplicas" -}}{{- end -}}
{{- fail (printf "%s %d x %d GPUs per replica (podsPerReplica %d x gpusPerPod %d) = %d GPUs, more than clusterGpus %d: the replicas beyond %d would stay Pending" $what $maxR $perReplica $pods $gpus (mul $maxR $perReplica) (int $v.clusterGpus) (div (int $v.clusterGpus) (max 1 $perReplica))) -}}
{{- end -}}

{{- /* autoscaling */ -}}
{{- $as := $v.autoscaling -}}
{{- if $as.enabled -}}
{{- if gt (int $as.minReplicas) (int $as.maxReplicas) -}}
{{- fail (printf "autoscaling.minReplicas %d is above autoscaling.maxReplicas %d" (int $as.minReplicas) (int $as.maxReplicas)) -}}
{{- end -}}
{{- if and (le (int $as.gpuUtilization) 0) (not $as.customMetric.name) -}}
{{- fail "autoscaling.enabled but no metric: set autoscaling.gpuUtilization (GPU pods) or autoscaling.customMetric.name" -}}
{{- end -}}
{{- if and (gt (int $as.gpuUtilization) 0) (eq $gpus 0) -}}
{{- fail (printf "autoscaling.gpuUtilization is %d but gpusPerPod is 0: no pod exports %s (set autoscaling.gpuUtilization=0 and use autoscaling.customMetric)" (int $as.gpuUtilization) (include "prima.gpuUtilMetric" .)) -}}
{{- end -}}
{{- with $as.customMetric.name -}}
{{- $allowed := splitList " " (include "prima.hpaMetrics" $) -}}
{{- if eq . (include "prima.gpuUtilMetric" $) -}}
{{- fail (printf "autoscaling.customMetric.name %s: GPU utilization comes from DCGM, not from prima; use autoscaling.gpuUtilization" .) -}}
{{- else if not (has . $allowed) -}}
{{- $hint := "" -}}
{{- if contains ":" . -}}{{- $hint = printf " (the Prometheus adapter serves %s as %s)" . (replace ":" "_" .) -}}{{- end -}}
{{- fail (printf "autoscaling.customMetric.name %s is not a metric prima exports%s; one of: %s" . $hint (join ", " $allowed)) -}}
{{- end -}}
{{- if not $as.customMetric.targetAverageValue -}}
{{- fail (printf "autoscaling.customMetric.targetAverageValue is empty: the value of %s per replica the HPA aims at (e.g. \"8\", \"800m\")" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* disruption budget */ -}}
{{- if $v.podDisruptionBudget.enabled -}}
{{- $minR := int (include "prima.minReplicas" .) -}}
{{- if gt (int $v.podDisruptionBudget.minAvailable) $minR -}}
{{- $what := "replicaCount" -}}
{{- if $as.enabled -}}{{- $what = "autoscaling.minReplicas" -}}{{- end -}}
{{- fail (printf "podDisruptionBudget.minAvailable %d is above %s %d: the budget could never be met and every node drain would hang" (int $v.podDisruptionBudget.minAvailable) $what $minR) -}}
{{- end -}}
{{- if $v.kserve.enabled -}}
{{- fail "podDisruptionBudget.enabled with kserve.enabled: KServe owns the predictor's pods (set podDisruptionBudget.enabled=false)" -}}
{{- end -}}
{{- end -}}

{{- /* KServe */ -}}
{{- if $v.kserve.enabled -}}
{{- if gt $pods 1 -}}
{{- fail (printf "kserve.enabled with podsPerReplica %d: the KServe predictor is one pod per replica (set podsPerReplica=1, or kserve.enabled=false for a LeaderWorkerSet)" $pods) -}}
{{- end -}}
{{- if and $real (eq $v.model.source "hostPath") -}}
{{- fail "kserve.enabled with model.source hostPath: KServe takes the model from storageUri (model.source url or pvc) or from the image (model.source image)" -}}
{{- end -}}
{{- end -}}

{{- /* monitoring files */ -}}
{{- if $v.metrics.prometheusRule.enabled -}}
{{- with $.Files.Get "files/prima.rules.yml" -}}
{{- $rules := fromYaml . -}}
{{- if or (hasKey $rules "Error") (not (hasKey $rules "groups")) -}}
{{- fail "metrics.prometheusRule.enabled but files/prima.rules.yml is not a Prometheus rules file (no top-level 'groups')" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
