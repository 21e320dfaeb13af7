#!/bin/sh
# SPDX-License-Identifier: MIT
# host: slurm thp sysctl knobs cgroup state
# Slurm: `nodetune slurm gres` against real machines' topologies, then the
# SPANK plugin and the prolog/epilog on a real one-node Slurm that this test
# starts (tests/integration/slurm_lib.sh) and stops, whatever happens.
. "$(dirname "$0")/lib.sh"
t_plan 63

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
	t_skip_host root "Slurm: slurmd and the SPANK plugin run as root"
	t_rest
elif ! slurm_have; then
	t_need slurm "Slurm: slurmctld, slurmd, munged, srun (scripts/install-deps.sh slurm)"
	t_rest
fi
if [ ! -r "$PLUGIN" ]; then
	t_need libslurm-dev "Slurm: no plugin built ($PLUGIN: needs /usr/include/slurm/spank.h)"
	t_rest
fi
# The site's policy directory (policy_dirs=, root's), beside the source
# tree's policies/.  nobody, the unprivileged user of the leak tests,
# traverses the test's directory (0711) but lists nothing in it.
chmod 711 "$T_TMP"
POL=$T_TMP/policies ST=$T_TMP/state
mkdir -m 755 "$POL"
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
# srun loads the plugin as the submitting user: when the build sits below a
# directory nobody may not enter (a clone in a mktemp -d), nobody's srun
# loads a copy of it in a directory nobody may read
if ! $NOBODY test -r "$PLUGIN"; then
	mkdir -m 755 "$T_TMP/plugin" && install -m 0755 "$PLUGIN" "$T_TMP/plugin/nodetune_spank.so" &&
		PLUGIN=$T_TMP/plugin/nodetune_spank.so
fi
PLUG="required $PLUGIN nodetune=$NODETUNE state_dir=$ST policy_dirs=$POL:$SRCDIR/policies"
if ! slurm_start "$PLUG"; then
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
	"grep -q 'nodetune: task 0 of 2: GPU none, CPUs [0-9][0-9,-]* (planned' '$SL/slurmd.log' &&
	 grep -q 'nodetune: task 1 of 2: GPU none, CPUs [0-9][0-9,-]* (planned' '$SL/slurmd.log'"

# srun as a launcher of `nodetune exec` (no plugin option): the local rank
# from SLURM_LOCALID, the count from SLURM_NTASKS_PER_NODE/SLURM_TASKS_PER_NODE
run srun -n 2 "$NODETUNE" exec -q --policy policies/gpu-train.conf -- \
	sh -c 'echo "$SLURM_LOCALID $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'
check "srun -n 2 nodetune exec: local ranks 0 and 1 from SLURM_LOCALID, each on its own CPU: $(sort "$OUT" | tr '\n' ' ')" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(sort '$OUT' | tr '\n' ' ')\" = '0 0 1 1 ' ]"

# the bind comes after task/affinity's: one task of a job that owns the
# node (--exclusive) is planned on every CPU (NUMA node 0), where Slurm
# would give it its one
run srun --exclusive -n 1 --nodetune=policies/gpu-train.conf grep Cpus_allowed_list /proc/self/status
plan1=$("$NODETUNE" plan --policy policies/gpu-train.conf --ranks 1 --json | jq -r '.ranks[0].cpus')
# NUMA node 0's CPUs, read from the kernel, not from the planner, and more
# than one (a range or a list), which task/affinity's one CPU is not
all=$(cat /sys/devices/system/node/node0/cpulist)
check "srun --exclusive -n 1: the task's CPUs are the plan's ($plan1), node 0's $all, not task/affinity's one CPU: $(cat "$OUT")" -- sh -c \
	"[ $RC -eq 0 ] && [ '$plan1' = '$all' ] && echo '$all' | grep -q '[-,]' && grep -q \"Cpus_allowed_list:[[:space:]]*$all\$\" '$OUT'"

