#!/bin/sh
# SPDX-License-Identifier: MIT
# host: cpu cgroup
# test_fleet.sh — `nodetune fleet` against a real 3-member etcd
# (tests/tools/etcd-cluster.sh) and real daemons on simulated hosts: each
# host is `nodetune daemon --fleet --host hN` on its own copy of the
# gpu-host-untuned tree, with a real topology from ../shared/topologies
# (two hardware classes: g4dnmetal, nvidiaDGX2).
#
# Checks: a rollout over 8 hosts (waves in order, one host per class
# first, every host verified once); faults (the controller killed after
# each step and resumed, an etcd member stopped mid-rollout, a host's
# daemon killed: lost, skipped, converging when back; two controllers);
# shadow mode (an invalid plan on one class, no tree changed); the canary
# gate, a name each host maps to a job of its own gates directory (a
# regressing canary rolls back, a passing gate goes on, the job runs as the
# gate's user; a name a host does not list is refused, every host
# byte-identical; the daemon killed -9 mid-gate and started again puts the
# host back to what it ran before the gate, every knob byte-identical, and
# it went on answering while the gate held the host; so does a start after
# the daemon and its ab were killed together, from the journal left; and a
# daemon whose ab was killed puts the arm back itself); bad input
# (a store out of reach, a policy that fails validation, store values
# that are not JSON); signatures (every document the controller writes is
# signed and each host trusts only the controller's key: a desired value
# written with etcdctl unsigned, or a rollout signed by an unknown key, is
# refused with the host byte-identical; a controller whose key did not sign
# the store's counter stops before it writes; a replayed older signed desired is
# refused; `nodetune status` says the last refusal); a derived policy
# (include =) rolled out flattened; the site limits (a policy beyond a
# host's limits refused by the host, in shadow and for real, the tree
# byte-identical, the reason in the rollout's report; the daemon's own
# --policy beyond them refused at start); the fleet converges (a host
# skipped, started again after the rollout ended, and one that joins later,
# follow their class's policy of record; the rollout exits 4 while a host
# skipped is down or behind, and `fleet hosts` marks it).
. "$(dirname "$0")/lib.sh"
t_plan 89

ETCD=${ETCD:-/usr/bin/etcd}
if [ ! -x "$ETCD" ]; then
	t_need etcd "etcd not installed ($ETCD): apt-get install etcd-server"
	t_rest
fi
TOPO_A=$SHARED/g4dnmetal.xml
TOPO_B=$SHARED/nvidiaDGX2.xml
if [ ! -f "$TOPO_A" ] || [ ! -f "$TOPO_B" ]; then
	t_need ../shared "no $SHARED topologies"
	t_rest
fi
CL=$T_TMP/etcd
EP=$(tests/tools/etcd-cluster.sh start "$CL") || { t_not_ok "the etcd cluster started"; t_done; }
# everything this test starts is stopped before t_done looks for leftovers
fleet_cleanup() {
	for p in "$T_TMP"/h*/pid; do
		[ -f "$p" ] || continue
		kill -CONT "$(cat "$p")" 2>/dev/null
		kill "$(cat "$p")" 2>/dev/null
	done
	for p in "$T_TMP"/h*/pid; do [ -f "$p" ] && wait "$(cat "$p")" 2>/dev/null; done
	tests/tools/etcd-cluster.sh stop "$CL"
}
t_defer fleet_cleanup
THP=sys/kernel/mm/transparent_hugepage
ETCDCTL="env ETCDCTL_API=3 etcdctl --endpoints $EP"

# ---- the signing keys: the controller's, trusted by every host; another -------

mkdir -m 700 "$T_TMP/ctl" "$T_TMP/evil" && mkdir -m 755 "$T_TMP/keys.d"
"$NODETUNE" fleet keygen --out "$T_TMP/ctl" --name ctl >/dev/null &&
	"$NODETUNE" fleet keygen --out "$T_TMP/evil" --name evil >/dev/null &&
	cp "$T_TMP/ctl/ctl.pub" "$T_TMP/keys.d/" || { t_not_ok "fleet keygen"; t_done; }
SIGN="--signing-key $T_TMP/ctl/ctl.key"

# ---- the hosts' named gates ---------------------------------------------------

# The gates a rollout may name (root's directory, as gates_lookup checks it
# as root).  Their jobs run as nobody, who must reach the job, the harness
# and the simulated trees: T_TMP becomes traversable (0711), the programs go
# to a 0755 directory of their own, and the jobs write what they saw to a
# sticky 1777 one.
GATES=$T_TMP/gates.d
mkdir -m 755 "$GATES" "$T_TMP/gatebin" && mkdir "$T_TMP/gateout" && chmod 1777 "$T_TMP/gateout" && chmod 711 "$T_TMP" ||
	{ t_not_ok "the gates directory"; t_done; }
