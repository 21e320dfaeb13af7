#!/bin/sh
# SPDX-License-Identifier: MIT
# host: abcg
# test_fleet_hold.sh — the fleet's canary gate where no verdict is timed
# (fleet_lib.sh: a 3-member etcd and 8 daemons on simulated hosts of this
# script's own): a gate name no host lists is refused, every host
# byte-identical; and a gate that holds its canary with arm B applied
# while the test acts on the daemon: killed -9 and started again (the host
# back to what it ran before the gate, every knob byte-identical, and it
# went on answering while the gate held the host); killed together with
# its ab (the next start reverts the journal left); its ab alone killed
# (the daemon puts the arm back itself); SIGHUP (the reload waits for the
# gate's end) and SIGTERM (the trial reverted, the daemon gone within its
# unit's stop timeout).
#
# It names abcg: the gates' ab makes its trial groups.  Not cpu: every
# gate here ends by a refusal, a kill or a failed job, never by the A/B's
# verdict (that is test_fleet_gate.sh's), so it runs beside other scripts.
. "$(dirname "$0")/lib.sh"
t_plan 35
. "$(dirname "$0")/fleet_lib.sh"
fleet_hosts_up

# the hosts on a policy of record that governs THP defrag (neutral:
# madvise), as the holding gates below need; a rollout without a gate
run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/neutral.conf" --name r-neutral --waves 100% \
	--wave-timeout 30 --json
[ "$RC" -eq 0 ] || { t_not_ok "the hosts on neutral.conf before the gates (r-neutral: exit $RC)"; head -c 600 "$ERR" | sed 's/^/#   /'; }

# ---- a gate the hosts do not list: refused, every host byte-identical -----------------

fleet_snap >"$T_TMP/refused.before" || t_not_ok "a snapshot of the hosts (refused.before)"
run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/slow.conf" --name r-gate-unknown --waves 1/class,100% \
	--gate nosuch --gate-budget 60 --wave-timeout 60 --json
fleet_snap >"$T_TMP/refused.after" || t_not_ok "a snapshot of the hosts (refused.after)"
reason=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("reason") or "")' "$OUT" 2>&1)
check "a gate name no host lists: rolled back, exit 1 as for a failed gate, with the host's reason ($reason)" -- \
	sh -c "[ $RC -eq 1 ] && echo \"\$1\" | grep -q \"gate refused: unknown gate 'nosuch' (no $GATES/nosuch.conf)\"" _ "$reason"
check "a refused gate: every tree byte-identical, every desired key as before" -- \
	cmp "$T_TMP/refused.before" "$T_TMP/refused.after"
# the canary whose refusal ended the rollout (h1 or h5: the first to read
# the gate; the other may see the rollback before it reads the gate)
canary=$(echo "$reason" | sed -n 's/^canary \(h[0-9]*\) .*/\1/p')
grep -h "gate refused" "$T_TMP/${canary:-h1}/log" | tail -1 >"$T_TMP/refused.log"
check "the canary's log (${canary:-none named}) says why, in one line: $(cat "$T_TMP/refused.log")" -- \
	grep -q "fleet: gate refused: unknown gate 'nosuch'" "$T_TMP/refused.log"

# ---- the daemon killed -9 mid-gate, started again: the host as before the gate ---------

