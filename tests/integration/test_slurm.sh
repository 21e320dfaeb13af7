#!/bin/sh
# Slurm: `nodetune slurm gres` against real machines' topologies, then the
# SPANK plugin and the prolog/epilog on a real one-node Slurm that this test
# starts (tests/integration/slurm_lib.sh) and stops, whatever happens.
. "$(dirname "$0")/lib.sh"

# ---- nodetune slurm gres: the expected lines were derived by hwloc's own
# tools (tests/fixtures/gres/gen.sh), not by nodetune ---------------------
for xml in $SHARED/g4dnmetal.xml $SHARED/nvidiaDGX2.xml $SHARED/power8gpudistances.xml \
	   $SHARED/32em64t-2n8c2t-pci-normalio.xml $SHARED/96em64t-4n4d3ca2co-pci.xml \
	   tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml tests/fixtures/topologies/epyc-2s-numa0-8-mi300-synthetic.xml; do
	want=tests/fixtures/gres/$(basename "$xml" .xml).conf
	if [ ! -r "$xml" ]; then
		t_need ../shared "slurm gres $(basename "$xml"): topology not here"
		continue
	fi
	run "$NODETUNE" slurm gres --topology "$xml"
	if [ "$RC" -eq 0 ] && grep -v '^#' "$OUT" | cmp -s - "$want" && [ ! -s "$ERR" ]; then
		t_ok "slurm gres $(basename "$xml"): $(grep -c '^Name=gpu' "$OUT") lines as $want"
	else
		t_not_ok "slurm gres $(basename "$xml"): exit $RC, differs from $want"
		grep -v '^#' "$OUT" | diff - "$want" | head -5 | sed 's/^/#   /'
	fi
done
run "$NODETUNE" slurm gres --topology tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml --json
check "slurm gres --json: 8 GPUs, the first /dev/nvidia0 on cores 0-23" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '(.gres | length) == 8 and .gres[0].file == \"/dev/nvidia0\" and .gres[0].cores == \"0-23\"' '$OUT'"
expect_fail 2 "^nodetune: slurm: unknown sub-verb 'gress' \(known: gres\)$" "slurm gress: a usage error" -- \
	"$NODETUNE" slurm gress
expect_fail 2 "^nodetune: slurm: expected a sub-verb: gres" "slurm alone: a usage error" -- "$NODETUNE" slurm
expect_fail 2 "^nodetune: slurm: unexpected argument 'x'" "slurm gres x: a usage error" -- "$NODETUNE" slurm gres x

# ---- a real one-node Slurm with the plugin ---------------------------------
. "$(dirname "$0")/slurm_lib.sh"
# The plugin: never an ASan build (slurmstepd, which dlopen()s it, is not
# instrumented); the ASan pass (NODETUNE=build/asan/nodetune) loads
# build/nodetune_spank.so and runs the ASan nodetune in the prolog/epilog.
PLUGIN=$(dirname "$NODETUNE")/nodetune_spank.so
[ -r "$PLUGIN" ] || PLUGIN=$SRCDIR/build/nodetune_spank.so
HGX=$SRCDIR/tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
DEFRAG=/sys/kernel/mm/transparent_hugepage/defrag
SWAP=/proc/sys/vm/swappiness

if [ "$(id -u)" -ne 0 ]; then
	t_skip_host "Slurm: not root (a one-node Slurm of this host's own)"
	t_done
fi
if ! slurm_have; then
	t_need slurm "Slurm: needs slurmctld, slurmd, munged, srun (scripts/install-deps.sh slurm)"
	t_done
fi
if [ ! -r "$PLUGIN" ]; then
	t_need slurm-dev "Slurm: no plugin built ($PLUGIN: needs /usr/include/slurm/spank.h)"
	t_done
fi
ST=$T_TMP/state
if ! slurm_start "required $PLUGIN nodetune=$NODETUNE state_dir=$ST"; then
	t_not_ok "a one-node Slurm starts (munged, slurmctld, slurmd) and the node is idle"
	slurm_stop
	t_done
fi
t_ok "a one-node Slurm starts on $SLURM_HOST and the node is idle"
check "srun --help lists --nodetune=POLICY" -- sh -c "srun --help 2>&1 | grep -q -- '--nodetune=POLICY'"

# gpu-train on this GPU-less machine: gpu-local falls back to NUMA nodes,
# then cores (nodetune plan says so), so 2 tasks get one CPU each
run srun -n 2 --nodetune=policies/gpu-train.conf grep Cpus_allowed_list /proc/self/status
cpus=$(awk '{ print $2 }' "$OUT" | sort | tr '\n' ' ')
check "srun -n 2 --nodetune=policies/gpu-train.conf: exit 0, two distinct single CPUs ($cpus)" -- sh -c \
	"[ $RC -eq 0 ] && [ \$(awk '{ print \$2 }' '$OUT' | sort -u | wc -l) -eq 2 ] && ! awk '{ print \$2 }' '$OUT' | grep -q '[-,]'"
