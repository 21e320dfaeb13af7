#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# test_fleet_converge.sh — `nodetune fleet` rollouts whose checks are the
# store's and the hosts' state (fleet_lib.sh: a 3-member etcd and 8
# daemons on simulated hosts of this script's own): a derived policy
# (include =) rolled out flattened; the site limits (a policy beyond a
# host's limits refused by the host, in shadow and for real, the tree
# byte-identical, the reason in the rollout's report; the daemon's own
# --policy beyond them refused at start); the fleet converges (a host
# skipped, started again after the rollout ended, and one that joins
# later, follow their class's policy of record; the rollout exits 4 while
# a host skipped is down or behind, and `fleet hosts` marks it); `fleet
# abort` end to end; bad input (a store out of reach, a policy that fails
# validation, store values that are not JSON).
#
# No check here runs ab or makes a cgroup: none of the host's state is
# touched (the hosts' knobs are files in their trees).
. "$(dirname "$0")/lib.sh"
t_plan 28
. "$(dirname "$0")/fleet_lib.sh"
fleet_hosts_up

# ---- a derived policy: the controller resolves include =, hosts get it flattened --------

printf '[main]\nsummary = test base of a derived policy\n[thp]\nenabled = never\n[sched]\nnuma_balancing = 1\n' \
	>"$T_TMP/incbase.conf"
printf '[main]\ninclude = incbase.conf\nsummary = test derived\n[thp]\ndefrag = defer\n' >"$T_TMP/derived.conf"
chmod 644 "$T_TMP/incbase.conf" "$T_TMP/derived.conf"
run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/derived.conf" --name r-derived \
	--waves 1/class,100% --wave-timeout 30 --json
cp "$ERR" "$T_TMP/derived.err"
state=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$OUT" 2>&1)
sha=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sha256"])' "$OUT" 2>&1)
check "a rollout of a policy with include = is done (exit $RC, $state), nothing said about a buffer" -- sh -c \
	'[ "$1" -eq 0 ] && [ "$2" = done ] && ! grep -q buffer "$3"' - "$RC" "$state" "$T_TMP/derived.err"
