# SPDX-License-Identifier: MIT
# slurm.sh — attacks on the SPANK plugin's host-wide settings (issue 38,
# security.md H2 and L6), on a real one-node Slurm (slurm_lib.sh: munged,
# slurmctld, slurmd; the partition lets jobs share the node), sourced by
# test_attacks.sh.  The knob is the live vm.max_map_count, put back by
# t_defer whatever happens; each job's state dir is below a root of its own
# ($T_TMP/slurm-root/run/nodetune/slurm, plugstack state_dir=), which
# `nodetune doctor --sysroot` reads.
#   H2  a job named 'a OverSubscribe=NO' without --exclusive on the shared
#       node: the host is not tuned (the tasks are still bound)
#   H2  an --exclusive job while another job's journal is live: the host
#       keeps that job's values, its journal untouched
#   L6  an epilog revert that fails is retried by the next job's prolog (a
#       job without --nodetune), and doctor names it while it is pending
#   L6  the daemon's start retries it too, before it journals the node's
#       values for its own policy (on a tree: needs no Slurm)
# NODETUNE_SPANK names the plugin (default: beside $NODETUNE, else
# build/nodetune_spank.so: the ASan pass has no plugin of its own, since
# slurmstepd is not instrumented), for a run against an older build.

slurm_plugin=${NODETUNE_SPANK:-$(dirname "$NODETUNE")/nodetune_spank.so}
[ -r "$slurm_plugin" ] || slurm_plugin=$SRCDIR/build/nodetune_spank.so
slurm_knob=/proc/sys/vm/max_map_count

# slurm_wait JOBID...: until squeue lists none of them (30 s at most)
slurm_gone() {
	for slurm_j in "$@"; do [ -z "$(squeue -h -j "$slurm_j" 2>/dev/null)" ] || return 1; done
}
slurm_wait() { wait_until 30 slurm_gone "$@"; }

# slurm_doctor: `nodetune doctor --json` over the state dirs' root, into
# $T_TMP/slurm-doctor.json; its exit status in slurm_drc (1: hazards found)
slurm_doctor() {
	"$NODETUNE" doctor --sysroot "$T_TMP/slurm-root" --topology tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml \
		--json >"$T_TMP/slurm-doctor.json" 2>&1
	slurm_drc=$?
}

