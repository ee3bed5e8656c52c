#!/usr/bin/env bash
# RSS of a running `prima serve` under a long non-streaming load (not a test; a measurement).
#   rss_probe.sh PID PORT [SECONDS=60] [CONNS=200]
# Drives POST /v1/completions (max_tokens 1) with wrk (Debian package wrk) for SECONDS and
# prints, every 2 s, the requests the server ended (/health) and its VmRSS in MiB.
set -euo pipefail
PID=$1 PORT=$2 SECONDS_=${3:-60} CONNS=${4:-200}
command -v wrk >/dev/null || { echo "rss_probe.sh: needs wrk (apt-get install wrk)" >&2; exit 2; }
MODEL=$(curl -s "http://127.0.0.1:$PORT/v1/models" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
LUA=$(mktemp --suffix=.lua)
trap 'rm -f "$LUA"' EXIT
cat >"$LUA" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model": "$MODEL", "prompt": "hi", "max_tokens": 1}'
LUA
wrk -t1 -c"$CONNS" -d"${SECONDS_}s" -s "$LUA" "http://127.0.0.1:$PORT/v1/completions" >/dev/null &
WRK=$!
echo "t_s ended rss_mib"
T0=$(date +%s)
while kill -0 "$WRK" 2>/dev/null; do
  t=$(($(date +%s) - T0))
  ended=$(curl -s "http://127.0.0.1:$PORT/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ended"])')
  rss=$(awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$PID/status")
  echo "$t $ended $rss"
  sleep 2
done
wait "$WRK" || true
t=$(($(date +%s) - T0))
ended=$(curl -s "http://127.0.0.1:$PORT/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ended"])')
echo "$t $ended $(awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$PID/status")"
