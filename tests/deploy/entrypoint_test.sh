#!/usr/bin/env bash
# The images' entry point (deploy/docker/entrypoint.sh) with a fake `prima` on PATH that
# records its arguments: the model step (mounted model verified or not, fetch over file://,
# sha256 mismatch and a missing hash refused with a clear message, nothing left behind) and the
# arguments prima gets. No image is built; bench/deploy/image_smoke.sh builds and runs one.
#   bash tests/deploy/entrypoint_test.sh [deploy/docker/entrypoint.sh]
# Exit 0 all passed, 1 a case failed, 77 skipped (no curl or sha256sum here).
set -uo pipefail
ENTRY=$(realpath "${1:-$(dirname "$0")/../../deploy/docker/entrypoint.sh}")
for tool in curl sha256sum; do
  command -v "$tool" >/dev/null || {
    echo "SKIP: $tool is not installed"
    exit 77
  }
done

T=$(mktemp -d "${TMPDIR:-/tmp}/prima-entrypoint-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin" "$T/src"
# The fake prima: one argument a line into $T/argv.
cat >"$T/bin/prima" <<EOF
#!/usr/bin/env bash
printf '%s\n' "\$@" >"$T/argv"
exit 0
EOF
chmod +x "$T/bin/prima"
head -c 100000 /dev/urandom >"$T/src/model.gguf"
GOOD=$(sha256sum "$T/src/model.gguf" | cut -d' ' -f1)
BAD=$(printf '%064d' 0)

passed=0 failed=0
# Each case: run, then checks that record what is wrong; done_case counts it once.
errs=()
bad() { errs+=("$*"); }
done_case() {
  if [ ${#errs[@]} -eq 0 ]; then
    echo "ok: $case_name"
    passed=$((passed + 1))
  else
    echo "FAIL: $case_name: ${errs[*]}"
    echo "  stderr: $(tr '\n' '|' <"$T/err")"
    failed=$((failed + 1))
  fi
}

# run NAME [VAR=VALUE ...] -- ARGS...: a fresh /models ($T/models: empty, holding the model
# where MOUNT=1, another file where STALE=1), then the entry point with only PATH, PRIMA_MODEL_PATH=$T/models/model.gguf and
# the given variables set.
run() {
  case_name=$1
  errs=()
  shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    envs+=("$1")
    shift
  done
  [ $# -gt 0 ] && shift
  rm -rf "$T/models" "$T/argv"
  mkdir -p "$T/models"
  [ -n "${MOUNT:-}" ] && cp "$T/src/model.gguf" "$T/models/model.gguf"
  [ -n "${STALE:-}" ] && echo "an older model" >"$T/models/model.gguf"
  env -i PATH="$T/bin:/usr/local/bin:/usr/bin:/bin" PRIMA_MODEL_PATH="$T/models/model.gguf" \
    "${envs[@]}" bash "$ENTRY" "$@" >"$T/out" 2>"$T/err"
  rc=$?
}
expect_rc() { [ "$rc" = "$1" ] || bad "exit $rc, expected $1"; }
expect_argv() { # ARG...: prima got exactly these arguments
  local want got
  want=$(printf '%s\n' "$@")
  got=$(cat "$T/argv" 2>/dev/null) || {
    bad "prima did not run"
    return
  }
  [ "$got" = "$want" ] || bad "prima got '$(echo "$got" | tr '\n' ' ')', expected '$*'"
}
expect_said() { grep -qF -- "$1" "$T/err" || bad "stderr does not say '$1'"; }
expect_refused() { # CODE TEXT...: exit CODE, prima not run, stderr says 'not starting' and each TEXT
  local code=$1 text
  shift
  expect_rc "$code"
  [ ! -e "$T/argv" ] || bad "prima ran though the entry point refused"
  expect_said "not starting"
  for text in "$@"; do expect_said "$text"; done
}
expect_no_leftovers() {
  local left
  left=$(find "$T/models" -name '*.part' | head -1)
  [ -z "$left" ] || bad "left $left behind"
}
M="$T/models/model.gguf"
DEFAULT=(serve --backend real --host 0.0.0.0 --port 8000 --model "$M")

MOUNT=1 run mounted_unverified --
expect_rc 0
expect_argv "${DEFAULT[@]}"
expect_said "not verified"
done_case

MOUNT=1 run mounted_verified PRIMA_MODEL_SHA256="$GOOD" --
expect_rc 0
expect_argv "${DEFAULT[@]}"
expect_said "sha256 verified"
done_case

MOUNT=1 run hash_upper_case_accepted PRIMA_MODEL_SHA256="$(printf '%s' "$GOOD" | tr 'a-f' 'A-F')" --
expect_rc 0
expect_argv "${DEFAULT[@]}"
done_case

MOUNT=1 run mounted_mismatch_refused PRIMA_MODEL_SHA256="$BAD" --
expect_refused 1 "$GOOD" "$BAD" "PRIMA_MODEL_SHA256"
done_case

run url_without_hash_refused PRIMA_MODEL_URL="file://$T/src/model.gguf" --
expect_refused 2 "PRIMA_MODEL_SHA256 is not"
[ ! -e "$M" ] || bad "fetched without a hash"
done_case

MOUNT=1 run url_without_hash_refused_when_mounted PRIMA_MODEL_URL="file://$T/src/model.gguf" --
expect_refused 2 "PRIMA_MODEL_SHA256 is not"
done_case

run malformed_hash_refused PRIMA_MODEL_URL="file://$T/src/model.gguf" PRIMA_MODEL_SHA256=abc123 --
expect_refused 2 "64 hex digits" "abc123"
done_case

run no_model_no_url_refused --
expect_refused 2 "no model file at $M" "PRIMA_MODEL_URL"
done_case

run fetch_file_url PRIMA_MODEL_URL="file://$T/src/model.gguf" PRIMA_MODEL_SHA256="$GOOD" --
expect_rc 0
cmp -s "$T/src/model.gguf" "$M" || bad "the fetched file is missing or differs from the source"
[ "$(stat -c %a "$M" 2>/dev/null)" = 444 ] || bad "the fetched file is not mode 444"
expect_argv "${DEFAULT[@]}"
expect_said "sha256 verified"
expect_no_leftovers
done_case

run fetch_mismatch_refused PRIMA_MODEL_URL="file://$T/src/model.gguf" PRIMA_MODEL_SHA256="$BAD" --
expect_refused 1 "$GOOD" "$BAD" "deleted"
[ ! -e "$M" ] || bad "the mismatching file was installed"
expect_no_leftovers
done_case

STALE=1 run stale_file_fetched_again PRIMA_MODEL_URL="file://$T/src/model.gguf" \
  PRIMA_MODEL_SHA256="$GOOD" --
expect_rc 0
cmp -s "$T/src/model.gguf" "$M" || bad "the stale file was not replaced"
expect_said "fetching it again"
expect_argv "${DEFAULT[@]}"
expect_no_leftovers
done_case

STALE=1 run stale_file_refused_without_url PRIMA_MODEL_SHA256="$GOOD" --
expect_refused 1 "$GOOD"
done_case

run fetch_missing_source PRIMA_MODEL_URL="file://$T/src/absent.gguf?token=SECRET" \
  PRIMA_MODEL_SHA256="$GOOD" --
expect_refused 1 "could not fetch file://$T/src/absent.gguf"
! grep -q "token=SECRET" "$T/err" || bad "the URL's query string was logged"
expect_no_leftovers
done_case

run fetch_dir_missing PRIMA_MODEL_URL="file://$T/src/model.gguf" PRIMA_MODEL_SHA256="$GOOD" \
  PRIMA_MODEL_PATH="$T/absent-dir/model.gguf" --
expect_refused 2 "$T/absent-dir does not exist"
done_case

MOUNT=1 run options_appended PRIMA_PORT=9001 PRIMA_HOST=127.0.0.1 PRIMA_SERVED_MODEL_NAME=smol -- \
  --max-num-seqs 16
expect_rc 0
expect_argv serve --backend real --host 127.0.0.1 --port 9001 --model "$M" --served-model-name smol \
  --max-num-seqs 16
done_case

run subcommand_passed_through -- serve --backend sim --port 9 --set "a b=c"
expect_rc 0
expect_argv serve --backend sim --port 9 --set "a b=c"
done_case

run prima_first_dropped -- prima serve --backend sim
expect_rc 0
expect_argv serve --backend sim
done_case

# Another command on PATH (mpirun for ranks, bash) runs as given, after the model step.
printf '#!/bin/sh\necho "$@" >%s/mpirun-argv\n' "$T" >"$T/bin/mpirun"
chmod +x "$T/bin/mpirun"
MOUNT=1 run other_command_runs PRIMA_MODEL_SHA256="$GOOD" -- mpirun -np 2 prima serve --tp 2
expect_rc 0
[ ! -e "$T/argv" ] || bad "prima ran instead of mpirun"
[ "$(cat "$T/mpirun-argv" 2>/dev/null)" = "-np 2 prima serve --tp 2" ] || bad "mpirun got '$(cat "$T/mpirun-argv" 2>/dev/null)'"
expect_said "sha256 verified"
done_case

MOUNT=1 run other_command_mismatch_refused PRIMA_MODEL_SHA256="$BAD" -- mpirun -np 2 prima serve
expect_refused 1 "$BAD"
done_case

run subcommand_with_url_fetches PRIMA_MODEL_URL="file://$T/src/model.gguf" \
  PRIMA_MODEL_SHA256="$GOOD" -- serve --backend real --model "$M" --tp 1
expect_rc 0
[ -f "$M" ] || bad "the model was not fetched"
expect_argv serve --backend real --model "$M" --tp 1
done_case

MOUNT=1 run subcommand_mismatch_refused PRIMA_MODEL_SHA256="$BAD" -- serve --backend real --model "$M"
expect_refused 1 "$BAD"
done_case

# prima's exit code is the container's (exec): a fake prima that exits 3.
printf '#!/bin/sh\nexit 3\n' >"$T/bin/prima"
MOUNT=1 run prima_exit_code_kept --
expect_rc 3
done_case

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
