# SPDX-License-Identifier: MIT
# host-caps.sh — the host capabilities a test may lack, probed with tools
# that are not nodetune.  The one list of them: a test skips a check for
# want of CAP (lib.sh's t_skip_host CAP, test_util.h's test_skip_cap) only
# when host_cap CAP says the host has none; when the probe finds CAP and the
# code under test says it is not there, the test fails.
#
# Sourced (lib.sh): host_cap CAP (status 0: present), host_cap_why CAP (what
# the probe saw), host_cap_known CAP.  Run: `sh tests/host-caps.sh CAP`
# exits 0 when present, 1 when absent, 2 for an unknown CAP (the unit
# tests' helper calls it so); `sh tests/host-caps.sh` lists them all.
#
#   root        euid 0
#   cpus2       two CPUs online or more
#   gpu         an NVIDIA GPU: /dev/nvidia0 and a "GPU N:" line of nvidia-smi -L
#   gpus2       two of them
#   irq         a device IRQ whose smp_affinity root can write (the value it
#               has, written back: nothing changes)
#   msi-irq     two CPUs and a NIC or an NVIDIA/AMD GPU with MSI IRQs
#               (/sys/class/net/*/device, /sys/bus/pci/devices/*/msi_irqs)
#   memcg-fresh fewer than 1000 dying memory cgroups (/proc/cgroups against
#               the directories of /sys/fs/cgroup/memory)
#   numa-sysfs  /sys/devices/system/node/node0/cpulist
#   numa2       two NUMA nodes or more (/sys/devices/system/node/node*)
#   core-file   kernel.core_pattern names a file (not a pipe to a handler, not an
#               absolute path): a crashing process's core lands in its cwd
#   cpufreq     /sys/devices/system/cpu/cpu0/cpufreq
#   governor    cpufreq offering a governor other than performance
#   tlb         a TLB shootdown line in /proc/interrupts, counted on 2 CPUs
#   perf        system-wide perf events: perf_event_paranoid, then a raw
#               perf_event_open(cpu-clock, pid -1, cpu 0) from python3 ctypes
#   taskstats   taskstats exit records for this process (a python3 netlink
#               probe, tests/tools/capture-taskstats.py's way)
#   taskstats-pidns  the same probe from a PID namespace of its own (unshare
#               -p: a container's), where kernels refuse the listener
#   cgroup-cpu, cgroup-cpuset   root and the controller in cgroup2's root or
#               a v1 hierarchy of its own
#   memcg-v1    a cgroup v1 memory hierarchy
#   psi         /proc/pressure/cpu readable
#   thp         transparent hugepages not [never]
#   devfull     /dev/full a writable character device
#   user-nobody a user nobody (getent passwd)
#   outside-service  this process is not in a systemd service's cgroup (a
#               unit test run from one may reach the service's bus)
#   plain       not the sanitized pass (SANITIZED unset): the packages and
#               the attacks run on the plain build
#   clean       no nodetune installed on this host (dpkg, /usr/bin/nodetune,
#               /etc/nodetune, a journal in /run or /var/lib/nodetune)
#   port9477    127.0.0.1:9477 (the daemon's default /metrics) free
#   container   podman can make a Debian 12 image and run a systemd in it
#               (podman's own answer, recorded by the test before it asks)

HOST_CAPS="root cpus2 gpu gpus2 numa-sysfs numa2 core-file irq msi-irq memcg-fresh cpufreq governor tlb perf taskstats taskstats-pidns cgroup-cpu cgroup-cpuset memcg-v1 psi thp devfull user-nobody outside-service plain clean port9477 container"