# ---- sbatch --exclusive: the node's settings during the job are the
# policy's, from the checked copy in the job's state dir, with the job's own
# cgroup; byte-identical after it (job_prolog applies, job_epilog reverts) ----
# The node as it is before, read once the jobs above are gone: srun returns
# when its step ends, and slurmd runs the job's epilog after that, so the
# --exclusive job's epilog may still be reverting gpu-train (under ASan it
# was: "before" read gpu-train's swappiness 0 and defrag defer+madvise,
# and the revert to 60 and madvise landed during the next job, a red
# fresh-clone run on 2026-12-07).  No job listed and no job state dir left.
node_idle() { [ -z "$(squeue -h 2>/dev/null)" ] && [ -z "$(find "$ST" -mindepth 1 -maxdepth 1 -type d 2>/dev/null)" ]; }
wait_until 20 node_idle || t_not_ok "the jobs above still listed or their state dirs left after 20 s: $(squeue -h 2>&1 | head -n 2) $(ls "$ST" 2>&1)"
d0=$(sed 's/.*\[\(.*\)\].*/\1/' $DEFRAG)
if [ "$d0" = defer+madvise ]; then d1=madvise; else d1=defer+madvise; fi
s0=$(cat $SWAP)
s1=$(( s0 == 37 ? 38 : 37 ))
t_defer "[ \"\$(cat $SWAP)\" = '$s0' ] || echo $s0 >$SWAP; grep -q '\\[$d0\\]' $DEFRAG || echo $d0 >$DEFRAG"
printf '[main]\nsummary = test_slurm\n[thp]\ndefrag = %s\n[sysctl]\nvm.swappiness = %s\n[cgroup]\nname = nt-slurm\n' \
	"$d1" "$s1" >"$POL/job.conf"
