#!/usr/bin/env bash
# Builds the CPU image (deploy/docker/Dockerfile) with podman and runs it twice: with the model
# mounted read-only (sha256 checked), and with an empty /models and PRIMA_MODEL_URL pointing at
# a local HTTP server (fetch + sha256); each time it curls /health, /v2/health/ready and one
# /v1/completions, runs the image's HEALTHCHECK, checks the user, stops the container (SIGTERM
# drain) and reports the time to ready. A third run gives a wrong sha256 and expects a refusal;
# a fourth runs three tensor-parallel ranks under mpirun in one container (prima generate --tp 3).
# With PRIMA_SMOKE_CUDA=1 it also builds the CUDA image (deploy/docker/Dockerfile.cuda), checks
# that prima loads the image's cudart, that --device cuda exits 2 saying why where no GPU is
# passed in, and serves from it (on the CPU) as above.
# Prints the image size and the timings, and writes them to $OUT/image_smoke.json
# (OUT defaults to out/deploy). A benchmark to run by hand, not part of CI (it needs root,
# podman, the Debian mirror and ~25 minutes of compiling on 2 cores).
#   bash bench/deploy/image_smoke.sh
# Environment:
#   PRIMA_IMAGE_BASE   base image for BASE (default: the local debootstrap one, made by
#                      deploy/docker/debootstrap-base.sh when missing; debian:bookworm-slim
#                      where a registry is reachable)
#   PRIMA_IMAGE        tag to build (default localhost/prima:smoke)
#   PRIMA_JOBS         compile jobs (default 2); the build runs under flock /tmp/prima-cpu.lock
#   PRIMA_SMOKE_SKIP_BUILD=1   use the existing $PRIMA_IMAGE
#   PRIMA_SMOKE_MODEL  the GGUF file (default models/SmolLM2-135M-Instruct.Q4_1.gguf, fetched
#                      by scripts/fetch-model.sh when missing); its sha256 comes from the
#                      committed manifest, or PRIMA_SMOKE_MODEL_SHA256
#   PRIMA_SMOKE_CUDA=1 also the CUDA image, tagged $PRIMA_IMAGE_CUDA (default
#                      localhost/prima-cuda:smoke); pip gets the CA bundle PRIMA_CA_BUNDLE
#                      (default /etc/ssl/certs/ca-certificates.crt) as the build secret ca-bundle
#   CONTAINERS_CONF    podman settings (default deploy/docker/containers.conf: runc, host
#                      network, rlimits within this VM's)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/deploy/docker/containers.conf}
IMAGE=${PRIMA_IMAGE:-localhost/prima:smoke}
BASE=${PRIMA_IMAGE_BASE:-localhost/prima-base/debian:bookworm-slim}
JOBS=${PRIMA_JOBS:-2}
OUT=${OUT:-$ROOT/out/deploy}
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
MODEL=${PRIMA_SMOKE_MODEL:-$ROOT/models/$NAME}
mkdir -p "$OUT"
LOG="$OUT/image_smoke.log"
: >"$LOG"

