#!/bin/sh
# SPDX-License-Identifier: MIT
# host: cpu cgroup abcg
# nodetune ab follows the job wherever it goes (issue 25, item 2): B's
# command is a wrapper that makes a cgroup with a CPU limit (cgroup2
# cpu.max where the cgroup2 root offers the cpu controller, else the v1 cpu
# hierarchy's cfs_quota_us), moves itself there, and execs the job; so the
# job runs outside its trial cgroup, whose counters show nothing.  Against
# the harness and the PyTorch example, the verdict must be a regression,
# the throttling claimed as the cause ahead of CPU contention (PSI), and the
# evidence must name that cgroup, its quota and its throttling in the B
# trials (A: not throttled).  Then a real-time helper that B's command
# starts (SCHED_FIFO 50, 30 ms bursts of every 100 ms on the job's CPU):
# the evidence names it with its policy, and its CPU (job_helper_cpu_share)
# is the first claimed cause.  Both arms run on CPU 0.  The
# cgroup is removed at the end, however the test ends.
. "$(dirname "$0")/lib.sh"
t_plan 10
: "${HARNESS:=$SRCDIR/build/nodetune-harness}"
C="$HARNESS --comm none --rows 1000 --batch 512 --steps 15 --warmup 2 --blas-threads 1 --quiet"
PY=/usr/bin/python3
TORCH="$PY $SRCDIR/contrib/examples/ddp_train.py --steps 30 --batch 128 --width 256 --log-every 5"
Q=30000          # 30% of a CPU every 100 ms: the job, which wants all of one, runs ~3x slower

if [ "$(id -u)" -ne 0 ]; then
	t_skip_host root "a job in a cgroup of its own making: needs root (cgroups)"
	t_rest
fi

# where the wrapper's cgroup goes: cgroup2 with cpu, else v1 cpu
m2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
m1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/self/mounts)
if [ -n "$m2" ] && grep -qw cpu "$m2/cgroup.subtree_control" 2>/dev/null; then
	kind=v2 CG=$m2/ntjobcg-$$ QUOTA="cpu.max $Q 100000"
elif [ -n "$m1" ]; then
	kind=v1 CG=$m1/ntjobcg-$$ QUOTA="cfs_quota_us $Q period 100000"
else
	t_skip_host cgroup-cpu "a job in a cgroup of its own making: no cpu controller (cgroup2 root without cpu, no v1 cpu hierarchy)"
	t_rest
fi
# the cgroup goes, however the test ends: what is in it killed first
cg_remove() {
	[ -d "$CG" ] || return 0
	for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	wait_until 5 sh -c "[ -z \"\$(cat '$CG/cgroup.procs' 2>/dev/null)\" ]" || echo "# $CG: processes left in it"
	rmdir "$CG" || echo "# $CG: not removed"
}
t_defer cg_remove

# cgwrap KIND DIR QUOTA CMD...: make DIR with QUOTA us of every 100 ms,
# move this shell there, exec CMD on CPU 0 (as a launcher with a CPU
# limit, or a container runtime, would)
cat >"$T_TMP/cgwrap" <<'WRAP'
#!/bin/sh
kind=$1 d=$2 q=$3
shift 3
mkdir -p "$d" || exit 99
if [ "$kind" = v2 ]; then
	echo "$q 100000" >"$d/cpu.max" || exit 99
else
	echo 100000 >"$d/cpu.cfs_period_us" && echo "$q" >"$d/cpu.cfs_quota_us" || exit 99
fi
echo $$ >"$d/cgroup.procs" || exit 99
exec taskset -c 0 "$@"
WRAP
printf '#!/bin/sh\nexec taskset -c 0 "$@"\n' >"$T_TMP/on0"
chmod +x "$T_TMP/cgwrap" "$T_TMP/on0"

workloads="harness"
if $PY -c 'import torch' 2>/dev/null; then
	workloads="harness torch"
else
	t_need torch "the PyTorch job: python3-torch is not installed (scripts/install-deps.sh torch)"
fi
cmd_of() { if [ "$1" = torch ]; then echo "$TORCH"; else echo "$C"; fi; }

