#!/usr/bin/env bash
# Regenerates the golden report(s) after a deliberate change to the model or the engine.
# Say in the commit message why the numbers moved.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${PRIMA_BIN:-build/prima}
tmp=$(mktemp -d)
"$BIN" simulate tests/data/cli/golden_small.json --out "$tmp" -q >/dev/null
python3 - "$tmp/report.json" tests/data/cli/golden_small.report.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r.pop("run", None)
json.dump(r, open(sys.argv[2], "w"), indent=2)
open(sys.argv[2], "a").write("\n")
PY
rm -rf "$tmp"
echo "updated tests/data/cli/golden_small.report.json"