say() { echo "image_smoke: $*" >&2; }
die() {
  say "error: $*"
  exit 1
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
command -v podman >/dev/null || die "podman is not installed (apt-get install podman runc)"
command -v curl >/dev/null || die "curl is not installed"

# The model and its sha256.
if [ ! -f "$MODEL" ]; then
  [ -z "${PRIMA_SMOKE_MODEL:-}" ] || die "$MODEL does not exist"
  bash scripts/fetch-model.sh
fi
SHA=${PRIMA_SMOKE_MODEL_SHA256:-$(cut -d' ' -f1 "$ROOT/models/$NAME.sha256")}
[ "$(sha256sum "$MODEL" | cut -d' ' -f1)" = "$SHA" ] || die "$MODEL does not match sha256 $SHA"

# The base and the image.
build_s=null
if [ "${PRIMA_SMOKE_SKIP_BUILD:-0}" != 1 ]; then
  if [ "$BASE" = localhost/prima-base/debian:bookworm-slim ]; then
    bash deploy/docker/debootstrap-base.sh
  fi
  say "building $IMAGE from BASE=$BASE with $JOBS jobs (waits for /tmp/prima-cpu.lock; log: $LOG)"
  t0=$(now)
  flock /tmp/prima-cpu.lock podman build --format docker --network host \
    --build-arg BASE="$BASE" --build-arg JOBS="$JOBS" \
    -f deploy/docker/Dockerfile -t "$IMAGE" . >>"$LOG" 2>&1 ||
    die "podman build failed; the end of $LOG: $(tail -20 "$LOG")"
  build_s=$(secs "$t0" "$(now)")
  say "built $IMAGE in $build_s s (lock wait included)"
fi
podman image exists "$IMAGE" || die "no image $IMAGE"
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
base_size=$(podman image inspect --format '{{.Size}}' "$BASE" 2>/dev/null || echo null)
say "$IMAGE: $size bytes ($((size / 1000000)) MB; base $BASE: $base_size bytes)"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
CONTAINERS=()
HTTP_PID=""
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/prima-image-smoke.XXXXXX")
cleanup() {
  for c in "${CONTAINERS[@]}"; do podman rm -f -t 0 "$c" >/dev/null 2>&1 || true; done
  [ -n "$HTTP_PID" ] && kill "$HTTP_PID" 2>/dev/null
  rm -rf "$TMPD"
}
trap cleanup EXIT

# wait_ready NAME PORT T0: seconds from T0 to the first 200 from /v2/health/ready (fails if the
# container exits or 300 s pass).
wait_ready() {
  local name=$1 port=$2 t0=$3
  for _ in $(seq 3000); do
    if curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$port/v2/health/ready" 2>/dev/null; then
      secs "$t0" "$(now)"
      return 0
    fi
    [ "$(podman inspect --format '{{.State.Running}}' "$name" 2>/dev/null)" = true ] || {
      say "$name exited: $(podman logs "$name" 2>&1 | tail -5)"
      return 1
    }
    sleep 0.1
  done
  return 1
}

# exercise NAME PORT: the probes, one completion, the HEALTHCHECK, the user, then a SIGTERM stop.
# Sets stop_s and exit_code.
exercise() {
  local name=$1 port=$2 body t0
  curl -fsS "http://127.0.0.1:$port/health" >"$TMPD/health.json" || die "$name: /health failed"
  say "$name: /health: $(cat "$TMPD/health.json")"
  curl -fsS "http://127.0.0.1:$port/v2/health/ready" >"$TMPD/ready.json" ||
    die "$name: /v2/health/ready failed"
  say "$name: /v2/health/ready: $(cat "$TMPD/ready.json")"
  body='{"model": "model", "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0}'
  curl -fsS -H 'Content-Type: application/json' -d "$body" \
    "http://127.0.0.1:$port/v1/completions" >"$TMPD/completion.json" ||
    die "$name: /v1/completions failed"
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); print(repr(c["choices"][0]["text"]))' \
    "$TMPD/completion.json" >"$TMPD/text" || die "$name: not a completion: $(cat "$TMPD/completion.json")"
  say "$name: /v1/completions: $(cat "$TMPD/text")"
  podman healthcheck run "$name" >/dev/null 2>&1 || die "$name: the image's HEALTHCHECK failed"
  say "$name: HEALTHCHECK: healthy"
  [ "$(podman exec "$name" id -u)" = 10001 ] || die "$name: not running as uid 10001"
  t0=$(now)
  podman stop -t 40 "$name" >/dev/null
  stop_s=$(secs "$t0" "$(now)")
  exit_code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
  say "$name: stopped in $stop_s s, exit code $exit_code"
  [ "$exit_code" = 0 ] || die "$name: exit code $exit_code after SIGTERM"
}

# 1. The model mounted read-only, its sha256 checked.
port=$(free_port)
c=prima-smoke-mounted
podman rm -f -t 0 "$c" >/dev/null 2>&1 || true
CONTAINERS+=("$c")
t0=$(now)
podman run -d --name "$c" -v "$MODEL:/models/model.gguf:ro" -e PRIMA_MODEL_SHA256="$SHA" \
  -e PRIMA_PORT="$port" "$IMAGE" >/dev/null 2>>"$LOG"
