#!/usr/bin/env bash
# The long fuzz run: builds the libFuzzer targets (tests/fuzz, clang++ with ASan + UBSan) and
# fuzzes each for SECONDS, starting from its seed corpus (tests/fuzz/corpus/<target>/) with its
# dictionary. New inputs go to a working corpus under the build directory, never into the
# repository; crashes to <build>/artifacts/<target>/ (crash-*, leak-*, timeout-*, oom-*).
#   usage: bench/fuzz.sh [SECONDS per target, default 600] [TARGET...]
#   targets: request_parse_fuzz config_fuzz gguf_fuzz (default: the first two)
# Environment:
#   PRIMA_FUZZ_BUILD      build directory (default build-fuzz)
#   PRIMA_FUZZ_KEEP_GOING 1: keep fuzzing after a crash (libFuzzer -fork=1 -ignore_crashes=1),
#                         collecting every crash of the run instead of stopping at the first
#   PRIMA_JOBS            build jobs (default 2)
# Each target's summary (executions, coverage, crashes) is printed at the end; a crash is
# reproduced with `<build>/<target> <artifact>` and minimized with
# `<build>/<target> -minimize_crash=1 -runs=10000 <artifact>` (docs/fuzzing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(request_parse_fuzz config_fuzz)
build=${PRIMA_FUZZ_BUILD:-build-fuzz}
command -v clang++ >/dev/null || { echo "bench/fuzz.sh: clang++ is not installed" >&2; exit 2; }

if [ ! -f "$build/CMakeCache.txt" ]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S tests/fuzz -B "$build" "${gen[@]}" -DCMAKE_CXX_COMPILER=clang++ >/dev/null
fi
cmake --build "$build" --target "${targets[@]}" -j "${PRIMA_JOBS:-2}"

failed=0
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  art="$build/artifacts/$t"
  mkdir -p "$work" "$art"
  seeds="tests/fuzz/corpus/$t"
  [ "$t" = gguf_fuzz ] && seeds="tests/data/gguf/seeds"
  opts=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1
        -artifact_prefix="$art/")
  [ -f "tests/fuzz/$t.dict" ] && opts+=(-dict="tests/fuzz/$t.dict")
  [ "${PRIMA_FUZZ_KEEP_GOING:-0}" = 1 ] &&
    opts+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  log="$build/$t.fuzz.log"
  echo "== $t: ${seconds}s from $seeds (log: $log)"
  rc=0
  "$build/$t" "${opts[@]}" "$work" "$seeds" </dev/null >"$log" 2>&1 || rc=$?
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|INFO: fuzzed for|INFO: exiting)" "$log" || true
  grep -E "^#[0-9]+" "$log" | tail -1 || true
  crashes=$(find "$art" -type f | wc -l)
  echo "   exit $rc; $crashes artifact(s) in $art"
  [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ] && failed=1
done
exit $failed