# The gate "hold" A/Bs a policy that sets THP defrag, a knob the hosts'
# policy (neutral, rolled out above) governs, to defer, a value no other
# policy here sets; and NUMA balancing, a knob their policy does not
# govern (so that only the gate's journal can put it back, not the
# daemon's own apply).  Its job, when it finds arm B applied (defrag defer), says so in
# gateout/hN.held and waits for gateout/release (at most 60 s) before it
# runs the harness: so the gate holds the host, with B's values in place,
# until the test lets it go.
printf '[main]\nsummary = test hold\n[thp]\ndefrag = defer\n[sched]\nnuma_balancing = 0\n' >"$T_TMP/hold.conf"
chmod 644 "$T_TMP/hold.conf"
hold_job() { # FILE [THEN]: the holding job; THEN (a line) runs once released
	printf '%s\n' '#!/bin/sh' \
		'h=$(basename "$(dirname "$NODETUNE_SYSROOT")")' \
		'if [ "$(cat "$NODETUNE_SYSROOT/sys/kernel/mm/transparent_hugepage/defrag")" = defer ]; then' \
		"	: >'$T_TMP/gateout/'\$h.held" \
		"	i=0; while [ ! -e '$T_TMP/gateout/release' ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done" \
		"	${2:-:}" \
		'fi' \
		"exec '$T_TMP/gatebin/nodetune-harness' --rows 1000 --steps 30 --warmup 3 --batch 256 --quiet" >"$1"
	chmod 755 "$1"
}
# The holding gates' ab budget: 10 s, spent while the gate holds its
# canary (ab's warm-up runs arm B there), so that once released ab ends
# after one more block and a look, where a budget of 60 s went on with
# trials for the rest of the minute: the rollback waits for the other
# canary's gate to end (its restore is read then), and no check here
# reads a verdict (each rollout below ends by a refusal, a kill or a
# failed job).
HOLD_BUDGET=10
hold_job "$T_TMP/gatebin/holdjob.sh"
gate_file hold "$T_TMP/gatebin/holdjob.sh"
fleet_snap >"$T_TMP/kill.before" || t_not_ok "a snapshot of the hosts (kill.before)"
h1_before=$(tree_hash "$T_TMP/h1/root")
ready0=$(grep -c "ready: " "$T_TMP/h1/log")
"$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/hold.conf" --name r-gate-kill --waves 1/class,100% \
	--gate hold --gate-budget $HOLD_BUDGET --wave-timeout 120 --json >"$T_TMP/kill.out" 2>"$T_TMP/kill.err" &
