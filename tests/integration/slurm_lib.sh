# SPDX-License-Identifier: MIT
# slurm_lib.sh — a real one-node Slurm for the tests (sourced after lib.sh).
#
#   slurm_start PLUGSTACK_LINES [SLURM_CONF_EXTRA [GRES_CONF NGPUS]]
#       writes slurm.conf, plugstack.conf (and gres.conf) into $T_TMP/slurm,
#       starts munged (its own key and socket there), slurmctld and slurmd
#       (daemonized, pid files there), and waits until sinfo shows the node
#       idle.  Everything is stopped by t_defer, however the test ends.
#       Returns 1 (with the logs' tails) when the node never came up.
#   slurm_stop   stop them now (slurm_start again may follow)
#
# SlurmctldHost and NodeName are this host's short name; the ports are free
# ones chosen now; SlurmUser=root; proctrack/linuxproc (systemd is not PID 1
# in a container, and cgroup tracking wants it); task/affinity.  SLURM_CONF
# is exported for the client commands (srun, sbatch, sinfo, scontrol).
# Needs root and the slurm group of scripts/install-deps.sh; slurm_have
# says whether both are there.

SL=$T_TMP/slurm
SLURM_HOST=$(hostname -s)

slurm_have() {
	[ "$(id -u)" -eq 0 ] && command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
		command -v munged >/dev/null && command -v srun >/dev/null
}

# two free TCP ports (bound then released: a race with another program is
# possible but harmless here, the daemon would fail to start and say so)
slurm_free_ports() {
	python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))'
}

slurm_write_conf() { # PLUGSTACK_LINES EXTRA GRES NGPUS
	set -- "$1" "$2" "$3" $(slurm_free_ports) "$4"
	# 0711: an unprivileged user (test_slurm.sh's leak tests) reaches
	# slurm.conf and munge's socket by name, and lists nothing
	mkdir -p "$SL/state" "$SL/spool" && chmod 711 "$SL"
	cpus=$(nproc --all)
	mem=$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)
	gres_types= node_gres=
	if [ -n "$3" ]; then
		gres_types=GresTypes=gpu
		node_gres=Gres=gpu:$6
	fi
	cat >"$SL/slurm.conf" <<-CONF
	ClusterName=nodetune-test
	SlurmctldHost=$SLURM_HOST
	SlurmUser=root
	SlurmdUser=root
	SlurmctldPort=$4
	SlurmdPort=$5
	AuthType=auth/munge
	CredType=cred/munge
	AuthInfo=socket=$SL/munge.sock
	StateSaveLocation=$SL/state
	SlurmdSpoolDir=$SL/spool
	SlurmctldPidFile=$SL/slurmctld.pid
	SlurmdPidFile=$SL/slurmd.pid
	SlurmctldLogFile=$SL/slurmctld.log
	SlurmdLogFile=$SL/slurmd.log
	SlurmdDebug=verbose
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/affinity
	SchedulerType=sched/builtin
	SelectType=select/cons_tres
	SelectTypeParameters=CR_Core
	JobCompType=jobcomp/none
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	MpiDefault=none
	ReturnToService=2
	SlurmdTimeout=60
	InactiveLimit=0
	KillWait=5
	PlugStackConfig=$SL/plugstack.conf
	$2
	$gres_types
	NodeName=$SLURM_HOST CPUs=$cpus RealMemory=$mem State=UNKNOWN $node_gres
	PartitionName=test Nodes=$SLURM_HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
	CONF
	if [ -n "$3" ]; then
		printf '%s\n' "$3" >"$SL/gres.conf"
	else
		rm -f "$SL/gres.conf"
	fi
	printf '%s\n' "$1" >"$SL/plugstack.conf"
}

# the pid in a pid file, if that process still runs
slurm_pid() {
	p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null && echo "$p"
}

# slurm_cancel_all: cancel every job and wait (10 s at most) until none is
# left and no process of one runs: slurmd stopped first would leave a
# cancelled job's script and children behind, to be reaped as a failure
slurm_cancel_all() {
	slurm_pid "$SL/slurmctld.pid" >/dev/null || return 0
	scancel -u "$(id -un)" 2>/dev/null
	for _ in $(seq 100); do
		[ -z "$(squeue -h -o %i 2>/dev/null)" ] && ! slurm_job_procs | grep -q . && return 0
		sleep 0.1
	done
	echo "# jobs still listed or running 10 s after scancel: $(squeue -h -o '%i %t' 2>/dev/null | tr '\n' ' ')"
}

# the processes of a job (a batch script, its children, a step's tasks):
# tagged, with a slurmstepd among their ancestors
slurm_job_procs() {
	t_leftovers
	for p in $(cat "$T_TMP/.left"); do
		a=$p
		while [ -n "$a" ] && [ "$a" -gt 1 ]; do
			a=$(awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$a/stat" 2>/dev/null)
			[ -n "$a" ] && [ "$(cat "/proc/$a/comm" 2>/dev/null)" = slurmstepd ] && { echo "$p"; break; }
		done
	done
}

slurm_stop() {
	slurm_cancel_all
	for d in slurmd slurmctld munged; do
		p=$(slurm_pid "$SL/$d.pid") || continue
		kill -TERM "$p" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	# a slurmstepd a killed slurmd left behind (by its tag: lib.sh's reap
	# would find it too, but as a failure)
	t_leftovers
	for p in $(cat "$T_TMP/.left"); do
		case $(cat "/proc/$p/comm" 2>/dev/null) in slurmstepd|slurmd|slurmctld|munged) kill -KILL "$p" ;; esac
	done
	return 0
}

slurm_tail_logs() {
	for f in munged slurmctld slurmd; do
		[ -s "$SL/$f.log" ] && { echo "#   --- $f.log"; tail -8 "$SL/$f.log" | sed 's/^/#   /'; }
	done
}

slurm_start() { # PLUGSTACK_LINES [EXTRA [GRES_CONF NGPUS]]
	slurm_write_conf "$1" "${2:-}" "${3:-}" "${4:-0}"
	export SLURM_CONF=$SL/slurm.conf
	# munge: a fresh key, its own socket (not the host's /run/munge)
	if [ ! -s "$SL/munge.key" ]; then
		dd if=/dev/urandom of="$SL/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$SL/munge.key"
	fi
	t_defer slurm_stop
	munged --force --socket="$SL/munge.sock" --key-file="$SL/munge.key" --pid-file="$SL/munged.pid" \
		--log-file="$SL/munged.log" --seed-file="$SL/munged.seed" 2>>"$SL/munged.log" || {
		echo "# munged did not start"; slurm_tail_logs; return 1; }
	slurmctld -i -f "$SL/slurm.conf" 2>>"$SL/slurmctld.log" &&
		slurmd -f "$SL/slurm.conf" -N "$SLURM_HOST" 2>>"$SL/slurmd.log" || {
		echo "# slurmctld or slurmd did not start"; slurm_tail_logs; return 1; }
	for _ in $(seq 150); do
		state=$(sinfo -h -n "$SLURM_HOST" -o %t 2>/dev/null)
		[ "$state" = idle ] && return 0
		sleep 0.2
	done
	echo "# the node never came up idle (sinfo: '$state')"
	slurm_tail_logs
	return 1
}
