#!/usr/bin/env bash
# Makes a local Debian 12 base image for the Dockerfiles' BASE argument where no container
# registry is reachable: `debootstrap --variant=minbase bookworm`, trimmed the way the
# debian:bookworm-slim image is (no docs but copyrights, no man pages, info or locales; apt
# keeps no caches or translations), imported into podman's store as
#   localhost/prima-base/debian:bookworm-slim     (override with PRIMA_BASE_IMAGE)
# Safe to rerun: an existing image is kept unless PRIMA_BASE_REBUILD=1. Needs root, debootstrap
# and podman, and the Debian mirror (apt's sources are copied from this machine's, when it has
# /etc/apt/sources.list.d/debian.sources, so the image gets bookworm-updates and -security).
#   bash deploy/docker/debootstrap-base.sh
#   podman build --build-arg BASE=localhost/prima-base/debian:bookworm-slim ...
set -euo pipefail

IMAGE=${PRIMA_BASE_IMAGE:-localhost/prima-base/debian:bookworm-slim}
WORK=${PRIMA_BASE_WORKDIR:-/var/tmp/prima-base}

die() {
  echo "debootstrap-base: error: $*" >&2
  exit 1
}

if [ "${PRIMA_BASE_REBUILD:-0}" != 1 ] && podman image exists "$IMAGE"; then
  echo "debootstrap-base: $IMAGE exists (PRIMA_BASE_REBUILD=1 makes it again)" >&2
  exit 0
fi
[ "$(id -u)" = 0 ] || die "debootstrap needs root"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
command -v podman >/dev/null || die "podman is not installed (apt-get install podman)"

rm -rf "$WORK"
mkdir -p "$WORK"
root="$WORK/rootfs"
mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
# As debian:bookworm-slim: dpkg leaves these paths out of every package installed later too.
cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
EOF
echo "debootstrap-base: debootstrap --variant=minbase bookworm (log: $WORK/debootstrap.log)" >&2
debootstrap --variant=minbase bookworm "$root" >"$WORK/debootstrap.log" 2>&1 ||
  die "debootstrap failed; the end of $WORK/debootstrap.log: $(tail -5 "$WORK/debootstrap.log")"

cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb || true"; };
EOF
echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
echo 'Acquire::GzipIndexes "true";' >"$root/etc/apt/apt.conf.d/docker-gzip-indexes"
echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$root/etc/apt/apt.conf.d/docker-autoremove-suggests"
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
  rm -f "$root/etc/apt/sources.list"
fi
# What debootstrap itself left before the excludes applied, and its caches.
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$root"/usr/share/{man,info,groff,lintian,linda,locale}/* \
  "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/var/log/*.log \
  "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old
: >"$root/etc/machine-id"

tar --numeric-owner -C "$root" -c . |
  podman import --quiet --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    - "$IMAGE" >/dev/null
rm -rf "$root"
echo "debootstrap-base: $IMAGE: $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes" >&2
