#!/bin/sh
# SPDX-License-Identifier: MIT
# demo.sh BUILD_DIR — the main job on this machine, as far as it exists today:
# discover this host, plan the gpu-train policy for it and for a real GPU
# server, show what applying it would change (a dry run: nothing is
# written), then train dlrm-small for 20 steps with the harness under mpirun,
# each rank bound by `nodetune exec`, A/B-test baseline against gpu-train,
# and A/B-test a job against the same job under a launcher that starts a
# helper on its CPU (a "framework upgrade"): a regression, its cause named.
set -eu
build=$1
cd "$(dirname "$0")/.."
nt="$build/nodetune"
xml=../shared/topologies/g4dnmetal.xml    # the real-machine test data, when beside the clone
what="AWS g4dn.metal, 8 x T4"
if [ ! -f "$xml" ]; then
	xml=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
	what="an HGX-like server: 2 sockets, 8 H100, 8 ConnectX-7"
fi

echo "### nodetune discover (this host)"
"$nt" discover
echo
echo "### nodetune plan --policy policies/gpu-train.conf --ranks 2 (this host)"
"$nt" plan --policy policies/gpu-train.conf --ranks 2
echo
echo "### nodetune discover --topology $xml ($what)"
"$nt" discover --topology "$xml"
echo
echo "### nodetune plan --policy policies/gpu-train.conf --topology $xml"
"$nt" plan --policy policies/gpu-train.conf --topology "$xml"
echo
echo "### nodetune apply --policy policies/gpu-train.conf --dry-run (this host; nothing is written)"
"$nt" apply --policy policies/gpu-train.conf --dry-run

echo
echo "### mpirun -np 2 nodetune exec --policy policies/gpu-train.conf -- nodetune-harness (20 steps of dlrm-small, each rank bound by nodetune)"
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
mpirun -np 2 "$nt" exec --policy policies/gpu-train.conf -- "$build/nodetune-harness" --steps 20 --warmup 3

echo
# --threshold 5: what a 90 s demo on a shared 2-CPU box can judge (its pair
# noise is several percent); at the default 2% it would need minutes more
echo "### nodetune ab --a policy=policies/baseline.conf --b policy=policies/gpu-train.conf --threshold 5 (the harness, world 2; policies applied and reverted per trial)"
if [ "$(id -u)" -eq 0 ]; then
	"$nt" ab --a policy=policies/baseline.conf --b policy=policies/gpu-train.conf --trials 4 --steps 20 --budget 90 \
		--threshold 5 \
		--report "$build/demo-ab.html" || true
	echo "(the HTML report: $build/demo-ab.html)"
else
	echo "(skipped: applying a policy's host settings needs root)"
fi

echo
# the question after a framework upgrade: the same job, A as it was, B under
# a launcher that also starts a helper on the job's CPU
# (contrib/examples/agent-wrapper.sh); ab finds the regression and names
# the process B's own command started
job="taskset -c 0 $build/nodetune-harness --comm none --rows 1000 --batch 512 --steps 15 --warmup 2 --blas-threads 1 --quiet"
echo "### nodetune ab --a cmd=JOB --b cmd='contrib/examples/agent-wrapper.sh JOB' (JOB: the harness on CPU 0; B's launcher starts a helper there)"
if [ "$(id -u)" -eq 0 ]; then
	"$nt" ab --a "cmd=$job" --b "cmd=contrib/examples/agent-wrapper.sh $job" --trials 4 --budget 60 \
		--report "$build/demo-ab-upgrade.html" || true
	echo "(the HTML report: $build/demo-ab-upgrade.html)"
else
	echo "(skipped: the trial cgroups need root)"
fi
