#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (scripts/setup.sh), builds prima with warnings as errors
# and runs every test with ctest. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Python clients of the serving tests (tests/server/serve_test.py, clients_test.py,
# fields_test.py, dropin_test.py): the official openai package, locust, tritonclient[http]
# (with numpy), text-generation and huggingface_hub (its InferenceClient); kubernetes-validate
# (pinned) for the Helm chart's test (tests/deploy/helm_chart_test.py). Debian 12's system Python refuses plain pip installs
# (PEP 668). Each pair: module, package.
for pair in openai:openai locust:locust 'tritonclient.http:tritonclient[http]' numpy:numpy \
  text_generation:text-generation huggingface_hub:huggingface_hub \
  kubernetes_validate:kubernetes-validate==1.31.0; do
  mod=${pair%%:*} pkg=${pair#*:}
  python3 -c "import $mod" 2>/dev/null || python3 -m pip install -q "$pkg" 2>/dev/null ||
    python3 -m pip install -q --break-system-packages "$pkg"
done
# Helm for the chart's test (not in Debian: a pinned upstream binary, scripts/fetch-helm.sh).
bash scripts/fetch-helm.sh >/dev/null
PRIMA_WERROR=1 bash scripts/build.sh
ctest --test-dir "${PRIMA_BUILD_DIR:-build}" -j "${PRIMA_JOBS:-2}" --output-on-failure --timeout 900