gate_file() { # NAME JOB: a gate running JOB (no arguments) as nobody
	printf 'command = %s\nuser = nobody\nbudget = 120\n' "$2" >"$GATES/$1.conf"
	chmod 644 "$GATES/$1.conf"
}

# ---- the simulated hosts ----------------------------------------------------

policy() { # NAME SECTION KEY VALUE: a policy file
	printf '[main]\nsummary = test %s\n[%s]\n%s = %s\n' "$1" "$2" "$3" "$4" >"$T_TMP/$1.conf"
	chmod 644 "$T_TMP/$1.conf"
}
policy thp thp enabled madvise
policy defrag thp defrag madvise
policy nobal sched numa_balancing 0
policy hk affinity housekeeping 40-47

# every host's site limits (limits.h): a policy beyond them is refused there
printf '# test site limits\n[sysctl]\nvm.min_free_kbytes = 1048576\n' >"$T_TMP/limits.conf"
chmod 644 "$T_TMP/limits.conf"

# host_start N TOPO [LIMITS]: start host hN's daemon (its tree made at its first
# start, TOPO read then), under the site limits LIMITS
host_start() {
	d=$T_TMP/h$1
	if [ ! -d "$d/root" ]; then
		mkdir -p "$d" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$d/root"
		echo "$2" >"$d/topo"
	fi
	"$NODETUNE" daemon --sysroot "$d/root" --topology "$(cat "$d/topo")" --policy policies/baseline.conf \
		--fleet "$EP" --host "h$1" --fleet-keys "$T_TMP/keys.d" --gates-dir "$GATES" --no-metrics --textfile-dir "$d" \
		--socket "$d/sock" --state-dir "$d/state" --limits "${3:-$T_TMP/limits.conf}" \
		--interval 1 >>"$d/log" 2>&1 &
	echo $! >"$d/pid"
}
host_kill() { kill "-${2:-TERM}" "$(cat "$T_TMP/h$1/pid")" 2>/dev/null; wait "$(cat "$T_TMP/h$1/pid")" 2>/dev/null; }