rpid=$!
wait_until 60 test -e "$T_TMP/gateout/h1.held"
check "mid-gate: h1's gate holds the host with arm B applied (THP defrag defer, numa_balancing 0)" -- \
	sh -c "[ -e '$T_TMP/gateout/h1.held' ] && [ \"\$(cat '$T_TMP/h1/root/$THP/defrag')\" = defer ] &&
		[ \"\$(cat '$T_TMP/h1/root/proc/sys/kernel/numa_balancing')\" = 0 ]"
check "mid-gate: h1's desired document names the gate 'hold', no command (no holdjob.sh, no 'cmd')" -- \
	sh -c "$ETCDCTL get /nodetune/hosts/h1/desired --print-value-only >'$T_TMP/h1.desired.gate' &&
		python3 -c 'import base64, json, sys; print(base64.b64decode(json.load(sys.stdin)[\"doc\"]).decode())' \
		<'$T_TMP/h1.desired.gate' >'$T_TMP/h1.desired.doc' && grep -q '\"name\": *\"hold\"' '$T_TMP/h1.desired.doc' &&
		! grep -q -e holdjob -e cmd '$T_TMP/h1.desired.doc'"
# the loop goes on while the gate holds the host: the status socket answers,
# the textfile is rewritten, and arm B's value is not "corrected"
m0=$(stat -c %Y.%y "$T_TMP/h1/nodetune.prom")
check "mid-gate: the daemon answers on its status socket" -- "$NODETUNE" status --socket "$T_TMP/h1/sock"
check "mid-gate: the daemon's loop rewrites its metrics (interval 1 s; 10 s allowed)" -- \
	wait_until 10 sh -c "[ \"\$(stat -c %Y.%y '$T_TMP/h1/nodetune.prom')\" != '$m0' ]"
check "mid-gate: arm B's value is not corrected back (no verify while the gate holds the host)" -- \
	sh -c "! grep -q 'corrected: .*defrag' '$T_TMP/h1/log' && [ \"\$(cat '$T_TMP/h1/root/$THP/defrag')\" = defer ]"
dpid=$(cat "$T_TMP/h1/pid")
abpid=$(ps -o pid= --ppid "$dpid" | tr -d ' ' | head -1)
# the restarted daemon finds the desired gate again: without the gate file
# it refuses it (and the rollout rolls back) instead of holding the host again
rm -f "$GATES/hold.conf"
host_kill 1 KILL
check "the daemon's gate child (ab, pid ${abpid:-none}) ends after its parent's kill -9 (it stops the job and reverts)" -- \
	wait_until 20 sh -c "[ -n '$abpid' ] && ! kill -0 '$abpid'"
host_start 1
check "the daemon started again" -- wait_until 30 sh -c "[ \$(grep -c 'ready: ' '$T_TMP/h1/log') -gt $ready0 ]"
check "killed -9 mid-gate and started again: h1's tree (every knob) byte-identical to before the gate" -- \
	test "$(tree_hash "$T_TMP/h1/root")" = "$h1_before"
check "no gate journal left in h1's state dir" -- test ! -e "$T_TMP/h1/state/gate"
: >"$T_TMP/gateout/release"
wait $rpid
krc=$?
fleet_snap >"$T_TMP/kill.after" || t_not_ok "a snapshot of the hosts (kill.after)"
check "the rollout whose canary was killed mid-gate: rolled back (exit $krc), every tree and desired key as before" -- \
	sh -c "[ $krc -eq 1 ] && cmp '$T_TMP/kill.before' '$T_TMP/kill.after'"

# ---- the daemon and its ab killed -9 together: the next start reverts the journal -------

same_tree() { [ "$(tree_hash "$T_TMP/h$1/root")" = "$2" ]; }   # N HASH: host N's tree is HASH
rm -f "$T_TMP/gateout/"*.held "$T_TMP/gateout/release"
gate_file hold "$T_TMP/gatebin/holdjob.sh"
fleet_snap >"$T_TMP/both.before" || t_not_ok "a snapshot of the hosts (both.before)"
h1_before=$(tree_hash "$T_TMP/h1/root")
ready0=$(grep -c "ready: " "$T_TMP/h1/log")
"$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/hold.conf" --name r-gate-both --waves 1/class,100% \
	--gate hold --gate-budget $HOLD_BUDGET --wave-timeout 120 --json >"$T_TMP/both.out" 2>"$T_TMP/both.err" &
rpid=$!
wait_until 60 test -e "$T_TMP/gateout/h1.held"
dpid=$(cat "$T_TMP/h1/pid")
abpid=$(ps -o pid= --ppid "$dpid" | tr -d ' ' | head -1)
check "mid-gate, h1's ab (pid ${abpid:-none}) holds arm B (THP defrag defer)" -- \
	sh -c "[ -n '$abpid' ] && [ \"\$(cat '$T_TMP/h1/root/$THP/defrag')\" = defer ]"
rm -f "$GATES/hold.conf"
# as systemd's final SIGKILL to the unit's cgroup would: ab gets no chance to revert
kill -9 ${abpid:+"$abpid"} "$dpid"
wait "$dpid" 2>/dev/null
check "the daemon and its ab killed -9 together: arm B still applied, its journal left in h1's state dir" -- \
	sh -c "[ \"\$(cat '$T_TMP/h1/root/$THP/defrag')\" = defer ] && [ -d '$T_TMP/h1/state/gate/state' ]"
host_start 1
check "the daemon started again" -- wait_until 30 sh -c "[ \$(grep -c 'ready: ' '$T_TMP/h1/log') -gt $ready0 ]"
check "started again, it reverted the gate's journal before its own apply: h1 byte-identical to before the gate" -- \
	same_tree 1 "$h1_before"
check "and said so: $(grep -h "the gate a stopped daemon left" "$T_TMP/h1/log" | tail -1)" -- \
	grep -q "the gate a stopped daemon left: [1-9][0-9]* settings restored" "$T_TMP/h1/log"
: >"$T_TMP/gateout/release"
wait $rpid
krc=$?
fleet_snap >"$T_TMP/both.after" || t_not_ok "a snapshot of the hosts (both.after)"
check "that rollout: rolled back (exit $krc), every tree and desired key as before" -- \
	sh -c "[ $krc -eq 1 ] && cmp '$T_TMP/both.before' '$T_TMP/both.after'"

# ---- the gate's ab killed -9 (the daemon alive): the daemon puts its arm back ---------

rm -f "$T_TMP/gateout/"*.held "$T_TMP/gateout/release"
gate_file hold "$T_TMP/gatebin/holdjob.sh"
fleet_snap >"$T_TMP/abkill.before" || t_not_ok "a snapshot of the hosts (abkill.before)"
h1_before=$(tree_hash "$T_TMP/h1/root")
"$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/hold.conf" --name r-gate-abkill --waves 1/class,100% \
	--gate hold --gate-budget $HOLD_BUDGET --wave-timeout 120 --json >"$T_TMP/abkill.out" 2>"$T_TMP/abkill.err" &
rpid=$!
wait_until 60 test -e "$T_TMP/gateout/h1.held"
abpid=$(ps -o pid= --ppid "$(cat "$T_TMP/h1/pid")" | tr -d ' ' | head -1)
check "mid-gate, h1's ab (pid ${abpid:-none}) holds arm B (THP defrag defer)" -- \
	sh -c "[ -n '$abpid' ] && [ \"\$(cat '$T_TMP/h1/root/$THP/defrag')\" = defer ]"
[ -n "$abpid" ] && kill -9 "$abpid"
check "ab killed -9: the daemon reverts the arm it left from the gate's journal (h1 byte-identical to before the gate)" -- \
	wait_until 20 same_tree 1 "$h1_before"
check "the daemon says so, once: $(grep -h "ended without reverting" "$T_TMP/h1/log" | tail -1)" -- \
	test "$(grep -c "the gate's ab ended without reverting: [1-9][0-9]* settings restored" "$T_TMP/h1/log")" = 1
: >"$T_TMP/gateout/release"
wait $rpid
krc=$?
fleet_snap >"$T_TMP/abkill.after" || t_not_ok "a snapshot of the hosts (abkill.after)"
check "the rollout whose canary's ab was killed: rolled back (exit $krc), every tree and desired key as before" -- \
	sh -c "[ $krc -eq 1 ] && cmp '$T_TMP/abkill.before' '$T_TMP/abkill.after'"

# ---- SIGHUP and SIGTERM while a gate holds the host (review G1) -----------------------

# The gate "hup" holds the host as "hold" does, then its job fails (exit 1)
# once released: a failed gate, its arm reverted, the rollout rolled back
# (so that no host here is left with the hold policy).
hold_job "$T_TMP/gatebin/hupjob.sh" 'exit 1'
gate_file hup "$T_TMP/gatebin/hupjob.sh"
# a rollout an earlier section's controller left unfinished (its leader
# lease lost on a loaded machine: exit 3) is resumed to its end first, since
# the store takes one rollout at a time
for r in $("$NODETUNE" fleet status --endpoints "$EP" --json 2>/dev/null |
	jq -r '.rollouts[] | select(.state == "running" or .state == "rolling-back") | .name'); do
	timeout 180 "$NODETUNE" fleet resume --endpoints "$EP" $SIGN --name "$r" >/dev/null 2>&1
done
# held_rollout TAG: a rollout of hold.conf gated by "hup" (rpid), the hosts
# before it in TAG.before (h1's tree in h1_before), until h1's gate holds it
held_rollout() {
	rm -f "$T_TMP/gateout/"*.held "$T_TMP/gateout/release"
	fleet_snap >"$T_TMP/$1.before" || t_not_ok "a snapshot of the hosts ($1.before)"
	h1_before=$(tree_hash "$T_TMP/h1/root") ready0=$(grep -c "ready: " "$T_TMP/h1/log")
	"$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/hold.conf" --name "r-gate-$1" \
		--waves 1/class,100% --gate hup --gate-budget $HOLD_BUDGET --wave-timeout 120 --json >"$T_TMP/$1.out" 2>"$T_TMP/$1.err" &
	rpid=$!
	wait_until 60 test -e "$T_TMP/gateout/h1.held"
}
# SIGHUP mid-gate: the reload waits for the gate's end (the arm stays), then
# runs once the gate's arm is reverted
held_rollout hup
check "mid-gate: h1's gate holds the host with arm B (THP defrag defer) ($(head -c 200 "$T_TMP/hup.err"))" -- \
	test "$(cat "$T_TMP/h1/root/$THP/defrag")" = defer
l0=$(wc -l <"$T_TMP/h1/log")
kill -HUP "$(cat "$T_TMP/h1/pid")"
check "SIGHUP mid-gate: the daemon says the reload waits for the gate's end" -- \
	wait_until 10 sh -c "tail -n +$((l0 + 1)) '$T_TMP/h1/log' | grep -q 'SIGHUP: a fleet gate holds the host; the reload waits for its end'"
check "SIGHUP mid-gate: no reload yet, the daemon alive, arm B as it was (THP defrag defer, numa_balancing 0)" -- \
	sh -c "! tail -n +$((l0 + 1)) '$T_TMP/h1/log' | grep -q 'reloaded ' &&
		kill -0 \$(cat '$T_TMP/h1/pid') && [ \"\$(cat '$T_TMP/h1/root/$THP/defrag')\" = defer ] &&
		[ \"\$(cat '$T_TMP/h1/root/proc/sys/kernel/numa_balancing')\" = 0 ]"
: >"$T_TMP/gateout/release"
wait $rpid
krc=$?
# the log after the SIGHUP: the gate's end (its arm reverted), then the
# reload (at the daemon's next cycle: 10 s allowed, --interval 1)
wait_until 10 sh -c "tail -n +$((l0 + 1)) '$T_TMP/h1/log' | grep -q 'reloaded '"
tail -n +$((l0 + 1)) "$T_TMP/h1/log" >"$T_TMP/hup.log"
gend=$(grep -n 'fleet: gate failed' "$T_TMP/hup.log" | head -1 | cut -d: -f1)
rl=$(grep -n 'reloaded ' "$T_TMP/hup.log" | head -1 | cut -d: -f1)
check "the held-back reload ran after the gate's end (gate failed at log line ${gend:-none}, reloaded at ${rl:-none}), once" -- \
	sh -c '[ -n "$1" ] && [ -n "$2" ] && [ "$2" -gt "$1" ] && [ "$(grep -c "reloaded " "$3")" = 1 ]' - "$gend" "$rl" "$T_TMP/hup.log"
rolled_back_h1() { [ "$krc" -eq 1 ] && same_tree 1 "$h1_before"; }
check "that rollout rolled back (exit $krc), h1 byte-identical to before the gate" -- wait_until 20 rolled_back_h1

# SIGTERM mid-gate (systemctl stop during a gate): the gate's trial is
# reverted, no journal left, the daemon gone within its unit's
# TimeoutStopSec (30 s, deploy/systemd/nodetune.service.in)
held_rollout term
check "mid-gate before SIGTERM: arm B applied on h1 (THP defrag defer)" -- \
	test "$(cat "$T_TMP/h1/root/$THP/defrag")" = defer
rm -f "$GATES/hup.conf"     # started again, the daemon refuses the gate: the rollout rolls back
lT=$(wc -l <"$T_TMP/h1/log")
t0=$(date +%s.%N)
host_kill 1 TERM
t1=$(date +%s.%N)
check "SIGTERM mid-gate: the daemon exits within 30 s ($(echo "$t1 - $t0" | bc) s)" -- \
	sh -c '[ "$(echo "$2 - $1 < 30" | bc)" = 1 ]' - "$t0" "$t1"
check "SIGTERM mid-gate: the gate's trial reverted, h1 byte-identical to before the gate" -- \
	test "$(tree_hash "$T_TMP/h1/root")" = "$h1_before"
check "SIGTERM mid-gate: no gate journal left in h1's state dir" -- test ! -e "$T_TMP/h1/state/gate"
check "SIGTERM mid-gate: the daemon stopped the gate: $(tail -n +$((lT + 1)) "$T_TMP/h1/log" | grep -h 'stopping the gate')" -- \
	sh -c "tail -n +$((lT + 1)) '$T_TMP/h1/log' | grep -q 'fleet: stopping the gate (ab reverts its arm)'"
host_start 1
check "the daemon started again" -- wait_until 30 sh -c "[ \$(grep -c 'ready: ' '$T_TMP/h1/log') -gt $ready0 ]"
: >"$T_TMP/gateout/release"
wait $rpid
krc=$?
fleet_snap >"$T_TMP/term.after" || t_not_ok "a snapshot of the hosts (term.after)"
check "the rollout whose canary was stopped mid-gate: rolled back (exit $krc), every tree and desired key as before" -- \
	sh -c "[ $krc -eq 1 ] && cmp '$T_TMP/term.before' '$T_TMP/term.after'"

fleet_cleanup
t_done
