#!/usr/bin/env bash
# Alternates two prima binaries on one scenario (old, new, old, new, ...) and prints each
# round's sim_speedup and new/old ratio, then the medians and minimums. On a shared or
# virtual machine whose speed drifts, the per-round ratios are what compare the binaries.
#   scripts/alternate_sim_speed.sh OLD_PRIMA NEW_PRIMA ROUNDS [SCENARIO] [--set k=v ...]
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?old prima binary}
new=${2:?new prima binary}
rounds=${3:?rounds}
shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
  a=$("$old" simulate "$@" --no-files -q --json | jq '.run.sim_speedup')
  b=$("$new" simulate "$@" --no-files -q --json | jq '.run.sim_speedup')
  echo "$a $b" >>"$out"
done
python3 - "$out" <<'PY'
import statistics as st, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
print("old       new       new/old")
for a, b in rows:
    print(f"{a:<9.0f} {b:<9.0f} {b / a:.3f}")
A, B, R = [r[0] for r in rows], [r[1] for r in rows], [b / a for a, b in rows]
print(f"median: old {st.median(A):.0f}, new {st.median(B):.0f}, ratio {st.median(R):.3f}; "
      f"min: old {min(A):.0f}, new {min(B):.0f}")
PY
