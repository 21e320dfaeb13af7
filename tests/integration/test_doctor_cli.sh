#!/bin/sh
# SPDX-License-Identifier: MIT
# host: thp sysctl cgroup
# nodetune doctor from the command line: exit 1 with every hazard on a tree
# that has them, 0 on a tuned one, 2 on garbage; the live host runs.
. "$(dirname "$0")/lib.sh"
t_plan 18

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
HAZ=tests/fixtures/sysroot/gpu-host-hazards
GT=policies/gpu-train.conf

run "$NODETUNE" doctor --topology $HGX --sysroot $HAZ --policy $GT --json
check "hazards tree: exit 1, all 8 named hazards with evidence and a fix" -- sh -c "[ $RC -eq 1 ] && jq -e '
	.checks == 9 and ([.hazards[].code] | sort) == [\"cgroup-throttling\",\"governor\",\"irq-on-rank-cpus\",
	\"numa-balancing-on\",\"swap-on\",\"sys-saturated-core\",\"thp-defrag-always\",\"zombie-memcg\"]
	and all(.hazards[]; (.evidence | length) > 0 and (.fix | length) > 0)' '$OUT'"
run "$NODETUNE" doctor --topology $HGX --sysroot $HAZ --policy $GT
check "human output: a count line, then each hazard with evidence and fix" -- sh -c \
	"[ $RC -eq 1 ] && grep -q '^8 hazards found by 9 checks' '$OUT' && grep -q '^! zombie-memcg: 70209 dying' '$OUT' && grep -q '^    fix: ' '$OUT'"

# quiet by default: the counters' self-report with -v only, said of the tree
# read; the fix names the policy, not a path in the repository
check "human output: no counters: section without -v; the THP fix names --policy gpu-train, no repo path" -- sh -c \
	"! grep -q '^counters:' '$OUT' && grep -q '^    fix: .*as --policy gpu-train does' '$OUT' && ! grep -q 'policies/' '$OUT'"
cp "$OUT" "$T_TMP/doctor.txt"
run "$NODETUNE" doctor --topology $HGX --sysroot $HAZ --policy $GT -v
check "-v: the same report, then counters: said of the tree ('in $HAZ'), never 'this host'" -- sh -c \
	"[ $RC -eq 1 ] && sed '/^\$/{N;/^\ncounters:/Q}' '$OUT' | cmp -s - '$T_TMP/doctor.txt' &&
	 grep -q '^  TLB shootdowns: not countable in $HAZ (' '$OUT' && ! grep -q 'this host' '$OUT'"
run "$NODETUNE" doctor --topology $HGX --sysroot tests/fixtures/sysroot/gpu-host-tuned --policy $GT
check "tuned tree: exit 0, no hazard" -- sh -c "[ $RC -eq 0 ] && grep -q '^0 hazards' '$OUT'"
# a check skipped: one line under skipped:, its name and why
run "$NODETUNE" doctor --topology $HGX --sysroot $HAZ
check "without --policy: skipped: then one line 'irq-on-rank-cpus: needs --policy ...'" -- sh -c \
	"[ $RC -eq 1 ] && grep -A1 '^skipped:$' '$OUT' | grep -q \"^  irq-on-rank-cpus: needs --policy FILE|NAME to know the ranks' CPUs\$\" &&
	 ! grep -q 'skipped,' '$OUT'"
# a counter the kernel lacks: 'unknown', never '?'
G=$T_TMP/nostall
cp -r $HAZ "$G" && sed -i '/^compact_stall /d' "$G/proc/vmstat"
run "$NODETUNE" doctor --topology $HGX --sysroot "$G" --policy $GT
check "no compact_stall in vmstat: the evidence says 'unknown', no '?' anywhere" -- sh -c \
	"[ $RC -eq 1 ] && grep -q 'compact_stall so far: unknown\$' '$OUT' && ! grep -q '?' '$OUT'"

G=$T_TMP/g
cp -r $HAZ "$G" && printf 'cpu0 1 2 x\n' >"$G/proc/stat.series/005"
expect_fail 2 "proc/stat.series/005:1: expected 'cpuN user nice system idle" "garbage in a /proc/stat sample" -- \
	"$NODETUNE" doctor --topology $HGX --sysroot "$G"
expect_fail 2 "--window '0': expected a duration from 200ms to 1h" "bad --window" -- "$NODETUNE" doctor --window 0
expect_fail 2 "--topology/--synthetic describe another machine" "a foreign topology without its kernel state" -- \
	"$NODETUNE" doctor --topology $HGX

# this host as it is: every one of the 9 checks ran or says why it was
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
check "this host: 9 checks run or skipped with a reason, exit $RC as found; THP defrag always, swap on, NUMA balancing on by the kernel: $l_d (got $(jq -c '[.checks, [.hazards[].code]]' "$OUT" 2>/dev/null))" -- sh -c \
	"[ $RC -le 1 ] && jq -e --argjson rc $RC --argjson d '$l_d' '
	  def has(c): [.hazards[].code] | index(c) != null;
	  .checks + (.skipped | length) == 9 and ((.hazards | length > 0) == (\$rc == 1))
	  and has(\"thp-defrag-always\") == \$d[0] and has(\"swap-on\") == \$d[1] and has(\"numa-balancing-on\") == \$d[2]
	  and all(.hazards[]; (.evidence | length) > 0 and (.fix | length) > 0)' '$OUT'"

# ---- hazards made on this host (as root), named live, then undone --------
# Each is created for real, doctor must name it (and, where the host starts
# clean, not name it before), and t_defer puts the host back.
# zombie-memcg: groups below this shell's own memory cgroup (the charges
# stay inside its limits), each charged a page of a private tmpfs, then
# removed: the kernel keeps them, offline, until the tmpfs goes.
memcg_kernel() { awk '$1 == "memory" { print $3 }' /proc/cgroups; }
memcg_live() { find /sys/fs/cgroup/memory -type d 2>/dev/null | wc -l; }
MYMEMCG=$(awk -F: '$2 == "memory" { print $3 }' /proc/$$/cgroup)
if [ "$(id -u)" -ne 0 ]; then
	t_skips 4 t_skip_host root "zombie-memcg live: needs root to make memory cgroups"
elif [ ! -f /sys/fs/cgroup/memory/memory.stat ] || [ -z "$MYMEMCG" ]; then
	t_skips 4 t_skip_host memcg-v1 "zombie-memcg live: this host has no cgroup v1 memory hierarchy to make dying groups in"
else
	ZT=$T_TMP/zombies
	mkdir "$ZT" && mount -t tmpfs -o size=32m nodetune-zombies "$ZT"
	t_defer "umount '$ZT' 2>/dev/null"
	k0=$(memcg_kernel) l0=$(memcg_live)
	run "$NODETUNE" doctor --window 1 --json
	if [ $((k0 - l0)) -lt 1000 ]; then
		check "zombie-memcg: not named before ($k0 memory cgroups, $l0 live)" -- sh -c "! jq -e '[.hazards[].code] | index(\"zombie-memcg\")' '$OUT'"
	else
		t_skip_host memcg-fresh "zombie-memcg: this host already has $((k0 - l0)) dying memory cgroups, so no clean 'before'"
	fi
	run python3 tests/tools/memcg_zombies.py "/sys/fs/cgroup/memory$MYMEMCG" "$ZT" 1500
	k1=$(memcg_kernel) l1=$(memcg_live)
	# the kernel may free a few dying groups meanwhile (these or older ones
	# counted in k0: seen 1499 of 1500 on a loaded host), so 1400 of the 1500
	# must still be counted: far above doctor's threshold of 1000
	check "1500 memory cgroups made and removed: /proc/cgroups $k0 -> $k1, live directories $l0 -> $l1" -- \
		sh -c "[ $RC -eq 0 ] && [ $k1 -ge $((k0 + 1400)) ] && [ $l1 -le $((l0 + 20)) ]"
	run "$NODETUNE" doctor --window 1 --json
	check "zombie-memcg named live, its evidence counting /proc/cgroups against the live directories" -- sh -c \
		"[ $RC -eq 1 ] && jq -e '.hazards[] | select(.code == \"zombie-memcg\") | .evidence | test(\"counts [0-9]+ memory cgroups, only [0-9]+ live\")' '$OUT'"
	umount "$ZT"
	k2=$k1 n=0
	while [ "$k2" -ge $((k0 + 200)) ] && [ $n -lt 50 ]; do sleep 0.2; k2=$(memcg_kernel); n=$((n + 1)); done
	check "host restored: the tmpfs gone, /proc/cgroups back from $k1 to $k2 (was $k0)" -- [ "$k2" -lt $((k0 + 200)) ]
fi

# irq-on-rank-cpus: ranks on CPU 1 (CPU 0 kept for housekeeping); the MSI
# IRQs of the NICs and GPUs (the PCI functions under /sys/class/net, and
# NVIDIA/AMD GPU functions) all on CPU 0 first (no hazard), then one on CPU 1.
HK=$T_TMP/hk.conf
printf '%s\n' '[main]' 'summary = ranks off CPU 0' '[affinity]' 'mode = numa' 'housekeeping = 0' >"$HK"
chmod 644 "$HK"
devs=$(for n in /sys/class/net/*; do
		readlink -f "$n/device" 2>/dev/null | sed -n 's|^\(/sys/devices/pci.*/[0-9a-f]\{4\}:[0-9a-f]\{2\}:[0-9a-f]\{2\}\.[0-7]\).*|\1|p'
	done
	for d in /sys/bus/pci/devices/*; do
		case $(cat "$d/vendor"):$(cat "$d/class") in 0x10de:0x03*|0x1002:0x0380*) readlink -f "$d" ;; esac
	done)
irqs=$(for d in $devs; do ls "$d/msi_irqs" 2>/dev/null; done | sort -n)
if [ "$(id -u)" -ne 0 ]; then
	t_skips 2 t_skip_host root "irq-on-rank-cpus live: needs root to move IRQs"
elif [ "$(getconf _NPROCESSORS_ONLN)" -lt 2 ] || [ -z "$irqs" ]; then
	t_skips 2 t_skip_host msi-irq "irq-on-rank-cpus live: this host has no NIC or GPU with MSI IRQs, or one CPU"
else
	moved=""
	for i in $irqs; do
		f=/proc/irq/$i/smp_affinity_list
		[ -w "$f" ] || continue
		t_defer "echo $(cat "$f") >$f 2>/dev/null"
		echo 0 >"$f" 2>/dev/null && moved="$moved $i"
	done
	set -- $moved
	if [ $# -eq 0 ]; then
		t_skips 2 t_skip_host irq "irq-on-rank-cpus live: this host refuses to move any device IRQ (no steerable IRQ)"
	else
		run "$NODETUNE" doctor --window 1 --json --policy "$HK"
		# (the check ran: it is not among the skipped, each "CODE: why")
		check "irq-on-rank-cpus: ran, and not named with the IRQs$moved on CPU 0 and the ranks on CPU 1" -- sh -c \
			"jq -e '.checks >= 1 and ([.skipped[] | select(startswith(\"irq-on-rank-cpus:\"))] == [])' '$OUT' >/dev/null &&
			 ! jq -e '[.hazards[].code] | index(\"irq-on-rank-cpus\")' '$OUT'"
		echo 1 >/proc/irq/$1/smp_affinity_list
		run "$NODETUNE" doctor --window 1 --json --policy "$HK"
		check "irq-on-rank-cpus named live: IRQ $1 moved onto rank CPU 1" -- sh -c \
			"[ $RC -eq 1 ] && jq -e '.hazards[] | select(.code == \"irq-on-rank-cpus\") | .evidence | test(\"IRQ $1 .* on CPUs 1\")' '$OUT'"
	fi
fi

# governor: a governor other than performance, set on every CPU, restored
if [ ! -d /sys/devices/system/cpu/cpu0/cpufreq ]; then
	t_skip_host cpufreq "governor live: this host has no cpufreq (/sys/devices/system/cpu/cpu0/cpufreq absent)"
elif [ "$(id -u)" -ne 0 ]; then
	t_skip_host root "governor live: needs root to set the governor"
else
	avail=$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_available_governors 2>/dev/null)
	gov=""
	for g in powersave schedutil ondemand conservative; do
		case " $avail " in *" $g "*) gov=$g; break ;; esac
	done
	if [ -z "$gov" ]; then
		t_skip_host governor "governor live: cpufreq offers only '$avail' here, nothing but performance to set"
	else
		for f in /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
			t_defer "echo $(cat "$f") >$f"
			echo "$gov" >"$f"
		done
		run "$NODETUNE" doctor --window 1 --json
		check "governor named live: '$gov' set on every CPU" -- sh -c \
			"[ $RC -eq 1 ] && jq -e '.hazards[] | select(.code == \"governor\") | .summary | test(\"$gov\")' '$OUT'"
	fi
fi
t_done