check "slurmd's log: each task's binding, by the plugin" -- sh -c \
	"grep -q 'nodetune: task 0 of 2: GPU none, CPUs [0-9]* (planned' '$SL/slurmd.log' &&
	 grep -q 'nodetune: task 1 of 2: GPU none, CPUs [0-9]* (planned' '$SL/slurmd.log'"

# srun as a launcher of `nodetune exec` (no plugin option): the local rank
# from SLURM_LOCALID, the count from SLURM_NTASKS_PER_NODE/SLURM_TASKS_PER_NODE
run srun -n 2 "$NODETUNE" exec -q --policy policies/gpu-train.conf -- \
	sh -c 'echo "$SLURM_LOCALID $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
check "srun -n 2 nodetune exec: local ranks 0 and 1 from SLURM_LOCALID, each on its own CPU: $(sort "$OUT" | tr '\n' ' ')" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(sort '$OUT' | tr '\n' ' ')\" = '0 0 1 1 ' ]"

# the bind comes after task/affinity's: one task on an exclusive node is
# planned on every CPU (NUMA node 0), where Slurm would give it its one
run srun -n 1 --nodetune=policies/gpu-train.conf grep Cpus_allowed_list /proc/self/status
plan1=$("$NODETUNE" plan --policy policies/gpu-train.conf --ranks 1 --json | jq -r '.ranks[0].cpus')
check "srun -n 1: the task's CPUs are the plan's ($plan1), not task/affinity's one CPU: $(cat "$OUT")" -- sh -c \
	"[ $RC -eq 0 ] && grep -q \"Cpus_allowed_list:[[:space:]]*$plan1\$\" '$OUT'"

# ---- sbatch: the node's settings during the job are the policy's, and
# byte-identical after it (job_prolog applies, job_epilog reverts) ------------
d0=$(sed 's/.*\[\(.*\)\].*/\1/' $DEFRAG)
if [ "$d0" = defer+madvise ]; then d1=madvise; else d1=defer+madvise; fi
s0=$(cat $SWAP)
s1=$(( s0 == 37 ? 38 : 37 ))
cat $DEFRAG >"$T_TMP/defrag.before"; cat $SWAP >"$T_TMP/swap.before"
t_defer "[ \"\$(cat $SWAP)\" = '$s0' ] || echo $s0 >$SWAP; grep -q '\\[$d0\\]' $DEFRAG || echo $d0 >$DEFRAG"
printf '[main]\nsummary = test_slurm\n[thp]\ndefrag = %s\n[sysctl]\nvm.swappiness = %s\n' "$d1" "$s1" >"$T_TMP/job.conf"
chmod 644 "$T_TMP/job.conf"
jid=$(sbatch --parsable -n 1 -o "$T_TMP/job.out" --nodetune="$T_TMP/job.conf" --wrap "sed 's/.*\[\(.*\)\].*/\1/' $DEFRAG; cat $SWAP; ls $ST") ||
	t_not_ok "sbatch --nodetune: sbatch exit $?"