# alive_count: hosts whose lease lives
alive_count() { "$NODETUNE" fleet hosts --endpoints "$EP" --json | python3 -c '
import json, sys; print(sum(1 for h in json.load(sys.stdin)["hosts"] if h["alive"]))'; }
# (margin: the 20 s default is 172x the p99 of one host's
# registration, 0.116 s, and 10x the 1.99 s under ASan at load 38-59,
# host_register_s in timing_margins.sh; eight start here at once)
wait_alive() { # N [SECONDS]
	i=0
	while [ "$(alive_count 2>/dev/null)" != "$1" ] && [ $i -lt $((${2:-20} * 4)) ]; do sleep 0.25; i=$((i + 1)); done
	[ "$(alive_count 2>/dev/null)" = "$1" ]
}
# applied N NAME: how many times host N's daemon applied policy NAME
applied() { grep -c "fleet: applied $2.conf" "$T_TMP/h$1/log"; }
all_trees() { for n in 1 2 3 4 5 6 7 8; do tree_hash "$T_TMP/h$n/root"; done | sha256sum; }

for n in 1 2 3 4; do host_start $n "$TOPO_A"; done
for n in 5 6 7 8; do host_start $n "$TOPO_B"; done
if wait_alive 8; then t_ok "8 hosts registered under their leases"
else t_not_ok "8 hosts registered"; "$NODETUNE" fleet hosts --endpoints "$EP"; t_done; fi
classes=$("$NODETUNE" fleet hosts --endpoints "$EP" --json | python3 -c '
import json, sys; print(" ".join(sorted({h["class"]["label"] for h in json.load(sys.stdin)["hosts"]})))')
[ "$classes" = "2s-2n-48c-8gpu-T4 2s-2n-4c-16gpu-V100" ] && t_ok "two hardware classes published: $classes" ||
	t_not_ok "hardware classes: got '$classes'"

# ---- a rollout over 8 hosts ----------------------------------------------------

run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/thp.conf" --name r-thp --waves 1/class,50%,100% \
	--wave-timeout 30 --json
cp "$OUT" "$T_TMP/r-thp.json"
python3 - "$T_TMP/r-thp.json" <<'EOF' >"$T_TMP/check" 2>&1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["state"] == "done", r["state"]
w = r["waves"]
assert [x["index"] for x in w] == [0, 1, 2] and all(x["state"] == "passed" for x in w), w
assert [x["started"] for x in w] == sorted(x["started"] for x in w), "waves out of order"
first = [h["class"] for h in w[0]["hosts"]]
assert len(first) == 2 and len(set(first)) == 2, "first wave: one host per class: %s" % first
hosts = [h["host"] for x in w for h in x["hosts"]]
assert sorted(hosts) == ["h%d" % i for i in range(1, 9)], "every host in exactly one wave: %s" % hosts
assert all(h["state"] == "verified" for x in w for h in x["hosts"])
print("waves:", [[h["host"] for h in x["hosts"]] for x in w])
EOF
if [ "$RC" -eq 0 ] && [ -s "$T_TMP/check" ] && ! grep -q Error "$T_TMP/check"; then
	t_ok "rollout over 8 hosts: done, waves in order, one host per class first, every host in one wave ($(cat "$T_TMP/check"))"
else
	t_not_ok "rollout over 8 hosts (exit $RC)"; sed 's/^/#   /' "$T_TMP/check" "$ERR" | head -20
fi
bad=""
for n in 1 2 3 4 5 6 7 8; do
	[ "$(cat "$T_TMP/h$n/root/$THP/enabled")" = madvise ] && [ "$(applied $n thp)" = 1 ] || bad="$bad h$n"
done
[ -z "$bad" ] && t_ok "every host runs the new policy (THP madvise), applied exactly once" ||
	t_not_ok "hosts not on the new policy or applied more than once:$bad"
# kept for the replay below: h1's desired of this rollout, signed
$ETCDCTL get /nodetune/hosts/h1/desired --print-value-only >"$T_TMP/h1.desired.old"
grep -q '"nodetune_signed": *2' "$T_TMP/h1.desired.old" && t_ok "the desired values the controller writes are signed envelopes" ||
	t_not_ok "h1's desired is not signed: $(head -c 200 "$T_TMP/h1.desired.old")"
run "$NODETUNE" fleet status --endpoints "$EP" --name r-thp
grep -q "rollout r-thp: done" "$OUT" && grep -Eq "^0 +1/class +passed" "$OUT" && t_ok "fleet status: a table" ||
	{ t_not_ok "fleet status table"; head -5 "$OUT" | sed 's/^/#   /'; }

# ---- the controller killed after each step, and inside steps, then resumed ----------

# Pages of one host (NODETUNE_FLEET_TXN_HOSTS=1: a step that sends a wave of
# two is two transactions, the first a page and its host's desired key, the
# second the next and the rollout's head), and a pause said after each
# transaction (NODETUNE_FLEET_PAUSE): each controller is killed -9 in its
# first pause, whichever it is, and the next resumes; so every step and
# every transaction inside one is followed by a kill.  What each kill
# followed is kept (kill.log) and every kind is required: a wave sent,
# inside a step, a wave passed, done.  Each host's desired key is put
# exactly once in the rollout (its etcd version moves by one) and each
# host applied the policy once.
# (margin: the kill comes 0.3 s after the pause's line is seen, polled every
# 20 ms as timing_margins.sh kill_offset_s does; the 1.5 s pause is 4.7x the
# p99 of that offset there, 0.317 s, and 3.4x the 0.443 s under ASan at load
# 38-59.  A resume waits for the dead leader's lease up to
# FLEET_LEADER_WAIT_S, 16 s: 3.2x the p99 of its life, 4.95 s, and 3.0x the
# 5.32 s under ASan, leader_lease_s)
desired_versions() { for n in 1 2 3 4 5 6 7 8; do
	env ETCDCTL_API=3 etcdctl --endpoints "$EP" get -w json /nodetune/hosts/h$n/desired | python3 -c '
import json, sys; kvs = json.load(sys.stdin).get("kvs", []); print(kvs[0]["version"] if kvs else 0)'
done | tr '\n' ' '; }
v0=$(desired_versions)
export NODETUNE_FLEET_PAUSE=1.5 NODETUNE_FLEET_TXN_HOSTS=1
"$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/defrag.conf" --name r-kill --waves 1/class,50%,100% \
	--wave-timeout 30 >"$T_TMP/kill.0" 2>&1 &
pid=$!
kills=0 final="" : >"$T_TMP/kill.log"
for pass in $(seq 1 40); do
	# wait for this controller's first pause, then kill it there
	i=0
	while ! grep -q "(NODETUNE_FLEET_PAUSE)" "$T_TMP/kill.$((pass - 1))" && [ $i -lt 750 ] && kill -0 $pid 2>/dev/null; do
		sleep 0.02; i=$((i + 1))
	done
	sleep 0.3
	# a controller that has ended is a zombie until waited for: not a kill
	st=$(sed 's/.*) //' /proc/$pid/stat 2>/dev/null | cut -d' ' -f1)
	if [ -n "$st" ] && [ "$st" != Z ] && kill -9 $pid 2>/dev/null; then
		kills=$((kills + 1))
		grep "(NODETUNE_FLEET_PAUSE)" "$T_TMP/kill.$((pass - 1))" | head -n 1 >>"$T_TMP/kill.log"
	fi
	wait $pid 2>/dev/null
	final=$("$NODETUNE" fleet status --endpoints "$EP" --name r-kill --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["rollouts"][0]["state"])')
	[ "$final" = running ] || break
	"$NODETUNE" fleet resume --endpoints "$EP" $SIGN --name r-kill >"$T_TMP/kill.$pass" 2>&1 &
	pid=$!
done
wait $pid 2>/dev/null
unset NODETUNE_FLEET_PAUSE NODETUNE_FLEET_TXN_HOSTS
v1=$(desired_versions)
bad=""
for n in 1 2 3 4 5 6 7 8; do
	[ "$(applied $n defrag)" = 1 ] && [ "$(cat "$T_TMP/h$n/root/$THP/defrag")" = madvise ] || bad="$bad h$n:$(applied $n defrag)"
done
puts=$(python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); print(" ".join(str(int(y) - int(x)) for x, y in zip(a, b)))' "$v0" "$v1")
missing=""
for kind in "sent to" "inside a step" "passed" "done: every wave passed"; do grep -q "$kind" "$T_TMP/kill.log" || missing="$missing '$kind'"; done
if [ "$final" = done ] && [ -z "$bad" ] && [ -z "$missing" ] && [ "$puts" = "1 1 1 1 1 1 1 1" ]; then
	t_ok "controller killed -9 $kills times, after every step and inside steps, resumed each time: done, each host's desired put once and applied once"
else
	t_not_ok "kill/resume: final '$final' after $kills kills; applies != 1:$bad; kinds never killed after:$missing; desired puts per host: $puts"
	tail -n 3 "$T_TMP"/kill.* | sed 's/^/#   /'
fi
sed 's/^/#   killed after: /' "$T_TMP/kill.log"

# ---- one etcd member stopped mid-rollout ------------------------------------------

NODETUNE_FLEET_PAUSE=1 "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/nobal.conf" --name r-member \
	--waves 1/class,50%,100% --wave-timeout 30 >"$T_TMP/member.out" 2>&1 &
pid=$!
# mid-rollout: once it has taken a step (said as "HH:MM:SS r-member: ..."),
# while it still runs; the member is then shown down (its endpoint answers
# no health check) before the rollout goes on
wait_until 30 grep -Eq '^[0-9:]{8} r-member: ' "$T_TMP/member.out"
tests/tools/etcd-cluster.sh kill-member "$CL" 1
krc=$?
mid=no; kill -0 $pid 2>/dev/null && ! grep -q 'r-member: done' "$T_TMP/member.out" && mid=yes
down=no; env ETCDCTL_API=3 etcdctl --endpoints "${EP%%,*}" --dial-timeout 2s endpoint health >/dev/null 2>&1 || down=yes
wait $pid
rc=$?
tests/tools/etcd-cluster.sh start-member "$CL" 1 >/dev/null
bad=""
for n in 1 2 3 4 5 6 7 8; do
	[ "$(cat "$T_TMP/h$n/root/proc/sys/kernel/numa_balancing")" = 0 ] || bad="$bad h$n"
done
if [ $krc -eq 0 ] && [ $mid = yes ] && [ $down = yes ] && [ $rc -eq 0 ] && [ -z "$bad" ]; then
	t_ok "one etcd member stopped mid-rollout (after its first step, the member's endpoint down): the rollout went on to done"
else
	t_not_ok "member stopped mid-rollout: kill-member exit $krc, rollout running then: $mid, member down: $down; exit $rc, hosts not on it:$bad"
	tail -5 "$T_TMP/member.out" | sed 's/^/#   /'
fi

# ---- shadow: an invalid plan on one class, nothing written -------------------------

before=$(all_trees)
run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/hk.conf" --name r-shadow --shadow --wave-timeout 20 --json
after=$(all_trees)
inv=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
bad = sorted({h["label"] for w in r["waves"] for h in w["hosts"] if not h["shadow"]["valid"]})
print(" ".join(bad), "|", sum(1 for w in r["waves"] for h in w["hosts"] if "not CPUs of this machine" in (h.get("note") or "")))' "$OUT" 2>&1)
if [ "$RC" -eq 1 ] && [ "$inv" = "2s-2n-4c-16gpu-V100 | 4" ] && [ "$before" = "$after" ]; then
	t_ok "shadow: the invalid plan reported on the V100 class only (4 hosts, why), no tree changed (exit 1)"
else
	t_not_ok "shadow: exit $RC, invalid '$inv', trees $( [ "$before" = "$after" ] && echo same || echo CHANGED)"
fi

# ---- a host's daemon killed: lost, skipped after the timeout, converges when back ---

host_kill 8 KILL
# margin: the wave timeout must outlast h8's lease (5 s) after its kill:
# 20 s is 3.7x the p99 of 5.36 s plain and 3.1x the 6.53 s under ASan at
# load 38-59 (bench/timing_margins.sh host_lease_s, 20 runs each, upper
# bounds under load; bench/RESULTS.md section 14; 18 s was 2.8x there)
NODETUNE_FLEET_PAUSE=0 run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/thp.conf" --name r-lost \
	--waves 100% --wave-timeout 20 --json
# (thp runs already on h1..h7 from r-thp: this rollout re-states it)
st=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["state"], " ".join(h["host"] + "=" + h["state"] for w in r["waves"] for h in w["hosts"] if h["state"] != "verified"))' "$OUT")
[ "$RC" -eq 4 ] && [ "$st" = "done h8=lost" ] && grep -q "h8 .*lost its lease" "$OUT" &&
	grep -q "^nodetune: fleet rollout: done, but behind: h8 (down)$" "$ERR" &&
	t_ok "a host killed -9: reported lost and skipped after the wave timeout; the rollout done, exit 4: behind: h8 (down)" ||
	{ t_not_ok "killed host: exit $RC, '$st'"; head -c 600 "$ERR"; }
# h8 comes back (on the policy it ran before, from its state dir): it follows its desired key
# (margin: 10 s is 74x the p99 of host_converge_s, 0.136 s, and 5x the
# 1.99 s under ASan at load 38-59, timing_margins.sh)
host_start 8
i=0; while [ "$(cat "$T_TMP/h8/root/$THP/enabled")" != madvise ] && [ $i -lt 40 ]; do sleep 0.25; i=$((i + 1)); done
[ "$(cat "$T_TMP/h8/root/$THP/enabled")" = madvise ] && t_ok "the killed host, started again, converged to its desired policy" ||
	t_not_ok "h8 did not converge: $(cat "$T_TMP/h8/root/$THP/enabled")"
wait_alive 8 >/dev/null

# ---- two controllers at once ----------------------------------------------------------

policy two thp defrag never
NODETUNE_FLEET_PAUSE=2.5 "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/two.conf" --name r-two \
	--waves 1/class,100% --wave-timeout 30 >"$T_TMP/two.a" 2>&1 &
pa=$!
# the second starts once the first leads: it has taken a step (said as
# "HH:MM:SS r-two: ..."), and pauses 2.5 s after each (margin: 2.5 s is
# 31x the p99 of the second's refusal after that line, 0.080 s plain, and
# 3.6x the 0.69 s under ASan at load 38-59, two_refused_s; 2 s was 2.9x)
wait_until 30 grep -Eq '^[0-9:]{8} r-two: ' "$T_TMP/two.a" || t_not_ok "the first controller took no step on r-two"
"$NODETUNE" fleet resume --endpoints "$EP" $SIGN --name r-two >"$T_TMP/two.b" 2>&1 &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
bad=""
for n in 1 2 3 4 5 6 7 8; do [ "$(applied $n two)" = 1 ] || bad="$bad h$n"; done
# the second said it waits for the leader, and took no step (a step is said as "HH:MM:SS r-two: ...")
if [ $ra -eq 0 ] && [ $rb -eq 0 ] && [ -z "$bad" ] && grep -q "led by another controller" "$T_TMP/two.b" &&
	! grep -Eq '^[0-9:]{8} r-two: ' "$T_TMP/two.b"; then
	t_ok "two controllers: one leads, the other waits and takes no step (exit $rb); each host applied once"
else
	t_not_ok "two controllers: exits $ra/$rb, applies != 1:$bad"; tail -3 "$T_TMP/two.b" | sed 's/^/#   /'
fi
expect_fail 2 "rollout r-two exists already" "the same rollout name twice" -- \
	"$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/two.conf" --name r-two

# ---- the canary gate: a regressing canary rolls back, a passing gate goes on --------

# The gate's job is the real harness (a short DLRM run: 30 steps of batch 256
# after 3 warm-up steps, about 0.2 s), and ab reads its step reports as for
# any job.  A simulated host's knobs are files in its tree, which change
# nothing the harness does; so the job reads the tree as a real host's
# kernel would act on it: with numa_balancing 0 it runs with the harness's
# own slow:200 injection (every step's compute stretched by 200%, measured
# for real; B/A about 0.33), a regression no run-to-run noise here comes
# near even with both canaries' A/Bs on the same 2 CPUs (slow:80 was judged
# inconclusive once in a fresh-clone run, 0.747 [0.558, 1.001]); with THP
# defrag madvise, as with anything else, it runs unchanged: a neutral policy.
# The rollout names the gate "harness"; each host maps it to gatejob.sh, run
# as nobody, which notes its uid for the check below.
: "${HARNESS:=$SRCDIR/build/nodetune-harness}"
cp "$HARNESS" "$T_TMP/gatebin/nodetune-harness" && chmod 755 "$T_TMP/gatebin/nodetune-harness"
printf '%s\n' '#!/bin/sh' \
	"id -u >>'$T_TMP/gateout/uids'" \
	'set -- --rows 1000 --steps 30 --warmup 3 --batch 256 --quiet' \
	'[ "$(cat "$NODETUNE_SYSROOT/proc/sys/kernel/numa_balancing")" = 0 ] && set -- "$@" --inject slow:200' \
	"exec '$T_TMP/gatebin/nodetune-harness' \"\$@\"" >"$T_TMP/gatebin/gatejob.sh"
chmod 755 "$T_TMP/gatebin/gatejob.sh"
gate_file harness "$T_TMP/gatebin/gatejob.sh"
policy slow sched numa_balancing 0
policy neutral thp defrag madvise
# host N's desired document (inside its signed envelope: a restore signs it again with a new seq)
# (fails when etcdctl fails or the key is empty: nothing read is not "as before")
desired_of() {
	dv=$($ETCDCTL get "/nodetune/hosts/h$1/desired" --print-value-only) && [ -n "$dv" ] || return 1
	printf '%s\n' "$dv" | python3 -c '
import base64, json, sys
v = sys.stdin.read()
try: print(base64.b64decode(json.loads(v)["doc"]).decode())
except Exception: print(v)' | sha256sum
}
# every host's tree and desired key, 8 lines; fails when one cannot be read
fleet_snap() {
	for n in 1 2 3 4 5 6 7 8; do
		[ -d "$T_TMP/h$n/root" ] && ds=$(desired_of $n) || return 1
		echo "h$n $(tree_hash "$T_TMP/h$n/root") $ds"
	done
}
fleet_snap >"$T_TMP/gate.before" || t_not_ok "a snapshot of the hosts (gate.before)"
run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/slow.conf" --name r-gate-slow --waves 1/class,100% \
	--gate harness --gate-budget 60 --wave-timeout 120 --json
fleet_snap >"$T_TMP/gate.after" || t_not_ok "a snapshot of the hosts (gate.after)"
gs=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
c = r["waves"][0]["hosts"]
# the first regression rolls back: a canary still in its A/B then has no verdict
print(r["state"], " ".join(sorted(h["host"] + "=" + h["state"] for h in c)), any(h["verdict"] == "regression" for h in c),
      all(h["state"] == "pending" for w in r["waves"][1:] for h in w["hosts"]), "regression" in (r.get("reason") or ""))' "$OUT" 2>&1)
if [ "$RC" -eq 1 ] && [ "$gs" = "rolled-back h1=restored h5=restored True True True" ] &&
	cmp -s "$T_TMP/gate.before" "$T_TMP/gate.after"; then
	t_ok "gate: regressing canaries: rolled-back, verdict and reason recorded; every tree and desired key as before (no host beyond the canaries touched)"
else
	t_not_ok "gate regression: exit $RC, '$gs'"
	diff "$T_TMP/gate.before" "$T_TMP/gate.after" | sed 's/^/#   /'
	head -c 800 "$ERR" | sed 's/^/#   /'
fi
# the store carried the gate's name, never a command
# every run of the job was nobody's (65534 here), none root's
uids=$(sort -u "$T_TMP/gateout/uids" 2>/dev/null | tr '\n' ' ')
check "the gate's job ran as the gate file's user, nobody ($(id -u nobody)), every time: uids seen '$uids'" -- \
	test "$uids" = "$(id -u nobody) "
# neutral: the same job either way; ab finds no difference, or (the budget
# spent on a loaded host) cannot say, which this rollout allows
run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/neutral.conf" --name r-gate-neutral --waves 1/class,100% \
	--gate harness --gate-budget 60 --gate-allow-inconclusive --wave-timeout 120 --json
gs=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["state"], " ".join(sorted(h["host"] + "=" + ("passed" if h["verdict"] in ("no-difference", "inconclusive") else h["verdict"])
                                  for h in r["waves"][0]["hosts"])))' "$OUT" 2>&1)
