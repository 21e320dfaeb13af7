#!/bin/sh
# demo.sh BUILD_DIR — the main job on this machine, as far as it exists today:
# discover this host, then one real GPU server from ../shared/topologies.
set -eu
build=$1
cd "$(dirname "$0")/.."
nt="$build/nodetune"

echo "### nodetune discover (this host)"
"$nt" discover
echo
xml=../shared/topologies/g4dnmetal.xml
if [ -f "$xml" ]; then
	echo "### nodetune discover --topology $(basename "$xml") (AWS g4dn.metal, 8 x T4)"
	"$nt" discover --topology "$xml"
fi
