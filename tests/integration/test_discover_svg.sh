#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# discover --svg on the real-machine topologies (../shared/topologies) and
# the project's fixtures: the picture holds what the topology holds, and a
# real browser (headless Chromium, no network) loads and draws it.
#
# What the picture must show is derived without nodetune: the GPUs, NICs,
# NUMA nodes and PUs and each GPU's nearest NIC with its PCIe path by
# tests/tools/hwloc_facts.py from the XML; what it shows is read by
# tests/tools/svg_facts.py with Python's XML parser.  With gpu-train's plan
# (one rank per GPU, whose NIC is the GPU's nearest) the pairings drawn are
# those GPU-NIC pairs.
. "$(dirname "$0")/lib.sh"
t_plan 22

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml

# ---- usage ----------------------------------------------------------------
expect_fail 2 "^nodetune: discover: --svg and --json are mutually exclusive" "--svg with --json" -- \
	"$NODETUNE" discover --topology "$HGX" --svg "$T_TMP/x.svg" --json
expect_fail 2 "^nodetune: discover: --policy and --ranks colour ranks in the picture: give --svg FILE too" \
	"--policy without --svg" -- "$NODETUNE" discover --topology "$HGX" --policy policies/gpu-train.conf
expect_fail 2 "^nodetune: discover: --svg $T_TMP/none/x.svg: No such file or directory" "--svg in a missing directory" -- \
	"$NODETUNE" discover --topology "$HGX" --svg "$T_TMP/none/x.svg"
check "no file left by the refused runs" -- sh -c '[ ! -e "$1/x.svg" ]' - "$T_TMP"

# ---- the picture against the topology ------------------------------------------
WANT='{gpus: (.gpus | length), nics: (.nics | length), numa: (.numa_nodes | length), pus,
	pairs: ([.gpus[] | select(.nearest_nic) | "GPU \(.index) - \(.nearest_nic) (\(.nic_link))"] | sort),
	external: []}'
HAVE='{gpus, nics, numa, pus, pairs, external}'

chromium_ok=
command -v chromium >/dev/null && chromium_ok=1
[ -n "$chromium_ok" ] || t_need chromium "headless Chromium check of discover --svg: chromium is not installed (scripts/install-deps.sh browser)"
net=""
unshare -n true 2>/dev/null && net="unshare -n"

browse() { # browse NAME SVG: Chromium's DOM and a screenshot of SVG, at its size
	w=$(sed -n 's/^<svg [^>]* width="\([0-9]*\)".*/\1/p' "$2")
	h=$(sed -n 's/^<svg [^>]* height="\([0-9]*\)".*/\1/p' "$2")
	$net chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$2" \
		>"$T_TMP/$1.dom" 2>"$T_TMP/$1.chromium.log"
	$net chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$w,$h" \
		--screenshot="$T_TMP/$1.png" "file://$2" >>"$T_TMP/$1.chromium.log" 2>&1
	# GPU and NIC boxes' fills, the first rank's colour
	python3 tests/tools/pngcolours.py "$T_TMP/$1.png" e6f4ea e3f0fb 1f77b4 >"$T_TMP/$1.colours" 2>&1
	echo "${w}x$h"
}