bad=""
for n in 1 2 3 4 5 6 7 8; do
	[ "$(cat "$T_TMP/h$n/root/$THP/defrag")" = madvise ] && [ "$(applied $n neutral)" = 1 ] || bad="$bad h$n"
done
if [ "$RC" -eq 0 ] && [ "$gs" = "done h1=passed h5=passed" ] && [ -z "$bad" ]; then
	t_ok "gate: a neutral policy passes (no-difference or inconclusive on both canaries, the harness as the job): the waves went on, every host on it, applied once"
else
	t_not_ok "neutral gate: exit $RC, '$gs', hosts not on it:$bad"; head -c 800 "$ERR" | sed 's/^/#   /'
fi

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
# policy (neutral, or two when the neutral gate was judged a regression on a
# loaded machine) governs, to defer, a value no other policy here sets; and
# NUMA balancing, a knob their policy does not govern (so that only the
# gate's journal can put it back, not the daemon's own apply).  Its
# job, when it finds arm B applied (defrag defer), says so in
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
hold_job "$T_TMP/gatebin/holdjob.sh"
gate_file hold "$T_TMP/gatebin/holdjob.sh"
fleet_snap >"$T_TMP/kill.before" || t_not_ok "a snapshot of the hosts (kill.before)"
h1_before=$(tree_hash "$T_TMP/h1/root")
ready0=$(grep -c "ready: " "$T_TMP/h1/log")
"$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/hold.conf" --name r-gate-kill --waves 1/class,100% \
	--gate hold --gate-budget 60 --wave-timeout 120 --json >"$T_TMP/kill.out" 2>"$T_TMP/kill.err" &
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
	--gate hold --gate-budget 60 --wave-timeout 120 --json >"$T_TMP/both.out" 2>"$T_TMP/both.err" &
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
	--gate hold --gate-budget 60 --wave-timeout 120 --json >"$T_TMP/abkill.out" 2>"$T_TMP/abkill.err" &
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
		--waves 1/class,100% --gate hup --gate-budget 60 --wave-timeout 120 --json >"$T_TMP/$1.out" 2>"$T_TMP/$1.err" &
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

