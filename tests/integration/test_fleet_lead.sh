#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# test_fleet_lead.sh — a controller keeps its lead through a step longer
# than its leader lease (issue 43: at 5,000 hosts a rollback's step of 20
# transactions outlived the 5 s lease, which was renewed only between
# steps, and the controller stopped: "the leader lease expired").
#
# A real 3-member etcd on loopback, three hosts in one fleetsim process
# (fleet_host's code), and a rollout whose controller sleeps 7 s after each
# transaction (NODETUNE_FLEET_PAUSE=7: longer than FLEET_LEADER_TTL_S, 5 s,
# the way a step over thousands of hosts or a slow store is).  Checks: the
# rollout ends done with every host verified, the controller never said
# the lease expired, and its leader key is gone afterwards (revoked, not
# left to expire).
#
# Then a store that does not answer for a while: a fourth host reaches the
# store only through tests/tools/etcd-flaky-proxy.py, which answers its
# first two reads of a policy (/nodetune/policies/...) with HTTP 503.  At
# 10,000 hosts one canary's timed-out read was reported as an invalid
# policy and rolled the whole rollout back; the host must ask again
# instead.  Checks: the proxy did fail two reads and the host said it asks
# again; the rollout ends done with the 4 hosts verified.
. "$(dirname "$0")/lib.sh"
t_plan 5

. "$(dirname "$0")/etcd_lib.sh"
ETCD=${ETCD:-/usr/bin/etcd}
fleetsim_have || t_rest

EP=$(ETCD=$ETCD tests/tools/etcd-cluster.sh start "$T_TMP/etcd") || { t_not_ok "etcd cluster started"; t_rest; }
t_defer "tests/tools/etcd-cluster.sh stop '$T_TMP/etcd'"
mkdir -m 700 "$T_TMP/sk" && mkdir -m 755 "$T_TMP/keys.d" "$T_TMP/gates.d"
"$NODETUNE" fleet keygen --out "$T_TMP/sk" --name ctl >/dev/null && cp "$T_TMP/sk/ctl.pub" "$T_TMP/keys.d/"
for n in 1 2 3; do mkdir "$T_TMP/h$n" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$T_TMP/h$n/root"; done
"$FLEETSIM" --endpoints "$EP" --dir "$T_TMP" --count 3 --policy policies/baseline.conf \
	--topologies "$SHARED/nvidiaDGX2.xml" --keys-dir "$T_TMP/keys.d" --gates-dir "$T_TMP/gates.d" \
	--interval 2 >"$T_TMP/sim.out" 2>"$T_TMP/sim.log" &
echo $! >"$T_TMP/sim.pid"
t_defer "kill \$(cat '$T_TMP/sim.pid') 2>/dev/null; while kill -0 \$(cat '$T_TMP/sim.pid') 2>/dev/null; do sleep 0.2; done"
alive() { [ "$("$NODETUNE" fleet hosts --endpoints "$EP" --json | jq '[.hosts[] | select(.alive)] | length')" = 3 ]; }
wait_until 30 alive || { t_not_ok "3 hosts registered"; sed 's/^/#   /' "$T_TMP/sim.log" | tail -5; t_rest; }

printf '[main]\nsummary = lead test\n[thp]\ndefrag = madvise\n' >"$T_TMP/p.conf"
chmod 644 "$T_TMP/p.conf"
run env NODETUNE_FLEET_PAUSE=7 "$NODETUNE" fleet rollout --endpoints "$EP" --policy "$T_TMP/p.conf" --name lead \
	--waves 1/class,100% --wave-timeout 60 --signing-key "$T_TMP/sk/ctl.key"
pauses=$(cat "$OUT" "$ERR" | grep -c "(NODETUNE_FLEET_PAUSE)")
state=$("$NODETUNE" fleet status --endpoints "$EP" --name lead --json | jq -r '.rollouts[0].state')
verified=$("$NODETUNE" fleet hosts --endpoints "$EP" --json | jq '[.hosts[] | select(.status.state == "verified")] | length')
if [ "$RC" -eq 0 ] && [ "$state" = done ] && [ "$verified" = 3 ] && [ "$pauses" -ge 2 ]; then
	t_ok "a controller paused 7 s after each of $pauses transactions (lease 5 s): done, 3 of 3 hosts verified"
