#!/bin/sh
# SPDX-License-Identifier: MIT
# host: thp sysctl
# discover on this live host agrees with what the kernel says in /sys and
# /proc, read here independently of nodetune.
. "$(dirname "$0")/lib.sh"
t_plan 27

run "$NODETUNE" discover --json
check "discover --json on this host exits 0 and is JSON" -- sh -c "[ $RC -eq 0 ] && jq -e . '$OUT' >/dev/null"
J=$OUT
cp "$J" "$T_TMP/host.json"; J=$T_TMP/host.json

pus=$(getconf _NPROCESSORS_ONLN)
check "pus = $pus online CPUs" -- [ "$(jq .pus "$J")" = "$pus" ]
nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
[ "$nodes" -gt 0 ] || nodes=1
check "numa_nodes = $nodes node dirs in sysfs" -- [ "$(jq '.numa_nodes | length' "$J")" = "$nodes" ]
if [ -r /sys/devices/system/node/node0/cpulist ]; then
	check "node 0 cpus = sysfs node0/cpulist" -- [ "$(jq -r '.numa_nodes[0].cpus' "$J")" = "$(cat /sys/devices/system/node/node0/cpulist)" ]
else
	t_skip_host numa-sysfs "node 0 cpus: no /sys/devices/system/node/node0/cpulist"
fi
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
if [ -n "$thp" ]; then
	check "thp_enabled = $thp" -- [ "$(jq -r .kernel.thp_enabled "$J")" = "$thp" ]
else
	t_skip_host thp "thp_enabled: no /sys/kernel/mm/transparent_hugepage/enabled"
fi
nb=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo null)
check "numa_balancing = $nb" -- [ "$(jq -r .kernel.numa_balancing "$J")" = "$nb" ]
swap=$(awk '/^SwapTotal:/ {print $2 * 1024}' /proc/meminfo)
check "swap_total_bytes = $swap" -- [ "$(jq -r .kernel.swap_total_bytes "$J")" = "$swap" ]
# GPUs: NVIDIA display-class and AMD 0x0380 functions in sysfs
ngpu=0
for d in /sys/bus/pci/devices/*; do
	[ -r "$d/vendor" ] || continue
	v=$(cat "$d/vendor") c=$(cat "$d/class")
	case "$v:$c" in 0x10de:0x03*|0x1002:0x0380*) ngpu=$((ngpu + 1)) ;; esac
done
check "gpus = $ngpu GPU functions in /sys/bus/pci" -- [ "$(jq '.gpus | length' "$J")" = "$ngpu" ]

# A capture of this host (scripts/capture-sysroot.sh) read elsewhere shows
# the same machine: its NICs and GPUs (counted here from /sys/class/net and
# the PCI functions, not by nodetune), and a plan over it skips a knob only
# where this host's kernel lacks the file.
CAP=$T_TMP/capture
run scripts/capture-sysroot.sh "$CAP"
check "capture-sysroot.sh captures this host (exit 0)" -- [ "$RC" -eq 0 ]
nnic=0
for n in /sys/class/net/*; do
	case $(readlink -f "$n/device" 2>/dev/null) in /sys/devices/pci*) nnic=$((nnic + 1)) ;; esac
done
run "$NODETUNE" discover --sysroot "$CAP" --json
check "the capture: nics = $nnic PCI network interfaces in /sys/class/net" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(jq '.nics | length' '$OUT')\" = $nnic ]"
check "the capture: gpus = $ngpu GPU functions in /sys/bus/pci" -- [ "$(jq '.gpus | length' "$OUT")" = "$ngpu" ]
check "the capture: pus = $pus" -- [ "$(jq .pus "$OUT")" = "$pus" ]

# one policy with every single-file host knob (THP, sched, [sysctl])
ALL=$T_TMP/all-knobs.conf
printf '%s\n' '[main]' 'summary = every single-file host knob' \
	'[thp]' 'enabled = madvise' 'defrag = madvise' 'khugepaged_defrag = 1' \
	'[sched]' 'numa_balancing = 0' 'autogroup = 0' \
	'[sysctl]' 'vm.swappiness = 10' 'vm.zone_reclaim_mode = 0' 'vm.max_map_count = 262144' \
	'vm.min_free_kbytes = 67584' 'vm.stat_interval = 10' 'vm.dirty_ratio = 20' \
	'vm.dirty_background_ratio = 10' 'kernel.nmi_watchdog = 0' >"$ALL"
chmod 644 "$ALL"
run "$NODETUNE" plan --sysroot "$CAP" --policy "$ALL"
PC=$T_TMP/plan-cap
cp "$OUT" "$PC"
check "plan --sysroot on the capture exits 0" -- [ "$RC" -eq 0 ]
for kf in thp:enabled:/sys/kernel/mm/transparent_hugepage/enabled \
	  thp:defrag:/sys/kernel/mm/transparent_hugepage/defrag \
	  thp:khugepaged_defrag:/sys/kernel/mm/transparent_hugepage/khugepaged/defrag \
	  sched:numa_balancing:/proc/sys/kernel/numa_balancing \
	  sched:autogroup:/proc/sys/kernel/sched_autogroup_enabled \
	  sysctl:vm.swappiness:/proc/sys/vm/swappiness sysctl:vm.zone_reclaim_mode:/proc/sys/vm/zone_reclaim_mode \
	  sysctl:vm.max_map_count:/proc/sys/vm/max_map_count sysctl:vm.min_free_kbytes:/proc/sys/vm/min_free_kbytes \
	  sysctl:vm.stat_interval:/proc/sys/vm/stat_interval sysctl:vm.dirty_ratio:/proc/sys/vm/dirty_ratio \
	  sysctl:vm.dirty_background_ratio:/proc/sys/vm/dirty_background_ratio \
	  sysctl:kernel.nmi_watchdog:/proc/sys/kernel/nmi_watchdog; do
	sec=${kf%%:*} rest=${kf#*:}
	key=${rest%%:*} file=${rest#*:}
	if [ -e "$file" ]; then
		check "the capture: [$sec] $key planned from $file, with this host's value $(cat "$file" | tr -d '\n')" -- sh -c \
			"! grep -qF '[$sec] $key: skipped' '$PC' && grep -qF '  $file: $(sed -n 's/.*\[\(.*\)\].*/\1/p;t;p' "$file") -> ' '$PC'"
	else
		check "the capture: [$sec] $key skipped, as this host has no $file" -- \
			grep -qF "[$sec] $key: skipped, this host has no $CAP$file" "$PC"
	fi
done

run "$NODETUNE" discover
check "human output: a summary line and a NODE table" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^host: .* NUMA node' '$OUT' && grep -q '^NODE  MEMORY' '$OUT' && grep -q '^kernel: THP' '$OUT'"
t_done
