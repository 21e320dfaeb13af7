#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# nodetune observe on this host: host records at the interval, a command's
# process tree with its threads (mpirun's ranks included), the command's exit
# status, and bad input (exit 2).
. "$(dirname "$0")/lib.sh"
t_plan 15
: "${HARNESS:=$SRCDIR/build/nodetune-harness}" "${TLBSTORM:=$SRCDIR/build/tests/tlbstorm}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ncpu=$(grep -c '^cpu[0-9]' /proc/stat)

run "$NODETUNE" observe --json --duration 0.6
# The records are on the 100 ms grid (absolute ticks): none early, the last
# the first at or past the duration.  A late tick (a loaded host) makes a
# record late, never early, so no upper bound on time is needed here.
check "host only: records on the 100 ms grid, stopping at the duration, each with every CPU's %usr/%sys, vmstat, TLB, IRQs ($(wc -l <"$OUT") records, t = $(jq -s -c '[.[].t]' "$OUT" 2>/dev/null))" -- sh -c \
	"[ $RC -eq 0 ] && jq -se '
	  length >= 1 and length <= 6 and
	  ([to_entries[] | .value.t >= 0.1 * (.key + 1) - 0.001] | all) and
	  (.[-1].t >= 0.6) and (length == 1 or .[-2].t < 0.6) and
	  all(.[]; (.cpus | length) == $ncpu and (.vmstat | has(\"compact_stall\") and has(\"numa_hint_faults\"))
	          and (.tlb_shootdowns == null or (.tlb_shootdowns | type == \"number\" and . == floor))
	          and (.device_irqs | type == \"number\" and . == floor) and .procs == [])' '$OUT'"
if [ -r /proc/pressure/cpu ]; then
	# three spinners on $ncpu CPUs: tasks wait for a CPU, so CPU pressure
	# ("some") is counted; the spinners run under observe, as its command
	run "$NODETUNE" observe --json --interval 100ms -- sh -c \
		'for i in 1 2 3; do timeout 1 sh -c "while :; do :; done" & done; wait'
	check "PSI where present: cpu_some counted under 3 spinners on $ncpu CPUs ($(jq -s -c '[.[].psi_ms.cpu_some]' "$OUT" 2>/dev/null) ms)" -- \
		sh -c "[ $RC -eq 0 ] && jq -se 'all(.[]; .psi_ms.cpu_some | type == \"number\") and ([.[].psi_ms.cpu_some] | add) > 0' '$OUT'"
else
	t_skip_host psi "PSI: no /proc/pressure/cpu on this host"
fi
# TLB shootdowns: counted (a number) unless the host cannot (tlb.h), and then
# null in every record.  Which of the two is read from the host, never from
# what nodetune says: a remote flush is counted by the TLB line of
# /proc/interrupts (it moves when tlbstorm flushes), or, as root, by the
# tlb:tlb_flush tracepoint; a host with neither (a hypervisor that flushes
# for its guests) cannot count them
run "$NODETUNE" observe --json --duration 0.3
tlb0=$(awk '$1 == "TLB:" { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s }' /proc/interrupts)
if [ -n "$tlb0" ] && "$TLBSTORM" 4096 >/dev/null 2>&1 &&
	[ "$(awk '$1 == "TLB:" { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s }' /proc/interrupts)" -ge $((tlb0 + 512)) ]; then
	check "TLB shootdowns counted (this host's TLB line moves): a number in every record" -- \
		jq -se 'all(.[]; .tlb_shootdowns | type == "number")' "$OUT"
else
	# tlbstorm (the library's tlb_probe_storm) failed or did not move the
	# line: a skip only where tests/host-caps.sh finds no moving TLB line
	t_skip_host tlb "TLB shootdowns counted: the TLB line of /proc/interrupts does not move on this host"
fi
check "TLB shootdowns, whatever the host: numbers in every record, or null in every record and said once why" -- sh -c \
	"jq -se 'all(.[]; .tlb_shootdowns | type == \"number\")' '$OUT' ||
	 { jq -se 'all(.[]; .tlb_shootdowns == null)' '$OUT' && [ \$(grep -c 'TLB shootdowns: not countable on this host' '$ERR') -eq 1 ]; }"
run env NODETUNE_TLB_SOURCES=none "$NODETUNE" observe --json --duration 0.3
check "a host that cannot count TLB shootdowns: null in every record (not 0) and one line saying why" -- sh -c \
	"[ $RC -eq 0 ] && jq -se 'all(.[]; .tlb_shootdowns == null)' '$OUT' &&
	 [ \$(grep -c 'TLB shootdowns: not countable on this host (no source allowed' '$ERR') -eq 1 ]"
run env NODETUNE_TLB_SOURCES=none "$NODETUNE" observe --duration 0.3
check "... and 'tlb n/c' in the text lines" -- grep -q ' tlb n/c ' "$OUT"

run "$NODETUNE" observe --json --interval 50ms -- mpirun -np 2 --oversubscribe "$HARNESS" --steps 30 --batch 512 --quiet
# the ranks: the two processes other than the command (mpirun, the lowest
# pid), each seen with the harness's threads (4 or more) and busy (a CPU
# share between 20% and all of the host's CPUs)
check "a command under mpirun: mpirun and both ranks sampled with their threads, exit 0" -- sh -c \
	"[ $RC -eq 0 ] && jq -se '[.[].procs | length] | max >= 3' '$OUT' &&
	 jq -se '([.[].procs[].pid] | min) as \$cmd | [.[].procs[] | select(.pid != \$cmd and .threads >= 4 and .cpu_pct > 20 and .cpu_pct <= $(nproc)00) | .pid] | unique | length == 2' '$OUT'"
run "$NODETUNE" observe --interval 50ms -- sh -c 'sleep 0.2; exit 3'
check "the command's exit status (3), text lines with the processes (sh and its sleep)" -- sh -c \
	"[ $RC -eq 3 ] && grep -Eq 'procs [12]/[12]: [12] threads' '$OUT'"

# a job's own step reports (the Python helper, no dependencies): 20 steps of
# about 20 ms, every fifth 150 ms long, counted in the records that saw them
cat >"$T_TMP/steps.py" <<'EOF'
import sys, time
sys.path.insert(0, "contrib/python")
from nodetune_steps import StepReporter
r = StepReporter()
for i in range(20):
    with r.step(samples=8) as s:
        with s.phase("compute"):
            time.sleep(0.15 if i % 5 == 4 else 0.02)
EOF
# (timing: a step cannot be shorter than its sleep, so max >= 140 for a 150
# ms sleep has no timing risk; the p50 < 60 ms for 20 ms steps leaves 40 ms
# of scheduling delay per step, 200x the p99 of 0.2 ms measured in 20 runs
# plain, 55x the 0.73 ms under ASan at load 25-34 (bench/timing_margins.sh,
# observe_step_ms; RESULTS.md §14))
run "$NODETUNE" observe --json --interval 100ms -- python3 "$T_TMP/steps.py"
check "a job's step reports in the records: $(jq -sc '[.[-1].steps.total, ([.[].steps.max_ms] | max), ([.[].steps.n] | add)]' "$OUT" 2>/dev/null) (total, longest ms, lines)" -- \
	jq -se '.[-1].steps.total == 20 and ([.[].steps.n] | add) == 20 and ([.[].steps.max_ms] | max) >= 140 and
	  ([.[].steps.p50_ms | select(. > 0)] | min) < 60 and .[-1].steps.bad_lines == 0' "$OUT"

expect_fail 2 "--pid 4194303: no such process" "a pid that does not exist" -- "$NODETUNE" observe --pid 4194303
expect_fail 2 "--pid 'x': expected a whole number" "a pid that is not a number" -- "$NODETUNE" observe --pid 1,x
expect_fail 2 "--interval '0.005': expected a duration from 10ms to 1m .*a bare number counts seconds" "an interval too short (a bare number: seconds)" -- "$NODETUNE" observe --interval 0.005
expect_fail 2 "--interval '90': expected a duration from 10ms to 1m" "an interval too long (90: seconds, not milliseconds)" -- "$NODETUNE" observe --interval 90
expect_fail 2 "--pid and a command exclude each other" "both --pid and a command" -- "$NODETUNE" observe --pid 1 -- true
expect_fail 2 "no-such-command: command not found" "a command not found" -- "$NODETUNE" observe -- no-such-command
t_done
