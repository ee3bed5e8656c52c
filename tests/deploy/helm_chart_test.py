#!/usr/bin/env python3
"""The prima Helm chart (deploy/helm/prima): render, validate, check behaviour and bad input.

  helm_chart_test.py [--prima build/prima]

- `helm lint --strict` on the default values and each seed's values file.
- `helm template` (Kubernetes KUBE_VERSION) of the default values (plus the one value without
  a default, model.url), each seed's values file (deploy/helm/seeds/) and variants (HPA,
  sim backend, KServe, monitoring files); every manifest is validated:
  built-in kinds with kubernetes-validate (strict: unknown fields are errors) against
  Kubernetes KUBE_VERSION; the CRD kinds (LeaderWorkerSet, ServiceMonitor, PodMonitor,
  PrometheusRule, ServingRuntime, InferenceService), for which kubernetes-validate has no
  schema, by their apiVersion/kind and required fields here, with the pod templates and
  containers inside them validated strictly as core/v1 Pods.
- What the seeds' deployments must be (seed 000: one LeaderWorkerSet group of 2 pods x 4
  GPUs = TP4 x PP2; seed 001: 2 replicas of 4 GPUs, PDB minAvailable 2; seed 004: 32 pods x
  1 GPU, a NetworkPolicy that opens only port 8000; the HPA from 4 to 32 replicas at 80% GPU
  utilization), the probes, the mpirun command (launch.sh, dry run: -np TP*PP, the hosts).
- Values that cannot work fail at render, with a message naming the value.
- With --prima: the HPA metric allow-list against the gauges a running `prima serve --backend
  sim` exports (and the probe paths it answers); the arguments rendered for seed 004 on the
  simulator, run; launch.sh starting a real PP2 replica under mpirun on this machine (when
  mpirun and the model are present); and, where root, unshare, setpriv and sshd are present,
  a two-pod group (worker sshd as a non-root user, rank 1 over ssh) drained by SIGTERM.

Exit 77 (skipped) only when there is no helm (scripts/fetch-helm.sh fetches it).
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

try:
    import yaml
except ImportError:  # PyYAML comes with kubernetes-validate
    print("FAIL: the Python package PyYAML is missing: python3 -m pip install kubernetes-validate==1.31.0 "
          "(scripts/test.sh does)")
    sys.exit(1)

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "prima"
SEEDS = ROOT / "deploy" / "helm" / "seeds"
ADAPTER = ROOT / "deploy" / "prometheus-adapter" / "values.yaml"
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
KUBE_VERSION = "1.31.0"
KUBERNETES_VALIDATE = "1.31.0"  # the pinned package (scripts/test.sh installs it)
SKIP = 77
URL = "https://models.example.com/llama/model.gguf"
SHA = "0123456789abcdef" * 4
# The one value without a default (a real backend needs a model).
DEFAULTS = ["--set", f"model.url={URL}"]

BUILTIN = {
    ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "Service"), ("apps/v1", "Deployment"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"), ("policy/v1", "PodDisruptionBudget"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
}

failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", flush=True)
    return cond


def find_helm():
    r = subprocess.run(["bash", str(ROOT / "scripts" / "fetch-helm.sh"), "--offline"],
                       capture_output=True, text=True)
    if r.returncode == 0 and r.stdout.strip():
        return r.stdout.strip()
    for cand in (os.environ.get("PRIMA_HELM"), shutil.which("helm")):
        if cand and os.access(cand, os.X_OK):
            v = subprocess.run([cand, "version", "--short"], capture_output=True, text=True)
            if v.returncode == 0 and v.stdout.startswith("v3."):
                return cand
    return None


HELM = None


def helm(*args, chart=CHART):
    return subprocess.run([HELM, *args], capture_output=True, text=True, cwd=ROOT)


def render(*args, chart=CHART):
    """Manifests of `helm template` as a list of dicts; raises with helm's message."""
    r = helm("template", "t", str(chart), "--namespace", "prima-test",
             "--kube-version", KUBE_VERSION, *args)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def render_error(*args, chart=CHART):
    r = helm("template", "t", str(chart), "--namespace", "prima-test",
             "--kube-version", KUBE_VERSION, *args)
    return None if r.returncode == 0 else r.stderr.strip()


def seed(name):
    return ["-f", str(SEEDS / name)]


def scenario_configmap(docs):
    """The ConfigMap holding serve.scenario (the dashboard's, when files/ has one, is another)."""
    return one([d for d in docs if "scenario.json" in d.get("data", {})], "ConfigMap")


