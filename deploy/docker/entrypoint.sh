#!/usr/bin/env bash
# The images' entry point (installed as /usr/local/bin/prima-entrypoint): puts the model in
# place, checks its sha256, then execs prima (so prima is PID 1 and gets SIGTERM itself).
#
#   (no arguments)          prima serve --backend real --host $PRIMA_HOST --port $PRIMA_PORT
#                                       --model $PRIMA_MODEL_PATH
#                                       [--served-model-name $PRIMA_SERVED_MODEL_NAME]
#   -X ... (first starts    the same, with the arguments appended (e.g. --max-num-seqs 16);
#           with '-')       do not repeat an option the defaults already give
#   prima ARGS...           prima ARGS... as given
#   COMMAND ARGS...         a command on PATH other than prima runs as given (mpirun for TP/PP
#                           ranks: mpirun -np 2 prima serve ... --tp 2; bash to look around)
#   SUBCOMMAND ...          anything else: prima SUBCOMMAND ... (serve --backend sim, simulate)
#
# The model step (default mode, or whenever PRIMA_MODEL_URL or PRIMA_MODEL_SHA256 is set):
#   PRIMA_MODEL_PATH    the model file (default /models/model.gguf)
#   PRIMA_MODEL_URL     where to fetch it (https, http or file URL) when the file is missing;
#                       needs PRIMA_MODEL_SHA256. Downloaded next to the file, checked, then
#                       renamed into place (a mismatching download is deleted)
#   PRIMA_MODEL_SHA256  the model's sha256 (64 hex digits): a fetched file and a mounted one
#                       are both checked against it; a mismatch refuses to start, except that
#                       a present file that mismatches is fetched again where
#                       PRIMA_MODEL_URL is set (a volume holding an older model)
# A mounted model with PRIMA_MODEL_SHA256 unset starts unverified (a note says so).
#
# Exit codes: those of prima once it runs; before it: 2 bad configuration (no model and no
# URL, a URL without a hash, a malformed hash), 1 fetch failed or sha256 mismatch.
set -euo pipefail

MODEL=${PRIMA_MODEL_PATH:-/models/model.gguf}
URL=${PRIMA_MODEL_URL:-}
WANT=${PRIMA_MODEL_SHA256:-}

say() { echo "prima-entrypoint: $*" >&2; }
die() {
  local code=$1
  shift
  say "error: $*; not starting"
  exit "$code"
}

sha256_of() { sha256sum -- "$1" | cut -d' ' -f1; }

# A URL as it may be logged: without its query string (presigned URLs carry credentials there).
shown_url() { printf '%s' "${1%%\?*}"; }

fetch_model() {
  local dir tmp got t0
  dir=$(dirname -- "$MODEL")
  [ -d "$dir" ] || die 2 "$dir does not exist (mount a volume there to fetch the model into)"
  [ -w "$dir" ] || die 2 "$dir is not writable by uid $(id -u) (the model is fetched into it)"
  command -v curl >/dev/null || die 2 "curl is needed to fetch PRIMA_MODEL_URL"
  tmp=$(mktemp "$dir/.$(basename -- "$MODEL").XXXXXX.part")
  # shellcheck disable=SC2064  # expand $tmp now
  trap "rm -f -- '$tmp'" EXIT
  say "fetching $(shown_url "$URL") into $MODEL"
  t0=$(date +%s)
  if ! curl --fail --location --silent --show-error --proto '=https,http,file' \
    --proto-redir '=https,http' --retry 3 --connect-timeout 30 -o "$tmp" -- "$URL"; then
    die 1 "could not fetch $(shown_url "$URL")"
  fi
  got=$(sha256_of "$tmp")
  if [ "$got" != "$WANT" ]; then
    die 1 "the file fetched from $(shown_url "$URL") has sha256 $got, PRIMA_MODEL_SHA256 is \
$WANT (deleted)"
  fi
  chmod 0444 "$tmp"
  mv -f -- "$tmp" "$MODEL"
  trap - EXIT
  say "fetched $MODEL ($(stat -c %s -- "$MODEL") bytes, $(($(date +%s) - t0)) s), sha256 verified"
}

model_step() {
  if [ -n "$WANT" ]; then
    WANT=$(printf '%s' "$WANT" | tr 'A-F' 'a-f')
    [[ "$WANT" =~ ^[0-9a-f]{64}$ ]] ||
      die 2 "PRIMA_MODEL_SHA256 must be 64 hex digits (a sha256), got '${PRIMA_MODEL_SHA256}'"
  fi
  if [ -n "$URL" ] && [ -z "$WANT" ]; then
    die 2 "PRIMA_MODEL_URL is set but PRIMA_MODEL_SHA256 is not: a model is only fetched with \
the sha256 to check it against"
  fi
  if [ ! -e "$MODEL" ]; then
    [ -n "$URL" ] || die 2 "no model file at $MODEL: mount one there (read-only is fine), or set \
PRIMA_MODEL_URL and PRIMA_MODEL_SHA256 to fetch it at start (PRIMA_MODEL_PATH moves it)"
    fetch_model
    return
  fi
  if [ ! -f "$MODEL" ] || [ ! -r "$MODEL" ]; then die 2 "$MODEL is not a readable file"; fi
  if [ -z "$WANT" ]; then
    say "note: $MODEL is not verified (PRIMA_MODEL_SHA256 is unset)"
    return
  fi
  local got
  got=$(sha256_of "$MODEL")
  if [ "$got" = "$WANT" ]; then
    say "$MODEL: sha256 verified"
  elif [ -n "$URL" ]; then
    say "$MODEL has sha256 $got, PRIMA_MODEL_SHA256 is $WANT: fetching it again"
    fetch_model
  else
    die 1 "$MODEL has sha256 $got, PRIMA_MODEL_SHA256 is $WANT"
  fi
}

DEFAULTS=(serve --backend real --host "${PRIMA_HOST:-0.0.0.0}" --port "${PRIMA_PORT:-8000}"
  --model "$MODEL")
[ -n "${PRIMA_SERVED_MODEL_NAME:-}" ] && DEFAULTS+=(--served-model-name "$PRIMA_SERVED_MODEL_NAME")

if [ $# -eq 0 ] || [ "${1:0:1}" = "-" ]; then
  model_step
  exec prima "${DEFAULTS[@]}" "$@"
fi
if [ -n "$URL" ] || [ -n "$WANT" ]; then model_step; fi
if [ "$1" = prima ]; then shift; exec prima "$@"; fi
if command -v -- "$1" >/dev/null; then exec "$@"; fi
exec prima "$@"
