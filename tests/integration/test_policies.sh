#!/bin/sh
# SPDX-License-Identifier: MIT
# host: thp sysctl knobs cgroup state
# The shipped policies against doctor on this host (F9 of the first-hour
# review): a policy-fixable hazard planted live (THP defrag = always), named
# by doctor; `nodetune apply --policy gpu-train` (the checkout's policies,
# a private state dir); doctor then finds nothing a policy could fix (the
# hazards no policy key fixes are named: doctor.c's table); `nodetune
# revert` puts every live knob the policy names back, byte for byte.
# Knobs this host lacks (no cpufreq) are skipped by doctor with a reason.
. "$(dirname "$0")/lib.sh"
t_plan 9

NODETUNE_POLICY_PATH=$SRCDIR/policies
export NODETUNE_POLICY_PATH
ST=$T_TMP/state
UNFIXABLE='["zombie-memcg", "sys-saturated-core", "cgroup-throttling", "slurm-revert-pending"]'

# the live files gpu-train's host keys name, with their content
knobs() {
	for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag \
		/proc/sys/kernel/numa_balancing /proc/sys/vm/swappiness \
		/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
		[ -e "$f" ] || continue
		printf '%s: %s\n' "$f" "$(cat "$f")" || return 1
	done
}

knobs_to() { knobs >"$1"; }

# gpu-shared binds and changes nothing host-wide: plan says so (the Slurm
# plugin's rule, no key from [cgroup] on, is test_policy.c's)
run "$NODETUNE" plan --policy gpu-shared --topology tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml --json
check "plan --policy gpu-shared on the HGX: 8 ranks bound next to their GPU, memory preferred, no host setting, no IRQ, no job cgroup" -- \
	sh -c "[ $RC -eq 0 ] && jq -e '(.ranks | length) == 8 and all(.ranks[]; .cpus != null) and .ranks[0].memory_policy == \"preferred\" and
	 .host == [] and .irqs == [] and .cgroup == null' '$OUT' >/dev/null"

if [ "$(id -u)" -ne 0 ]; then
	t_skip_host root "gpu-train against doctor live: needs root to apply a policy"
	t_rest
fi
DEFRAG=/sys/kernel/mm/transparent_hugepage/defrag
if [ -w $DEFRAG ]; then
	t_defer "echo $(sed -n 's/.*\[\(.*\)\].*/\1/p' $DEFRAG) >$DEFRAG"
	echo always >$DEFRAG
fi
check "the live knobs read before" -- knobs_to "$T_TMP/before"
t_defer "'$NODETUNE' revert --state-dir '$ST' >/dev/null 2>&1"

run "$NODETUNE" doctor --window 1 --json
check "before: doctor names the planted THP defrag = always (exit $RC)" -- sh -c \
	"[ $RC -eq 1 ] && jq -e '[.hazards[].code] | index(\"thp-defrag-always\")' '$OUT' >/dev/null"
run "$NODETUNE" apply --policy gpu-train --state-dir "$ST"
check "nodetune apply --policy gpu-train (the checkout's policies/): exit $RC $(tail -1 "$ERR")" -- [ $RC -eq 0 ]
run "$NODETUNE" doctor --window 1 --json --policy gpu-train
DOC=$T_TMP/doctor.json
cp "$OUT" "$DOC"
check "after gpu-train: doctor names no hazard a policy fixes (exit $RC; hazards: $(jq -c '[.hazards[].code]' "$DOC"); only $UNFIXABLE may remain)" -- \
	sh -c "[ $RC -le 1 ] && jq -e --argjson u '$UNFIXABLE' '[.hazards[].code] - \$u == [] and ((.hazards | length > 0) == ($RC == 1))' '$DOC' >/dev/null"
check "after gpu-train: each check ran or says why not ($(jq -c '.skipped' "$DOC"))" -- \
	jq -e '.checks + (.skipped | length) == 9' "$DOC"
run "$NODETUNE" revert --state-dir "$ST"
check "nodetune revert" -- [ $RC -eq 0 ]
check "the live knobs read after" -- knobs_to "$T_TMP/after"
check "every live knob gpu-train names is back, byte for byte ($(wc -l <"$T_TMP/before") files)" -- \
	cmp "$T_TMP/before" "$T_TMP/after"
t_done
