#!/bin/sh
# capture-sysroot.sh DIR [PID...] — capture this host's /sys and /proc, as far as
# nodetune reads them, into DIR, for `nodetune discover --sysroot DIR` on
# another machine (bug reports, test fixtures).
#
# The topology part comes from hwloc-gather-topology (hwloc-nox); the kernel
# state files nodetune reads (THP, NUMA balancing, hugepage pools, cpufreq
# governors, isolated/nohz_full CPUs, meminfo, mounts) are copied on top.
# The counters the observer reads come along (/proc/stat, vmstat,
# interrupts, pressure), and for each PID given its threads' stat, status
# and schedstat.  Nothing on the host is changed.
set -eu
[ $# -ge 1 ] || { echo "usage: capture-sysroot.sh DIR [PID...]" >&2; exit 2; }
dest=$1
shift
[ ! -e "$dest" ] || { echo "capture-sysroot.sh: $dest exists; give a new directory" >&2; exit 2; }
command -v hwloc-gather-topology >/dev/null || {
	echo "capture-sysroot.sh: hwloc-gather-topology not found (apt-get install hwloc-nox)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hwloc-gather-topology "$tmp/g" >/dev/null 2>&1
mkdir -p "$tmp/x" && tar -xjf "$tmp/g.tar.bz2" -C "$tmp/x"
mv "$tmp/x/g" "$dest"

copy() { # copy a file's content (virtual files have size 0: use cat)
	for f in "$@"; do
		[ -f "$f" ] && [ -r "$f" ] || continue
		mkdir -p "$dest$(dirname "$f")"
		cat "$f" > "$dest$f" 2>/dev/null || rm -f "$dest$f"
	done
}
copy /sys/kernel/mm/transparent_hugepage/enabled \
     /sys/kernel/mm/transparent_hugepage/defrag \
     /sys/kernel/mm/transparent_hugepage/khugepaged/defrag \
     /proc/sys/kernel/numa_balancing /proc/sys/kernel/sched_autogroup_enabled \
     /proc/meminfo /proc/mounts /proc/cgroups /proc/swaps \
     /sys/devices/system/cpu/isolated /sys/devices/system/cpu/nohz_full \
     /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor \
     /sys/kernel/mm/hugepages/hugepages-*/nr_hugepages \
     /sys/kernel/mm/hugepages/hugepages-*/free_hugepages \
     /sys/devices/system/node/node*/hugepages/hugepages-*/nr_hugepages \
     /sys/devices/system/node/node*/hugepages/hugepages-*/free_hugepages
copy /proc/stat /proc/vmstat /proc/interrupts /proc/pressure/cpu /proc/pressure/memory /proc/pressure/io
for pid in "$@"; do
	copy /proc/"$pid"/task/*/stat /proc/"$pid"/task/*/status /proc/"$pid"/task/*/schedstat
done
echo "captured into $dest ($(find "$dest" -type f | wc -l) files)"