else
	t_not_ok "the rollout through 7 s pauses: exit $RC, state '$state', $verified of 3 verified, $pauses pauses"
	tail -n 4 "$ERR" | sed 's/^/#   /'
fi
# (only after pauses: a controller that never paused could not have lost it)
if [ "$pauses" -ge 2 ] && ! grep -q "lease expired" "$ERR" "$OUT"; then
	t_ok "the controller never lost its lease through $pauses pauses"
else
	t_not_ok "the controller kept its lease: $pauses pauses; $(grep -h "lease expired" "$ERR" "$OUT" | head -n 1)"
fi
keys=$(env ETCDCTL_API=3 etcdctl --endpoints "$EP" get --prefix --keys-only /nodetune/rollouts/lead/leader | grep -c .)
if [ -n "$state" ] && [ "$keys" = 0 ]; then t_ok "its leader key is gone after the rollout (the lease revoked)"
else t_not_ok "the leader key is gone after a rollout (state '$state', $keys keys)"; fi

# ---- a store that fails a host's policy reads twice ---------------------
python3 tests/tools/etcd-flaky-proxy.py "$(echo "$EP" | cut -d, -f1 | sed 's/.*://')" /nodetune/policies/ 2 \
	"$T_TMP/proxy.port" 2>"$T_TMP/proxy.log" &
echo $! >"$T_TMP/proxy.pid"
t_defer "kill \$(cat '$T_TMP/proxy.pid') 2>/dev/null"
wait_until 10 test -s "$T_TMP/proxy.port" || { t_not_ok "the proxy is listening"; t_rest; }
mkdir "$T_TMP/h4" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$T_TMP/h4/root"
"$FLEETSIM" --endpoints "http://127.0.0.1:$(cat "$T_TMP/proxy.port")" --dir "$T_TMP" --first 4 --count 1 \
	--policy policies/baseline.conf --topologies "$SHARED/nvidiaDGX2.xml" --keys-dir "$T_TMP/keys.d" \
	--gates-dir "$T_TMP/gates.d" --interval 2 >"$T_TMP/sim4.out" 2>"$T_TMP/sim4.log" &
echo $! >"$T_TMP/sim4.pid"
t_defer "kill \$(cat '$T_TMP/sim4.pid') 2>/dev/null; while kill -0 \$(cat '$T_TMP/sim4.pid') 2>/dev/null; do sleep 0.2; done"
alive4() { [ "$("$NODETUNE" fleet hosts --endpoints "$EP" --json | jq '[.hosts[] | select(.alive)] | length')" = 4 ]; }
wait_until 30 alive4 || { t_not_ok "4 hosts registered"; sed 's/^/#   /' "$T_TMP/sim4.log" | tail -5; t_rest; }
printf '[main]\nsummary = lead test, again\n[thp]\ndefrag = never\n' >"$T_TMP/q.conf"
chmod 644 "$T_TMP/q.conf"
run "$NODETUNE" fleet rollout --endpoints "$EP" --policy "$T_TMP/q.conf" --name flaky --waves 1/class,100% \
	--wave-timeout 60 --signing-key "$T_TMP/sk/ctl.key"
failed=$(grep -c '^failed ' "$T_TMP/proxy.log")
asked=$(grep -c 'cannot read the desired policy.*asking again' "$T_TMP/sim4.log")
if [ "$failed" -eq 2 ] && [ "$asked" -ge 1 ]; then
	t_ok "the proxy failed h4's policy read $failed times; h4 said it asks again ($asked)"
else
	t_not_ok "h4's policy reads failed twice and it asked again: $failed failed, $asked said"
	sed 's/^/#   /' "$T_TMP/proxy.log" "$T_TMP/sim4.log" | tail -5
fi
state=$("$NODETUNE" fleet status --endpoints "$EP" --name flaky --json | jq -r '.rollouts[0].state')
verified=$("$NODETUNE" fleet hosts --endpoints "$EP" --json | jq '[.hosts[] | select(.status.state == "verified")] | length')
if [ "$RC" -eq 0 ] && [ "$state" = done ] && [ "$verified" = 4 ]; then
	t_ok "the rollout through a store that failed a host's reads: done, 4 of 4 verified"
else
	t_not_ok "the rollout through the flaky reads: exit $RC, state '$state', $verified of 4 verified"
	"$NODETUNE" fleet status --endpoints "$EP" --name flaky | grep -E 'invalid|rolling|rolled' | sed 's/^/#   /'
fi
t_done