host_cap_known() {
	case " $HOST_CAPS " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

# the controller in cgroup2's root, or a v1 hierarchy of its own
hc_controller() {
	[ "$(id -u)" -eq 0 ] || return 1
	[ -e "/sys/fs/cgroup/$1/cgroup.procs" ] && return 0
	grep -qw "$1" /sys/fs/cgroup/cgroup.controllers 2>/dev/null
}

hc_gpus() {
	ls /dev/nvidia[0-9]* >/dev/null 2>&1 || { echo 0; return; }
	nvidia-smi -L 2>/dev/null | grep -c '^GPU [0-9]'
}

hc_irq() {
	[ "$(id -u)" -eq 0 ] || return 1
	for d in /proc/irq/[0-9]*; do
		[ -f "$d/smp_affinity" ] || continue
		n=${d#/proc/irq/}
		# a device's (named in /proc/interrupts), not the timer's
		grep -Eq "^ *$n:.*[A-Za-z]" /proc/interrupts || continue
		v=$(cat "$d/smp_affinity" 2>/dev/null) || continue
		(echo "$v" >"$d/smp_affinity") 2>/dev/null && return 0
	done
	return 1
}

hc_msi_irq() {
	[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] || return 1
	for n in /sys/class/net/*/device; do
		[ -n "$(ls "$n/msi_irqs" 2>/dev/null)" ] && return 0
	done
	for d in /sys/bus/pci/devices/*; do
		case $(cat "$d/vendor"):$(cat "$d/class") in
		0x10de:0x03* | 0x1002:0x0380*) [ -n "$(ls "$d/msi_irqs" 2>/dev/null)" ] && return 0 ;;
		esac
	done 2>/dev/null
	return 1
}

hc_perf() {
	p=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null) || return 1
	[ "$(id -u)" -eq 0 ] || [ "$p" -le 0 ] || return 1
	/usr/bin/python3 - <<'EOF' 2>/dev/null
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
# struct perf_event_attr (PERF_ATTR_SIZE_VER5, 112 bytes): type 1
# (software), size, config 0 (cpu-clock); the rest zero
attr = struct.pack("IIQ", 1, 112, 0) + b"\0" * 96
buf = ctypes.create_string_buffer(attr, 112)
fd = libc.syscall(298, buf, -1, 0, -1, 0)  # perf_event_open, x86_64
if fd < 0:
    sys.exit(1)
os.close(fd)
EOF
}

hc_taskstats() {
	[ "$(id -u)" -eq 0 ] || return 1
	$1 /usr/bin/python3 - <<'EOF' 2>/dev/null
import os, socket, struct, sys
def attr(kind, data):
    n = 4 + len(data)
    return struct.pack("HH", n, kind) + data + b"\0" * ((4 - n % 4) % 4)
def msg(kind, flags, cmd, payload):
    body = struct.pack("BBH", cmd, 1, 0) + payload
    return struct.pack("IHHII", 16 + len(body), kind, flags, 1, 0) + body
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)
s.bind((0, 0))
s.send(msg(0x10, 1, 3, attr(2, b"TASKSTATS\0")))
r = s.recv(65536)
kind, = struct.unpack_from("H", r, 4)
if kind == 2:  # NLMSG_ERROR
    sys.exit(1)
off, fam = 20, None
while off < len(r):
    n, k = struct.unpack_from("HH", r, off)
    if k == 1:
        fam, = struct.unpack_from("H", r, off + 4)
    off += (n + 3) & ~3
if fam is None:
    sys.exit(1)
s.send(msg(fam, 5, 1, attr(3, b"0\0")))  # REGISTER_CPUMASK "0", with an ack
r = s.recv(65536)
kind, = struct.unpack_from("H", r, 4)
err, = struct.unpack_from("i", r, 16)
sys.exit(0 if kind == 2 and err == 0 else 1)
EOF
}

hc_tlb() {
	awk '/^ *TLB:/ { n = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) if ($i > 0) n++; ok = n >= 2 }
		END { exit !ok }' /proc/interrupts 2>/dev/null
}

hc_clean() {
	dpkg-query -W nodetune >/dev/null 2>&1 && return 1
	for p in /usr/bin/nodetune /etc/nodetune /run/nodetune/journal /var/lib/nodetune/journal; do
		[ -e "$p" ] && return 1
	done
	return 0
}

# host_cap CAP: status 0 when this host has CAP (in a subshell: the
# probes' variables never reach the sourcing test's)
host_cap() { (host_cap_ "$@"); }
host_cap_() {
	case $1 in
	root) [ "$(id -u)" -eq 0 ] ;;
	cpus2) [ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] ;;
	gpu) [ "$(hc_gpus)" -ge 1 ] ;;
	gpus2) [ "$(hc_gpus)" -ge 2 ] ;;
	irq) hc_irq ;;
	msi-irq) hc_msi_irq ;;
	memcg-fresh) [ $(($(awk '$1 == "memory" { print $3 }' /proc/cgroups) -
		$(find /sys/fs/cgroup/memory -type d 2>/dev/null | wc -l))) -lt 1000 ] ;;
	numa-sysfs) [ -r /sys/devices/system/node/node0/cpulist ] ;;
	core-file) case $(cat /proc/sys/kernel/core_pattern 2>/dev/null) in '' | /* | '|'*) false ;; *) true ;; esac ;;
	numa2) [ "$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)" -ge 2 ] ;;
	cpufreq) [ -d /sys/devices/system/cpu/cpu0/cpufreq ] ;;
	governor) tr ' ' '\n' 2>/dev/null </sys/devices/system/cpu/cpu0/cpufreq/scaling_available_governors |
		grep -qv '^performance$\|^$' ;;
	tlb) hc_tlb ;;
	perf) hc_perf ;;
	taskstats) hc_taskstats ;;
	taskstats-pidns) hc_taskstats "unshare -p -f" ;;
	cgroup-cpu) hc_controller cpu ;;
	cgroup-cpuset) hc_controller cpuset ;;
	memcg-v1) [ "$(id -u)" -eq 0 ] && [ -e /sys/fs/cgroup/memory/cgroup.procs ] ;;
	psi) [ -r /proc/pressure/cpu ] && cat /proc/pressure/cpu >/dev/null 2>&1 ;;
	thp) [ -r /sys/kernel/mm/transparent_hugepage/enabled ] &&
		! grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled ;;
	devfull) [ -c /dev/full ] && [ -w /dev/full ] ;;
	user-nobody) getent passwd nobody >/dev/null ;;
	outside-service) ! { [ -e /run/systemd/system ] && grep -Eq '^(0::|[0-9]+:name=systemd:).*\.service$' /proc/self/cgroup; } ;;
	plain) [ -z "${SANITIZED:-}" ] ;;
	clean) hc_clean ;;
	port9477) ! ss -Hltn 'sport = :9477' 2>/dev/null | grep -q . ;;
	# podman's answer, which the test asked before skipping
	# ($HOST_CAP_CONTAINER: "no: WHY"); present otherwise
	container) case ${HOST_CAP_CONTAINER:-} in no:*) return 1 ;; esac ;;
	*) return 2 ;;
	esac
}

# host_cap_why CAP: what the probe saw, for a failure's message
host_cap_why() { (host_cap_why_ "$@"); }
host_cap_why_() {
	case $1 in
	gpu | gpus2) echo "$(hc_gpus) GPU(s): $(nvidia-smi -L 2>/dev/null | head -n 2 | tr '\n' ' ')" ;;
	perf) echo "perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null), a raw perf_event_open(cpu-clock, cpu 0) succeeded" ;;
	tlb) echo "/proc/interrupts:$(grep '^ *TLB:' /proc/interrupts | tr -s ' ' | cut -c1-80)" ;;
	irq) echo "a device IRQ's smp_affinity took a write" ;;
	taskstats) echo "a python3 netlink socket registered for taskstats exits" ;;
	*) echo "tests/host-caps.sh's probe of $1 succeeded" ;;
	esac
}

# run as a program: one CAP's answer, or the whole list
case ${0##*/} in
host-caps.sh)
	if [ $# -eq 0 ]; then
		for c in $HOST_CAPS; do
			if host_cap "$c"; then echo "$c yes"; else echo "$c no"; fi
		done
	else
		host_cap_known "$1" || { echo "host-caps.sh: unknown capability '$1'" >&2; exit 2; }
		host_cap "$1"
	fi
	;;
esac
