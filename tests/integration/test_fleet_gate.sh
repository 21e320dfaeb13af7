#!/bin/sh
# SPDX-License-Identifier: MIT
# host: cpu cgroup abcg
# test_fleet_gate.sh — the fleet's canary gate judged by a real A/B
# (fleet_lib.sh: a 3-member etcd and 8 daemons on simulated hosts of this
# script's own): a rollout gated by a name each host maps to a job of its
# own gates directory; a regressing canary rolls the rollout back, every
# host byte-identical; a passing gate goes on; the job runs as the gate's
# user.
#
# It names cpu: its verdicts are an A/B's on two canaries at once, and
# run beside another script the regressing canary came out inconclusive
# once (bench/RESULTS.md section 19); cgroup: ab makes its trial groups.
# The gate's other paths, a name no host lists and a daemon stopped,
# killed or signalled mid-gate, decide nothing by timing: they are in
# test_fleet_hold.sh, which runs beside other scripts and under ASan.
. "$(dirname "$0")/lib.sh"
t_plan 4
. "$(dirname "$0")/fleet_lib.sh"
fleet_hosts_up

# the hosts on a policy of record first (THP defrag never, numa_balancing
# as the tree has it, 1), the current policy the gates below test against;
# a rollout without a gate (its own checks are test_fleet.sh's)
policy two thp defrag never
run "$NODETUNE" fleet rollout --endpoints "$EP" $SIGN --policy "$T_TMP/two.conf" --name r-two --waves 100% \
	--wave-timeout 30 --json
[ "$RC" -eq 0 ] || { t_not_ok "the hosts on two.conf before the gates (r-two: exit $RC)"; head -c 600 "$ERR" | sed 's/^/#   /'; }

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
printf '%s\n' '#!/bin/sh' \
	"id -u >>'$T_TMP/gateout/uids'" \
	'set -- --rows 1000 --steps 30 --warmup 3 --batch 256 --quiet' \
	'[ "$(cat "$NODETUNE_SYSROOT/proc/sys/kernel/numa_balancing")" = 0 ] && set -- "$@" --inject slow:200' \
	"exec '$T_TMP/gatebin/nodetune-harness' \"\$@\"" >"$T_TMP/gatebin/gatejob.sh"
chmod 755 "$T_TMP/gatebin/gatejob.sh"
# The gate's A/B at alpha 0.005 (ab's default is 0.05): each canary's A/B
# of the neutral policy below is an A/A, which at 0.05 fails its gate one
# time in twenty by construction, and with two canaries about one run in
# ten (a red integration run, 2026-12-07: h1 "regression, ratio 0.926
# [0.859, 0.998]"); the slow:200 canary's B/A of about 0.33 is decided at
# either level.
gate_file harness "$T_TMP/gatebin/gatejob.sh" "alpha = 0.005"
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

# the gate file's alpha reached ab: the canaries' logs and the report each
# kept of its last gate
aa=""
for n in 1 5; do
	aa="$aa h$n: $(grep -c "fleet: gate 'harness' for rollout r-gate-neutral: .*, alpha 0.005$" "$T_TMP/h$n/log") log line(s), report alpha $(jq -c .alpha "$T_TMP/h$n/state/gate-report.json" 2>&1);"
done
check "the gate file's alpha = 0.005 reached each canary's ab:$aa" -- \
	sh -c 'for n in 1 5; do grep -q ", alpha 0.005\$" "$1/h$n/log" && jq -e ".alpha == 0.005" "$1/h$n/state/gate-report.json" >/dev/null || exit 1; done' - "$T_TMP"

fleet_cleanup
t_done
