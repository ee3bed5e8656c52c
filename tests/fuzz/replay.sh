#!/usr/bin/env bash
# Corpus replay of the libFuzzer targets (the ctest fuzz_corpus_replay): builds
# request_parse_fuzz and config_fuzz with clang++ (ASan + UBSan) in BUILD_DIR, a build of
# their own apart from the project's g++ build, and runs each once over every file of its seed
# corpus (tests/fuzz/corpus/<target>/): each input must be parsed or refused with a message,
# with no crash, exception or sanitizer report. No mutation: this takes seconds once built
# (bench/fuzz.sh is the long run). Exit 77 (skipped) when clang++ or libFuzzer is missing.
#   usage: tests/fuzz/replay.sh BUILD_DIR
# Environment: PRIMA_FUZZ_CXX (default clang++), PRIMA_JOBS (default 2); ccache is used when
# installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: replay.sh BUILD_DIR}
cxx=${PRIMA_FUZZ_CXX:-clang++}
targets=(request_parse_fuzz config_fuzz)

if ! command -v "$cxx" >/dev/null; then
  echo "SKIP: $cxx is not installed (Debian: apt-get install clang); the fuzz targets need it"
  exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  >"$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  echo "SKIP: $cxx cannot link libFuzzer with ASan/UBSan (Debian: apt-get install clang):"
  head -3 "$probe/err"
  exit 77
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$here" -B "$build" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" >/dev/null
fi
cmake --build "$build" --target "${targets[@]}" -j "${PRIMA_JOBS:-2}"

status=0
for t in "${targets[@]}"; do
  corpus=("$here/corpus/$t"/*)
  # Files given one by one: libFuzzer runs each once and stops at the first failure.
  if "$build/$t" -rss_limit_mb=2048 -timeout=20 "${corpus[@]}" </dev/null >"$build/$t.replay.log" 2>&1;
  then
    echo "$t: ${#corpus[@]} corpus inputs replayed, no failure"
  else
    echo "FAIL: $t on its corpus (log: $build/$t.replay.log):"
    tail -40 "$build/$t.replay.log"
    status=1
  fi
done
exit $status