# ---- signatures: refused, the host byte-identical ----------------------------------------

# host N's status error
status_error() { $ETCDCTL get "/nodetune/hosts/h$1/status" --print-value-only |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["state"], d["error"])'; }
# status_is N PREFIX: host N's status says PREFIX (state, then error)
status_is() { case $(status_error "$1" 2>/dev/null) in "$2"*) return 0 ;; esac; return 1; }
before=$(all_trees)
# a controller with another key stops at the counter its predecessor signed, naming its key: nothing written
run "$NODETUNE" fleet rollout --endpoints "$EP" --signing-key "$T_TMP/evil/evil.key" --policy "$T_TMP/nobal.conf" \
	--name r-evil0 --waves 100% --wave-timeout 8 --json
check "a controller whose key did not sign the counter stops: exit $RC, $(head -c 160 "$ERR")" -- sh -c \
	'[ "$1" -eq 3 ] && grep -q "/nodetune/seq: the counter does not verify with this controller.s key" "$2" &&
	 [ -z "$($3 get --prefix /nodetune/rollouts/r-evil0 --keys-only)" ]' - "$RC" "$ERR" "$ETCDCTL"
# a rollout signed by a key no host trusts: every host refuses it (and the rollback's restore, signed by it too);
# without a counter (deleted) that controller starts its own, which the next one of ctl's finds and cannot
# verify: deleted again after (safe: a new counter starts from the clock, above every seq taken)
$ETCDCTL del /nodetune/seq >/dev/null
run "$NODETUNE" fleet rollout --endpoints "$EP" --signing-key "$T_TMP/evil/evil.key" --policy "$T_TMP/nobal.conf" \
	--name r-evil --waves 100% --wave-timeout 8 --json
