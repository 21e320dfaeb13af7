#!/bin/sh
# SPDX-License-Identifier: MIT
# host: cpu thp sysctl knobs cgroup abcg state
# nodetune ab end to end on the harness: a calibrated 10% slowdown is a
# regression (exit 1), 20% the other way an improvement; A against itself raises no alarm; a failing arm is an
# error (exit 3) with its stderr; bad specs exit 2; policies are applied and
# reverted per trial, leaving the host as it was.
. "$(dirname "$0")/lib.sh"
t_plan 20
: "${HARNESS:=$SRCDIR/build/nodetune-harness}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
C="$HARNESS --comm none --rows 1000 --batch 512 --steps 15 --warmup 2 --blas-threads 1 --quiet"
# under the sanitizers (make asan) all of the run is several times slower
# while the injected spin is a share of compute only: 10% of compute is a
# few percent of the step, lost in the noise; a larger effect is injected
SLOW=10
[ -z "${SANITIZED:-}" ] || SLOW=25

run "$NODETUNE" ab --a "cmd=$C" --b "cmd=$C --inject slow:$SLOW" --trials 8 --budget 60 --json
check "B = A + $SLOW% compute: verdict regression, exit 1 ($(jq -c '{verdict, ratio, ci_low, ci_high, p_value, trials_a}' "$OUT" 2>/dev/null))" -- sh -c \
	"[ $RC -eq 1 ] && jq -e '.verdict == \"regression\" and .ratio < 0.97 and .ci_high < 1 and .p_value < 0.05
	  and .stalls.grown_phase == \"backward\" and (.explanations | length) >= 3' '$OUT'"
run "$NODETUNE" ab --a "cmd=$C --inject slow:$((SLOW * 2))" --b "cmd=$C" --trials 8 --budget 60
check "the other way round: improvement, and the text report starts with the verdict" -- sh -c \
	"[ $RC -eq 0 ] && head -n 1 '$OUT' | grep -q '^verdict: improvement' && grep -q '^effect: B/A' '$OUT' && grep -q '^stalls' '$OUT'"
# One A/A run at alpha 0.05 raises a false alarm about 1 time in 20 by
# construction (more on a noisy host, where trials are not independent): the
# check runs at alpha 0.005.  The false-alarm rate itself is a benchmark's
# job (many verdicts), not one test run's.
run "$NODETUNE" ab --a "cmd=$C" --b "cmd=$C" --trials 8 --budget 30 --alpha 0.005 --json
check "A against A: no false alarm ($(jq -c '{verdict, ratio, ci_low, ci_high}' "$OUT" 2>/dev/null))" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.verdict == \"no-difference\" or .verdict == \"inconclusive\"' '$OUT'"

