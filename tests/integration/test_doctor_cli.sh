#!/bin/sh
# nodetune doctor from the command line: exit 1 with every hazard on a tree
# that has them, 0 on a tuned one, 2 on garbage; the live host runs.
. "$(dirname "$0")/lib.sh"

HGX=tests/fixtures/topologies/hgx-2s8g8n.xml
HAZ=tests/fixtures/sysroot/gpu-host-hazards
GT=policies/gpu-train.conf

run "$NODETUNE" doctor --topology $HGX --sysroot $HAZ --policy $GT --json
check "hazards tree: exit 1, all 8 named hazards with evidence and a fix" -- sh -c "[ $RC -eq 1 ] && jq -e '
	.checks == 8 and ([.hazards[].code] | sort) == [\"cgroup-throttling\",\"governor\",\"irq-on-rank-cpus\",
	\"numa-balancing-on\",\"swap-on\",\"sys-saturated-core\",\"thp-defrag-always\",\"zombie-memcg\"]
	and all(.hazards[]; (.evidence | length) > 0 and (.fix | length) > 0)' '$OUT'"
run "$NODETUNE" doctor --topology $HGX --sysroot $HAZ --policy $GT
check "human output: a count line, then each hazard with evidence and fix" -- sh -c \
	"[ $RC -eq 1 ] && grep -q '^8 hazards found by 8 checks' '$OUT' && grep -q '^! zombie-memcg: 70209 dying' '$OUT' && grep -q '^    fix: ' '$OUT'"
run "$NODETUNE" doctor --topology $HGX --sysroot tests/fixtures/sysroot/gpu-host-tuned --policy $GT
check "tuned tree: exit 0, no hazard" -- sh -c "[ $RC -eq 0 ] && grep -q '^0 hazards' '$OUT'"

G=$T_TMP/g
cp -r $HAZ "$G" && printf 'cpu0 1 2 x\n' >"$G/proc/stat.series/005"
expect_fail 2 "proc/stat.series/005:1: expected 'cpuN user nice system idle" "garbage in a /proc/stat sample" -- \
	"$NODETUNE" doctor --topology $HGX --sysroot "$G"
expect_fail 2 "--window '0': expected seconds" "bad --window" -- "$NODETUNE" doctor --window 0
expect_fail 2 "--topology/--synthetic describe another machine" "a foreign topology without its kernel state" -- \
	"$NODETUNE" doctor --topology $HGX

# this host as it is: every one of the 8 checks ran or says why it was
# skipped, the exit status follows what was found (1 with a hazard, else 0),
# and three findings are derived here from the kernel, not from doctor:
# THP defrag always, swap on (/proc/swaps), NUMA balancing on with 2+ nodes
run "$NODETUNE" doctor --window 1 --json
l_defrag=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/defrag)
l_swap=$(awk 'NR > 1' /proc/swaps | wc -l)
l_nodes=$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)
l_nb=$(cat /proc/sys/kernel/numa_balancing)
tf() { if "$@"; then echo true; else echo false; fi; }
l_d="[$(tf [ "$l_defrag" = always ]), $(tf [ "$l_swap" -gt 0 ]), $(tf [ "$l_nodes" -ge 2 -a "$l_nb" != 0 ])]"
check "this host: 8 checks run or skipped with a reason, exit $RC as found; THP defrag always, swap on, NUMA balancing on by the kernel: $l_d (got $(jq -c '[.checks, [.hazards[].code]]' "$OUT" 2>/dev/null))" -- sh -c \
	"[ $RC -le 1 ] && jq -e --argjson rc $RC --argjson d '$l_d' '
	  def has(c): [.hazards[].code] | index(c) != null;
	  .checks + (.skipped | length) == 8 and ((.hazards | length > 0) == (\$rc == 1))
	  and has(\"thp-defrag-always\") == \$d[0] and has(\"swap-on\") == \$d[1] and has(\"numa-balancing-on\") == \$d[2]
	  and all(.hazards[]; (.evidence | length) > 0 and (.fix | length) > 0)' '$OUT'"
t_done