chmod 644 "$POL/job.conf"
# the knobs job.conf touches, and its job cgroups
# (fails when a knob cannot be read: two lines, or nothing, are compared)
snapshot() {
	cat $DEFRAG $SWAP >"$T_TMP/snap.knobs" && [ "$(wc -l <"$T_TMP/snap.knobs")" -eq 2 ] || return 1
	cat "$T_TMP/snap.knobs"
	find /sys/fs/cgroup -maxdepth 2 -name 'nt-slurm*' | sort
}
snapshot >"$T_TMP/node.before" || t_not_ok "the knobs job.conf touches could not be read before the jobs"
# jobs_gone JOBID...: none of them listed, and their state dirs gone (the
# epilog's revert ends after srun or sbatch returns); wait_jobs JOBID...:
# until then, 20 s at most, else a failure naming what is left
jobs_gone() {
	for j in "$@"; do
		[ -z "$(squeue -h -j "$j" 2>/dev/null)" ] && [ ! -d "$ST/$j" ] || return 1
	done
}
wait_jobs() {
	wait_until 20 jobs_gone "$@" ||
		t_not_ok "jobs $* still listed or their state dirs left after 20 s: $(squeue -h 2>&1 | head -n 2) $(ls "$ST" 2>&1)"
}
jid=$(sbatch --parsable --exclusive -n 1 -o "$T_TMP/job.out" --nodetune=job --wrap "sed 's/.*\[\(.*\)\].*/\1/' $DEFRAG; cat $SWAP;
	grep '^name = ' $ST/\$SLURM_JOB_ID/policy.conf; stat -c %a $ST/\$SLURM_JOB_ID; find /sys/fs/cgroup -maxdepth 2 -name 'nt-slurm*'") ||
	t_not_ok "sbatch --exclusive --nodetune=job: sbatch exit $?"
wait_jobs "$jid"
check "sbatch --exclusive --nodetune=job: inside the job THP defrag is $d1 and vm.swappiness $s1 (was $d0, $s0): $(head -2 "$T_TMP/job.out" | tr '\n' ' ')" -- \
	sh -c "[ \"\$(sed -n 1p '$T_TMP/job.out')\" = '$d1' ] && [ \"\$(sed -n 2p '$T_TMP/job.out')\" = '$s1' ]"
check "the prolog applied its copy in the job's 0700 state dir, the cgroup named for the job: $(sed -n '3,5p' "$T_TMP/job.out" | tr '\n' ' ')" -- sh -c \
	"[ \"\$(sed -n 3p '$T_TMP/job.out')\" = 'name = nt-slurm-$jid' ] && [ \"\$(sed -n 4p '$T_TMP/job.out')\" = 700 ] &&
	 sed -n 5p '$T_TMP/job.out' | grep -q '/nt-slurm-$jid\$'"
snapshot >"$T_TMP/node.after" || t_not_ok "the knobs job.conf touches could not be read (node.after)"
check "after the job: $DEFRAG, $SWAP and the cgroups byte-identical to before, the state dir gone ($(ls "$ST/$jid" 2>&1))" -- sh -c \
	"cmp -s '$T_TMP/node.before' '$T_TMP/node.after' && [ ! -e '$ST/$jid' ]"
check "slurmd's log: the prolog's changes and the epilog's revert" -- sh -c \
	"grep -q 'nodetune: nodetune: apply: $DEFRAG: $d0 -> $d1' '$SL/slurmd.log' &&
	 grep -q 'nodetune: nodetune: revert: $DEFRAG: $d1 -> $d0' '$SL/slurmd.log'"

# ---- two jobs sharing the node: only their tasks are bound, each is told
# why once, and the node is byte-identical during and after both -----------
# each job prints its CPUs and THP defrag as it runs; slurmd's log gets the
# plugin's line for each job's task (job.conf has no [affinity]: the CPUs
# stay the ones Slurm gave, "unchanged", and the job must be on them)
l0=$(wc -l <"$SL/slurmd.log")
j1=$(sbatch --parsable -n 1 -o "$T_TMP/s1.out" --nodetune=job --wrap "sleep 1; sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status; sed 's/.*\[\(.*\)\].*/\1/' $DEFRAG; cat $SWAP")
j2=$(sbatch --parsable -n 1 -o "$T_TMP/s2.out" --nodetune=job --wrap "sleep 1; sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status; sed 's/.*\[\(.*\)\].*/\1/' $DEFRAG; cat $SWAP")
wait_jobs "$j1" "$j2"
tail -n +$((l0 + 1)) "$SL/slurmd.log" >"$T_TMP/shared.log"
snapshot >"$T_TMP/node.after2" || t_not_ok "the knobs job.conf touches could not be read (node.after2)"
for j in 1 2; do
	check "shared job $j: one line says why the node was not tuned, and the job saw vm.swappiness $s0: $(tr '\n' ' ' <"$T_TMP/s$j.out")" -- sh -c \
		"[ \$(grep -c '^nodetune: slurm: ' '$T_TMP/s$j.out') -eq 1 ] &&
		 grep -q '^nodetune: slurm: host-wide settings of $POL/job.conf not applied, only the tasks bound, within the job.s CPUs: job [0-9]* shares the node with other jobs (OverSubscribe=OK; submit with --exclusive)' '$T_TMP/s$j.out' &&
		 [ \"\$(tail -n 1 '$T_TMP/s$j.out')\" = '$s0' ]"
	c=$(tail -n 3 "$T_TMP/s$j.out" | sed -n 1p) d=$(tail -n 2 "$T_TMP/s$j.out" | sed -n 1p)
	eval "jj=\$j$j"
	check "shared job $j: the plugin saw its task (slurmd's log: $(grep -o "\[$jj\.batch\] nodetune: task 0 of 1: [^,]*, CPUs [^,]*" "$T_TMP/shared.log")), the job on Slurm's CPUs '$c', THP defrag during the job '$d' ($d0 before)" -- \
		sh -c "grep -q '\[$jj\.batch\] nodetune: task 0 of 1: GPU none, CPUs unchanged (planned none; a shared node: within Slurm.s [0-9][0-9,-]*), mems unchanged, policy $POL/job.conf\$' '$T_TMP/shared.log' &&
		 echo '$c' | grep -Eqx '[0-9][0-9,-]*' && [ '$d' = '$d0' ]"
done
check "after both shared jobs: the node byte-identical to before" -- cmp -s "$T_TMP/node.before" "$T_TMP/node.after2"

# ---- two jobs sharing the node, with a policy that binds (review B5): the
# plan puts a task on all of NUMA node 0, so that both jobs would land on
# the same CPUs; each task is bound within the CPUs Slurm gave its job, and
# the two, running at once, never share one.  Each prints when it starts,
# its CPUs, and when it ends -------------------------------------------------
printf '[main]\nsummary = bind only\n[affinity]\nmode = numa\n' >"$POL/bind.conf"
chmod 644 "$POL/bind.conf"
planb=$("$NODETUNE" plan --policy "$POL/bind.conf" --ranks 1 --json | jq -r '.ranks[0].cpus')
l0=$(wc -l <"$SL/slurmd.log")
BWRAP="date +%s.%N; sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status; sleep 2; date +%s.%N"
b1=$(sbatch --parsable -n 1 -o "$T_TMP/b1.out" --nodetune=bind --wrap "$BWRAP") || t_not_ok "sbatch --nodetune=bind (1): exit $?"
b2=$(sbatch --parsable -n 1 -o "$T_TMP/b2.out" --nodetune=bind --wrap "$BWRAP") || t_not_ok "sbatch --nodetune=bind (2): exit $?"
wait_jobs "$b1" "$b2"
tail -n +$((l0 + 1)) "$SL/slurmd.log" >"$T_TMP/bind.log"
c1=$(tail -n 2 "$T_TMP/b1.out" | sed -n 1p) c2=$(tail -n 2 "$T_TMP/b2.out" | sed -n 1p)
check "two jobs sharing the node with bind.conf (planned on $planb): at once, each on a CPU of its own: $c1 and $c2, each told why ($(grep -h '^nodetune: ' "$T_TMP/b1.out" | head -n 1))" -- sh -c \
	"echo '$planb' | grep -q '[-,]' && echo '$c1' | grep -Eqx '[0-9]+' && echo '$c2' | grep -Eqx '[0-9]+' && [ '$c1' != '$c2' ] &&
	 grep -q '^nodetune: slurm: the tasks bound within the job.s CPUs: job $b1 shares the node with other jobs' '$T_TMP/b1.out' &&
	 grep -q '^nodetune: slurm: the tasks bound within the job.s CPUs: job $b2 shares the node with other jobs' '$T_TMP/b2.out' &&
	 awk '/^[0-9]+[.][0-9]+\$/ { if (!(FILENAME in s)) s[FILENAME] = \$1; e[FILENAME] = \$1 } END { exit !(s[ARGV[1]] < e[ARGV[2]] && s[ARGV[2]] < e[ARGV[1]]) }' \
		'$T_TMP/b1.out' '$T_TMP/b2.out'"
check "slurmd's log: each task of theirs planned on $planb and bound within Slurm's CPU: $(grep -o 'task 0 of 1: [^,]*, CPUs [^)]*)' "$T_TMP/bind.log" | tr '\n' ' ')" -- sh -c \
	"grep -q '\[$b1\.batch\] nodetune: task 0 of 1: GPU none, CPUs $c1 (planned $planb; a shared node: within Slurm.s $c1), ' '$T_TMP/bind.log' &&
	 grep -q '\[$b2\.batch\] nodetune: task 0 of 1: GPU none, CPUs $c2 (planned $planb; a shared node: within Slurm.s $c2), ' '$T_TMP/bind.log'"

# ---- a bad --nodetune fails at srun/sbatch with one line; the node stays
# up and the next job runs ---------------------------------------------------
bad_step() { # DESC PATTERN POLICY
	run srun -n 1 --nodetune="$3" true
	if [ "$RC" -ne 0 ] && [ "$(grep -c '^srun: error: nodetune: ' "$ERR")" -eq 1 ] && grep -Eq -- "$2" "$ERR"; then
		t_ok "$1: the step fails (exit $RC): $(grep '^srun: error: nodetune: ' "$ERR")"
	else
		t_not_ok "$1: want a failed step and one 'srun: error: nodetune:' line matching /$2/ (exit $RC)"
		sed 's/^/#   /' "$ERR" | head -5
	fi
}
NOTALLOWED="not an allowed policy \(a NAME or a file you can read in $POL:$SRCDIR/policies\)"
bad_step "a name in no policy directory" "^srun: error: nodetune: --nodetune=nope: $NOTALLOWED\$" nope
bad_step "a missing file" "^srun: error: nodetune: --nodetune=$POL/nope.conf: $NOTALLOWED\$" "$POL/nope.conf"
bad_step "a file outside the policy directories" "^srun: error: nodetune: --nodetune=$SRCDIR/README.md: $NOTALLOWED\$" "$SRCDIR/README.md"
# beside the policy directory, a name as long: its path has '/' where the
# directory's name ends, but is not below it
mkdir -m 755 "${POL%s}z" && cp "$POL/job.conf" "${POL%s}z/job.conf" && chmod 644 "${POL%s}z/job.conf"
bad_step "a file in a directory beside the policy directory" "^srun: error: nodetune: --nodetune=${POL%s}z/job.conf: $NOTALLOWED\$" "${POL%s}z/job.conf"
printf '[main]\nsummary = bad\n[thp]\ndefrag = sometimes\n' >"$POL/bad.conf"; chmod 644 "$POL/bad.conf"
bad_step "a policy that fails validation" "nodetune: $POL/bad.conf:4: " bad
cp "$POL/job.conf" "$POL/notroot.conf"; chown 65534 "$POL/notroot.conf"
bad_step "a file not owned by root" "nodetune: --nodetune=notroot: $POL/notroot.conf: not owned by root" notroot
printf '[main]\ninclude = job.conf\n' >"$POL/inc.conf"; chmod 644 "$POL/inc.conf"
bad_step "a policy with include=" "nodetune: $POL/inc.conf:2: include= is not taken in a --nodetune policy" inc
run sbatch --parsable -n 1 --nodetune="$POL/nope.conf" --wrap true
check "sbatch with a missing policy is refused at submission, in one line" -- sh -c \
	"[ $RC -ne 0 ] && [ \$(grep -c '^sbatch: error: nodetune: ' '$ERR') -eq 1 ] && grep -q '^sbatch: error: nodetune: --nodetune=$POL/nope.conf: not an allowed policy' '$ERR'"

# ---- what a user cannot read stays unread: --nodetune=/etc/shadow, a root-
# only file in the policy directory, and the value smuggled past srun's
# check in the job's environment, all as nobody -------------------------------
printf 'SECRET-BYTES-%s\n' "$$" >"$POL/secret.conf"; chmod 600 "$POL/secret.conf"
for v in /etc/shadow /etc/no-such-file /root/.no-such-file secret; do
	run sh -c "cd / && $NOBODY srun -n 1 --nodetune=$v echo ran"
	sed "s|--nodetune=$v:||" "$ERR" >"$T_TMP/said.$(basename $v)"
	check "as nobody, --nodetune=$v: refused in one line, no byte of the file: $(grep nodetune "$ERR")" -- sh -c \
		"[ $RC -ne 0 ] && [ \$(grep -c '^srun: error: nodetune: ' '$ERR') -eq 1 ] &&
		 grep -Eq '^srun: error: nodetune: --nodetune=$v: $NOTALLOWED\$' '$ERR' && ! grep -q ran '$OUT' &&
		 ! grep -q -e SECRET-BYTES -e '^root:' '$OUT' '$ERR'"
done
check "the answers for /etc/shadow, a missing file, a path below root-only /root and a root-only policy are the same line: no existence oracle" -- sh -c \
	"cmp -s '$T_TMP/said.shadow' '$T_TMP/said.no-such-file' && cmp -s '$T_TMP/said.shadow' '$T_TMP/said..no-such-file' &&
	 cmp -s '$T_TMP/said.shadow' '$T_TMP/said.secret'"
for v in /etc/shadow "$POL/secret.conf"; do
	run sh -c "cd / && $NOBODY env _SLURM_SPANK_OPTION_nodetune_nodetune=$v srun -n 1 echo ran"
	check "as nobody, $v in _SLURM_SPANK_OPTION_nodetune_nodetune (past srun's check): the node reads it as nobody, the task fails in one line: $(grep '^nodetune:' "$ERR")" -- sh -c \
		"[ $RC -ne 0 ] && [ \$(grep -c '^nodetune: slurm: ' '$ERR') -eq 1 ] &&
		 grep -Eq '^nodetune: slurm: --nodetune=$v: $NOTALLOWED\$' '$ERR' && ! grep -q ran '$OUT'"
	check "... and no secret bytes in the output or slurmd's log" -- sh -c \
		"! grep -q -e SECRET-BYTES -e '^root:' '$OUT' '$ERR' '$SL/slurmd.log'"
done

# ---- review G5: a group-writable policy; a job that shares the node with
# the user's other jobs (--exclusive=user) or with any (--oversubscribe):
# refused the node, told why with the job's own OverSubscribe word, the
# job's view of vm.swappiness unchanged ---------------------------------------
cp "$POL/job.conf" "$POL/gw.conf"; chmod 664 "$POL/gw.conf"
bad_step "a file writable by its group" "nodetune: --nodetune=gw: $POL/gw.conf: writable by group or others \(uid 0, mode 0664\)" gw
for how in "--exclusive=user:USER" "--oversubscribe:YES"; do
	flag=${how%:*} word=${how#*:}
	jid=$(sbatch --parsable "$flag" -n 1 -o "$T_TMP/ov.out" --nodetune=job --wrap "cat $SWAP") ||
		t_not_ok "sbatch $flag: exit $?"
	wait_jobs "$jid"
	check "sbatch $flag --nodetune=job: one line says the node is shared (OverSubscribe=$word), the job saw vm.swappiness $s0: $(tr '\n' ' ' <"$T_TMP/ov.out")" -- sh -c \
		"[ \$(grep -c '^nodetune: slurm: ' '$T_TMP/ov.out') -eq 1 ] &&
		 grep -q '^nodetune: slurm: host-wide settings of $POL/job.conf not applied, only the tasks bound, within the job.s CPUs: job $jid shares the node with other jobs (OverSubscribe=$word; submit with --exclusive)' '$T_TMP/ov.out' &&
		 [ \"\$(tail -n 1 '$T_TMP/ov.out')\" = '$s0' ]"
done

# ---- a prolog that cannot apply fails the job's tasks with the reason on
# the job's stderr; the node is not drained and the next job runs.  The
# spank prolog reads plugstack.conf anew for each job ------------------------
printf '#!/bin/sh\nsleep 30\n' >"$T_TMP/hang"; chmod 755 "$T_TMP/hang"
for bin in /nonexistent/nodetune "$T_TMP/hang"; do
	printf '%s\n' "$PLUG timeout=2" | sed "s|nodetune=$NODETUNE|nodetune=$bin|" >"$SL/plugstack.conf"
	case $bin in
	*/hang) why="nodetune apply: timed out after 2 s \(plugstack.conf timeout=\), killed\)" ;;
	*) why="nodetune apply: $bin could not be run \(plugstack.conf nodetune=\)\)" ;;
	esac
	jid=$(sbatch --parsable --exclusive -n 1 -o "$T_TMP/fail.out" --nodetune=job --wrap 'echo ran') ||
		t_not_ok "nodetune=$bin: sbatch exit $?"
	wait_jobs "$jid"
	check "nodetune=$bin: the job fails ($(scontrol show job "$jid" 2>/dev/null | grep -o 'JobState=[A-Z]*')), its output says why in one line: $(cat "$T_TMP/fail.out")" -- sh -c \
		"[ \$(grep -c '^nodetune: slurm: ' '$T_TMP/fail.out') -eq 1 ] &&
		 grep -Eq '^nodetune: slurm: job $jid: the node could not be tuned \($why; nothing of the policy is in effect\$' '$T_TMP/fail.out' &&
		 ! grep -q ran '$T_TMP/fail.out'"
	snapshot >"$T_TMP/node.after3" || t_not_ok "the knobs job.conf touches could not be read (node.after3)"
	check "nodetune=$bin: the node byte-identical after it, the state dir gone" -- sh -c \
		"cmp -s '$T_TMP/node.before' '$T_TMP/node.after3' && [ ! -e '$ST/$jid' ]"
done
printf '%s\n' "$PLUG" >"$SL/plugstack.conf"
run srun -n 1 sh -c 'echo next'
for _ in $(seq 50); do [ "$(sinfo -h -n $SLURM_HOST -o %t)" = idle ] && break; sleep 0.1; done
check "the next job on the node runs normally (and the node is still idle, not drained): exit $RC, $(cat "$OUT"), $(sinfo -h -n $SLURM_HOST -o %t)" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(cat '$OUT')\" = next ] && [ \"\$(sinfo -h -n $SLURM_HOST -o %t)\" = idle ]"
check "slurmd kept running through all of it" -- sh -c "kill -0 \$(cat '$SL/slurmd.pid')"
slurm_stop

# ---- without policy_dirs= the plugin refuses to start: one line in
# slurmd's log (slurmd keeps running), srun and sbatch fail with it ----------
REFUSED="nodetune: plugstack.conf: no policy_dirs=DIR\[:DIR...\]: the plugin refuses to start"
if slurm_start "required $PLUGIN nodetune=$NODETUNE state_dir=$ST"; then
	check "without policy_dirs=: slurmd runs and says once why the plugin refuses ($(grep -c "$REFUSED" "$SL/slurmd.log") line)" -- \
		sh -c "[ \$(grep -c 'error: $REFUSED' '$SL/slurmd.log') -eq 1 ]"
	for cmd in srun sbatch; do
		if [ $cmd = srun ]; then run srun -n 1 echo ran; else run sbatch --wrap 'echo ran'; fi
		check "without policy_dirs=: $cmd fails (exit $RC), saying why: $(grep nodetune "$ERR")" -- sh -c \
			"[ $RC -ne 0 ] && [ \$(grep -c '^$cmd: error: $REFUSED' '$ERR') -eq 1 ] && ! grep -q ran '$OUT'"
	done
else
	t_not_ok "without policy_dirs=: slurmd keeps running (the node comes up idle)"
fi
slurm_stop

# ---- GPU-local binding follows the step's GPUs: 8 fake GPUs (Slurm's own
# tests use /dev/tty devices) and the plan made against an 8-GPU HGX
# fixture (plugstack topology=).  This host has 2 CPUs: the plan's CPUs
# are checked in the plugin's log line, and the task's affinity is their
# intersection with this host's CPUs (none: Slurm's binding is kept) ----------
if ! slurm_start "$PLUG topology=$HGX" "" "Name=gpu File=/dev/tty[0-7]" 8; then
	t_not_ok "Slurm with 8 fake GPUs (gres.conf File=/dev/tty[0-7]) starts"
	slurm_stop
	t_done
fi
run srun --exclusive -n 1 --gres=gpu:1 --nodetune=policies/gpu-train.conf sh -c 'echo $SLURM_STEP_GPUS; grep Cpus_allowed_list /proc/self/status'
check "--gres=gpu:1 gets GPU 0: planned next to GPU 0 (0000:1b:00.0) on 1-23,49-71 (node 0 less its housekeeping core)" -- \
	grep -q 'task 0 of 1: GPU 0 (0000:1b:00.0) from SLURM_STEP_GPUS, CPUs 1 (planned 1-23,49-71)' "$SL/slurmd.log"
check "the task runs on the plan's CPUs that this host has: 1 ($(tr '\n' ' ' <"$OUT"))" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(sed -n 1p '$OUT')\" = 0 ] && grep -q 'Cpus_allowed_list:[[:space:]]*1\$' '$OUT'"
hold=$(sbatch --parsable -n 1 --gres=gpu:5 -D "$T_TMP" -o /dev/null --wrap 'sleep 60')
t_defer "scancel $hold 2>/dev/null"
for _ in $(seq 50); do [ "$(squeue -h -j "$hold" -o %t)" = R ] && break; sleep 0.2; done
run srun -n 1 --gres=gpu:1 --nodetune=policies/gpu-train.conf sh -c 'echo $SLURM_STEP_GPUS; grep Cpus_allowed_list /proc/self/status'
check "with GPUs 0-4 held by another job, the step gets GPU 5 and is planned next to it (0000:ae:00.0, node 1: 25-47,73-95)" -- \
	grep -q "task 0 of 1: GPU 5 (0000:ae:00.0) from SLURM_STEP_GPUS, CPUs unchanged (planned 25-47,73-95; a shared node: within Slurm's [0-9][0-9,-]*)" "$SL/slurmd.log"
check "none of those CPUs is on this host: the task keeps Slurm's binding ($(tr '\n' ' ' <"$OUT"))" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(sed -n 1p '$OUT')\" = 5 ] && grep -q 'Cpus_allowed_list:[[:space:]]*[0-9]*\$' '$OUT'"
slurm_stop

# ---- review G5: without gres.conf (Slurm then leaves the job's environment
# alone) a step takes its GPUs from CUDA_VISIBLE_DEVICES, else
# GPU_DEVICE_ORDINAL, as the plugin's log says (the plan against the HGX
# fixture, plugstack topology=) ------------------------------------------------
if slurm_start "$PLUG topology=$HGX"; then
	for v in CUDA_VISIBLE_DEVICES=3 GPU_DEVICE_ORDINAL=6; do
		l0=$(wc -l <"$SL/slurmd.log")
		run env "$v" srun -n 1 --nodetune=policies/gpu-train.conf true
		check "a step with $v: exit $RC, planned next to GPU ${v#*=} from ${v%=*}: $(tail -n +$((l0 + 1)) "$SL/slurmd.log" | grep -o 'task 0 of 1: GPU [^,]*' | head -1)" -- sh -c \
			"[ $RC -eq 0 ] && tail -n +$((l0 + 1)) '$SL/slurmd.log' | grep -q 'task 0 of 1: GPU ${v#*=} ([0-9a-f:.]*) from ${v%=*}, '"
	done
else
	t_not_ok "Slurm without gres.conf, the plan against the HGX fixture, starts"
fi
slurm_stop

t_done