ready_mounted_s=$(wait_ready "$c" "$port" "$t0") || die "$c never became ready"
say "$c: ready in $ready_mounted_s s (podman run to /v2/health/ready 200)"
podman logs "$c" >>"$LOG" 2>&1
exercise "$c" "$port"
stop_mounted_s=$stop_s

# 2. An empty /models and PRIMA_MODEL_URL at a local HTTP server: fetched, checked, served.
http_port=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$(dirname "$MODEL")" "$http_port" \
  >>"$LOG" 2>&1 &
HTTP_PID=$!
for _ in $(seq 50); do
  curl -fsS -o /dev/null -I "http://127.0.0.1:$http_port/" 2>/dev/null && break
  sleep 0.1
done
mkdir -p "$TMPD/models"
chown 10001:10001 "$TMPD/models"
port=$(free_port)
c=prima-smoke-fetched
podman rm -f -t 0 "$c" >/dev/null 2>&1 || true
CONTAINERS+=("$c")
t0=$(now)
podman run -d --name "$c" -v "$TMPD/models:/models" -e PRIMA_PORT="$port" \
  -e PRIMA_MODEL_URL="http://127.0.0.1:$http_port/$(basename "$MODEL")" \
  -e PRIMA_MODEL_SHA256="$SHA" "$IMAGE" >/dev/null 2>>"$LOG"
ready_fetched_s=$(wait_ready "$c" "$port" "$t0") || die "$c never became ready"
say "$c: ready in $ready_fetched_s s (fetch and sha256 included)"
podman logs "$c" 2>&1 | tee -a "$LOG" | grep -q "sha256 verified" || die "$c: no fetch in its log"
cmp -s "$MODEL" "$TMPD/models/model.gguf" || die "$c: the fetched model differs"
exercise "$c" "$port"
stop_fetched_s=$stop_s

# 3. A wrong sha256: the container refuses to start, saying why.
c=prima-smoke-mismatch
podman rm -f -t 0 "$c" >/dev/null 2>&1 || true
CONTAINERS+=("$c")
rc=0
podman run --name "$c" --no-healthcheck -v "$MODEL:/models/model.gguf:ro" \
  -e PRIMA_MODEL_SHA256="$(printf '%064d' 0)" "$IMAGE" >"$TMPD/mismatch.log" 2>&1 || rc=$?
if [ "$rc" != 1 ] || ! grep -q "not starting" "$TMPD/mismatch.log"; then
  die "$c: expected exit 1 and a refusal, got $rc: $(cat "$TMPD/mismatch.log")"
fi
say "$c: refused (exit 1): $(grep 'not starting' "$TMPD/mismatch.log")"

# 4. Three TP ranks under mpirun in one container, as uid 10001 (OpenMPI and UCX in the image).
c=prima-smoke-mpirun
podman rm -f -t 0 "$c" >/dev/null 2>&1 || true
CONTAINERS+=("$c")
t0=$(now)
podman run --name "$c" --no-healthcheck -v "$MODEL:/models/model.gguf:ro" "$IMAGE" \
  mpirun -np 3 --oversubscribe prima generate --model /models/model.gguf \
  --prompt "The capital of France is" --max-tokens 8 --tp 3 >"$TMPD/mpirun.log" 2>&1 ||
  die "$c: mpirun failed: $(tail -20 "$TMPD/mpirun.log")"
mpirun_s=$(secs "$t0" "$(now)")
grep -q "generated: 8 tokens" "$TMPD/mpirun.log" || die "$c: no generation: $(cat "$TMPD/mpirun.log")"
say "$c: mpirun -np 3 prima generate --tp 3: $(grep -o 'generated: 8 tokens.*' "$TMPD/mpirun.log") ($mpirun_s s)"

