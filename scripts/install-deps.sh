#!/bin/sh
# SPDX-License-Identifier: MIT
# install-deps.sh — install nodetune's Debian build and test dependencies.
#
# Usage: scripts/install-deps.sh [GROUP...]
#   core     (default) what `make`, `make check` and `make demo` need
#   bench    adds the reference implementations for bench/ (python3-torch)
#   torch    python3-torch alone: real PyTorch jobs in the tests (torch's
#            elastic agent launching `nodetune exec` in test_launchers.sh);
#            about 50 MB of packages, 500 MB installed with its libraries
#   browser  adds headless Chromium, used to look at HTML reports
#   fuzz     adds clang and its runtimes (libFuzzer, ASan, UBSan), for
#            `make fuzz` and the fuzzing pass of `make check`
#   deploy   adds systemd-analyze, python3-yaml and Node.js with npm, for
#            tests/integration/test_deploy.sh (the unit and the k8s manifests)
#   daemon   adds prometheus, whose promtool checks the daemon's /metrics
#            text in the unit tests (`make check`)
#   fleet    adds etcd-server and etcd-client: the etcd client's unit tests
#            run against a 3-member cluster (tests/tools/etcd-cluster.sh)
#   slurm    adds Slurm (slurmctld, slurmd, the client commands), its SPANK
#            header (libslurm-dev: `make` builds the plugin when it is there)
#            and munge, for tests/integration/test_slurm.sh's one-node Slurm
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
      libmicrohttpd-dev
      libcurl4-openssl-dev
      libsystemd-dev libmd-dev
      libsodium-dev
      python3 python3-jsonschema"
bench="python3-torch python3-numpy"
browser="chromium"
# libclang-rt-dev (libclang-rt-14-dev on Debian 12) holds libFuzzer and the
# sanitizer runtimes; clang alone does not pull it in
fuzz="clang libclang-rt-dev"
# systemd: systemd-analyze verify/security of the unit (the package only;
# the container need not boot with it).  nodejs + npm: the Kubernetes
# schema check (tests/tools/k8s-validate, kubernetes-models from npm).
deploy="systemd python3-yaml nodejs"
daemon="prometheus"
# etcd-server: /usr/bin/etcd (3.4) for the test cluster; etcd-client:
# etcdctl, to look at that cluster by hand
fleet="etcd-server etcd-client"
slurm="slurmctld slurmd slurm-client libslurm-dev munge"
# mandoc: `mandoc -T lint` of man/*; debhelper to lintian build and check
# the .debs; podman (and debootstrap, for a base image without a registry)
# builds the image that installs one; runc boots a container with systemd
# as PID 1 (crun refuses this machine kind's hybrid cgroups: test_systemd.sh)
pkg="mandoc debhelper devscripts dpkg-dev fakeroot lintian podman buildah debootstrap runc"

[ $# -gt 0 ] || set -- core
want=""
for group in "$@"; do
	case "$group" in
	core)    want="$want $core" ;;
	bench)   want="$want $core $bench" ;;
	torch)   want="$want $bench" ;;
	browser) want="$want $browser" ;;
	fuzz)    want="$want $fuzz" ;;
	deploy)  want="$want $deploy"
		# npm is its own package with Debian's nodejs, but comes inside
		# the nodejs of other builds (which conflict with Debian's npm)
		command -v npm >/dev/null 2>&1 || want="$want npm" ;;
	daemon)  want="$want $daemon" ;;
	fleet)   want="$want $fleet" ;;
	slurm)   want="$want $slurm" ;;
	pkg)     want="$want $pkg" ;;
	*) echo "install-deps.sh: unknown group '$group' (core, bench, torch, browser, fuzz, deploy, daemon, fleet, slurm, pkg)" >&2; exit 2 ;;
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
