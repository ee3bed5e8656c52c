#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (scripts/setup.sh), builds prima with warnings as errors
# and runs every test with ctest. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Python clients of the serving tests (tests/server/serve_test.py, fields_test.py): the official
# openai package, locust and Hugging Face's text-generation client (Debian 12's system Python
# refuses plain pip installs: PEP 668). Each entry is module:package.
for mp in openai:openai locust:locust text_generation:text-generation; do
  mod=${mp%%:*} pkg=${mp#*:}
  python3 -c "import $mod" 2>/dev/null || python3 -m pip install -q "$pkg" 2>/dev/null ||
    python3 -m pip install -q --break-system-packages "$pkg"
done
PRIMA_WERROR=1 bash scripts/build.sh
ctest --test-dir "${PRIMA_BUILD_DIR:-build}" -j "${PRIMA_JOBS:-2}" --output-on-failure --timeout 900
