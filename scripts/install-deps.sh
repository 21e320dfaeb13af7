#!/bin/sh
# install-deps.sh — install nodetune's Debian build and test dependencies.
#
# Usage: scripts/install-deps.sh [GROUP...]
#   core     (default) what `make`, `make check` and `make demo` need
#   bench    adds the reference implementations for bench/ (python3-torch)
#   browser  adds headless Chromium, used to look at HTML reports
#   fuzz     adds clang and its runtimes (libFuzzer, ASan, UBSan), for
#            `make fuzz` and the fuzzing pass of `make check`
#
# Idempotent: when every package of the asked groups is already installed it
# returns at once without touching apt.  Needs root (or sudo) otherwise.
set -eu

# Each package and why it is here is documented in README.md ("Dependencies").
core="build-essential pkg-config
      libhwloc-dev hwloc-nox
      libnuma-dev
      libcgroup-dev cgroup-tools
      libcmocka-dev jq
      libjansson-dev
      libopenmpi-dev openmpi-bin
      libopenblas-dev
      libzstd-dev
      python3"
bench="python3-torch python3-numpy"
browser="chromium"
# libclang-rt-dev (libclang-rt-14-dev on Debian 12) holds libFuzzer and the
# sanitizer runtimes; clang alone does not pull it in
fuzz="clang libclang-rt-dev"

[ $# -gt 0 ] || set -- core
want=""
for group in "$@"; do
	case "$group" in
	core)    want="$want $core" ;;
	bench)   want="$want $core $bench" ;;
	browser) want="$want $browser" ;;
	fuzz)    want="$want $fuzz" ;;
	*) echo "install-deps.sh: unknown group '$group' (core, bench, browser, fuzz)" >&2; exit 2 ;;
	esac
done

missing=""
for pkg in $want; do
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $pkg" ;;
	esac
done
[ -n "$missing" ] || exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || {
		echo "install-deps.sh: need root to install:$missing" >&2; exit 3; }
	SUDO=sudo
fi
echo "install-deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
