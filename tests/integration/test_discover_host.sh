#!/bin/sh
# discover on this live host agrees with what the kernel says in /sys and
# /proc, read here independently of nodetune.
. "$(dirname "$0")/lib.sh"

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
fi
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
[ -n "$thp" ] && check "thp_enabled = $thp" -- [ "$(jq -r .kernel.thp_enabled "$J")" = "$thp" ]
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

run "$NODETUNE" discover
check "human output: a summary line and a NODE table" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^host: .* NUMA node' '$OUT' && grep -q '^NODE  MEMORY' '$OUT' && grep -q '^kernel: THP' '$OUT'"
t_done