$ETCDCTL del /nodetune/seq >/dev/null
e=$(status_error 1)
if [ "$RC" -ne 0 ] && [ "$before" = "$(all_trees)" ] && case $e in "invalid refused (unknown_key)"*) true ;; *) false ;; esac &&
	[ "$(grep -c 'refused (unknown_key)' "$T_TMP/h1/log")" -ge 1 ]; then
	t_ok "a rollout signed by an unknown key: refused by every host, every tree byte-identical ($e)"
else
	t_not_ok "unknown key: exit $RC ($(head -c 300 "$ERR")), h1 '$e'"; grep -a 'refused' "$T_TMP/h1/log" | tail -3 | sed 's/^/#   /'
fi
# the metrics file is rewritten at each of the host's intervals
wait_until 20 grep -Eq '^nodetune_fleet_rejected_total\{reason="unknown_key"\} [1-9]' "$T_TMP/h1/nodetune.prom" ||
	t_not_ok "h1's metrics file did not count the unknown key within 20 s"
grep -Eq '^nodetune_fleet_rejected_total\{reason="unknown_key"\} [1-9]' "$T_TMP/h1/nodetune.prom" &&
	grep -q '^nodetune_fleet_rejected_total{reason="replay"} 0' "$T_TMP/h1/nodetune.prom" &&
	t_ok "counted: $(grep -h 'rejected_total{reason="unknown_key"}' "$T_TMP/h1/nodetune.prom")" ||
	t_not_ok "h1's metrics: $(grep -h rejected_total "$T_TMP/h1/nodetune.prom" | tr '\n' ' ')"
