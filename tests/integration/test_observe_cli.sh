#!/bin/sh
# nodetune observe on this host: host records at the interval, a command's
# process tree with its threads (mpirun's ranks included), the command's exit
# status, and bad input (exit 2).
. "$(dirname "$0")/lib.sh"
: "${HARNESS:=$SRCDIR/build/nodetune-harness}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ncpu=$(grep -c '^cpu[0-9]' /proc/stat)

run "$NODETUNE" observe --json --duration 0.6
check "host only: a record per 100 ms, each with every CPU's %usr/%sys, vmstat, TLB, IRQs ($(wc -l <"$OUT") records)" -- sh -c \
	"[ $RC -eq 0 ] && [ \$(wc -l <'$OUT') -ge 5 ] && [ \$(wc -l <'$OUT') -le 7 ] &&
	 jq -se 'all(.[]; (.cpus | length) == $ncpu and (.vmstat | has(\"compact_stall\") and has(\"numa_hint_faults\"))
	         and (.tlb_shootdowns == null or .tlb_shootdowns >= 0) and (.device_irqs >= 0) and .procs == [])' '$OUT'"
if [ -r /proc/pressure/cpu ]; then
	check "PSI where present" -- jq -se 'all(.[]; .psi_ms.cpu_some >= 0)' "$OUT"
fi
# TLB shootdowns: counted (a number) unless the host cannot (tlb.h), and then
# null in every record and said once on stderr, never 0
if grep -q 'TLB shootdowns: not countable on this host' "$ERR"; then
	check "TLB shootdowns not countable here, said once, null in the records: $(head -c 300 "$ERR")" -- \
		jq -se 'all(.[]; .tlb_shootdowns == null)' "$OUT"
else
	check "TLB shootdowns counted: a number in every record" -- jq -se 'all(.[]; .tlb_shootdowns | type == "number")' "$OUT"
fi
run env NODETUNE_TLB_SOURCES=none "$NODETUNE" observe --json --duration 0.3
check "a host that cannot count TLB shootdowns: null in every record (not 0) and one line saying why" -- sh -c \
	"[ $RC -eq 0 ] && jq -se 'all(.[]; .tlb_shootdowns == null)' '$OUT' &&
	 [ \$(grep -c 'TLB shootdowns: not countable on this host (no source allowed' '$ERR') -eq 1 ]"
run env NODETUNE_TLB_SOURCES=none "$NODETUNE" observe --duration 0.3
check "... and 'tlb n/c' in the text lines" -- grep -q ' tlb n/c ' "$OUT"

run "$NODETUNE" observe --json --interval 50 -- mpirun -np 2 --oversubscribe "$HARNESS" --steps 30 --batch 512 --quiet
check "a command under mpirun: mpirun and both ranks sampled with their threads, exit 0" -- sh -c \
	"[ $RC -eq 0 ] && jq -se '[.[].procs | length] | max >= 3' '$OUT' &&
	 jq -se '[.[].procs[] | select(.threads >= 4 and .cpu_pct > 20)] | length > 0' '$OUT'"
run "$NODETUNE" observe --interval 50 -- sh -c 'sleep 0.2; exit 3'
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
run "$NODETUNE" observe --json --interval 100 -- python3 "$T_TMP/steps.py"
check "a job's step reports in the records: $(jq -sc '[.[-1].steps.total, ([.[].steps.max_ms] | max), ([.[].steps.n] | add)]' "$OUT" 2>/dev/null) (total, longest ms, lines)" -- \
	jq -se '.[-1].steps.total == 20 and ([.[].steps.n] | add) == 20 and ([.[].steps.max_ms] | max) >= 140 and
	  ([.[].steps.p50_ms | select(. > 0)] | min) < 60 and .[-1].steps.bad_lines == 0' "$OUT"

expect_fail 2 "--pid 4194303: no such process" "a pid that does not exist" -- "$NODETUNE" observe --pid 4194303
expect_fail 2 "--pid 'x': expected a whole number" "a pid that is not a number" -- "$NODETUNE" observe --pid 1,x
expect_fail 2 "--interval '5': expected a whole number from 10 to 60000" "an interval too short" -- "$NODETUNE" observe --interval 5
expect_fail 2 "--pid and a command exclude each other" "both --pid and a command" -- "$NODETUNE" observe --pid 1 -- true
expect_fail 2 "no-such-command: command not found" "a command not found" -- "$NODETUNE" observe -- no-such-command
t_done