# H2: the job's own name claims OverSubscribe=NO; the job shares the node
slurm_h2_name() {
	binds0=$(grep -c 'nodetune: task 0 of 1: ' "$SL/slurmd.log")
	j=$(sbatch --parsable -J 'a OverSubscribe=NO' -n 1 -o "$T_TMP/slurm-a.out" --nodetune=hw \
		--wrap "cat $slurm_knob; sed 's/^/outcome: /' $slurm_st/\$SLURM_JOB_ID/outcome") ||
		t_not_ok "H2: sbatch -J 'a OverSubscribe=NO': exit $?"
	slurm_wait "$j"
	os=$(scontrol show job -o "$j" | grep -o 'OverSubscribe=[A-Z]*' | tr '\n' ' ')
	binds1=$(grep -c 'nodetune: task 0 of 1: ' "$SL/slurmd.log")
	check "H2: sbatch -J 'a OverSubscribe=NO' without --exclusive ($os): the shared node is not tuned, $slurm_knob stayed $slurm_m0 during the job, the outcome 'node-shared' (its tasks bound within its CPUs): $(tr '\n' ' ' <"$T_TMP/slurm-a.out")" -- sh -c \
		"[ \"\$(grep -vx 'outcome: .*' '$T_TMP/slurm-a.out' | grep -v '^nodetune: ')\" = '$slurm_m0' ] &&
		 grep -q '^outcome: node-shared: host-wide settings of $slurm_pol/hw.conf not applied, only the tasks bound, within the job.s CPUs: job $j shares the node' '$T_TMP/slurm-a.out' &&
		 [ \"\$(cat $slurm_knob)\" = '$slurm_m0' ]"
	check "H2: ... and its task was still bound (slurmd's log: $binds0 -> $binds1 binding lines)" -- \
		test "$binds1" -gt "$binds0"
}

# H2: a live journal of another job (one whose epilog never ran) holds the
# node's values: an --exclusive job must not journal them as originals
slurm_h2_busy() {
	mkdir -p "$slurm_st"
	run "$NODETUNE" apply --policy "$slurm_pol/other.conf" --state-dir "$slurm_st/4242"
	t_defer "'$NODETUNE' revert --state-dir '$slurm_st/4242' >/dev/null 2>&1"
	if [ "$RC" -ne 0 ] || [ "$(cat $slurm_knob)" != "$slurm_m2" ]; then
		t_not_ok "H2 (two jobs): job 4242's journal could not be made (apply exit $RC: $(head -2 "$ERR"))"
		return
	fi
	sum0=$(sha256sum <"$slurm_st/4242/journal")
	j=$(sbatch --parsable --exclusive -n 1 -o "$T_TMP/slurm-b.out" --nodetune=hw \
		--wrap "cat $slurm_knob; sed 's/^/outcome: /' $slurm_st/\$SLURM_JOB_ID/outcome") ||
		t_not_ok "H2 (two jobs): sbatch --exclusive: exit $?"
	slurm_wait "$j"
	check "H2 (two jobs): an --exclusive job while job 4242's journal is live: refused host-wide, $slurm_knob kept 4242's $slurm_m2 during and after it, 4242's journal unchanged: $(tr '\n' ' ' <"$T_TMP/slurm-b.out")" -- sh -c \
		"[ \"\$(grep -vx 'outcome: .*' '$T_TMP/slurm-b.out' | grep -v '^nodetune: ')\" = '$slurm_m2' ] &&
		 grep -q '^outcome: shared: host-wide settings of $slurm_pol/hw.conf not applied, only the tasks bound: job 4242' '$T_TMP/slurm-b.out' &&
		 [ \"\$(cat $slurm_knob)\" = '$slurm_m2' ] && [ \"\$(sha256sum <'$slurm_st/4242/journal')\" = '$sum0' ]"
	run "$NODETUNE" revert --state-dir "$slurm_st/4242"
	check "H2 (two jobs): job 4242's revert then puts back $slurm_m0 (exit $RC, $(cat $slurm_knob))" -- sh -c \
		"[ $RC -eq 0 ] && [ \"\$(cat $slurm_knob)\" = '$slurm_m0' ]"
	rm -rf "$slurm_st/4242"
}

# L6: the epilog's revert fails (nodetune= a binary that exits 3 by then)
slurm_l6() {
	printf '#!/bin/sh\necho "nodetune: revert: refused (a planted failure)" >&2\nexit 3\n' >"$T_TMP/slurm-fail"
	chmod 755 "$T_TMP/slurm-fail"
	j=$(sbatch --parsable --exclusive -n 1 -o /dev/null --nodetune=hw \
		--wrap "while [ ! -e $T_TMP/slurm-go ]; do sleep 0.1; done")
	t_defer "'$NODETUNE' revert --state-dir '$slurm_st/$j' >/dev/null 2>&1"
	if ! wait_until 30 grep -qx applied "$slurm_st/$j/outcome"; then
		t_not_ok "L6: job $j's prolog never applied ($(cat "$slurm_st/$j/outcome" 2>&1))"
		touch "$T_TMP/slurm-go"
		return
	fi
	printf '%s\n' "$slurm_plug" | sed "s|nodetune=$NODETUNE|nodetune=$T_TMP/slurm-fail|" >"$SL/plugstack.conf"
	touch "$T_TMP/slurm-go"
	slurm_wait "$j"
	printf '%s\n' "$slurm_plug" >"$SL/plugstack.conf"
	slurm_doctor
	check "L6: job $j's epilog revert failed: the node keeps $slurm_m1 ($(cat $slurm_knob)), its journal kept, and doctor names it: $(jq -c '[.hazards[] | select(.code == "slurm-revert-pending") | .evidence]' "$T_TMP/slurm-doctor.json" 2>&1)" -- sh -c \
		"[ $slurm_drc -eq 1 ] && [ \"\$(cat $slurm_knob)\" = '$slurm_m1' ] && [ -e '$slurm_st/$j/journal' ] &&
		 jq -e '[.hazards[] | select(.code == \"slurm-revert-pending\" and (.evidence | test(\"job $j\")))] | length == 1' '$T_TMP/slurm-doctor.json'"
	k=$(sbatch --parsable -n 1 -o "$T_TMP/slurm-c.out" --wrap "cat $slurm_knob") ||
		t_not_ok "L6: sbatch of the next job: exit $?"
	slurm_wait "$k"
	slurm_doctor
	check "L6: the next job's prolog (job $k, no --nodetune) retried it first: the job saw $slurm_m0 ($(cat "$T_TMP/slurm-c.out")), the node holds $slurm_m0 ($(cat $slurm_knob)), job $j's state dir gone, doctor quiet" -- sh -c \
		"[ \"\$(cat '$T_TMP/slurm-c.out')\" = '$slurm_m0' ] && [ \"\$(cat $slurm_knob)\" = '$slurm_m0' ] &&
		 [ ! -e '$slurm_st/$j' ] && [ $slurm_drc -eq 0 ] && jq -e '[.hazards[] | select(.code == \"slurm-revert-pending\")] | length == 0' '$T_TMP/slurm-doctor.json'"
}

# L6 at the daemon's start: a job's pending revert below the daemon's root
# (as the plugin leaves it) is retried before the daemon applies its own
# policy, whose journal must hold the node's original, not the job's value
slurm_l6_daemon() {
	r=$T_TMP/slurm-droot hgx=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
	cp -r tests/fixtures/sysroot/gpu-host-untuned "$r" && mkdir -p "$r/proc/sys/vm" "$r/run/nodetune/slurm" &&
		echo 60 >"$r/proc/sys/vm/swappiness" || t_not_ok "L6 (daemon): the tree could not be made"
	printf '[sysctl]\nvm.swappiness = 33\n' >"$T_TMP/slurm-job.conf"
	printf '[sysctl]\nvm.swappiness = 10\n' >"$T_TMP/slurm-daemon.conf"
	run "$NODETUNE" apply --sysroot "$r" --topology $hgx --policy "$T_TMP/slurm-job.conf" --state-dir "$r/run/nodetune/slurm/77"
	if [ "$RC" -ne 0 ] || [ "$(cat "$r/proc/sys/vm/swappiness")" != 33 ]; then
		t_not_ok "L6 (daemon): job 77's settings could not be applied to the tree (exit $RC: $(head -2 "$ERR"))"
		return
	fi
	echo 'the epilog: nodetune revert: refused (exit 3)' >"$r/run/nodetune/slurm/77/revert-pending"
	"$NODETUNE" daemon --log-format=syslog --policy "$T_TMP/slurm-daemon.conf" --topology $hgx --sysroot "$r" \
		--state-dir "$T_TMP/slurm-dst" --interval 1 --no-metrics >/dev/null 2>"$T_TMP/slurm-d.log" &
	pid=$!
	t_defer "kill -9 $pid 2>/dev/null"
	wait_until 30 grep -q 'daemon: ready: ' "$T_TMP/slurm-d.log" || t_not_ok "L6 (daemon): never ready: $(tail -3 "$T_TMP/slurm-d.log")"
	kill -TERM $pid
	wait_until 20 sh -c "! kill -0 $pid" || kill -9 $pid
	wait $pid
	check "L6 at the daemon's start: job 77's pending revert retried first ($(grep -o 'slurm: .*' "$T_TMP/slurm-d.log" | head -1)), the daemon's journal holds vm.swappiness's original 60, not the job's 33, job 77's state dir gone" -- sh -c \
		"grep -q 'slurm: 1 job whose epilog could not revert it: reverted now, 1 settings restored' '$T_TMP/slurm-d.log' &&
		 grep -q '^file	proc/sys/vm/swappiness	60	' '$T_TMP/slurm-dst/journal' && [ ! -e '$r/run/nodetune/slurm/77' ]"
}

slurm_attacks() {
	. "$SRCDIR/tests/integration/slurm_lib.sh"
	if ! slurm_have; then
		t_need slurm "slurm attacks: need root and slurmctld, slurmd, munged, srun (scripts/install-deps.sh slurm)"
		return
	fi
	if [ ! -r "$slurm_plugin" ]; then
		t_need libslurm-dev "slurm attacks: no plugin ($slurm_plugin: needs /usr/include/slurm/spank.h)"
		return
	fi
	slurm_pol=$T_TMP/slurm-policies slurm_st=$T_TMP/slurm-root/run/nodetune/slurm
	slurm_m0=$(cat $slurm_knob)
	slurm_m1=$((slurm_m0 + 1)) slurm_m2=$((slurm_m0 + 2))
	t_defer "[ \"\$(cat $slurm_knob)\" = '$slurm_m0' ] || echo $slurm_m0 >$slurm_knob"
	mkdir -m 755 "$slurm_pol"
	printf '[main]\nsummary = host-wide\n[sysctl]\nvm.max_map_count = %s\n' "$slurm_m1" >"$slurm_pol/hw.conf"
	printf '[main]\nsummary = another job\n[sysctl]\nvm.max_map_count = %s\n' "$slurm_m2" >"$slurm_pol/other.conf"
	chmod 644 "$slurm_pol/hw.conf" "$slurm_pol/other.conf"
	slurm_plug="required $slurm_plugin nodetune=$NODETUNE state_dir=$slurm_st policy_dirs=$slurm_pol"
	if ! slurm_start "$slurm_plug"; then
		t_not_ok "slurm attacks: a one-node Slurm starts (munged, slurmctld, slurmd)"
		slurm_stop
		return
	fi
	slurm_h2_name
	slurm_h2_busy
	slurm_l6
	slurm_stop
}
slurm_l6_daemon
slurm_attacks