# the policy the store holds: signed, self-contained, the base's values and the derived one's
check "the store holds the policy ${sha%"${sha#????????????}"}, signed" -- sh -c \
	'$1 get "/nodetune/policies/$2" --print-value-only >"$3.env" && python3 -c "
import base64, json, sys
e = json.load(open(sys.argv[1]))
assert e[\"nodetune_signed\"] == 2
d = json.loads(base64.b64decode(e[\"doc\"]))
sys.stdout.write(base64.b64decode(d[\"content\"]).decode())" "$3.env" >"$3"' - "$ETCDCTL" "$sha" "$T_TMP/derived.stored"
check "the stored policy is the flattened one: no include, the base's and the derived values" -- sh -c \
	'! grep -q "^include" "$1" && grep -q "^enabled = never" "$1" && grep -q "^numa_balancing = 1" "$1" &&
	 grep -q "^defrag = defer" "$1"' - "$T_TMP/derived.stored"
chmod 644 "$T_TMP/derived.stored"
bad=""
for n in 1 2 3 4 5 6 7 8; do
	"$NODETUNE" verify --policy "$T_TMP/derived.stored" --sysroot "$T_TMP/h$n/root" --topology "$(cat "$T_TMP/h$n/topo")" \
		>"$T_TMP/verify.$n" 2>&1 || bad="$bad h$n"
	[ "$(cat "$T_TMP/h$n/root/$THP/enabled")" = never ] && [ "$(cat "$T_TMP/h$n/root/$THP/defrag")" = defer ] &&
		[ "$(cat "$T_TMP/h$n/root/proc/sys/kernel/numa_balancing")" = 1 ] || bad="$bad h$n:knobs"
done
check "every host's knobs equal the flattened policy's (verify of the stored text: no drift):${bad:- all 8}" -- \
	test -z "$bad"

# ---- site limits: a policy beyond a host's limits is refused there ---------------------

# (THP never: what the hosts run already, a change on an untuned tree)
printf '[main]\nsummary = test beyond the site limits\n[sysctl]\nvm.min_free_kbytes = 2097152\n[thp]\nenabled = never\n' \
	>"$T_TMP/big.conf"
chmod 644 "$T_TMP/big.conf"
before=$(all_trees)
run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/big.conf" --name r-big-shadow --shadow \
	--wave-timeout 20 --json
notes=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
hs = [h for w in r["waves"] for h in w["hosts"]]
print(sum(1 for h in hs if not h["shadow"]["valid"] and "refused by the site limits" in (h.get("note") or "")
          and "vm.min_free_kbytes = 2097152 is above the site limit 1048576" in h["note"]), len(hs))' "$OUT" 2>&1)
check "shadow: every host says the policy beyond its limits would be refused, key and limit named ($notes)" -- \
	sh -c '[ "$1" = "8 8" ]' - "$notes"
run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/big.conf" --name r-big --waves 1/class,100% \
	--wave-timeout 20 --json
big=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
c = r["waves"][0]["hosts"]
# the first refusal rolls back: the other canary may not have answered by then
print(r["state"], any("refused by the site limits" in (h.get("note") or "")
                      and "vm.min_free_kbytes = 2097152 is above the site limit 1048576" in h["note"] for h in c),
      all(h["state"] == "pending" for w in r["waves"][1:] for h in w["hosts"]))' "$OUT" 2>&1)
after=$(all_trees)
check "a rollout beyond the hosts' limits: refused by the canaries, the reason in the report, not rolled on (exit $RC: $big)" -- \
	sh -c '[ "$1" -eq 1 ] && [ "$2" = "rolled-back True True" ]' - "$RC" "$big"
check "refused beyond the limits: every tree byte-identical" -- test "$before" = "$after"
# the log of each canary the report says refused (the first refusal rolls
# back, so the other canary, h1 or not, may never have read the policy);
# the host logs the refusal before it publishes it, so no wait is needed
refusers=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(h["host"] for h in r["waves"][0]["hosts"] if "refused by the site limits" in (h.get("note") or "")))' "$OUT" 2>&1)
nolog=""
for h in $refusers; do
	grep -q "refused, nothing applied: refused by the site limits: .*vm.min_free_kbytes = 2097152 is above the site limit 1048576" \
		"$T_TMP/$h/log" || nolog="$nolog $h"
done
check "the log of each canary that refused (${refusers:-none}) names the key and the limit${nolog:+; not in:$nolog}" -- \
	sh -c '[ -n "$1" ] && [ -z "$2" ]' - "$refusers" "$nolog"
# the daemon's own --policy beyond the limits: refused at start, nothing changed
# (a daemon that took it would run on: timeout ends it, exit 124)
mkdir -p "$T_TMP/solo" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$T_TMP/solo/root"
before=$(tree_hash "$T_TMP/solo/root")
expect_fail 2 "big.conf:4: \[sysctl\] vm.min_free_kbytes = 2097152 is above the site limit 1048576" \
	"the daemon's own --policy beyond the site limits: refused at start, exit 2" -- \
	timeout 20 "$NODETUNE" daemon --sysroot "$T_TMP/solo/root" --topology "$TOPO_A" --policy "$T_TMP/big.conf" \
	--limits "$T_TMP/limits.conf" --no-metrics --socket "$T_TMP/solo/sock" --state-dir "$T_TMP/solo/state"
check "the daemon refused at start: its tree byte-identical" -- test "$before" = "$(tree_hash "$T_TMP/solo/root")"

# ---- the fleet converges: a host skipped, or one that joins later, follows its class's record --

# conv: THP defrag never; h4's own limits (strict.conf) refuse it, the others' allow it
policy conv thp defrag never
printf '# h4 only\n[thp]\ndefrag = always,defer,defer+madvise,madvise\n' >"$T_TMP/strict.conf"
chmod 644 "$T_TMP/strict.conf"
# conv_on N: host N runs conv (its tree) and its status says it verified it
conv_on() {
	[ "$(cat "$T_TMP/h$1/root/$THP/defrag")" = never ] &&
		[ "$($ETCDCTL get "/nodetune/hosts/h$1/status" --print-value-only | python3 -c '
import json, sys; d = json.load(sys.stdin); print(d["state"], d["sha256"])' 2>/dev/null)" = "verified $conv_sha" ]
}
conv_done() { "$NODETUNE" fleet status --endpoints "$EP" --name r-conv --json 2>/dev/null | grep -q '"state": "done"'; }
# (margin: the wave timeout outlasts h4's 5 s lease after its kill, as for r-lost)
host_kill 4 KILL
NODETUNE_FLEET_PAUSE=0 "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/conv.conf" --name r-conv \
	--waves 100% --wave-timeout 20 --json >"$T_TMP/conv.out" 2>"$T_TMP/conv.err" &
conv_pid=$!
wait_until 60 conv_done || echo "# r-conv did not end done within 60 s"
# h4 comes back after the rollout ended, under limits that refuse its policy: behind
host_start 4 "" "$T_TMP/strict.conf"
wait "$conv_pid"
conv_rc=$?
reason=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["state"], r["reason"])' "$T_TMP/conv.out" 2>&1)
check "a rollout that skipped h4 ends done, the host named ($reason)" -- \
	test "$reason" = "done done; skipped (lease expired): h4"
check "h4 back but refusing the policy: the rollout exits 4, 'done, but behind: h4' (exit $conv_rc: $(cat "$T_TMP/conv.err"))" -- \
	sh -c '[ "$1" -eq 4 ] && grep -q "^nodetune: fleet rollout: done, but behind: h4 (behind)$" "$2"' - "$conv_rc" "$T_TMP/conv.err"
conv_sha=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sha256"])' "$T_TMP/conv.out" 2>&1)
run "$NODETUNE" fleet hosts --endpoints "$EP"
check "fleet hosts marks h4 behind its class's policy of record ($(grep -c BEHIND "$OUT") marked)" -- sh -c \
	'grep "^h4 " "$1" | grep -q "BEHIND: its class.s policy of record is $(printf %.12s "$2")" &&
	 [ "$(grep -c BEHIND "$1")" -eq 1 ]' - "$OUT" "$conv_sha"
# h4 started again under the fleet's limits: it follows the record; the
# bound counts from its start (its --interval is 1 s; margin as for r-lost)
host_kill 4
host_start 4
check "h4, skipped and started again after the rollout ended, verifies the new policy within 10 s" -- \
	wait_until 10 conv_on 4
run "$NODETUNE" fleet hosts --endpoints "$EP"
check "fleet hosts: h4 no longer behind" -- sh -c '! grep -q BEHIND "$1"' - "$OUT"
run "$NODETUNE" fleet resume --endpoints "$EP" $SIGN --name r-conv
check "fleet resume of r-conv: h4 converged, exit 0 (exit $RC: $(grep '^skipped' "$OUT"))" -- \
	sh -c '[ "$1" -eq 0 ] && grep -q "^skipped: h4 (converged)$" "$2"' - "$RC" "$OUT"
# h9 joins the fleet after the rollout (class B, no desired key of its own): it
# follows its class's record without a rollout
host_start 9 "$TOPO_B"
check "h9, joining after the rollout, verifies its class's policy of record within 10 s" -- \
	wait_until 10 conv_on 9
check "h9's log says it followed its class's policy of record" -- \
	grep -q "fleet: following class [0-9a-f]*'s policy of record, conv.conf of rollout r-conv (this host has no desired)" \
	"$T_TMP/h9/log"
host_kill 9

# ---- fleet abort, end to end: the leader rolls back what it changed -----------------------

# once the second wave is sent (the controller pauses 2 s after each step),
# `fleet abort` asks; the leading controller rolls the hosts it changed
# back, both exit 1 with the rollout aborted, every tree is as before, and
# the last wave's hosts were never sent the policy
policy abrt thp defrag defer
before=$(all_trees)
NODETUNE_FLEET_PAUSE=2 "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/abrt.conf" --name r-abort \
	--waves 1/class,50%,100% --wave-timeout 30 >"$T_TMP/abort.a" 2>&1 &
pa=$!
wait_until 60 grep -q 'r-abort: wave 1 (50%) sent to' "$T_TMP/abort.a" || t_not_ok "r-abort: the second wave was never sent"
run timeout 120 "$NODETUNE" fleet abort --endpoints "$EP" $SIGN --name r-abort --json
wait $pa; ra=$?
state=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$OUT" 2>/dev/null)
last=$("$NODETUNE" fleet status --endpoints "$EP" --name r-abort --json | python3 -c '
import json, sys; print(" ".join(h["host"] for h in json.load(sys.stdin)["rollouts"][0]["waves"][-1]["hosts"]))')
untouched=""
for h in $last; do [ "$(applied "${h#h}" abrt)" = 0 ] || untouched="$untouched $h"; done
sent=0; for n in 1 2 3 4 5 6 7 8; do sent=$((sent + $(applied $n abrt))); done
if [ "$RC" -eq 1 ] && [ "$ra" -eq 1 ] && [ "$state" = aborted ] && [ "$(all_trees)" = "$before" ] && [ -n "$last" ] &&
	[ -z "$untouched" ] && [ "$sent" -ge 2 ]; then
	t_ok "fleet abort mid-rollout: the leader rolled back the $sent host(s) it had sent, both exit 1, aborted, every tree as before, the last wave ($last) never sent"
else
	t_not_ok "fleet abort: exits $RC/$ra, state '$state', trees $([ "$(all_trees)" = "$before" ] && echo same || echo CHANGED), last wave '$last' applied it:$untouched, applied $sent"
	tail -n 3 "$T_TMP/abort.a" "$ERR" | sed 's/^/#   /'
fi

# ---- bad input --------------------------------------------------------------------------

before=$(all_trees)
port=$(free_port)
expect_fail 3 "fleet rollout: .*(refused|connect|reach)" "a store out of reach: one line, exit 3" -- \
	"$NODETUNE" fleet rollout --endpoints "http://127.0.0.1:$port" --policy "$T_TMP/thp.conf" --name r-x
printf '[thp]\nenabled = sometimes\n' >"$T_TMP/badval.conf"
expect_fail 2 "badval.conf:2: .*sometimes" "a policy that fails validation: file:line, exit 2" -- \
	"$NODETUNE" fleet rollout --endpoints "$EP" --policy "$T_TMP/badval.conf" --name r-bad
expect_fail 2 "--waves '1/class,50%': the last wave must be 100%" "waves that do not end at 100%" -- \
	"$NODETUNE" fleet rollout --endpoints "$EP" --policy "$T_TMP/thp.conf" --name r-w --waves 1/class,50%
expect_fail 2 "unknown option '--gate-cmd'" "--gate-cmd is gone: no command travels through the store" -- \
	"$NODETUNE" fleet rollout --endpoints "$EP" --policy "$T_TMP/thp.conf" --name r-g --gate-cmd "sleep 1"
expect_fail 2 "--gate '../x': expected a gate name" "a gate name that is no name" -- \
	"$NODETUNE" fleet rollout --endpoints "$EP" --policy "$T_TMP/thp.conf" --name r-g --gate ../x
# a desired value that is not JSON: refused on the host's key
$ETCDCTL put /nodetune/hosts/h1/desired 'not json{' >/dev/null
# one with a raw newline and an escape sequence: refused, none of its bytes quoted back
$ETCDCTL put /nodetune/hosts/h3/desired "$(printf '{"a\\\n\033[2J":1}')" >/dev/null
# each host answers on its status key: waited for, the checks below read it
for n in 1 3; do
	wait_until 20 sh -c "$ETCDCTL get /nodetune/hosts/h$n/status --print-value-only | grep -q 'refused (malformed)'" ||
		echo "# h$n's status key did not change within 20 s"
done
e1=$(status_error 1)
case $e1 in "invalid refused (malformed): not JSON"*) t_ok "a desired value that is not JSON: reported on the host's key ($e1)" ;;
*) t_not_ok "non-JSON desired: '$e1'" ;; esac
grep -q "fleet: .*refused, nothing applied: refused (malformed): not JSON" "$T_TMP/h1/log" &&
	t_ok "the host's log says it in one line" || t_not_ok "no line in h1's log"
e3=$(status_error 3)
if grep -q "fleet: .*h3/desired refused, nothing applied: refused (malformed)" "$T_TMP/h3/log" &&
	! grep -q "$(printf '\033')" "$T_TMP/h3/log" && ! grep -q '^\[2J' "$T_TMP/h3/log" &&
	case $e3 in *"refused (malformed)"*) true ;; *) false ;; esac; then
	t_ok "a store value's newline and escape sequence: refused, not quoted back (the host's key and its log)"
else
	t_not_ok "control characters from the store: key '$e3'"; grep -a 'h3/desired' "$T_TMP/h3/log" | cat -A | sed 's/^/#   /'
fi
[ "$before" = "$(all_trees)" ] && t_ok "bad input: no tree changed" || t_not_ok "bad input changed a tree"

fleet_cleanup
t_done
