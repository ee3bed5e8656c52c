#!/usr/bin/env bash
# Renders one page of each HTML report kind (simulate, incident, comparison, plan, replay) from
# fresh runs and screenshots its first screen with headless Chromium into
# docs/images/report-<kind>.png; the pages themselves go to reports/examples/. Run after a
# change to the renderer (reports/) or to prima replay's page (cli/replay_html.cpp).
#
#   scripts/report_screenshots.sh            # needs build/prima and Debian's chromium
#   PRIMA_BIN=/path/to/prima scripts/report_screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${PRIMA_BIN:-build/prima}
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
  echo "report_screenshots.sh: chromium not found (apt-get install chromium)" >&2
  exit 1
fi
[ -x "$BIN" ] || { echo "report_screenshots.sh: $BIN: no prima binary (build it first)" >&2; exit 1; }
# The pages from this tree's renderer, even when build/prima embeds an older copy.
export PRIMA_REPORT_SCRIPT="$PWD/reports/render.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p docs/images reports/examples

echo "simulating ..."
"$BIN" simulate --out "$tmp/default" -q >/dev/null
"$BIN" simulate scenarios/incidents/thermal_clock_drift.json --out "$tmp/thermal" -q >/dev/null
"$BIN" simulate scenarios/incidents/thermal_clock_drift_mitigated.json --out "$tmp/thermal_fix" \
  -q >/dev/null
"$BIN" simulate scenarios/incidents/node_failure.json --out "$tmp/node" -q >/dev/null
"$BIN" plan scenarios/plans/pools_mixed_gpus.json --out "$tmp/plan" --jobs 2 -q >/dev/null
# The thermal incident's requests replayed on the mitigated cluster: far outside any stated error.
"$BIN" replay -m "$tmp/thermal/requests.csv" -s scenarios/incidents/thermal_clock_drift_mitigated.json \
  --out "$tmp/replay" >/dev/null 2>&1

echo "rendering ..."
for d in default thermal node; do "$BIN" report "$tmp/$d" >/dev/null; done
"$BIN" report "$tmp/thermal" "$tmp/thermal_fix" --out "$tmp/compare.html" >/dev/null

# page name -> (html, screenshot height in CSS pixels)
declare -A PAGES=(
  [simulate]="$tmp/default/report.html 1300"
  [incident]="$tmp/thermal/report.html 1500"
  [node-failure]="$tmp/node/report.html 1300"
  [compare]="$tmp/compare.html 1500"
  [plan]="$tmp/plan/report.html 1500"
  [replay]="$tmp/replay/comparison.html 1300"
)
for kind in simulate incident node-failure compare plan replay; do
  read -r html height <<<"${PAGES[$kind]}"
  "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --window-size=1200,"$height" --screenshot="docs/images/report-$kind.png" "file://$html" \
    >/dev/null 2>&1
  echo "wrote docs/images/report-$kind.png"
done
# 128 colours (a third of the size; these pages are mostly flat colour) when Pillow is there.
/usr/bin/python3 - docs/images/report-*.png <<'PY' || echo "(python3-pil missing: PNGs left unquantized)"
import sys
from PIL import Image
for path in sys.argv[1:]:
    Image.open(path).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(
        path, optimize=True)
PY
cp "$tmp/thermal/report.html" reports/examples/thermal_clock_drift.html
cp "$tmp/compare.html" reports/examples/thermal_clock_drift_compare.html
cp "$tmp/plan/report.html" reports/examples/plan_pools_mixed_gpus.html
cp "$tmp/replay/comparison.html" reports/examples/replay_thermal_on_mitigated.html
echo "wrote reports/examples/"