# 5. The CUDA image (PRIMA_SMOKE_CUDA=1).
cuda_json='"cuda": null'
if [ "${PRIMA_SMOKE_CUDA:-0}" = 1 ]; then
  IMAGE_CUDA=${PRIMA_IMAGE_CUDA:-localhost/prima-cuda:smoke}
  CA=${PRIMA_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
  secret=()
  [ -s "$CA" ] && secret=(--secret "id=ca-bundle,src=$CA")
  cuda_build_s=null
  if [ "${PRIMA_SMOKE_SKIP_BUILD:-0}" != 1 ]; then
    say "building $IMAGE_CUDA (waits for /tmp/prima-cpu.lock; log: $LOG)"
    t0=$(now)
    flock /tmp/prima-cpu.lock podman build --format docker --network host "${secret[@]}" \
      --build-arg BASE="$BASE" --build-arg JOBS="$JOBS" \
      -f deploy/docker/Dockerfile.cuda -t "$IMAGE_CUDA" . >>"$LOG" 2>&1 ||
      die "podman build (CUDA) failed; the end of $LOG: $(tail -20 "$LOG")"
    cuda_build_s=$(secs "$t0" "$(now)")
    say "built $IMAGE_CUDA in $cuda_build_s s (lock wait included)"
  fi
  cuda_size=$(podman image inspect --format '{{.Size}}' "$IMAGE_CUDA")
  say "$IMAGE_CUDA: $cuda_size bytes ($((cuda_size / 1000000)) MB)"
  podman run --rm --no-healthcheck "$IMAGE_CUDA" bash -c 'ldd /usr/local/bin/prima' \
    >"$TMPD/ldd" 2>>"$LOG" || die "$IMAGE_CUDA: ldd failed"
  grep -q 'libcudart.so.13 => /usr/local/cuda/lib/' "$TMPD/ldd" ||
    die "$IMAGE_CUDA: prima does not load the image's cudart: $(grep cuda "$TMPD/ldd")"
  rc=0
  podman run --rm --no-healthcheck -v "$MODEL:/models/model.gguf:ro" "$IMAGE_CUDA" \
    generate --model /models/model.gguf --prompt Hi --device cuda >"$TMPD/cuda.log" 2>&1 || rc=$?
  [ "$rc" = 2 ] || die "$IMAGE_CUDA: --device cuda exited $rc, expected 2: $(cat "$TMPD/cuda.log")"
  say "$IMAGE_CUDA: --device cuda: exit 2: $(grep -o 'no CUDA device.*' "$TMPD/cuda.log" || cat "$TMPD/cuda.log")"
  port=$(free_port)
  c=prima-smoke-cuda
  podman rm -f -t 0 "$c" >/dev/null 2>&1 || true
  CONTAINERS+=("$c")
  t0=$(now)
  podman run -d --name "$c" -v "$MODEL:/models/model.gguf:ro" -e PRIMA_MODEL_SHA256="$SHA" \
    -e PRIMA_PORT="$port" "$IMAGE_CUDA" >/dev/null 2>>"$LOG"
  ready_cuda_s=$(wait_ready "$c" "$port" "$t0") || die "$c never became ready"
  say "$c: ready in $ready_cuda_s s"
  exercise "$c" "$port"
  cuda_json="\"cuda\": {\"image\": \"$IMAGE_CUDA\", \"image_bytes\": $cuda_size, \"build_s\": $cuda_build_s, \"ready_mounted_s\": $ready_cuda_s, \"device_cuda_exit\": 2}"
fi

cat >"$OUT/image_smoke.json" <<EOF
{
  "script": "bench/deploy/image_smoke.sh",
  "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)",
  "image": "$IMAGE", "base": "$BASE",
  "image_bytes": $size, "base_bytes": $base_size,
  "build_s": $build_s, "jobs": $JOBS,
  "ready_mounted_s": $ready_mounted_s, "ready_fetched_s": $ready_fetched_s,
  "stop_mounted_s": $stop_mounted_s, "stop_fetched_s": $stop_fetched_s,
  "mismatch_refused": true, "mpirun_tp3_s": $mpirun_s,
  $cuda_json
}
EOF
say "done: image $((size / 1000000)) MB, ready in $ready_mounted_s s mounted, $ready_fetched_s s" \
  "fetched; $OUT/image_smoke.json"