# the B wrapper's cgroup, with the regex characters of its path escaped
cg_re=$(printf '%s' "$CG" | sed 's/[.[\*^$()+?{|]/\\&/g')
q_re=$(printf '%s' "$QUOTA" | sed 's/[.[\*^$()+?{|]/\\&/g')
for w in $workloads; do
	run "$NODETUNE" ab --a "cmd=$T_TMP/on0 $(cmd_of $w)" --b "cmd=$T_TMP/cgwrap $kind $CG $Q $(cmd_of $w)" \
		--trials 4 --budget 60 --json
	cp "$OUT" "$T_TMP/$w.json"
	check "$w, B in $kind $CG ($QUOTA): $(jq -c '{verdict, ratio, claimed: [.explanations[] | select(.claimed) | .counter][:3], evidence: .evidence[:1]}' "$T_TMP/$w.json" 2>/dev/null)" -- \
		jq -e --arg e "^B's job ran in $cg_re \\($q_re\\): throttled [0-9]+ times, [0-9.]+ s in the B trials; A: not throttled" '
		  .verdict == "regression" and
		  ([.explanations[] | select(.claimed)][0].mechanism | test("quota")) and
		  ([.evidence[] | select(test($e))] | length >= 1)' "$T_TMP/$w.json"
	check "$w: the report's JSON lists B's cgroup with its throttling, A's trials never ran there ($(jq -c --arg n "$CG" '[.watch.b.job_cgroups[]? | select(.name == $n)]' "$T_TMP/$w.json" 2>/dev/null))" -- \
		jq -e --arg n "$CG" '([.watch.b.job_cgroups[] | select(.name == $n and .job and .throttled_periods > 0 and .throttled_ms > 0)] | length == 1) and
		  ([.watch.a.job_cgroups[] | select(.name == $n)] | length == 0)' "$T_TMP/$w.json"
done

# A real-time helper started by B's command, bursting on the job's CPU.  A
# v1 cpu cgroup gets no real-time time unless given some (rt_runtime_us 0
# in the trial cgroup: chrt would be refused), so where the trial cgroup
# has none the helper moves to the cpu hierarchy's root first, as an agent
# that a launcher starts would be; it stays a descendant of B's command.
cat >"$T_TMP/burst.py" <<'BURST'
import time
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.03:
        pass
    time.sleep(0.07)
BURST
cat >"$T_TMP/rtwrap" <<'WRAP'
#!/bin/sh
py=$1 burst=$2
shift 2
m1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/self/mounts)
v1=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3 }' /proc/self/cgroup)
root=""
if [ -n "$m1" ] && [ "$(cat "$m1$v1/cpu.rt_runtime_us" 2>/dev/null)" = 0 ]; then
	root=$m1
fi
sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs" || exit 99; exec chrt -f 50 taskset -c 0 "$2" "$3"' rt "$root" "$py" "$burst" &
h=$!
taskset -c 0 "$@"
rc=$?
kill $h
wait $h
exit $rc
WRAP
chmod +x "$T_TMP/rtwrap"
for w in $workloads; do
	run "$NODETUNE" ab --a "cmd=$T_TMP/on0 $(cmd_of $w)" --b "cmd=$T_TMP/rtwrap $PY $T_TMP/burst.py $(cmd_of $w)" \
		--trials 4 --budget 60 --json --report "$T_TMP/rt-$w.html"
	cp "$OUT" "$T_TMP/rt-$w.json"
	check "$w, B's command starts a SCHED_FIFO 50 helper: $(jq -c '{verdict, ratio, claimed: [.explanations[] | select(.claimed) | .counter][:3], evidence: .evidence[:1]}' "$T_TMP/rt-$w.json" 2>/dev/null)" -- \
		jq -e '.verdict == "regression" and
		  ([.evidence[] | select(test("^B.s command runs pid [0-9]+ \\(python3, SCHED_FIFO 50\\) that took [0-9.]+% .*; A has no such process"))] | length >= 1)' \
		"$T_TMP/rt-$w.json"
	# and claimed as the cause, first: the CPU it took, not the page faults
	# of its Python start-up (which led before that row existed)
	check "$w: the helper's CPU is the first claimed cause ($(jq -c '[.explanations[] | select(.claimed) | {counter, a, b, share_of_change}][:2]' "$T_TMP/rt-$w.json" 2>/dev/null))" -- \
		jq -e '[.explanations[] | select(.claimed)][0].counter == "job_helper_cpu_share"' "$T_TMP/rt-$w.json"
	# the report's table of the job's processes: the helper's B row with
	# its pid, policy, share, top CPU and allowed CPUs (taskset -c 0), and
	# an A row saying A has none
	sed -n '/<pre id="job-table">/,/<\/pre>/p' "$T_TMP/rt-$w.html" >"$T_TMP/rt-$w.table"
	check "$w: the report's table has the helper in B, none in A: $(grep -E 'SCHED_FIFO 50' "$T_TMP/rt-$w.table" | tr -s ' ' | tr '\n' ';')" -- \
		sh -c 'grep -Eq "^B +[0-9]+ +python3 +SCHED_FIFO 50 +[0-9]+\.[0-9]% +0 +0 +/" "$1" &&
		       grep -Eq "^A +- +python3 +SCHED_FIFO 50 +- +\(no such process in A\)" "$1"' table "$T_TMP/rt-$w.table"
done
t_done
