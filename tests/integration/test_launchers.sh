#!/bin/sh
# SPDX-License-Identifier: MIT
# host: thp sysctl knobs cgroup state
# `nodetune exec` under real launchers: mpirun (Open MPI) and torchrun (the
# torch elastic agent; tests/tools/torchrun.py says why not Debian's
# torchrun script).  srun is tested in test_slurm.sh, on a real Slurm.
# Each local rank must find its rank in the launcher's environment and get
# its own CPUs from the plan (this machine: 2 CPUs, no GPU, so gpu-train's
# gpu-local falls back to cores: one CPU per rank).  A rank of `exec` or
# `run` holds the fds its launcher passed and none that nodetune opened.
. "$(dirname "$0")/lib.sh"
t_plan 5

GT=policies/gpu-train.conf
# prints "RANK-VARIABLE=N CPUS"
SHOW='echo "$0=$(printenv "$0") $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
two_cpus() { # FILE: two lines, two distinct single CPUs, ranks 0 and 1
	[ "$(wc -l <"$1")" -eq 2 ] && [ "$(awk '{ print $2 }' "$1" | sort -u | wc -l)" -eq 2 ] &&
		[ "$(awk '{ print $1 }' "$1" | sed 's/.*=//' | sort | tr '\n' ' ')" = "0 1 " ] &&
		! awk '{ print $2 }' "$1" | grep -q '[-,]'
}

if command -v mpirun >/dev/null; then
	run mpirun --allow-run-as-root --oversubscribe -np 2 "$NODETUNE" exec -q --policy $GT -- \
		sh -c "$SHOW" OMPI_COMM_WORLD_LOCAL_RANK
	if [ "$RC" -eq 0 ] && two_cpus "$OUT"; then
		t_ok "mpirun -np 2 nodetune exec: each rank bound to its own CPU: $(sort "$OUT" | tr '\n' ' ')"
	else
		t_not_ok "mpirun -np 2 nodetune exec: exit $RC: $(sort "$OUT" | tr '\n' ' ') $(head -3 "$ERR")"
	fi
else
	t_need mpirun "mpirun: not installed"
fi

if /usr/bin/python3 -c 'import torch.distributed.launcher.api' 2>/dev/null; then
	run /usr/bin/python3 tests/tools/torchrun.py 2 "$NODETUNE" exec -q --policy $GT -- sh -c "$SHOW" LOCAL_RANK
	if [ "$RC" -eq 0 ] && two_cpus "$OUT"; then
		t_ok "torchrun (torch's elastic agent), 2 workers of nodetune exec: each bound to its own CPU: $(sort "$OUT" | tr '\n' ' ')"
	else
		t_not_ok "torchrun, 2 workers of nodetune exec: exit $RC: $(sort "$OUT" | tr '\n' ' ') $(tail -3 "$ERR")"
	fi
	run /usr/bin/python3 tests/tools/torchrun.py 2 "$NODETUNE" exec -q --policy $GT -- sh -c 'test "$LOCAL_WORLD_SIZE" = 2'
	check "torchrun: LOCAL_WORLD_SIZE=2 in each worker's environment" -- [ "$RC" -eq 0 ]
else
	t_need torch "torchrun: python3-torch not installed (scripts/install-deps.sh bench)"
fi

# Nothing nodetune opens reaches a rank (every fd it opens is O_CLOEXEC),
# while what the launcher passed does (fd 7 here: an MPI or PMIx fd is
# the rank's): `exec` and `run` give the command the fds it has when run
# bare, ls's own directory fd included.  run applies to this host (a
# policy of a job cgroup only) and reverts: root only.
printf '[main]\nsummary = test_launchers fds\n[cgroup]\nname = nodetune-fds-%s\n' $$ >"$T_TMP/fds.conf"
chmod 644 "$T_TMP/fds.conf"
bare=$(ls /proc/self/fd 7</dev/null | sort -n | tr '\n' ' ')
ex=$(LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "$NODETUNE" exec -q --policy "$T_TMP/fds.conf" -- ls /proc/self/fd 7</dev/null | sort -n | tr '\n' ' ')
check "exec: the rank holds the launcher's fds (7) and nothing nodetune opened: '$ex', bare '$bare'" -- test "$ex" = "$bare"
if [ "$(id -u)" -ne 0 ]; then
	t_skip_host root "run's fds: not root (run applies to this host)"
else
	t_defer '"$NODETUNE" revert --state-dir "$T_TMP/fds-state" >/dev/null 2>&1'
	rn=$("$NODETUNE" run -n 1 -q --policy "$T_TMP/fds.conf" --state-dir "$T_TMP/fds-state" -- ls /proc/self/fd 7</dev/null |
		sort -n | tr '\n' ' ')
	check "run: the rank holds the caller's fds (7) and nothing nodetune opened: '$rn', bare '$bare'" -- test "$rn" = "$bare"
fi

t_done