picture() { # picture XML [PLAN OPTIONS...]: draw XML, check it, browse it
	x=$1
	n=$(basename "$x" .xml)
	shift
	python3 tests/tools/hwloc_facts.py "$x" >"$T_TMP/$n.facts" || t_not_ok "hwloc_facts.py $x failed"
	jq -S "$WANT" "$T_TMP/$n.facts" >"$T_TMP/$n.want"
	run "$NODETUNE" discover --topology "$x" --svg "$T_TMP/$n.svg" "$@"
	python3 tests/tools/svg_facts.py "$T_TMP/$n.svg" >"$T_TMP/$n.svgfacts" 2>&1
	jq -S "$HAVE" "$T_TMP/$n.svgfacts" >"$T_TMP/$n.have" 2>&1
	check "$n: exit $RC, nothing on stdout, the picture shows $(jq -r '"\(.gpus) GPUs, \(.nics) NICs, \(.numa) NUMA nodes, \(.pus) PUs, \(.pairs | length) pairings"' "$T_TMP/$n.want")${1:+ ($*)}, nothing external" -- \
		sh -c '[ "$1" -eq 0 ] && [ ! -s "$2" ] && diff -u "$3" "$4" >&2' - "$RC" "$OUT" "$T_TMP/$n.want" "$T_TMP/$n.have"
	[ -n "$chromium_ok" ] || return 0
	size=$(browse "$n" "$T_TMP/$n.svg")
	gpus=$(jq .gpus "$T_TMP/$n.want")
	nics=$(jq .nics "$T_TMP/$n.want")
	check "$n: Chromium loads it (a DOM with $gpus GPU and $nics NIC groups, no parser error) and draws it at $size: $(tr '\n' ' ' <"$T_TMP/$n.colours")" -- \
		sh -c '[ "$(grep -o "<g class=\"gpu\"" "$1.dom" | wc -l)" -eq "$2" ] &&
		       [ "$(grep -o "<g class=\"nic\"" "$1.dom" | wc -l)" -eq "$3" ] &&
		       ! grep -q parsererror "$1.dom" && grep -q "</svg>" "$1.dom" &&
		       head -n 1 "$1.colours" | grep -qx "$4" &&
		       awk -v g="$2" -v n="$3" -v plan="$5" "
		           \$1 == \"e6f4ea\" && (g > 0) != (\$2 > 200 * g) { exit 1 }
		           \$1 == \"e3f0fb\" && (n > 0) != (\$2 > 200 * n) { exit 1 }
		           \$1 == \"1f77b4\" && plan && \$2 < 100 { exit 1 }" "$1.colours"' \
		- "$T_TMP/$n" "$gpus" "$nics" "$size" "$([ $# -gt 0 ] && echo 1 || echo 0)"
}

PLAN="--policy policies/gpu-train.conf"
picture "$HGX" $PLAN
picture tests/fixtures/topologies/epyc-2s-numa0-8-mi300-synthetic.xml $PLAN
picture tests/fixtures/topologies/epyc-2s-numa0-8-mi300-synthetic.xml
if [ -d "$SHARED" ]; then
	picture "$SHARED/g4dnmetal.xml" $PLAN
	picture "$SHARED/32em64t-2n8c2t-pci-normalio.xml" $PLAN
	picture "$SHARED/power8gpudistances.xml" $PLAN
	picture "$SHARED/96em64t-4n4d3ca2co-pci.xml"
	# its CPUs cut to 4 cores: gpu-train plans 2 ranks there, not 16
	picture "$SHARED/nvidiaDGX2.xml"
else
	t_need ../shared "$SHARED is absent: discover --svg on the real-machine exports not checked"
fi

# the picture in docs/ is what `make docs-discover` draws now
run "$NODETUNE" discover --topology "$HGX" --policy policies/gpu-train.conf --svg "$T_TMP/docs.svg"
check "docs/img/discover-hgx.svg is current (exit $RC; else run make docs-discover)" -- \
	sh -c '[ "$1" -eq 0 ] && cmp "$2" docs/img/discover-hgx.svg && [ -s docs/img/discover-hgx.png ]' - "$RC" "$T_TMP/docs.svg"

# text from the topology is escaped: a file name with XML's special characters
cp "$HGX" "$T_TMP/a<b&c.xml"
run "$NODETUNE" discover --topology "$T_TMP/a<b&c.xml" --svg "$T_TMP/amp.svg"
check "a topology named a<b&c.xml: exit $RC, the picture parses (its title escaped)" -- \
	sh -c '[ "$1" -eq 0 ] && python3 tests/tools/svg_facts.py "$2" >/dev/null && grep -q "a&lt;b&amp;c.xml</title>" "$2"' - "$RC" "$T_TMP/amp.svg"

t_done
