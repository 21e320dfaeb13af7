#!/bin/sh
# SPDX-License-Identifier: MIT
# demo-fleet.sh BUILD_DIR — `nodetune fleet` on a simulated fleet: a local
# 3-member etcd (tests/tools/etcd-cluster.sh) and 12 hosts of 3 hardware
# classes, each a `nodetune daemon --endpoints` on its own copy of the
# gpu-host-untuned tree with a real topology from ../shared/topologies.
#
#  1. a policy (THP defrag madvise) rolled through the waves 1/class, 25%,
#     50%, 100%, gated on the canaries by an A/B of a job (a script whose
#     run time depends on its host's tree, found in $NODETUNE_SYSROOT);
#  2. a regressing policy (NUMA balancing off: the job runs 2x slower there)
#     stopped by the gate: rolled back, the canaries' trees byte for byte as
#     before, no other host touched;
#  3. both rollouts' timelines.
#
# Everything lives in one temporary directory and is removed at the end,
# also on Ctrl-C (every daemon and etcd member stopped first).
set -eu
build=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
nt="$build/nodetune"
topos=../shared/topologies
ETCD=${ETCD:-/usr/bin/etcd}
[ -x "$ETCD" ] || { echo "demo-fleet: etcd not installed ($ETCD): apt-get install etcd-server" >&2; exit 1; }
for x in g4dnmetal.xml nvidiaDGX2.xml 96em64t-4n4d3ca2co-pci.xml; do
	[ -f "$topos/$x" ] || { echo "demo-fleet: no $topos/$x" >&2; exit 1; }
done

dir=$(mktemp -d /tmp/nodetune-demo-fleet.XXXXXX)
# the controller's signing key, which every host trusts (fleet keygen)
mkdir -m 700 "$dir/ctl" && mkdir -m 755 "$dir/keys.d"
"$nt" fleet keygen --out "$dir/ctl" --name ctl >/dev/null && cp "$dir/ctl/ctl.pub" "$dir/keys.d/"
cleanup() {
	trap - EXIT INT TERM
	for p in "$dir"/h*/pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
	for p in "$dir"/h*/pid; do [ -f "$p" ] && wait "$(cat "$p")" 2>/dev/null; done
	tests/tools/etcd-cluster.sh stop "$dir/etcd" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "demo-fleet: interrupted, cleaning up" >&2; cleanup; exit 130' INT TERM

tree_hash() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-12; }
policy() { # NAME SECTION KEY VALUE
	printf '[main]\nsummary = demo %s\n[%s]\n%s = %s\n' "$1" "$2" "$3" "$4" >"$dir/$1.conf"
	chmod 644 "$dir/$1.conf"
}
alive() { "$nt" fleet hosts --endpoints "$EP" --json | python3 -c '
import json, sys; print(sum(1 for h in json.load(sys.stdin)["hosts"] if h["alive"]))'; }

echo "### a 3-member etcd on loopback"
EP=$(tests/tools/etcd-cluster.sh start "$dir/etcd")
echo "endpoints: $EP"

echo
echo "### 12 simulated hosts: h01-h04 g4dn.metal, h05-h08 DGX-2, h09-h12 a 4-socket server"
i=0
for x in g4dnmetal.xml nvidiaDGX2.xml 96em64t-4n4d3ca2co-pci.xml; do
	for _ in 1 2 3 4; do
		i=$((i + 1)); h=$(printf 'h%02d' $i); d=$dir/$h
		mkdir -p "$d" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$d/root"
		"$nt" daemon --sysroot "$d/root" --topology "$topos/$x" --policy policies/baseline.conf \
			--endpoints "$EP" --host "$h" --fleet-keys "$dir/keys.d" --gates-dir "$dir/gates.d" --no-metrics --socket "$d/sock" --state-dir "$d/state" \
			--interval 1 >"$d/log" 2>&1 &
		echo $! >"$d/pid"
	done
done
n=0
while [ "$(alive 2>/dev/null)" != 12 ] && [ $n -lt 80 ]; do sleep 0.25; n=$((n + 1)); done
"$nt" fleet hosts --endpoints "$EP"

# the job the canaries A/B: slower with NUMA balancing off, faster with THP defrag madvise
printf '%s\n' '#!/bin/sh' \
	'if [ "$(cat "$NODETUNE_SYSROOT/proc/sys/kernel/numa_balancing")" = 0 ]; then sleep 0.3' \
	'elif [ "$(cat "$NODETUNE_SYSROOT/sys/kernel/mm/transparent_hugepage/defrag")" = madvise ]; then sleep 0.05' \
	'else sleep 0.15; fi' >"$dir/job.sh"
chmod 755 "$dir/job.sh"
# the hosts' gate "job": the store names it, each host maps it to job.sh,
# run as nobody (who must reach the script and the simulated trees)
mkdir -p "$dir/gates.d"
printf 'command = %s\nuser = nobody\nbudget = 60\n' "$dir/job.sh" >"$dir/gates.d/job.conf"
chmod 755 "$dir" "$dir/gates.d"
chmod 644 "$dir/gates.d/job.conf"
policy defrag thp defrag madvise
policy nonuma sched numa_balancing 0

echo
echo "### 1. roll out defrag.conf (THP defrag madvise), canaries gated on the job"
echo "\$ nodetune fleet rollout --policy defrag.conf --waves 1/class,25%,50%,100% --gate job"
"$nt" fleet rollout --endpoints "$EP" --signing-key "$dir/ctl/ctl.key" --policy "$dir/defrag.conf" --name good --waves 1/class,25%,50%,100% \
	--gate job --gate-budget 60 --wave-timeout 120 || true
printf 'THP defrag per host:'
for d in "$dir"/h*; do printf ' %s=%s' "${d##*/}" "$(cat "$d/root/sys/kernel/mm/transparent_hugepage/defrag")"; done
echo

echo
echo "### 2. roll out nonuma.conf (NUMA balancing off): the job regresses on the canaries"
for d in "$dir"/h*; do tree_hash "$d/root" >"$d/before"; done
"$nt" fleet rollout --endpoints "$EP" --signing-key "$dir/ctl/ctl.key" --policy "$dir/nonuma.conf" --name bad --waves 1/class,25%,50%,100% \
	--gate job --gate-budget 60 --wave-timeout 120 && rc=0 || rc=$?
echo "(exit $rc)"
same=0 changed=""
for d in "$dir"/h*; do
	if [ "$(tree_hash "$d/root")" = "$(cat "$d/before")" ]; then same=$((same + 1)); else changed="$changed ${d##*/}"; fi
done
echo "trees byte for byte as before the rollout: $same of 12${changed:+; changed:$changed}"

echo
echo "### 3. the timelines"
"$nt" fleet status --endpoints "$EP" --name good
echo
"$nt" fleet status --endpoints "$EP" --name bad
