#!/bin/sh
# SPDX-License-Identifier: MIT
# podman-debian-base.sh [IMAGE] -- a Debian 12 base image for
# deploy/k8s/Containerfile on a host that reaches Debian's archive but no
# container registry: debootstrap --variant=minbase bookworm from $MIRROR
# (default http://deb.debian.org/debian), imported into podman as IMAGE
# (default localhost/debian:12).  test_deb.sh builds the DaemonSet image
# on it when docker.io/library/debian:12 cannot be pulled.  Needs root,
# debootstrap and podman (scripts/install-deps.sh pkg); about 200 MB.
set -eu
img=${1:-localhost/debian:12}
mirror=${MIRROR:-http://deb.debian.org/debian}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
debootstrap --variant=minbase bookworm "$tmp/root" "$mirror" >"$tmp/log" 2>&1 ||
	{ tail -5 "$tmp/log" >&2; echo "podman-debian-base.sh: debootstrap failed" >&2; exit 3; }
tar -C "$tmp/root" -c . | podman import --quiet - "$img" >/dev/null
echo "podman-debian-base.sh: $img ($(podman image inspect --format '{{.Size}}' "$img") bytes)"
