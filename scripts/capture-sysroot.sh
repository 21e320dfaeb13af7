#!/bin/sh
# SPDX-License-Identifier: MIT
# capture-sysroot.sh DIR [PID...] — capture this host's /sys and /proc, as far as
# nodetune reads them, into DIR, for `nodetune discover|plan|doctor --sysroot DIR`
# on another machine (bug reports, test fixtures).
#
# What is captured:
#   - the topology and the I/O devices: `hwloc-gather-topology --io` (hwloc-nox)
#     copies what hwloc's linux backend reads (/sys/devices/system, the PCI
#     devices under /sys/bus/pci and /sys/devices/pci*, /sys/class/net, block,
#     infiniband, drm ...), so the GPUs and NICs of the host are seen there;
#   - each PCI function's MSI IRQ numbers (msi_irqs/) and every
#     /proc/irq/N/smp_affinity_list (doctor's irq-on-rank-cpus, [irq] devices);
#   - the kernel state nodetune reads and writes: THP, NUMA balancing, autogroup,
#     hugepage pools, cpufreq governors, isolated/nohz_full CPUs, meminfo,
#     mounts, swaps, /proc/sys/vm/* and kernel.nmi_watchdog ([sysctl] knobs);
#   - the cgroup trees: every directory of the memory hierarchy (v1) or of the
#     unified tree (v2) with its small state files, so /proc/cgroups against the
#     live directories (doctor's zombie-memcg) and cpu.stat throttling read as on
#     the host; the cpu and cpuset hierarchies of a v1 host likewise;
#   - the counters the observer reads (/proc/stat, vmstat, interrupts,
#     pressure), and for each PID given its threads' stat, status and schedstat.
# Nothing on the host is changed.  Not captured: values that only exist live
# (a process's memory, the GPUs' state through NVML).
set -eu
[ $# -ge 1 ] || { echo "usage: capture-sysroot.sh DIR [PID...]" >&2; exit 2; }
dest=$1
shift
[ ! -e "$dest" ] || { echo "capture-sysroot.sh: $dest exists; give a new directory" >&2; exit 2; }
command -v hwloc-gather-topology >/dev/null || {
	echo "capture-sysroot.sh: hwloc-gather-topology not found (apt-get install hwloc-nox)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hwloc-gather-topology --io "$tmp/g" >/dev/null 2>&1 || {
	echo "capture-sysroot.sh: hwloc-gather-topology --io failed" >&2; exit 3; }
mkdir -p "$tmp/x" && tar -xjf "$tmp/g.tar.bz2" -C "$tmp/x"
mv "$tmp/x/g" "$dest"

copy() { # copy a file's content (virtual files have size 0: use cat)
	for f in "$@"; do
		[ -f "$f" ] && [ -r "$f" ] || continue
		mkdir -p "$dest$(dirname "$f")"
		cat "$f" > "$dest$f" 2>/dev/null || rm -f "$dest$f"
	done
}

# cgtree DIR FILE...: every directory below the cgroup mount DIR (as the
# host has it), with the FILEs each one holds
cgtree() {
	root=$1
	shift
	[ -d "$root" ] || return 0
	find "$root" -xdev -type d 2>/dev/null | while IFS= read -r d; do
		mkdir -p "$dest$d"
		for f in "$@"; do copy "$d/$f"; done
	done
}

copy /sys/kernel/mm/transparent_hugepage/enabled \
     /sys/kernel/mm/transparent_hugepage/defrag \
     /sys/kernel/mm/transparent_hugepage/khugepaged/defrag \
     /proc/sys/kernel/numa_balancing /proc/sys/kernel/sched_autogroup_enabled \
     /proc/sys/kernel/nmi_watchdog \
     /proc/meminfo /proc/mounts /proc/cgroups /proc/swaps \
     /sys/devices/system/cpu/isolated /sys/devices/system/cpu/nohz_full \
     /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor \
     /sys/devices/system/cpu/cpu*/cpufreq/scaling_available_governors \
     /sys/kernel/mm/hugepages/hugepages-*/nr_hugepages \
     /sys/kernel/mm/hugepages/hugepages-*/free_hugepages \
     /sys/devices/system/node/node*/hugepages/hugepages-*/nr_hugepages \
     /sys/devices/system/node/node*/hugepages/hugepages-*/free_hugepages
for f in /proc/sys/vm/*; do
	case $f in */drop_caches|*/compact_memory) continue ;; esac  # write-only triggers
	copy "$f"
done
copy /proc/irq/*/smp_affinity_list /proc/irq/*/effective_affinity_list

# MSI IRQs: one empty file per IRQ number, named as the kernel names them
for d in /sys/bus/pci/devices/*/msi_irqs; do
	[ -d "$d" ] || continue
	real=$(cd "$d" && pwd -P)
	mkdir -p "$dest$real"
	for i in "$d"/*; do [ -e "$i" ] && copy "$real/${i##*/}"; done
done

# cgroups: v1 hierarchies by controller, or the unified tree
cgtree /sys/fs/cgroup/memory memory.stat memory.usage_in_bytes memory.limit_in_bytes tasks cgroup.procs
for c in /sys/fs/cgroup/cpu /sys/fs/cgroup/cpu,cpuacct; do
	[ -L "$c" ] || cgtree "$c" cpu.stat cpu.shares cpu.cfs_quota_us cpu.cfs_period_us
done
cgtree /sys/fs/cgroup/cpuset cpuset.cpus cpuset.mems cpuset.effective_cpus cpuset.effective_mems
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	cgtree /sys/fs/cgroup cgroup.controllers cgroup.subtree_control cgroup.procs cpu.stat cpu.weight \
		memory.stat memory.current cpuset.cpus.effective cpuset.mems.effective \
		cpu.pressure memory.pressure io.pressure
fi

copy /proc/stat /proc/vmstat /proc/interrupts /proc/pressure/cpu /proc/pressure/memory /proc/pressure/io
for pid in "$@"; do
	copy /proc/"$pid"/task/*/stat /proc/"$pid"/task/*/status /proc/"$pid"/task/*/schedstat
done
echo "captured into $dest ($(find "$dest" -type f | wc -l) files)"
