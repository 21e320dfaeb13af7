#!/bin/sh
# demo.sh BUILD_DIR — the main job on this machine, as far as it exists today:
# discover this host, plan the gpu-train policy for it and for a real GPU
# server, and show what applying it would change (a dry run: nothing is
# written).
set -eu
build=$1
cd "$(dirname "$0")/.."
nt="$build/nodetune"
xml=../shared/topologies/g4dnmetal.xml

echo "### nodetune discover (this host)"
"$nt" discover
echo
echo "### nodetune plan --policy policies/gpu-train.conf --ranks 2 (this host)"
"$nt" plan --policy policies/gpu-train.conf --ranks 2
if [ -f "$xml" ]; then
	echo
	echo "### nodetune discover --topology $xml (AWS g4dn.metal, 8 x T4)"
	"$nt" discover --topology "$xml"
	echo
	echo "### nodetune plan --policy policies/gpu-train.conf --topology $xml"
	"$nt" plan --policy policies/gpu-train.conf --topology "$xml"
fi
echo
echo "### nodetune apply --policy policies/gpu-train.conf --dry-run (this host; nothing is written)"
"$nt" apply --policy policies/gpu-train.conf --dry-run