# a replay: h1's desired of r-thp, older than what it applied since
$ETCDCTL put /nodetune/hosts/h1/desired "$(cat "$T_TMP/h1.desired.old")" >/dev/null
wait_until 20 status_is 1 "invalid refused (replay)" || t_not_ok "h1 did not refuse the replay within 20 s"
e=$(status_error 1)
case $e in "invalid refused (replay)"*) t_ok "a replayed older signed desired: refused ($e)" ;;
*) t_not_ok "replay: h1 '$e'" ;; esac
# an unsigned desired written with etcdctl, naming a policy the store holds (r-thp's)
sha=$(python3 -c 'import json,sys,base64; print(json.loads(base64.b64decode(json.load(open(sys.argv[1]))["doc"]))["sha256"])' \
	"$T_TMP/h1.desired.old")
$ETCDCTL put /nodetune/hosts/h2/desired "{\"rollout\":\"manual\",\"mode\":\"apply\",\"policy\":\"thp\",\"sha256\":\"$sha\"}" >/dev/null
wait_until 20 status_is 2 "invalid refused (unsigned)" || t_not_ok "h2 did not refuse the unsigned desired within 20 s"
e=$(status_error 2)
case $e in "invalid refused (unsigned)"*) t_ok "an unsigned desired written with etcdctl: refused ($e)" ;;
*) t_not_ok "unsigned: h2 '$e'" ;; esac
[ "$before" = "$(all_trees)" ] && t_ok "refused documents: every tree byte-identical" || t_not_ok "a refused document changed a tree"
[ "$(grep -c 'refused (unsigned)' "$T_TMP/h2/log")" = 1 ] && t_ok "the refusal said once in the host's log" ||
	t_not_ok "h2's log: $(grep -c 'refused (unsigned)' "$T_TMP/h2/log") refusal lines"