for _ in $(seq 100); do
	[ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && [ ! -d "$ST/$jid" ] && break
	sleep 0.2
done
check "sbatch --nodetune: inside the job THP defrag is $d1 and vm.swappiness $s1 (was $d0, $s0): $(head -2 "$T_TMP/job.out" | tr '\n' ' ')" -- \
	sh -c "[ \"\$(sed -n 1p '$T_TMP/job.out')\" = '$d1' ] && [ \"\$(sed -n 2p '$T_TMP/job.out')\" = '$s1' ]"
check "sbatch: the job's state dir $ST/$jid existed during the job" -- grep -qx "$jid" "$T_TMP/job.out"
check "after the job: $DEFRAG and $SWAP byte-identical to before ($(cat $DEFRAG), $(cat $SWAP)), the state dir gone ($(ls "$ST/$jid" 2>&1))" -- sh -c \
	"cat $DEFRAG | cmp -s - '$T_TMP/defrag.before' && cat $SWAP | cmp -s - '$T_TMP/swap.before' && [ ! -e '$ST/$jid' ]"
check "slurmd's log: the prolog's changes and the epilog's revert" -- sh -c \
	"grep -q 'nodetune: nodetune: apply: $DEFRAG: $d0 -> $d1' '$SL/slurmd.log' &&
	 grep -q 'nodetune: nodetune: revert: $DEFRAG: $d1 -> $d0' '$SL/slurmd.log'"

# ---- a bad --nodetune fails the step with one line naming the file; the
# node stays up and the next job runs -----------------------------------------
bad_step() { # DESC PATTERN POLICY
	run srun -n 1 --nodetune="$3" true
	if [ "$RC" -ne 0 ] && [ "$(grep -c '^srun: error: nodetune: ' "$ERR")" -eq 1 ] && grep -Eq -- "$2" "$ERR"; then
		t_ok "$1: the step fails (exit $RC): $(grep '^srun: error: nodetune: ' "$ERR")"
	else
		t_not_ok "$1: want a failed step and one 'srun: error: nodetune:' line matching /$2/ (exit $RC)"
		sed 's/^/#   /' "$ERR" | head -5
	fi
}
bad_step "a missing file" "^srun: error: nodetune: --nodetune=$T_TMP/nope.conf: $T_TMP/nope.conf: No such file" "$T_TMP/nope.conf"
printf '[main]\nsummary = bad\n[thp]\ndefrag = sometimes\n' >"$T_TMP/bad.conf"; chmod 644 "$T_TMP/bad.conf"
bad_step "a policy that fails validation" "nodetune: --nodetune=$T_TMP/bad.conf: $T_TMP/bad.conf:4: " "$T_TMP/bad.conf"
cp "$T_TMP/job.conf" "$T_TMP/notroot.conf"; chown 65534 "$T_TMP/notroot.conf"
bad_step "a file not owned by root" "nodetune: --nodetune=$T_TMP/notroot.conf: .*$T_TMP/notroot.conf.*owned" "$T_TMP/notroot.conf"
run sbatch --parsable -n 1 --nodetune="$T_TMP/nope.conf" --wrap true
check "sbatch with a missing policy is refused at submission, naming the file" -- sh -c \
	"[ $RC -ne 0 ] && grep -q '^sbatch: error: nodetune: --nodetune=$T_TMP/nope.conf: $T_TMP/nope.conf: No such file' '$ERR'"
run srun -n 1 sh -c 'echo next'
for _ in $(seq 50); do [ "$(sinfo -h -n $SLURM_HOST -o %t)" = idle ] && break; sleep 0.1; done
check "the next job on the node runs normally (and the node is still idle, not drained): exit $RC, $(cat "$OUT"), $(sinfo -h -n $SLURM_HOST -o %t)" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(cat '$OUT')\" = next ] && [ \"\$(sinfo -h -n $SLURM_HOST -o %t)\" = idle ]"
check "slurmd kept running through all of it" -- sh -c "kill -0 \$(cat '$SL/slurmd.pid')"
slurm_stop

# ---- GPU-local binding follows the step's GPUs: 8 fake GPUs (Slurm's own
# tests use /dev/tty devices) and the plan made against an 8-GPU HGX
# fixture (plugstack topology=).  This host has 2 CPUs: the plan's CPUs
# are checked in the plugin's log line, and the task's affinity is their
# intersection with this host's CPUs (none: Slurm's binding is kept) ----------
if ! slurm_start "required $PLUGIN nodetune=$NODETUNE state_dir=$ST topology=$HGX" "" "Name=gpu File=/dev/tty[0-7]" 8; then
	t_not_ok "Slurm with 8 fake GPUs (gres.conf File=/dev/tty[0-7]) starts"
	slurm_stop
	t_done
fi
run srun -n 1 --gres=gpu:1 --nodetune=policies/gpu-train.conf sh -c 'echo $SLURM_STEP_GPUS; grep Cpus_allowed_list /proc/self/status'
check "--gres=gpu:1 gets GPU 0: planned next to GPU 0 (0000:1b:00.0) on 1-23,49-71 (node 0 less its housekeeping core)" -- \
	grep -q 'task 0 of 1: GPU 0 (0000:1b:00.0) from SLURM_STEP_GPUS, CPUs 1 (planned 1-23,49-71)' "$SL/slurmd.log"
check "the task runs on the plan's CPUs that this host has: 1 ($(tr '\n' ' ' <"$OUT"))" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(sed -n 1p '$OUT')\" = 0 ] && grep -q 'Cpus_allowed_list:[[:space:]]*1\$' '$OUT'"
hold=$(sbatch --parsable -n 1 --gres=gpu:5 -D "$T_TMP" -o /dev/null --wrap 'sleep 60')
t_defer "scancel $hold 2>/dev/null"
for _ in $(seq 50); do [ "$(squeue -h -j "$hold" -o %t)" = R ] && break; sleep 0.2; done
run srun -n 1 --gres=gpu:1 --nodetune=policies/gpu-train.conf sh -c 'echo $SLURM_STEP_GPUS; grep Cpus_allowed_list /proc/self/status'
check "with GPUs 0-4 held by another job, the step gets GPU 5 and is planned next to it (0000:ae:00.0, node 1: 25-47,73-95)" -- \
	grep -q 'task 0 of 1: GPU 5 (0000:ae:00.0) from SLURM_STEP_GPUS, CPUs unchanged (planned 25-47,73-95)' "$SL/slurmd.log"
check "none of those CPUs is on this host: the task keeps Slurm's binding ($(tr '\n' ' ' <"$OUT"))" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(sed -n 1p '$OUT')\" = 5 ] && grep -q 'Cpus_allowed_list:[[:space:]]*[0-9]*\$' '$OUT'"
slurm_stop

t_done