def one(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def kinds(docs):
    return sorted(d["kind"] for d in docs)


# ---------------------------------------------------------------------------------------
# Validation

def validate_builtin(doc, where):
    import kubernetes_validate
    try:
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
        return check(True, "")
    except kubernetes_validate.ValidationError as e:
        return check(False, f"{where}: {doc['kind']} {doc['metadata'].get('name')}: {e.message} at "
                            f"{'/'.join(str(p) for p in e.path)}")


def validate_pod_template(tmpl, where):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": tmpl.get("metadata") or {"name": "x"}, "spec": tmpl["spec"]}
    pod["metadata"] = dict(pod["metadata"], name="x")
    return validate_builtin(pod, where)


def validate_crd(doc, where):
    av, kind, spec = doc.get("apiVersion"), doc.get("kind"), doc.get("spec") or {}
    w = f"{where}: {kind} {doc['metadata'].get('name')}"
    check(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", doc["metadata"].get("name", "")) is not None,
          f"{w}: metadata.name is a DNS label")
    if kind == "LeaderWorkerSet":
        check(av == "leaderworkerset.x-k8s.io/v1", f"{w}: apiVersion {av}")
        lwt = spec.get("leaderWorkerTemplate") or {}
        check(isinstance(lwt.get("size"), int) and lwt["size"] >= 1, f"{w}: leaderWorkerTemplate.size")
        check("replicas" not in spec or isinstance(spec["replicas"], int), f"{w}: replicas")
        check(lwt.get("restartPolicy") in (None, "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"),
              f"{w}: restartPolicy")
        check(spec.get("startupPolicy") in (None, "LeaderCreated", "LeaderReady"), f"{w}: startupPolicy")
        check(set(spec) <= {"replicas", "leaderWorkerTemplate", "rolloutStrategy", "startupPolicy",
                            "networkConfig"}, f"{w}: unknown spec fields {sorted(spec)}")
        check(set(lwt) <= {"leaderTemplate", "workerTemplate", "size", "restartPolicy", "subGroupPolicy",
                           "volumeClaimTemplates"}, f"{w}: unknown leaderWorkerTemplate fields")
        check("workerTemplate" in lwt, f"{w}: workerTemplate is required")
        for t in ("leaderTemplate", "workerTemplate"):
            if t in lwt:
                validate_pod_template(lwt[t], f"{w}.{t}")
    elif kind in ("ServiceMonitor", "PodMonitor"):
        check(av == "monitoring.coreos.com/v1", f"{w}: apiVersion {av}")
        check(isinstance((spec.get("selector") or {}).get("matchLabels"), dict), f"{w}: spec.selector")
        eps = spec.get("endpoints" if kind == "ServiceMonitor" else "podMetricsEndpoints")
        check(isinstance(eps, list) and eps, f"{w}: endpoints")
        for ep in eps or []:
            check(isinstance(ep.get("port"), str) and ep["port"], f"{w}: endpoint port name")
            check(str(ep.get("path", "/")).startswith("/"), f"{w}: endpoint path")
            check(re.fullmatch(r"[0-9]+(ms|s|m|h)", str(ep.get("interval", "30s"))) is not None,
                  f"{w}: endpoint interval")
    elif kind == "PrometheusRule":
        check(av == "monitoring.coreos.com/v1", f"{w}: apiVersion {av}")
        groups = spec.get("groups")
        check(isinstance(groups, list) and groups, f"{w}: spec.groups")
        for g in groups or []:
            check(isinstance(g.get("name"), str) and g["name"], f"{w}: group name")
            for r in g.get("rules") or []:
                check(isinstance(r.get("expr"), (str, int, float)), f"{w}: rule expr")
                check(("alert" in r) != ("record" in r), f"{w}: a rule is an alert or a record")
    elif kind == "ServingRuntime":
        check(av == "serving.kserve.io/v1alpha1", f"{w}: apiVersion {av}")
        fmts = spec.get("supportedModelFormats")
        check(isinstance(fmts, list) and fmts and all(f.get("name") for f in fmts), f"{w}: supportedModelFormats")
        check(isinstance(spec.get("containers"), list) and spec["containers"], f"{w}: containers")
        pod = {"spec": {"containers": spec.get("containers", []), "volumes": spec.get("volumes", [])}}
        validate_pod_template(pod, f"{w} (containers, volumes)")
    elif kind == "InferenceService":
        check(av == "serving.kserve.io/v1beta1", f"{w}: apiVersion {av}")
        pred = spec.get("predictor") or {}
        model = pred.get("model") or {}
        check((model.get("modelFormat") or {}).get("name"), f"{w}: predictor.model.modelFormat.name")
        check(model.get("runtime"), f"{w}: predictor.model.runtime")
        for k in ("minReplicas", "maxReplicas"):
            check(isinstance(pred.get(k), int), f"{w}: predictor.{k}")
        c = {"name": "kserve-container", "image": "x", "resources": model.get("resources", {})}
        validate_pod_template({"spec": {"containers": [c], **{k: pred[k] for k in ("nodeSelector", "tolerations",
                               "affinity") if k in pred}}}, f"{w} (predictor resources, scheduling)")
    else:
        check(False, f"{w}: kind {kind} ({av}) is neither built-in nor a known CRD")


def validate(docs, where):
    for d in docs:
        if (d.get("apiVersion"), d.get("kind")) in BUILTIN:
            validate_builtin(d, where)
        else:
            validate_crd(d, where)


def rendered(where, *args, chart=CHART):
    """Render, validate every manifest, return them (None when the render failed)."""
    try:
        docs = render(*args, chart=chart)
    except RuntimeError as e:
        check(False, f"{where}: render failed: {e}")
        return None
    validate(docs, where)
    return docs


# ---------------------------------------------------------------------------------------
# Helpers on rendered workloads

def pod_specs(docs):
    """(role, pod spec, pods of that role per replica) for every pod template."""
    out = []
    for d in docs:
        if d["kind"] == "Deployment":
            out.append(("server", d["spec"]["template"], 1))
        elif d["kind"] == "LeaderWorkerSet":
            lwt = d["spec"]["leaderWorkerTemplate"]
            out.append(("leader", lwt["leaderTemplate"], 1))
            out.append(("worker", lwt["workerTemplate"], lwt["size"] - 1))
    return out


def container(tmpl):
    return tmpl["spec"]["containers"][0]


def env_of(c):
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def gpus_per_replica(docs, resource="nvidia.com/gpu"):
    total = 0
    for _, t, n in pod_specs(docs):
        total += n * int(container(t)["resources"].get("limits", {}).get(resource, 0))
    return total


def flag(args, name):
    i = args.index(name)
    return args[i + 1]


def launch_script(docs):
    return one(docs, "ConfigMap", "t-prima")["data"]["launch.sh"]


def dry_run_launch(docs, tmpl, extra_env=None):
    """launch.sh's mpirun command for a leader container (PRIMA_LAUNCH_PRINT=1)."""
    c = container(tmpl)
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "launch.sh"
        script.write_text(launch_script(docs))
        env = {"PATH": os.environ["PATH"], "PRIMA_LAUNCH_PRINT": "1"}
        env.update({k: v for k, v in env_of(c).items() if v is not None})
        env.update(extra_env or {})
        assert c["command"][:2] == ["/bin/sh", "/etc/prima/launch/launch.sh"], c["command"]
        r = subprocess.run(["sh", str(script), *c["command"][2:], *c["args"]], env=env,
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
        argv = r.stdout.splitlines()
        return [str(script) if a == str(script) else a for a in argv], str(script)


# ---------------------------------------------------------------------------------------
# Tests

def test_lint():
    for name, args in [("defaults", DEFAULTS)] + [(p.name, ["-f", str(p)]) for p in sorted(SEEDS.glob("*.yaml"))]:
        r = helm("lint", "--strict", str(CHART), "--kube-version", KUBE_VERSION, *args)
        check(r.returncode == 0, f"helm lint --strict {name}: {r.stdout[-2000:]} {r.stderr[-2000:]}")


def test_defaults():
    err = render_error()
    check(err and "model.url is empty" in err, f"bare defaults must fail naming model.url: {err}")
    docs = rendered("defaults", *DEFAULTS, "--set", f"model.sha256={SHA}")
    if not docs:
        return
    check(kinds(docs) == ["ConfigMap", "Deployment", "Service"], f"defaults: kinds {kinds(docs)}")
    dep = one(docs, "Deployment")
    check(dep["spec"]["replicas"] == 1, "defaults: 1 replica")
    t = dep["spec"]["template"]
    c = container(t)
    check("command" not in c, "defaults: one rank starts with the image's entry point (no mpirun)")
    a = c["args"]
    check(a[:3] == ["serve", "--backend", "real"], f"defaults: args {a}")
    check(flag(a, "--model") == "/models/model.gguf" and flag(a, "--tp") == "1" and flag(a, "--pp") == "1"
          and flag(a, "--device") == "cpu" and flag(a, "--port") == "8000" and flag(a, "--host") == "0.0.0.0"
          and flag(a, "--max-num-seqs") == "8" and "--max-model-len" not in a,
          f"defaults: args {a}")
    check(flag(a, "--manifest") == "/etc/prima/model/model.sha256", "defaults: --manifest with model.sha256")
    cm = one(docs, "ConfigMap")
    check(cm["data"]["model.sha256"].strip() == f"{SHA}  model.gguf", f"defaults: manifest {cm['data']}")
    check(c["startupProbe"]["httpGet"]["path"] == "/health" and c["livenessProbe"]["httpGet"]["path"] == "/health"
          and c["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready", "defaults: probes")
    check(c["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}], f"defaults: ports {c['ports']}")
    init = t["spec"]["initContainers"][0]
    check(env_of(init) == {"PRIMA_MODEL_URL": URL, "PRIMA_MODEL_FILE": "/models/model.gguf"},
          "defaults: the init container downloads model.url to model.path")
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    check("/models" in mounts and "/tmp" in mounts, f"defaults: mounts {sorted(mounts)}")
    check(t["spec"]["securityContext"]["runAsNonRoot"] is True and c["securityContext"]["readOnlyRootFilesystem"],
          "defaults: non-root, read-only root")
    check("limits" not in (c.get("resources") or {}), "defaults: no GPU")
    check(t["metadata"]["annotations"]["prometheus.io/path"] == "/metrics", "defaults: scrape annotations")
    check(t["spec"]["terminationGracePeriodSeconds"] == 60, "defaults: grace period = drain timeout 30 + 30 s")
    svc = one(docs, "Service")
    check(svc["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}],
          f"defaults: service ports {svc['spec']['ports']}")
    check(svc["spec"]["selector"].items() <= t["metadata"]["labels"].items(), "defaults: Service selects the pods")


def check_one_group(docs, where, pods, gpus):
    """One LeaderWorkerSet replica of `pods` pods holding `gpus` GPUs in all."""
    lws = one(docs, "LeaderWorkerSet")
    check(lws["spec"]["replicas"] == 1 and lws["spec"]["leaderWorkerTemplate"]["size"] == pods,
          f"{where}: one group of {pods} pods")
    check(gpus_per_replica(docs) == gpus, f"{where}: {gpus} GPUs per replica, got {gpus_per_replica(docs)}")


def test_seed000():
    docs = rendered("seed000", *seed("seed000-bitbrick-k1.yaml"))
    if not docs:
        return
    check_one_group(docs, "seed000", 2, 8)
    for role, t, _ in pod_specs(docs):
        c = container(t)
        lim = c["resources"]["limits"]
        check(lim.get("nvidia.com/gpu") == 4 and lim.get("rdma/shared") == 1, f"seed000 {role}: 4 GPUs + RDMA: {lim}")
        check(t["metadata"]["labels"].get("prima/gpu-type") == "A100-SXM4-80GB", f"seed000 {role}: gpu-type label")
        check(c["command"][2] == role, f"seed000 {role}: launch.sh {role}")
    leader = pod_specs(docs)[0][1]
    a = container(leader)["args"]
    check(flag(a, "--tp") == "4" and flag(a, "--pp") == "2" and flag(a, "--max-num-seqs") == "256"
          and flag(a, "--max-model-len") == "4096" and "--device" not in a, f"seed000: args {a}")
    e = env_of(container(leader))
    check((e["PRIMA_RANKS"], e["PRIMA_RANKS_PER_POD"], e["PRIMA_PODS"], e["PRIMA_DEVICE"]) == ("8", "4", "2", "cuda"),
          f"seed000: rank env {e}")
    argv, script = dry_run_launch(docs, leader, {"LWS_LEADER_ADDRESS": "t-prima-group-0.t-prima-group.prima-test"})
    check(argv[0] == "mpirun" and flag(argv, "-np") == "8", f"seed000: mpirun -np 8: {argv}")
    check(flag(argv, "--host") == "t-prima-group-0:4,t-prima-group-0-1.t-prima-group.prima-test:4",
          f"seed000: hosts {flag(argv, '--host')}")
    i = argv.index("rank")
    check(argv[i - 2:i] == ["/bin/sh", script] and argv[i + 1:] == a, "seed000: each rank runs launch.sh rank ARGS")
    check("UCX_TLS" in argv and "PRIMA_DEVICE" in argv, "seed000: rank env forwarded with -x")
    # What one rank runs: prima with the GPU of its local rank.
    with tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
        f.write(launch_script(docs))
        f.flush()
        r = subprocess.run(["sh", f.name, "rank", "serve", "--tp", "4"], capture_output=True, text=True, timeout=10,
                           env={"PATH": os.environ["PATH"], "PRIMA_BINARY": "echo", "PRIMA_DEVICE": "cuda",
                                "OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_RANK": "7"})
    check(r.stdout.strip() == "serve --tp 4 --device cuda:3", f"seed000: local rank 3 takes cuda:3: {r.stdout} {r.stderr}")
    worker = pod_specs(docs)[1][1]
    wc = container(worker)
    check(wc["ports"][0]["containerPort"] == 2222 and wc["readinessProbe"]["tcpSocket"]["port"] == "ssh",
          "seed000: worker sshd port")
    check("prometheus.io/scrape" not in worker["metadata"]["annotations"], "seed000: workers are not scraped")
    svc = one(docs, "Service")
    check(svc["spec"]["selector"].get("prima/role") == "leader", "seed000: the Service sends to the leaders")
    sm = one(docs, "ServiceMonitor")
    check(sm["spec"]["endpoints"][0]["path"] == "/prima/metrics" and sm["spec"]["endpoints"][0]["port"] == "http",
          "seed000: ServiceMonitor scrapes /prima/metrics")
    check(sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items(),
          "seed000: ServiceMonitor selects the Service")
    sec = one(docs, "Secret")
    check("id_ecdsa" in sec["data"], "seed000: ssh key Secret")
    for f, kind in (("prima.rules.yml", "PrometheusRule"), ("prima-dashboard.json", "ConfigMap")):
        present = (CHART / "files" / f).exists()
        n = len([d for d in docs if d["kind"] == kind and (kind != "ConfigMap" or d["metadata"]["name"].endswith("-dashboard"))])
        check(n == (1 if present else 0), f"seed000: {kind} from files/{f} rendered iff the file is there")


def test_seed001():
    docs = rendered("seed001", *seed("seed001-vllm-a100.yaml"))
    if not docs:
        return
    dep = one(docs, "Deployment")
    check(dep["spec"]["replicas"] == 2, "seed001: 2 replicas")
    t = dep["spec"]["template"]
    c = container(t)
    check(c["resources"]["limits"] == {"nvidia.com/gpu": 4}, f"seed001: 4 GPUs per pod: {c['resources']}")
    check(flag(c["args"], "--tp") == "4" and flag(c["args"], "--pp") == "1", "seed001: TP4")
    argv, _ = dry_run_launch(docs, t)
    check(flag(argv, "-np") == "4" and flag(argv, "--host") == "localhost:4", f"seed001: mpirun in the pod: {argv}")
    check(any(v["name"] == "shm" and v["emptyDir"].get("medium") == "Memory" for v in t["spec"]["volumes"]),
          "seed001: /dev/shm in memory for the ranks")
    pdb = one(docs, "PodDisruptionBudget")
    check(pdb["spec"]["minAvailable"] == 2, "seed001: PDB minAvailable 2")
    check(pdb["spec"]["selector"]["matchLabels"].items() <= t["metadata"]["labels"].items(), "seed001: PDB selects the pods")


def test_seed004():
    docs = rendered("seed004", *seed("seed004-triton-50node.yaml"))
    if not docs:
        return
    lws = one(docs, "LeaderWorkerSet")
    check(lws["spec"]["leaderWorkerTemplate"]["size"] == 32 and lws["spec"]["replicas"] == 1, "seed004: 1 group of 32 pods")
    check(gpus_per_replica(docs) == 32, "seed004: 32 GPUs (TP32)")
    for role, t, _ in pod_specs(docs):
        lim = container(t)["resources"]["limits"]
        check(lim.get("nvidia.com/gpu") == 1 and lim.get("memory") == "30Gi", f"seed004 {role}: {lim}")
    leader = pod_specs(docs)[0][1]
    argv, _ = dry_run_launch(docs, leader, {"LWS_LEADER_ADDRESS": "t-prima-group-0.t-prima-group.prima-test.svc.cluster.local"})
    hosts = flag(argv, "--host").split(",")
    check(flag(argv, "-np") == "32" and len(hosts) == 32 and hosts[0] == "t-prima-group-0:1"
          and hosts[31] == "t-prima-group-0-31.t-prima-group.prima-test.svc.cluster.local:1", f"seed004: hosts {hosts[:2]}...")
    check(flag(container(leader)["args"], "--max-model-len") == "32768", "seed004: max model len")
    svc = one(docs, "Service")
    check(svc["spec"]["ports"][0]["port"] == 8000, "seed004: Service port 8000")
    np_ = one(docs, "NetworkPolicy")
    ing = np_["spec"]["ingress"]
    check(np_["spec"]["policyTypes"] == ["Ingress"], "seed004: NetworkPolicy on ingress")
    check(ing[0] == {"ports": [{"port": 8000, "protocol": "TCP"}]}, f"seed004: only port 8000 from outside: {ing[0]}")
    sel = np_["spec"]["podSelector"]["matchLabels"]
    check(len(ing) == 2 and "ports" not in ing[1] and ing[1]["from"] == [{"podSelector": {"matchLabels": sel}}],
          f"seed004: the group's own pods among themselves only: {ing[1:]}")
    for _, t, _ in pod_specs(docs):
        check(sel.items() <= t["metadata"]["labels"].items(), "seed004: NetworkPolicy selects the pods")
    # The seed's HPA (4..32 replicas) does not fit 50 accelerators with TP32 replicas.
    err = render_error(*seed("seed004-triton-50node.yaml"), "--set", "autoscaling.enabled=true")
    check(err and "autoscaling.maxReplicas 32 x 32 GPUs per replica" in err and "clusterGpus 50" in err,
          f"seed004: the seed's HPA must fail on capacity: {err}")
    docs = rendered("seed004+hpa", *seed("seed004-triton-50node.yaml"), "--set", "autoscaling.enabled=true",
                    "--set", "clusterGpus=0")
    if docs:
        hpa = one(docs, "HorizontalPodAutoscaler")
        check(hpa["spec"]["scaleTargetRef"] == {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                                                "name": "t-prima-group"}, "seed004+hpa: scales the LeaderWorkerSet")
        check("replicas" not in one(docs, "LeaderWorkerSet")["spec"], "seed004+hpa: the HPA owns the replicas")


def test_hpa():
    docs = rendered("hpa gpu", *DEFAULTS, "--set", "gpusPerPod=1,serve.device=cuda,autoscaling.enabled=true")
    if docs:
        hpa = one(docs, "HorizontalPodAutoscaler")
        s = hpa["spec"]
        check(s["minReplicas"] == 4 and s["maxReplicas"] == 32, f"hpa: 4..32 {s}")
        check(s["metrics"] == [{"type": "Pods", "pods": {"metric": {"name": "DCGM_FI_DEV_GPU_UTIL"},
                                                          "target": {"type": "AverageValue", "averageValue": "80"}}}],
              f"hpa: DCGM GPU utilization 80: {s['metrics']}")
        check(s["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "t-prima"}, "hpa: target")
        check("replicas" not in one(docs, "Deployment")["spec"], "hpa: the Deployment leaves replicas to the HPA")
        check(flag(container(one(docs, "Deployment")["spec"]["template"])["args"], "--device") == "cuda:0",
              "hpa: one GPU rank on cuda:0")
    docs = rendered("hpa custom", *DEFAULTS, "--set", "autoscaling.enabled=true,autoscaling.gpuUtilization=0",
                    "--set", "autoscaling.customMetric.name=prima_num_requests_waiting",
                    "--set-string", "autoscaling.customMetric.targetAverageValue=8")
    if docs:
        m = one(docs, "HorizontalPodAutoscaler")["spec"]["metrics"]
        check(m == [{"type": "Pods", "pods": {"metric": {"name": "prima_num_requests_waiting"},
                                              "target": {"type": "AverageValue", "averageValue": "8"}}}],
              f"hpa: queue length metric {m}")


def test_sim():
    scenario = json.loads((ROOT / "scenarios" / "default.json").read_text())
    docs = rendered("sim", "--set", "serve.backend=sim,model.source=none", "--set-json",
                    f"serve.scenario={json.dumps(scenario)}")
    if not docs:
        return
    cm = one(docs, "ConfigMap")
    check(json.loads(cm["data"]["scenario.json"]) == scenario, "sim: the scenario as given")
    t = one(docs, "Deployment")["spec"]["template"]
    a = container(t)["args"]
    check(a[:3] == ["serve", "--backend", "sim"] and flag(a, "--scenario") == "/etc/prima/scenario/scenario.json"
          and "--model" not in a and "--tp" not in a, f"sim: args {a}")
    check("initContainers" not in t["spec"] and all(v["name"] != "model" for v in t["spec"]["volumes"]),
          "sim: no model volume")


def test_kserve():
    args = seed("seed001-vllm-a100.yaml") + ["--set", "kserve.enabled=true,podDisruptionBudget.enabled=false"]
    docs = rendered("kserve", *args)
    if docs:
        check(not {"Deployment", "Service", "PodDisruptionBudget"} & set(kinds(docs)), f"kserve: kinds {kinds(docs)}")
        isvc = one(docs, "InferenceService")
        model = isvc["spec"]["predictor"]["model"]
        check(model["storageUri"] == "pvc://llama-2-13b" and model["runtime"] == "t-prima"
              and model["resources"]["limits"] == {"nvidia.com/gpu": 4}, f"kserve: model {model}")
        check(isvc["spec"]["predictor"]["minReplicas"] == 2 == isvc["spec"]["predictor"]["maxReplicas"], "kserve: 2 replicas")
        sr = one(docs, "ServingRuntime")
        a = sr["spec"]["containers"][0]["args"]
        check(flag(a, "--model") == "/mnt/models/llama-2-13b.F16.gguf" and flag(a, "--tp") == "4", f"kserve: args {a}")
        check(one(docs, "PodMonitor")["spec"]["podMetricsEndpoints"][0]["port"] == "http1", "kserve: PodMonitor")
    docs = rendered("kserve+hpa", *args, "--set", "autoscaling.enabled=true,clusterGpus=0")
    if docs:
        isvc = one(docs, "InferenceService")
        check(isvc["metadata"]["annotations"].get("serving.kserve.io/autoscalerClass") == "external",
              "kserve+hpa: KServe leaves scaling to the chart's HPA")
        check(one(docs, "HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]["name"] == "t-prima-predictor",
              "kserve+hpa: HPA on the predictor Deployment")
    docs = rendered("kserve url", *DEFAULTS, "--set", f"kserve.enabled=true,model.sha256={SHA}")
    if docs:
        isvc = one(docs, "InferenceService")
        check(isvc["spec"]["predictor"]["model"]["storageUri"] == URL, "kserve: storageUri = model.url")
        sr = one(docs, "ServingRuntime")
        check(flag(sr["spec"]["containers"][0]["args"], "--model") == "/mnt/models/model.gguf", "kserve: url's file")
        check(one(docs, "ConfigMap")["data"]["model.sha256"].strip() == f"{SHA}  model.gguf", "kserve: manifest")


def test_monitoring_files():
    """PrometheusRule and dashboard ConfigMap from files/, on a copy of the chart that has
    them (throwaway ones where the chart does not carry them yet)."""
    with tempfile.TemporaryDirectory() as d:
        chart = Path(d) / "prima"
        shutil.copytree(CHART, chart)
        rules, dash = chart / "files" / "prima.rules.yml", chart / "files" / "prima-dashboard.json"
        if not rules.exists():
            rules.write_text("groups:\n  - name: prima-test\n    rules:\n"
                             "      - alert: PrimaTestQueue\n        expr: sum(prima:num_requests_waiting) > 10\n"
                             "        for: 5m\n        labels: {severity: warning}\n"
                             "        annotations: {summary: '{{ $labels.pod }} queues'}\n"
                             "      - record: prima:test:ratio\n        expr: 1 - prima:kv_cache_usage_perc\n")
        if not dash.exists():
            dash.write_text(json.dumps({"title": "prima (test)", "panels": [{"title": "{{pod}}", "type": "timeseries"}]}))
        docs = rendered("monitoring files", *seed("seed000-bitbrick-k1.yaml"), chart=chart)
        if docs:
            pr = one(docs, "PrometheusRule")
            check(pr["spec"]["groups"] == yaml.safe_load(rules.read_text())["groups"], "PrometheusRule = files/prima.rules.yml")
            cm = one(docs, "ConfigMap", "t-prima-dashboard")
            check(cm["metadata"]["labels"].get("grafana_dashboard") == "1", "dashboard ConfigMap label")
            check(json.loads(cm["data"]["prima-dashboard.json"]) == json.loads(dash.read_text()), "dashboard JSON as is")
        docs = rendered("monitoring off", *seed("seed000-bitbrick-k1.yaml"), "--set",
                        "metrics.prometheusRule.enabled=false,metrics.grafanaDashboard.enabled=false", chart=chart)
        if docs:
            check("PrometheusRule" not in kinds(docs) and len(
                [x for x in docs if x["metadata"]["name"] == "t-prima-dashboard"]) == 0, "monitoring off: none")
        rules.write_text("not_groups: []\n")
        err = render_error(*seed("seed000-bitbrick-k1.yaml"), chart=chart)
        check(err and "files/prima.rules.yml is not a Prometheus rules file" in err, f"broken rules file: {err}")


SEED_SCENARIOS = {
    "seed000-bitbrick-k1.yaml": "scenarios/default.json",
    "seed001-vllm-a100.yaml": "scenarios/seed_claims/seed001_llama2_13b_a100_node.json",
    "seed004-triton-50node.yaml": "scenarios/seed_claims/seed004_moe_1t_domestic.json",
}


def test_seeds_on_the_simulator():
    """Each seed's values file with deploy/helm/seeds/sim.yaml and its scenario: one CPU pod
    that serves the scenario simulated."""
    for name, scen in SEED_SCENARIOS.items():
        scenario = json.loads((ROOT / scen).read_text())
        docs = rendered(f"{name}+sim", *seed(name), *seed("sim.yaml"), "--set-json",
                        f"serve.scenario={json.dumps(scenario)}")
        if not docs:
            continue
        dep = one(docs, "Deployment")
        c = container(dep["spec"]["template"])
        res = json.dumps(c.get("resources"))
        check(dep["spec"]["replicas"] == 1 and "nvidia.com/gpu" not in res and "rdma/" not in res,
              f"{name}+sim: one pod, no GPU or RDMA device: {res}")
        check(c["args"][:3] == ["serve", "--backend", "sim"] and "command" not in c, f"{name}+sim: args {c['args']}")
        check(json.loads(scenario_configmap(docs)["data"]["scenario.json"]) == scenario, f"{name}+sim: {scen}")


def test_scheduling_and_options():
    """Node selectors, topology spread, tolerations, the API key, the multi-pod PDB."""
    docs = rendered("options", *seed("seed004-triton-50node.yaml"), "--set", "clusterGpus=0,replicaCount=3",
                    "--set", "gpuNodeSelector.labelKey=nvidia.com/gpu.product",
                    "--set", "topologySpread[0].topologyKey=topology.kubernetes.io/zone",
                    "--set", "tolerations[0].key=nvidia.com/gpu,tolerations[0].operator=Exists,tolerations[0].effect=NoSchedule",
                    "--set", "serve.apiKeySecret.name=prima-key",
                    "--set", "podDisruptionBudget.enabled=true,podDisruptionBudget.minAvailable=2")
    if not docs:
        return
    for role, t, _ in pod_specs(docs):
        spec = t["spec"]
        check(spec.get("nodeSelector") == {"nvidia.com/gpu.product": "domestic-32GB"}, f"options {role}: gpu node selector")
        tsc = spec.get("topologySpreadConstraints", [])
        check(len(tsc) == 1 and tsc[0]["topologyKey"] == "topology.kubernetes.io/zone"
              and tsc[0]["labelSelector"]["matchLabels"].get("prima/role") == role
              and tsc[0]["labelSelector"]["matchLabels"].items() <= t["metadata"]["labels"].items(),
              f"options {role}: topology spread over its own pods: {tsc}")
        check(spec.get("tolerations") == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
              f"options {role}: tolerations")
    leader = pod_specs(docs)[0][1]
    key = [e for e in container(leader)["env"] if e["name"] == "PRIMA_API_KEY"]
    check(key == [{"name": "PRIMA_API_KEY", "valueFrom": {"secretKeyRef": {"name": "prima-key", "key": "api-key"}}}],
          f"options: API key from the Secret: {key}")
    argv, _ = dry_run_launch(docs, leader, {"LWS_LEADER_ADDRESS": "a-0.a.ns", "PRIMA_API_KEY": "k"})
    check("PRIMA_API_KEY" in argv, "options: the API key reaches rank 0 (mpirun -x)")
    pdb = one(docs, "PodDisruptionBudget")
    check(pdb["spec"].get("maxUnavailable") == 1 and "minAvailable" not in pdb["spec"],
          f"options: 3 groups, minAvailable 2 -> at most 1 pod (hence 1 group) evicted: {pdb['spec']}")
    gpu = rendered("gpu node selector value", *seed("seed001-vllm-a100.yaml"), "--set",
                   "gpuNodeSelector.labelKey=nvidia.com/gpu.product,gpuNodeSelector.labelValue=NVIDIA-A100-SXM4-80GB")
    if gpu:
        check(one(gpu, "Deployment")["spec"]["template"]["spec"]["nodeSelector"] ==
              {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, "gpuNodeSelector.labelValue overrides gpuType")


BAD = [
    # (what, args, substrings of the message)
    ("TP x PP != GPUs per pod", seed("seed000-bitbrick-k1.yaml") + ["--set", "parallel.tensorParallel=2"],
     ["parallel.tensorParallel x parallel.pipelineParallel = 2 x 2 = 4 ranks",
      "podsPerReplica x gpusPerPod = 2 x 4 = 8 GPUs"]),
    ("GPUs per pod != TP x PP", seed("seed001-vllm-a100.yaml") + ["--set", "gpusPerPod=8"],
     ["4 x 1 = 4 ranks", "podsPerReplica x gpusPerPod = 1 x 8 = 8 GPUs"]),
    ("CPU ranks over pods", DEFAULTS + ["--set", "podsPerReplica=2"], ["podsPerReplica 2 does not divide the 1 ranks"]),
    ("missing model url", [], ["model.url is empty"]),
    ("model source none", ["--set", "model.source=none"], ["model.source is none but serve.backend is real"]),
    ("pvc without claim", ["--set", "model.source=pvc"], ["model.claimName is empty"]),
    ("hostPath without dir", ["--set", "model.source=hostPath"], ["model.hostPath is empty"]),
    ("url not http", ["--set", "model.url=s3://bucket/m.gguf"], ["model.url s3://bucket/m.gguf", "http:// or https://"]),
    ("model at /", DEFAULTS + ["--set", "model.path=/m.gguf"], ["model.path /m.gguf"]),
    ("unknown HPA metric", DEFAULTS + ["--set", "autoscaling.enabled=true,autoscaling.gpuUtilization=0",
                                       "--set", "autoscaling.customMetric.name=prima_queue_depth,autoscaling.customMetric.targetAverageValue=5"],
     ["autoscaling.customMetric.name prima_queue_depth is not a metric prima exports", "prima_num_requests_waiting"]),
    ("HPA metric with ':'", DEFAULTS + ["--set", "autoscaling.enabled=true,autoscaling.gpuUtilization=0",
                                        "--set", "autoscaling.customMetric.name=prima:num_requests_waiting,autoscaling.customMetric.targetAverageValue=5"],
     ["serves prima:num_requests_waiting as prima_num_requests_waiting"]),
    ("DCGM as custom metric", DEFAULTS + ["--set", "autoscaling.enabled=true,autoscaling.gpuUtilization=0",
                                          "--set", "autoscaling.customMetric.name=DCGM_FI_DEV_GPU_UTIL,autoscaling.customMetric.targetAverageValue=5"],
     ["use autoscaling.gpuUtilization"]),
    ("GPU utilization without GPUs", DEFAULTS + ["--set", "autoscaling.enabled=true"],
     ["autoscaling.gpuUtilization is 80 but gpusPerPod is 0", "DCGM_FI_DEV_GPU_UTIL"]),
    ("custom metric without target", DEFAULTS + ["--set", "autoscaling.enabled=true,autoscaling.gpuUtilization=0",
                                                 "--set", "autoscaling.customMetric.name=prima_kv_cache_usage_perc"],
     ["autoscaling.customMetric.targetAverageValue is empty"]),
    ("HPA without metric", DEFAULTS + ["--set", "autoscaling.enabled=true,autoscaling.gpuUtilization=0"],
     ["autoscaling.enabled but no metric"]),
    ("HPA min > max", seed("seed001-vllm-a100.yaml") + ["--set", "autoscaling.enabled=true,autoscaling.minReplicas=8,autoscaling.maxReplicas=4,clusterGpus=0"],
     ["autoscaling.minReplicas 8 is above autoscaling.maxReplicas 4"]),
    ("cuda without GPUs", DEFAULTS + ["--set", "serve.device=cuda"], ["serve.device is cuda but gpusPerPod is 0"]),
    ("GPUs on cpu", seed("seed001-vllm-a100.yaml") + ["--set", "serve.device=cpu"], ["gpusPerPod is 4 but serve.device is cpu"]),
    ("sim over pods", ["--set", "serve.backend=sim,podsPerReplica=2"], ["podsPerReplica is 2 but serve.backend is sim"]),
    ("sim with GPUs", ["--set", "serve.backend=sim,gpusPerPod=1"], ["gpusPerPod is 1 but serve.backend is sim"]),
    ("scenario on real", DEFAULTS + ["--set", "serve.scenario.seed=1"], ["serve.scenario is set but serve.backend is real"]),
    ("PDB above replicas", DEFAULTS + ["--set", "podDisruptionBudget.enabled=true"],
     ["podDisruptionBudget.minAvailable 2 is above replicaCount 1"]),
    ("capacity", seed("seed001-vllm-a100.yaml") + ["--set", "replicaCount=3"],
     ["replicaCount 3 x 4 GPUs per replica", "more than clusterGpus 8"]),
    ("extraArgs repeats a chart flag", DEFAULTS + ["--set", "serve.extraArgs={--tp=2}"], ["serve.extraArgs has --tp"]),
    ("rdma without resource", DEFAULTS + ["--set", "rdma.count=1"], ["rdma.count is set but rdma.resourceName is empty"]),
    ("KServe multi-pod", seed("seed000-bitbrick-k1.yaml") + ["--set", "kserve.enabled=true"], ["kserve.enabled with podsPerReplica 2"]),
    ("KServe hostPath", DEFAULTS + ["--set", "kserve.enabled=true,model.source=hostPath,model.hostPath=/data"],
     ["kserve.enabled with model.source hostPath"]),
    # values.schema.json
    ("TP 0", DEFAULTS + ["--set", "parallel.tensorParallel=0"], ["parallel.tensorParallel", "greater than or equal to 1"]),
    ("unknown backend", DEFAULTS + ["--set", "serve.backend=gpu"], ["serve.backend", "must be one of"]),
    ("bad sha256", DEFAULTS + ["--set", "model.sha256=abc"], ["model.sha256", "Does not match pattern"]),
    ("GPU utilization > 100", DEFAULTS + ["--set", "autoscaling.gpuUtilization=150"], ["autoscaling.gpuUtilization", "less than or equal to 100"]),
    ("misspelt key", DEFAULTS + ["--set", "replicas=3"], ["Additional property replicas is not allowed"]),
    ("unknown model source", DEFAULTS + ["--set", "model.source=s3"], ["model.source", "must be one of"]),
    ("bad gpuType label", DEFAULTS + ["--set", "gpuType=A100 80GB"], ["gpuType", "Does not match pattern"]),
]


def test_bad_input():
    for what, args, needles in BAD:
        err = render_error(*args)
        ok = err is not None and all(n.lower() in err.lower() for n in needles)
        check(ok, f"bad input '{what}' must fail at render naming {needles}: got {err!r}")


def allow_list():
    text = (CHART / "templates" / "_helpers.tpl").read_text()
    m = re.search(r'define "prima.hpaMetrics" -\}\}\n(.*?)\n\{\{- end', text, re.S)
    return m.group(1).split()


def test_adapter_config():
    cfg = yaml.safe_load(ADAPTER.read_text())
    rules = cfg["rules"]["custom"]

    def served(prom_name):
        out = []
        for r in rules:
            q = r["seriesQuery"]
            m = re.search(r'__name__=~"([^"]+)"', q)
            ok = re.search(m.group(1), prom_name) if m else q.split("{")[0] == prom_name
            if ok and re.search(r["name"]["matches"], prom_name):
                out.append(re.sub(r["name"]["matches"], r["name"]["as"].replace("${1}", r"\1"), prom_name))
        return out

    for name in allow_list():
        prom = name.replace("_", ":", 1)
        check(served(prom) == [name], f"adapter: {prom} must be served as {name}: {served(prom)}")
    check(served("DCGM_FI_DEV_GPU_UTIL") == ["DCGM_FI_DEV_GPU_UTIL"], "adapter: DCGM_FI_DEV_GPU_UTIL")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, timeout=5):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError, socket.timeout):
        return None, ""


def wait_health(port, proc, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        if get(port, "/health", 2)[0] == 200:
            return True
        time.sleep(0.2)
    return False


def stop(proc, seconds=60):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def test_metrics_against_prima(prima):
    """Every metric the chart lets an HPA use is a gauge `prima serve` exports; the probes'
    paths answer 200."""
    with tempfile.TemporaryDirectory() as d:
        port_file = Path(d) / "port"
        proc = subprocess.Popen([prima, "serve", "--backend", "sim", "--port", "0", "--port-file", str(port_file),
                                 "--speed", "20"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            deadline = time.time() + 30
            while not (port_file.exists() and port_file.read_text().strip()) and time.time() < deadline:
                time.sleep(0.1)
            port = int(port_file.read_text().strip())
            status, text = get(port, "/metrics")
            check(status == 200, f"prima /metrics: {status}")
            gauges = set(re.findall(r"^# TYPE (\S+) gauge$", text, re.M))
            for name in allow_list():
                check(name.replace("_", ":", 1) in gauges, f"allow-listed {name}: prima exports no gauge "
                                                           f"{name.replace('_', ':', 1)} (gauges: {sorted(gauges)})")
            for path in ("/health", "/v2/health/ready", "/prima/metrics"):
                check(get(port, path)[0] == 200, f"prima answers {path}")
        finally:
            stop(proc, 30)


def test_plan_values(prima):
    """`prima plan --emit-helm-values` hands over to the chart: the values of the configuration
    the plan ranked first render (with a model source added) into valid manifests of that
    configuration, and without a model source the render names the missing value."""
    with tempfile.TemporaryDirectory() as d:
        plan = Path(d) / "plan.json"
        plan.write_text(json.dumps({
            "name": "handover", "scenario": str(ROOT / "scenarios/default.json"),
            "slo": {"ttft_p99": "2s", "tpot_p99": "100ms"},
            "search": {"topologies": ["bitbrick_k1"], "tensor_parallel": [4], "pipeline_parallel": [2],
                       "replicas": [1], "quantization": ["w8a8"]},
            "rate": {"min_rps": 0.2, "tolerance": 0.2, "duration": "20s"}}))
        values = Path(d) / "values.yaml"
        r = subprocess.run([prima, "plan", str(plan), "--out", str(Path(d) / "out"), "--jobs", "2", "-q",
                            "--emit-helm-values", str(values)], capture_output=True, text=True, timeout=300)
        check(r.returncode == 0 and values.exists(), f"plan --emit-helm-values: exit {r.returncode}: {r.stderr[-500:]}")
        if not values.exists():
            return
        v = yaml.safe_load(values.read_text())
        check((v["replicaCount"], v["parallel"]["tensorParallel"], v["parallel"]["pipelineParallel"],
               v["podsPerReplica"], v["gpusPerPod"], v["gpuType"]) == (1, 4, 2, 2, 4, "A100-SXM4-80GB"),
              f"plan values: {[v.get(k) for k in ('replicaCount', 'parallel', 'podsPerReplica', 'gpusPerPod')]}")
        err = render_error("-f", str(values))
        check(err is not None and "model.url" in err, f"plan values without a model source: {err}")
        docs = rendered("plan values", "-f", str(values), "--set", "model.url=https://models.example/m.gguf")
        if not docs:
            return
        check_one_group(docs, "plan values", 2, 8)
        a = container(pod_specs(docs)[0][1])["args"]
        check(flag(a, "--tp") == "4" and flag(a, "--pp") == "2", f"plan values: args {a}")
        # The same values on the simulator: the scenario the plan simulated is what prima serves.
        sim_values = Path(d) / "values.sim.yaml"
        check(sim_values.exists(), "plan wrote values.sim.yaml")
        docs = rendered("plan values+sim", "-f", str(values), *seed("sim.yaml"), "-f", str(sim_values))
        if docs:
            sc = json.loads(scenario_configmap(docs)["data"]["scenario.json"])
            check(sc["deployment"]["parallel_strategy"]["tensor_parallel"] == 4
                  and sc["quantization"] == "w8a8", "plan values+sim: the planned scenario")


def test_launch_real(prima):
    """launch.sh, as the chart renders it, starts a PP2 replica of the real backend under
    mpirun on this machine; SIGTERM drains it and mpirun exits 0."""
    if not shutil.which("mpirun"):
        print("note: no mpirun: launch.sh's real run skipped")
        return
    if not MODEL.exists():
        print(f"note: {MODEL} missing (scripts/fetch-model.sh): launch.sh's real run skipped")
        return
    port = free_port()
    docs = rendered("launch real", "--set", f"parallel.pipelineParallel=2,model.source=hostPath,model.hostPath={MODEL.parent}",
                    "--set", f"model.path={MODEL},serve.port={port},serve.maxModelLen=256,serve.kernelThreads=1",
                    "--set", "serve.drainTimeout=5")
    if not docs:
        return
    t = one(docs, "Deployment")["spec"]["template"]
    c = container(t)
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "launch.sh"
        script.write_text(launch_script(docs))
        env = dict(os.environ)
        env.update({k: v for k, v in env_of(c).items() if v is not None})
        env["PATH"] = f"{Path(prima).resolve().parent}:{env['PATH']}"
        env.update({"OMPI_MCA_rmaps_base_oversubscribe": "1", "TMPDIR": d})
        log = open(Path(d) / "log", "w+")
        proc = subprocess.Popen(["sh", str(script), *c["command"][2:], *c["args"]], env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            up = wait_health(port, proc, 120)
            check(up, "launch.sh: the PP2 replica answers /health")
            if up:
                check(get(port, "/v2/health/ready")[0] == 200, "launch.sh: ready")
                req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", method="POST",
                                             data=json.dumps({"model": MODEL.stem, "prompt": "The capital of France is",
                                                                  "max_tokens": 4, "ignore_eos": True}).encode(),
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=60) as r:
                    body = json.loads(r.read())
                check(body["usage"]["completion_tokens"] == 4, f"launch.sh: a completion over PP2: {body}")
        finally:
            rc = stop(proc, 60)
            log.seek(0)
            out = log.read()
            check(rc == 0, f"launch.sh: mpirun exits 0 after SIGTERM (got {rc}); log:\n{out[-3000:]}")
            check("2 ranks, 2 per pod on 1 pod(s): localhost:2" in out, "launch.sh: logged its mpirun plan")


def test_sim_pod_runs(prima):
    """The container arguments the chart renders for seed 004 on the simulator, run as is
    (the scenario at the ConfigMap's path replaced by a local copy): prima serves the
    scenario's deployment and drains on SIGTERM."""
    port = free_port()
    scen = ROOT / SEED_SCENARIOS["seed004-triton-50node.yaml"]
    docs = rendered("sim pod", *seed("seed004-triton-50node.yaml"), *seed("sim.yaml"), "--set", f"serve.port={port}",
                    "--set-json", f"serve.scenario={scen.read_text()}")
    if not docs:
        return
    args = container(one(docs, "Deployment")["spec"]["template"])["args"]
    with tempfile.TemporaryDirectory() as d:
        local = Path(d) / "scenario.json"
        local.write_text(scenario_configmap(docs)["data"]["scenario.json"])
        args = [str(local) if a == "/etc/prima/scenario/scenario.json" else a for a in args]
        proc = subprocess.Popen([prima, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            up = wait_health(port, proc, 60)
            check(up, f"sim pod: prima serves with the chart's arguments {args}")
            if up:
                health = json.loads(get(port, "/health")[1])
                check(health["backend"] == "sim" and health["limits"]["max_model_len"] == 32768,
                      f"sim pod: seed 004's scenario: {health.get('limits')}")
        finally:
            rc = stop(proc, 60)
            check(rc == 0, f"sim pod: exit 0 after SIGTERM, got {rc}: {proc.stderr.read()[-1000:]}")


MULTIPOD_DRIVER = r"""
set -e
d=$1
mount --bind "$d/hosts" /etc/hosts
mount --bind "$d/passwd" /etc/passwd
mount --bind "$d/group" /etc/group
as="setpriv --reuid=4242 --regid=4242 --clear-groups"
env -i $(cat "$d/worker.env") $as sh "$d/launch.sh" worker >"$d/worker.log" 2>&1 &
echo $! >"$d/worker.pid"
env -i $(cat "$d/leader.env") $as sh "$d/launch.sh" leader $(cat "$d/leader.args") >"$d/leader.log" 2>&1 &
echo $! >"$d/leader.pid"
st=0; wait %1 || st=$?; echo "$st" >"$d/worker.rc"
st=0; wait %2 || st=$?; echo "$st" >"$d/leader.rc"
"""


def find_sshd():
    for cand in (os.environ.get("PRIMA_SSHD"), shutil.which("sshd"), "/usr/sbin/sshd"):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def test_launch_multipod(prima):
    """A two-pod group on this machine, as the chart renders it for a LeaderWorkerSet: the
    worker runs sshd (non-root, the chart's generated key), the leader waits for it and
    starts a PP2 replica with mpirun, rank 1 on the worker through ssh; a request in flight
    when both pods get SIGTERM completes, both exit 0. Needs root (a private mount
    namespace gives the two pods their host names and a non-root user), setpriv, mpirun and
    sshd (PATH, /usr/sbin/sshd or $PRIMA_SSHD); skipped with a note otherwise."""
    sshd = find_sshd()
    missing = [w for w, ok in (("root", os.geteuid() == 0), ("unshare", shutil.which("unshare")),
                               ("setpriv", shutil.which("setpriv")), ("mpirun", shutil.which("mpirun")),
                               ("sshd", sshd), ("ssh", shutil.which("ssh")), ("the model", MODEL.exists())) if not ok]
    if not missing and subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        missing.append("mount namespace (unshare -m fails)")
    if missing:
        print(f"note: the two-pod launch is skipped: no {', '.join(missing)}")
        return
    port, ssh_port = free_port(), free_port()
    docs = rendered("launch two pods", "--set", "podsPerReplica=2,parallel.pipelineParallel=2",
                    "--set", f"model.source=hostPath,model.hostPath={MODEL.parent},model.path={MODEL}",
                    "--set", f"serve.port={port},serve.maxModelLen=256,serve.kernelThreads=1,serve.drainTimeout=5",
                    "--set", f"mpi.sshPort={ssh_port},mpi.workerWaitSeconds=30")
    if not docs:
        return
    import base64
    lws = one(docs, "LeaderWorkerSet")
    name = lws["metadata"]["name"]
    leader_c = container(lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"])
    worker_c = container(lws["spec"]["leaderWorkerTemplate"]["workerTemplate"])
    check(worker_c["command"][2:] == ["worker"] and leader_c["command"][2:] == ["leader"], "two pods: roles")
    with tempfile.TemporaryDirectory() as d:
        dp = Path(d)
        os.chmod(d, 0o777)
        (dp / "launch.sh").write_text(launch_script(docs))
        key = dp / "id_ecdsa"
        key.write_bytes(base64.b64decode(one(docs, "Secret")["data"]["id_ecdsa"]))
        key.chmod(0o444)
        addr = f"{name}-0.{name}.prima-test"
        (dp / "hosts").write_text(f"127.0.0.1 localhost {name}-0 {addr}\n127.0.0.2 {name}-0-1.{name}.prima-test\n")
        (dp / "passwd").write_text(Path("/etc/passwd").read_text() + f"prima:x:4242:4242::{d}/home:/bin/sh\n")
        (dp / "group").write_text(Path("/etc/group").read_text() + "prima:x:4242:\n")
        bindir = dp / "bin"
        bindir.mkdir()
        (bindir / "sshd").symlink_to(sshd)
        for sub in ("home", "l", "w"):
            (dp / sub).mkdir()
            os.chown(dp / sub, 4242, 4242)
        path = f"{bindir}:{Path(prima).resolve().parent}:/usr/local/bin:/usr/bin:/bin"

        def envfile(c, sub):
            env = {k: v for k, v in env_of(c).items() if v is not None}
            env.update({"PATH": path, "HOME": f"{d}/home", "TMPDIR": f"{d}/{sub}", "PRIMA_SSH_DIR": f"{d}/{sub}/ssh",
                        "PRIMA_SSH_KEY": str(key), "LWS_LEADER_ADDRESS": addr})
            assert all(" " not in v for v in env.values()), env
            return " ".join(f"{k}={v}" for k, v in env.items())

        (dp / "worker.env").write_text(envfile(worker_c, "w"))
        (dp / "leader.env").write_text(envfile(leader_c, "l"))
        (dp / "leader.args").write_text(" ".join(leader_c["args"]))
        (dp / "driver.sh").write_text(MULTIPOD_DRIVER)
        driver = subprocess.Popen(["unshare", "-m", "sh", str(dp / "driver.sh"), d], start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline, up = time.time() + 90, False
            while time.time() < deadline and driver.poll() is None and not up:
                up = get(port, "/health", 2)[0] == 200
                time.sleep(0.2)
            check(up, "two pods: the leader answers /health")
            if up:
                import threading
                result = {}

                def ask():
                    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", method="POST",
                                                 data=json.dumps({"model": MODEL.stem, "prompt": "Once upon a time",
                                                                  "max_tokens": 48}).encode(),
                                                 headers={"Content-Type": "application/json"})
                    with urllib.request.urlopen(req, timeout=60) as r:
                        result["body"] = json.loads(r.read())

                th = threading.Thread(target=ask)
                th.start()
                time.sleep(0.3)
                for role in ("leader", "worker"):
                    os.kill(int((dp / f"{role}.pid").read_text()), signal.SIGTERM)
                th.join(60)
                check(result.get("body", {}).get("usage", {}).get("completion_tokens") == 48,
                      f"two pods: the request in flight at SIGTERM completes: {result}")
            try:
                driver.wait(60)
            except subprocess.TimeoutExpired:
                pass
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait()
            logs = {r: (dp / f"{r}.log").read_text() if (dp / f"{r}.log").exists() else "" for r in ("leader", "worker")}
            rcs = {r: (dp / f"{r}.rc").read_text().strip() if (dp / f"{r}.rc").exists() else None for r in ("leader", "worker")}
            check(rcs == {"leader": "0", "worker": "0"}, f"two pods: both exit 0 after SIGTERM: {rcs}; "
                                                         f"driver: {driver.stderr.read()[-1000:]}; logs: {logs}")
            check(logs["worker"].count("Accepted publickey") >= 2,
                  f"two pods: mpirun reached the worker over ssh (the wait, then orted): {logs['worker'][-1500:]}")
            check(f"{name}-0:1,{name}-0-1.{name}.prima-test:1" in logs["leader"], "two pods: the hosts")
            for p in dp.glob("*/ssh"):
                shutil.rmtree(p, ignore_errors=True)


def main():
    global HELM
    ap = argparse.ArgumentParser()
    ap.add_argument("--prima", help="the prima binary (for the metric and launch checks)")
    opts = ap.parse_args()
    HELM = find_helm()
    if not HELM:
        print("SKIP: no helm: run scripts/fetch-helm.sh (scripts/test.sh does)")
        return SKIP
    try:
        import kubernetes_validate  # noqa: F401
        from importlib.metadata import version
        kv = version("kubernetes-validate")
    except ImportError:
        print(f"FAIL: the Python package kubernetes-validate is missing: "
              f"python3 -m pip install kubernetes-validate=={KUBERNETES_VALIDATE} (scripts/test.sh does)")
        return 1
    print(f"helm {helm('version', '--short').stdout.strip()}, kubernetes-validate {kv}, Kubernetes {KUBE_VERSION}")
    t0 = time.time()
    tests = [test_lint, test_defaults, test_seed000, test_seed001, test_seed004, test_hpa, test_sim, test_kserve,
             test_seeds_on_the_simulator, test_scheduling_and_options,
             test_monitoring_files, test_bad_input, test_adapter_config]
    if opts.prima:
        for f in (test_metrics_against_prima, test_plan_values, test_sim_pod_runs, test_launch_real,
                  test_launch_multipod):
            g = (lambda f: lambda: f(opts.prima))(f)
            g.__name__ = f.__name__
            tests.append(g)
    for t in tests:
        n0, t1 = len(failures), time.time()
        try:
            t()
        except Exception as e:  # noqa: BLE001 - a broken test is a failure, not a crash
            check(False, f"{getattr(t, '__name__', 'test')}: {type(e).__name__}: {e}")
        name = getattr(t, "__name__", "test")
        print(f"{'ok  ' if len(failures) == n0 else 'FAIL'} {name} ({time.time() - t1:.1f} s)", flush=True)
    print(f"{checks} checks, {len(failures)} failed, {time.time() - t0:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
