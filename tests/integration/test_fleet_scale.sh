#!/bin/sh
# SPDX-License-Identifier: MIT
# host: abcg
# test_fleet_scale.sh — the 1,000-host smoke run of bench/fleet_scale.sh
# (issue 43): the same script the scale bench is, at HOSTS=1000
# ($FLEET_SMOKE_HOSTS) in fleetsim processes running fleet_host's code,
# against a real 3-member etcd on loopback, plain http without auth (TLS and
# a login per host are the bench's, and take longer than make check has),
# 10 s of idle and a gate of 10 s on the first wave (GATE_CMD=steady: an
# A/A whose job reports steps of one fixed length, so that its verdict is
# not the load's: with sleep 0.1 as the job, the three canaries' A/Bs beside
# 1,000 hosts on 2 vCPUs read a regression of 0.84 and rolled the rollout
# back in 3 runs of 3 on 2026-12-07, CI's among them).  Nothing it checks
# is a time that another script beside it could move (a wave's timeout,
# 120 s, against 32 s for 600 hosts at 10,000), so it holds no "cpu" and
# runs beside the others (alone it cost make check 63 s, 111 s under
# ASan); it holds "abcg": the canaries' gates are real `nodetune ab`
# runs, whose trial groups (nodetune-ab/...) are made in this machine's
# cgroup tree.
#
# Checks: the script exits 0 with its summary line last; the rollout is
# done with every host verified and every host's tree holding the policy;
# the refused second rollout rolled its wave back (a wave, its hosts and
# two times); the TSV row it appended is whole (26 fields, the hosts, the
# rollout's largest key under etcd's request limit, idle requests per host per
# minute between 1 and 60: the 10 s idle window is shorter than the
# hosts' 20 and 30 s periods, so it reads low, about 4); nothing of the run is left (its temp dir, its
# fleetsim processes: lib.sh's t_done fails on any process left).
. "$(dirname "$0")/lib.sh"
t_plan 5

. "$(dirname "$0")/etcd_lib.sh"
ETCD=${ETCD:-/usr/bin/etcd}
fleetsim_have || t_rest
N=${FLEET_SMOKE_HOSTS:-1000}
TSV=$T_TMP/scale.tsv
mkdir "$T_TMP/bench"

run env TMPDIR="$T_TMP/bench" HOSTS="$N" IDLE_S=10 SETTLE_S=5 AUTH=0 GATE_CMD=steady GATE_BUDGET=10 WAVE_TIMEOUT=120 OUT="$TSV" \
	NODETUNE="$NODETUNE" FLEETSIM="$FLEETSIM" ETCD="$ETCD" sh bench/fleet_scale.sh
last=$(tail -n 1 "$OUT")
if [ "$RC" -eq 0 ] && echo "$last" | grep -Eq "^fleet_scale: $N hosts: "; then
	t_ok "fleet_scale.sh at $N hosts: exit 0, its summary last: $last"
else
	t_not_ok "fleet_scale.sh at $N hosts: exit $RC, last line: $last"
	tail -n 5 "$ERR" | sed 's/^/#   /'
fi
if echo "$last" | grep -Eq "^fleet_scale: $N hosts: done, $N verified," &&
	grep -Eq "^rollout: exit 0, done, $N of $N verified, trees not changed: 0;" "$OUT"; then
	t_ok "the rollout is done: $N of $N hosts verified, every tree holds the policy"
else
	t_not_ok "the rollout is done with every host verified and every tree changed"
	grep -E '^(rollout|waves):' "$OUT" | sed 's/^/#   /'
fi
if echo "$last" | grep -Eq ", rollback [0-9]+/[0-9]+/[0-9.]+/[0-9.]+$"; then
	t_ok "the refused rollout rolled its wave back (wave/hosts/seconds to rolling back/seconds to restored: ${last##*rollback })"
else
	t_not_ok "the refused rollout rolled its wave back: ${last##*rollback }"
fi
row=$(tail -n 1 "$TSV" 2>/dev/null)
if echo "$row" | awk -F'\t' -v n="$N" 'NF == 26 && $1 == n && $2 == "fleetsim" && $17 > 0 && $17 < 1572864 &&
	$18 >= 1 && $18 <= 60 { ok = 1 } END { exit !ok }'; then
	t_ok "the TSV row is whole and sane: $(echo "$row" | cut -f1,2,5,8,17,18 | tr '\t' ' ')"
else
	t_not_ok "the TSV row is whole and sane: $row"
fi
left=$(find "$T_TMP/bench" -mindepth 1 -maxdepth 1 | head -3)
if [ -z "$left" ]; then t_ok "the run's temp dir is gone"; else t_not_ok "the run left $left"; fi
t_done