# ---- the last refusal in `nodetune status` ----------------------------------------------

# h1 refused r-evil's desired and its restore (unknown_key), then the replay; h2
# the same, then the unsigned desired; the last one's reason counted once.  A
# host that reads its desired key only after the rollback's restore was written
# sees one unknown_key document, not two (the store keeps the last value): each
# host's total is what its log says it refused, one line per document.
# The status socket answers from the daemon's last cycle (each interval), which
# may come after the status key the waits above read
wait_until 10 sh -c "'$NODETUNE' status --socket '$T_TMP/h1/sock' | grep -q '^fleet refused: .* replay '" ||
	t_not_ok "h1's status socket did not show the replay within 10 s"
wait_until 10 sh -c "'$NODETUNE' status --socket '$T_TMP/h2/sock' | grep -q '^fleet refused: .* unsigned '" ||
	t_not_ok "h2's status socket did not show the unsigned desired within 10 s"
run "$NODETUNE" status --socket "$T_TMP/h1/sock"
s1=$(grep '^fleet refused:' "$OUT")
run "$NODETUNE" status --socket "$T_TMP/h2/sock"
s2=$(grep '^fleet refused:' "$OUT")
check "nodetune status: the last refusal, its reason and count (h1: $s1)" -- sh -c \
	'case $1 in "fleet refused: "*" document(s); the last "*", replay (1 of that reason): "*"refused (replay)"*) true ;; *) false ;; esac' \
	- "$s1"
n2=$(( $(grep -c 'refused (unknown_key)' "$T_TMP/h2/log") + 1 ))
check "nodetune status: h2's last refusal, $n2 in all as its log says ($s2)" -- sh -c \
	'[ "$2" -ge 2 ] && case $1 in "fleet refused: $2 document(s); the last "*", unsigned (1 of that reason): "*"refused (unsigned)"*) true ;; *) false ;; esac' \
	- "$s2" "$n2"
run "$NODETUNE" status --socket "$T_TMP/h2/sock" --json
check "nodetune status --json: fleet_refused of h2" -- python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["fleet_refused"]
assert r["reason"] == "unsigned" and r["count"] == 1 and r["total"] == int(sys.argv[2]) and r["time"] > 0, r' "$OUT" "$n2"

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