# The HTML report of an A/B with periodic stalls in B (--inject host-sync: a
# 50 ms sleep every 10 steps), opened in headless Chromium without a network.
# Batch 128: a step of about 3 ms here, so that the stalled step (the step
# and 50 ms) stays above ab's stall limit, max(3 x median, median + 10 MAD),
# until the machine runs 8 times slower; at $C's batch 512 (12 ms a step)
# that margin was 2x, and a fresh-clone run found no stall at all, in both
# checks below (2026-12-07, after 4 of 4 in every run before)
CS=$(printf '%s\n' "$C" | sed 's/--batch 512/--batch 128/')
run "$NODETUNE" ab --a "cmd=$CS" --b "cmd=$CS --inject host-sync" --trials 4 --budget 5 --json --report "$T_TMP/r.html"
cp "$OUT" "$T_TMP/sync.json"
stalls=$(jq '.stalls.a.count + .stalls.b.count' "$T_TMP/sync.json" 2>/dev/null)
# stalls there are (host-sync: one every 10 steps, in every B trial), found
# in B's trials, in the sanitizer build too: a report with none drawn
# proves nothing
check "--report: one stall marker per stall ($stalls, B's at least one per B trial), every trial drawn, nothing fetched" -- sh -c \
	"[ $RC -le 1 ] && jq -e '.stalls.b.count >= .trials_b' '$T_TMP/sync.json' >/dev/null &&
	 [ \"\$(grep -o '<circle class=\"stall\"' '$T_TMP/r.html' | wc -l)\" -eq '$stalls' ] &&
	 [ \"\$(grep -o '<circle class=\"trial-a\"' '$T_TMP/r.html' | wc -l)\" -eq \"\$(jq .trials_a '$T_TMP/sync.json')\" ] &&
	 ! grep -Eq 'http|<script|src=|url\\(' '$T_TMP/r.html'"
if [ -z "${SANITIZED:-}" ]; then
	check "host-sync's stalls are found in B" -- jq -e '.stalls.b.count >= .trials_b and .stalls.b.count > .stalls.a.count' "$T_TMP/sync.json"
else
	t_skip_host plain "host-sync's stalls found in B: the sanitized pass (a 50 ms stall is lost in its noise)"
fi
if command -v chromium >/dev/null; then
	# no network: a namespace of its own where root may make one
	net=""
	unshare -n true 2>/dev/null && net="unshare -n"
	$net chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,1400 \
		--screenshot="$T_TMP/r.png" "file://$T_TMP/r.html" >"$T_TMP/chromium.log" 2>&1
	# the arms' colours fill their legend squares (144 px each) and draw
	# the lines, histograms and trial dots; red fills the stall legend key
	# (about 35 px) and each stall marker
	python3 tests/tools/pngcolours.py "$T_TMP/r.png" 1f77b4 e8710a dd0000 >"$T_TMP/colours" 2>&1
	check "the report renders in headless Chromium${net:+ with no network}: $(tr '\n' ' ' <"$T_TMP/colours")" -- sh -c \
		"head -n 1 '$T_TMP/colours' | grep -qx '1000x1400' &&
		 awk '\$1 == \"1f77b4\" && \$2 < 300 { exit 1 } \$1 == \"e8710a\" && \$2 < 300 { exit 1 }
		      \$1 == \"dd0000\" && \$2 < ($stalls > 0 ? 50 : 20) { exit 1 }' '$T_TMP/colours'"
else
	t_need chromium "headless Chromium check of the report: chromium is not installed (scripts/install-deps.sh browser)"
fi

# A busy thread inside the job (--inject noisy-neighbor): CPU contention is
# claimed among the top three explanations, from a counter that measures it
# (PSI, the job cgroup's context switches) beyond its A/A noise; the trial
# cgroup's throttling is counted (or said not countable, with why).  The
# rank is bound to one CPU (as test_inject.sh binds it), so the busy thread
# shares that CPU: unbound on 2 idle vCPUs, the two threads mostly ran
# side by side, B/A was 0.85 to 0.98 (6 runs here), and at 0.98, within
# the 2% threshold, no cause can be claimed for a change that is not there
# (a red CI run of e7ff432); bound to the first CPU
# this test may use, B/A 0.50 to 0.57 in 4 runs of 4
CN="taskset -c $(taskset -pc $$ | sed 's/.*: //; s/[-,].*//') $C"
run "$NODETUNE" ab --a "cmd=$CN" --b "cmd=$CN --inject noisy-neighbor" --trials 4 --budget 10 --json
check "noisy-neighbor: explained as CPU contention ($(jq -c '{ratio, claimed: [.explanations[:3][] | select(.claimed) | .counter]}' "$OUT" 2>/dev/null))" -- sh -c \
	"[ $RC -le 1 ] && jq -e '([.explanations[:3][] | select(.claimed and (.mechanism | test(\"contention\")) and .b > .a)] | length >= 1) and
	  (([.explanations[].counter] | index(\"throttled_periods\") != null) or (.not_countable.throttled_periods | type) == \"string\")' '$OUT'"

# TLB shootdowns are a counter a host may not produce (tlb.h): explained
# where countable (how many reach the training thread's CPU depends on it
# running beside the unmapping thread: 60x more here, 4x under the
# sanitizers on a busy 2-CPU host, so the check asks for a significant
# doubling); where not (a hypervisor that flushes remote TLBs itself,
# acted here by allowing no source) left out of the explanations with the
# reason, never counted as 0
CT="$HARNESS --comm none --rows 1000 --batch 128 --steps 15 --warmup 2 --blas-threads 1 --quiet"
run "$NODETUNE" ab --a "cmd=$CT" --b "cmd=$CT --inject tlb-shootdown" --trials 6 --budget 10 --json
if jq -e '.not_countable.tlb_shootdowns' "$OUT" >/dev/null; then
	t_skip_host tlb "tlb-shootdown explained by TLB shootdowns: not countable on this host: $(jq -r .not_countable.tlb_shootdowns "$OUT")"
else
	check "tlb-shootdown: explained by tlb_shootdowns ($(jq -c '[.explanations[] | select(.counter == "tlb_shootdowns")][0] | [.a, .b, .p_value, .claimed]' "$OUT"))" -- \
		jq -e '[.explanations[] | select(.counter == "tlb_shootdowns" and .b > 2 * .a + 0.5 and .p_value < 0.05)] | length == 1' "$OUT"
fi
run env NODETUNE_TLB_SOURCES=none "$NODETUNE" ab --a "cmd=$C" --b "cmd=$C --inject tlb-shootdown" --trials 2 --budget 1 --json
check "a host that cannot count TLB shootdowns: not_countable says why, the explanations leave them out, the text says so" -- sh -c \
	"jq -e '(.not_countable.tlb_shootdowns | startswith(\"no source allowed\")) and ([.explanations[].counter] | index(\"tlb_shootdowns\") == null)' '$OUT' &&
	 env NODETUNE_TLB_SOURCES=none '$NODETUNE' ab --a 'cmd=$C' --b 'cmd=$C' --trials 2 --budget 1 | grep -q '^  (tlb_shootdowns: not countable on this host: no source allowed'"

# An A/A far noisier than the threshold asked for: the job's runs take 50
# and 200 ms in turn, so every pair's B/A is 4 or 1/4, as many of each
# (an ABBA or BAAB block's two pairs cancel), an estimate near 1 at a
# pair noise beyond 100%.  (Timing: not load-proof.  At load 58-88, eight
# sessions on 2 vCPUs, 14 plain runs took 19.5 to 46.7 s in 12, 50.4 s in
# one, and in one the budget ran out before the pairs a refusal waits for
# (64 s, no refusal); under ASan the one run made 16 pairs in 64 s
# (bench/RESULTS.md §14.2, ab_refuse_s).  The wall clock of a 60 s budget
# cannot get a 3x margin; a bound in pairs would not move with the load.)  After the pairs a refusal waits for, ab refuses
# to judge, says so and the budget an A/A would need, well before its own
# budget ends.  (Its runs alternate rather than draw at random: an A/A
# whose random estimate looks like an effect the budget could still call
# goes on, as it should, and would make this check's outcome chance.)
cat >"$T_TMP/jitter.sh" <<EOF
#!/bin/sh
if [ -e "$T_TMP/jitter.long" ]; then rm -f "$T_TMP/jitter.long"; sleep 0.2; else : >"$T_TMP/jitter.long"; sleep 0.05; fi
EOF
chmod 755 "$T_TMP/jitter.sh"
t0=$(date +%s)
run "$NODETUNE" ab --a "cmd=$T_TMP/jitter.sh" --b "cmd=$T_TMP/jitter.sh" --threshold 1 --budget 60
check "noise beyond the threshold: refused after $(( $(date +%s) - t0 )) s of a 60 s budget, saying the budget needed ($(grep -m1 '^refused' "$OUT"); $(grep -m1 'budget' "$OUT"))" -- sh -c \
	"[ $RC -eq 0 ] && [ $(( $(date +%s) - t0 )) -lt 50 ] && grep -q '^verdict: inconclusive' '$OUT' &&
	 grep -q '^refused: the noise exceeds what --threshold 1.0% can judge within --budget 60 s' '$OUT'"

run "$NODETUNE" ab --a "cmd=$C" --b "cmd=$C --inject gremlins" --trials 2
check "an arm that fails: verdict error with its stderr tail, exit 3, its outputs kept" -- sh -c \
	"[ $RC -eq 3 ] && grep -q \"^verdict: error — arm B (warmup-B) failed (exit 2): nodetune-harness: --inject 'gremlins'\" '$OUT' &&
	 d=\$(sed -n 's/.*trial outputs in \\(.*\\))\$/\\1/p' '$ERR') && [ -d \"\$d\" ] && rm -rf \"\$d\""
expect_fail 2 "spec 'frob=1': unknown key 'frob'" "an unknown SPEC key" -- "$NODETUNE" ab --a "cmd=$C" --b frob=1
expect_fail 2 "arm A: $T_TMP/nope.conf: no such file" "a missing policy" -- "$NODETUNE" ab --a policy=$T_TMP/nope.conf --b "cmd=$C"
expect_fail 2 "arm A: no-such-command: command not found" "a command not found" -- "$NODETUNE" ab --a cmd=no-such-command --b "cmd=$C"
expect_fail 2 "--a SPEC and --b SPEC are required" "a missing arm" -- "$NODETUNE" ab --a "cmd=$C"

if [ "$(id -u)" -ne 0 ]; then
	t_skips 2 t_skip_host root "policy arms: not root (they apply policies to this host)"
elif ! command -v mpirun >/dev/null; then
	t_skips 2 t_need mpirun "policy arms: mpirun is not installed (scripts/install-deps.sh)"
else
	thp0=$(cat /sys/kernel/mm/transparent_hugepage/defrag)
	run "$NODETUNE" ab --a policy=policies/baseline.conf --b policy=policies/gpu-train.conf --trials 2 --steps 8 --budget 1 --json
	check "policies applied and reverted around every trial (harness under mpirun + nodetune exec): a verdict, the host as it was" -- sh -c \
		"[ $RC -le 1 ] && jq -e '.trials_a == 2 and .trials_b == 2 and .rank_skew.a >= 1 and .rank_skew.b >= 1' '$OUT' && [ \"\$(cat /sys/kernel/mm/transparent_hugepage/defrag)\" = '$thp0' ] &&
		 [ ! -d /sys/fs/cgroup/cpuset/nodetune-job ] && [ ! -d /sys/fs/cgroup/nodetune-job ]"
	# during each trial: a job that records THP defrag and its own cgroup.
	# B's policy sets defrag to what the host has not (gpu-train's may be the
	# host's already); A (baseline) changes nothing
	d0=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/defrag)
	if [ "$d0" = madvise ]; then d1=defer+madvise; else d1=madvise; fi
	printf '[main]\nsummary = test_ab: defrag only\n[thp]\ndefrag = %s\n' "$d1" >"$T_TMP/defrag.conf"
	printf '#!/bin/sh\necho "$(sed "s/.*\\[\\(.*\\)\\].*/\\1/" /sys/kernel/mm/transparent_hugepage/defrag) $(cat /proc/self/cgroup | tr "\\n" " ")" >>"%s/seen"\n' \
		"$T_TMP" >"$T_TMP/seejob"
	chmod 755 "$T_TMP/seejob"
	run "$NODETUNE" ab --a policy=policies/baseline.conf --b policy="$T_TMP/defrag.conf" --trials 2 --budget 20 --json -- "$T_TMP/seejob"
	na=$(grep -c "^$d0 " "$T_TMP/seen") nb=$(grep -c "^$d1 " "$T_TMP/seen")
	check "during the trials (a job recording them): defrag $d1 in B's $nb runs, $d0 in A's $na, each in a trial cgroup; after: $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/defrag) (exit $RC)" -- sh -c \
		"[ $RC -le 1 ] && [ $na -ge 2 ] && [ $nb -ge 2 ] && [ \$(wc -l <'$T_TMP/seen') -eq $((na + nb)) ] &&
		 [ \$(grep -c '/nodetune-ab/' '$T_TMP/seen') -eq $((na + nb)) ] &&
		 [ \"\$(cat /sys/kernel/mm/transparent_hugepage/defrag)\" = '$thp0' ]"
fi
# --as-user (the fleet gate's job): the job runs as that user, with that
# user's HOME, USER, LOGNAME and SHELL and a plain PATH, and none of root's
# other variables (a secret in ab's environment does not reach it); the
# locale is kept
if [ "$(id -u)" -ne 0 ]; then
	t_skips 3 t_skip_host root "--as-user: ab runs a job as another user only as root"
else
	U=$(mktemp -d /tmp/nodetune-asuser-XXXXXX)
	t_defer "rm -rf '$U'"
	chmod 0777 "$U"
	printf '#!/bin/sh\nid -u >>"%s/ids"\nenv >"%s/env.$$"\n' "$U" "$U" >"$U/envjob"
	chmod 0755 "$U/envjob"
	run env NT_TEST_SECRET=leaked LANG=C.UTF-8 HOME=/root "$NODETUNE" ab --as-user nobody --a policy=policies/baseline.conf \
		--b policy=policies/baseline.conf --trials 2 --budget 20 --json -- "$U/envjob"
	nuid=$(id -u nobody) nhome=$(getent passwd nobody | cut -d: -f6)
	check "--as-user nobody: every trial's job ran as uid $nuid ($(sort -u "$U/ids" 2>/dev/null | tr '\n' ' ')), exit $RC" -- sh -c \
		"[ $RC -le 1 ] && [ \"\$(sort -u '$U/ids')\" = '$nuid' ] && [ \$(wc -l <'$U/ids') -ge 6 ]"
	check "--as-user: the job's environment is nobody's (HOME=$nhome, USER, LOGNAME, SHELL, a plain PATH), root's secret and HOME gone, the locale kept" -- sh -c \
		"for f in '$U'/env.*; do grep -qx 'HOME=$nhome' \"\$f\" && grep -qx 'USER=nobody' \"\$f\" && grep -qx 'LOGNAME=nobody' \"\$f\" &&
		   grep -q '^SHELL=' \"\$f\" && grep -qx 'PATH=/usr/local/bin:/usr/bin:/bin' \"\$f\" && grep -qx 'LANG=C.UTF-8' \"\$f\" &&
		   grep -q '^NODETUNE_STEP_FILE=' \"\$f\" && ! grep -q 'NT_TEST_SECRET' \"\$f\" || exit 1; done; ls '$U'/env.* >/dev/null"
	expect_fail 2 "--as-user root: the job never runs as root" "--as-user root is refused" -- "$NODETUNE" ab --as-user root --a policy=policies/baseline.conf \
		--b policy=policies/baseline.conf -- true
fi
t_done
