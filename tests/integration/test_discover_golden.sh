#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# discover --json against the expected output kept beside each fixture, and
# each expected file's facts against a derivation that does not use nodetune.
#
# The expected files are nodetune's own output, so matching them only shows
# that nothing changed.  What makes them right: tests/tools/hwloc_facts.py
# derives the facts (packages, cores, PUs, NUMA nodes, their memory and
# distances, the GPUs (and their names) and NICs with their NUMA locality,
# each GPU's nearest NIC and the PCIe path to it, and from a sysroot the
# kernel state, nohz_full and the cgroup mode among it, and each node's free
# memory)
# from the hwloc XML with Python's xml module and from the tree's files, and
# they must equal the same fields of the expected file.  A tree without an
# XML is exported by hwloc's lstopo-no-graphics (HWLOC_FSROOT), a synthetic
# topology by lstopo-no-graphics -i.
# What stays a freshness check only (compared with nodetune's own earlier
# output, nothing derived): .source (the arguments echoed), .schema, and
# .warnings and .unknown (nodetune's own sentences).
# UPDATE_GOLDEN=1 rewrites the expected files (review the diff!): those
# checks then report a skip, never a pass; the facts are still checked.
. "$(dirname "$0")/lib.sh"
t_plan 27

# the fields hwloc_facts.py derives, from a discover --json document
FACTS='{packages, cores, pus, numa_nodes,
	gpus: [.gpus[] | {index, pci_bus_id, vendor, name, numa_node, cpus, nearest_nic, nic_link}],
	nics: ([.nics[] | {name, pci_bus_id, numa_node, cpus, rdma_device}] | sort_by(.pci_bus_id))}
	+ (if .kernel then {kernel: (.kernel | {thp_enabled, thp_defrag, numa_balancing, governor, isolated_cpus,
	   swap_total_bytes, hugepages: (.hugepages | sort_by(.node, .size_kb)), cgroup_version, cgroup_mode, nohz_full})} else {} end)'

golden() { # golden EXPECTED -- ARGS...
	exp=$1
	shift 2
	run "$NODETUNE" discover --json "$@"
	if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
		if [ "$RC" -eq 0 ] && cp "$OUT" "$exp"; then
			t_skip_ "update: UPDATE_GOLDEN=1: rewrote $exp from discover $* (not a check: review the diff)"
		else
			t_not_ok "UPDATE_GOLDEN=1: discover $* exit $RC, $exp not rewritten"
		fi
	elif [ "$RC" -eq 0 ] && diff -u "$exp" "$OUT" >"$T_TMP/diff"; then
		t_ok "discover $* matches $(basename "$exp")"
	else
		t_not_ok "discover $* (exit $RC) differs from $exp"
		head -40 "$T_TMP/diff" | sed 's/^/#   /'
		head -5 "$ERR" | sed 's/^/#   /'
	fi
}

facts() { # facts EXPECTED XML [SYSROOT]: EXPECTED's facts = those derived from XML (and SYSROOT)
	exp=$1
	shift
	if ! python3 tests/tools/hwloc_facts.py "$@" >"$T_TMP/derived" 2>"$T_TMP/derr"; then
		t_not_ok "$(basename "$exp"): hwloc_facts.py $* failed: $(head -1 "$T_TMP/derr")"
		return
	fi
	jq -S . "$T_TMP/derived" >"$T_TMP/want"
	jq -S "$FACTS" "$exp" >"$T_TMP/have"
	if diff -u "$T_TMP/want" "$T_TMP/have" >"$T_TMP/fdiff"; then
		t_ok "$(basename "$exp"): $(jq -r '"\(.packages) packages, \(.numa_nodes | length) NUMA nodes, \(.cores) cores, \(.pus) PUs, \(.gpus | length) GPUs on nodes \([.gpus[].numa_node] | unique), \(.nics | length) NICs"' "$T_TMP/want")$([ $# -eq 2 ] && echo ", kernel state") as derived from $(basename "$1")$([ $# -eq 2 ] && echo " and $(basename "$2")")"
	else
		t_not_ok "$(basename "$exp") disagrees with what hwloc_facts.py derives from $*"
		head -40 "$T_TMP/fdiff" | sed 's/^/#   /'
	fi
}

F=tests/fixtures
HGX=$F/topologies/hgx-2s8g8n-synthetic.xml
EPYC=$F/topologies/epyc-2s-numa0-8-mi300-synthetic.xml
golden $F/topologies/hgx-2s8g8n-synthetic.expected.json -- --topology $HGX
facts $F/topologies/hgx-2s8g8n-synthetic.expected.json $HGX
golden $F/topologies/epyc-2s-numa0-8-mi300-synthetic.expected.json -- --topology $EPYC
facts $F/topologies/epyc-2s-numa0-8-mi300-synthetic.expected.json $EPYC
for t in debian12-kvm-2cpu; do
	golden $F/sysroot/$t.expected.json -- --sysroot $F/sysroot/$t
	HWLOC_FSROOT=$F/sysroot/$t lstopo-no-graphics --of xml - >"$T_TMP/$t.xml" 2>/dev/null
	facts $F/sysroot/$t.expected.json "$T_TMP/$t.xml" $F/sysroot/$t
done
# a kernel without per-node hugepage pools (the capture with them removed):
# discover reports the global pools with node null, as the derivation does
cp -a $F/sysroot/debian12-kvm-2cpu "$T_TMP/global-pools"
rm -r "$T_TMP"/global-pools/sys/devices/system/node/node*/hugepages
run "$NODETUNE" discover --json --sysroot "$T_TMP/global-pools"
cp "$OUT" "$T_TMP/global-pools.json"
check "global hugepage pools: discover exit $RC, each pool's node null" -- \
	sh -c '[ "$1" -eq 0 ] && jq -e "[.kernel.hugepages[].node] == [null, null]" "$2" >/dev/null' - "$RC" "$T_TMP/global-pools.json"
facts "$T_TMP/global-pools.json" "$T_TMP/debian12-kvm-2cpu.xml" "$T_TMP/global-pools"
for t in gpu-host-untuned gpu-host-tuned; do
	golden $F/sysroot/$t.expected.json -- --topology $HGX --sysroot $F/sysroot/$t
	facts $F/sysroot/$t.expected.json $HGX $F/sysroot/$t
done
# the gpu-host trees are exactly what plant-hazards.sh makes from the capture
run tests/fixtures/sysroot/plant-hazards.sh $F/sysroot/debian12-kvm-2cpu "$T_TMP/planted"
for t in gpu-host-untuned gpu-host-tuned gpu-host-hazards; do
	check "$t = plant-hazards.sh on the capture debian12-kvm-2cpu (exit $RC)" -- \
		[ "$(tree_hash $F/sysroot/$t)" = "$(tree_hash "$T_TMP/planted/$t")" ]
done
SYN="pack:2 numa:1 core:8 pu:2"
golden $F/synthetic-pack2-numa1-core8-pu2.expected.json -- --synthetic "$SYN"
lstopo-no-graphics -i "$SYN" --of xml - >"$T_TMP/synthetic.xml" 2>/dev/null
facts $F/synthetic-pack2-numa1-core8-pu2.expected.json "$T_TMP/synthetic.xml"

if [ -d "$SHARED" ]; then
	for x in "$SHARED"/*.xml; do
		golden "$F/shared-expected/$(basename "$x" .xml).json" -- --topology "$x"
		facts "$F/shared-expected/$(basename "$x" .xml).json" "$x"
	done
else
	t_need ../shared "$SHARED is absent: real-machine exports not checked"
fi
t_done
