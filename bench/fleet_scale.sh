#!/bin/sh
# SPDX-License-Identifier: MIT
# fleet_scale.sh — `nodetune fleet rollout` over $HOSTS simulated hosts
# (issue 43): a local 3-member etcd (tests/tools/etcd-cluster.sh) and
# build/tests/fleetsim processes ($PER_PROC hosts each, 1000 by default),
# each host running fleet_host's own code (its lease thread, watch, tick,
# apply and verify) on its own copy of the gpu-host-untuned tree, with a real
# topology (three hardware classes: g4dnmetal, nvidiaDGX2,
# 96em64t-4n4d3ca2co-pci), at the daemon's default --interval ($INTERVAL,
# 30 s: a lease of 60 s, a keepalive every 20 s).  DAEMONS=1 starts one real
# `nodetune daemon --fleet` per host instead (the runs of RESULTS.md §11).
#
#   HOSTS=1000 bench/fleet_scale.sh      # one command per size: 1000, 5000, 10000
#
# The rollout (waves $WAVES) puts [thp] defrag = madvise on every host,
# with a trivial gate on the first wave ($GATE_CMD, /bin/sleep 0.1, an A/A
# run as nobody; GATE_CMD= runs none; GATE_CMD=steady: a job that reports
# 20 steps of 0.05 s each through its step report fd, the same figure
# in every trial, so the A/A's verdict is no-difference whatever the load:
# make check's smoke run, test_fleet_scale.sh, where the 1,000 hosts and
# the three canaries' A/Bs share 2 vCPUs and sleep 0.1's wall time read
# as a regression of 0.84 in 3 runs of 3 on 2026-12-07).  Then, unless
# ROLLBACK=0, a second rollout (defrag = never) that one host ($REFUSER, h2 by default: the
# canary of its class) refuses by its site limits (limits.conf: defrag =
# madvise): the time from the refusal to the wave restored is measured.
#
# Reported (and appended as a row to $OUT, bench/results/fleet_scale.tsv):
#  - wall time per wave and for the rollout, the gate's time aside (the
#    rollout's own timeline: "wave N ... sent" to "wave N (...) passed");
#  - the controller's CPU time and peak RSS (`nodetune fleet rollout`);
#  - etcd's CPU seconds and RSS (summed over the 3 members, from their
#    /metrics: process_cpu_seconds_total, process_resident_memory_bytes)
#    and its database size (etcd_mvcc_db_total_size_in_bytes, member 1);
#  - etcd requests per host per minute, idle ($IDLE_S s with every host
#    registered, nothing rolling out) and during the rollout
#    (grpc_server_handled_total summed over the members: the JSON
#    gateway's calls are gRPC calls inside etcd; raft traffic is not);
#  - the rollout's size in the store: its largest key (head or page: each
#    is one put, against etcd's 1.5 MiB request limit) and all its keys;
#  - the rollback: the refusing host's wave, its size, the seconds from
#    the wave sent to "rolling back" and from there to every host back.
# AUTH=1 (the default): the members serve TLS (certificates made here by
# openssl) with auth on, the users and roles of `nodetune fleet init-auth
# --print` made over the v3 gateway (32 at once: 9 etcdctl runs per host
# would take an hour at 10,000), each host logging in as its own user
# nodetune-host-hN.  etcd hashes passwords with bcrypt at --bcrypt-cost
# ($BCRYPT_COST, 4 here, etcd's minimum; its default is 10): see
# RESULTS.md §20 for what cost 10 would add.  AUTH=0: plain http, no login.
# The members run with a heartbeat of $ETCD_HEARTBEAT_INTERVAL ms and an
# election timeout of $ETCD_ELECTION_TIMEOUT ms (500 and 5000 here; etcd's
# defaults are 100 and 1000): the hosts, the controller and the three
# members share this VM's 2 vCPUs, and at 5,000 hosts the defaults lost
# the leader every few seconds to heartbeats that waited for a CPU ("failed
# to send out heartbeat on time", "server is likely overloaded"); etcd's
# tuning guide sets the heartbeat near the round trip, which here is the
# scheduler's delay.  ETCD_HEARTBEAT_INTERVAL=100 ETCD_ELECTION_TIMEOUT=1000
# gives etcd's defaults back.
# FAULT=die|member|ctl (issue 43, item 4) injects one failure into the
# rollout instead of measuring the rollback (ROLLBACK=0 then):
#  - die: the last 1% of the hosts run in a fleetsim of their own, killed
#    -9 when wave $FAULT_WAVE (3 by default) is sent (no lease revoked, as
#    a host that loses power); the rollout must end done with those of
#    them it had not reached skipped, and once that fleetsim is started
#    again (same trees and state) every host must converge to the policy;
#  - member: etcd member 1 is killed when wave $FAULT_WAVE is sent, and
#    started again after the rollout; the rollout must end done;
#  - ctl: the controller pauses after each transaction
#    (NODETUNE_FLEET_PAUSE=1.5) and is killed -9 in its first pause, then
#    `fleet resume`d, $KILLS times (8), the last resume left to finish; the
#    rollout must end done, each host's desired key put exactly once.
# Its figures go to one line, "fault: ...", and a row of $FAULT_OUT.
# The hosts start evenly over $RAMP_S seconds (HOSTS/100: 100 hosts a
# second; 0: all at once), as a fleet's daemons start over its hosts' boots:
# 10,000 started at once on this VM drove the store into a retry storm
# (RESULTS.md §20.2); "registered" counts from the first start.
# The last line is the summary: "fleet_scale: HOSTS hosts: ...".
set -eu
cd "$(dirname "$0")/.."
: "${NODETUNE:=build/nodetune}" "${FLEETSIM:=build/tests/fleetsim}" "${HOSTS:=1000}" "${PER_PROC:=1000}"
: "${INTERVAL:=30}" "${IDLE_S:=60}" "${WAVES:=1/class,1%,10%,50%,100%}" "${ETCD:=/usr/bin/etcd}"
: "${GATE_CMD=/bin/sleep 0.1}" "${GATE_BUDGET:=60}" "${AUTH:=1}" "${DAEMONS:=0}" "${ROLLBACK:=1}"
: "${REFUSER:=h2}" "${BCRYPT_COST:=4}" "${OUT:=bench/results/fleet_scale.tsv}" "${WAVE_TIMEOUT:=600}"
export ETCD
: "${RAMP_S:=$((HOSTS / 100))}" "${FAULT:=}" "${FAULT_WAVE:=3}" "${KILLS:=8}" "${FAULT_OUT:=bench/results/fleet_faults.tsv}"
case $FAULT in '' | die | member | ctl) ;; *) echo "bench: FAULT=$FAULT: not die, member or ctl" >&2; exit 2 ;; esac
[ -z "$FAULT" ] || ROLLBACK=0
export ETCD_HEARTBEAT_INTERVAL="${ETCD_HEARTBEAT_INTERVAL:-500}" ETCD_ELECTION_TIMEOUT="${ETCD_ELECTION_TIMEOUT:-5000}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/nodetune-bench-XXXXXX")
topos=../shared/topologies
[ -d "$topos" ] || topos=/work/shared/topologies
cleanup() {
	trap - EXIT INT TERM
	for p in "$TMP"/h*/pid "$TMP"/sim*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
	for p in "$TMP"/h*/pid "$TMP"/sim*.pid; do
		[ -f "$p" ] && while kill -0 "$(cat "$p")" 2>/dev/null; do sleep 0.2; done
	done
	tests/tools/etcd-cluster.sh stop "$TMP/etcd" 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ]; then echo "bench: kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
{ [ -x "$NODETUNE" ] && [ -x "$FLEETSIM" ]; } || { echo "bench: $NODETUNE or $FLEETSIM not built (make)" >&2; exit 2; }
[ -x "$ETCD" ] || { echo "bench: no etcd ($ETCD)" >&2; exit 2; }
load() { cut -d' ' -f1-3 /proc/loadavg | tr ' ' /; }
load0=$(load)

CTL="" CURLCA="" ETCDCTL_AUTH="" SIMCRED=""
if [ "$AUTH" = 1 ]; then
	C=$TMP/certs
	mkdir -p "$C"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=fleet_scale CA" -keyout "$C/ca-key.pem" \
		-out "$C/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=etcd" -keyout "$C/server-key.pem" -out "$C/server.csr" 2>/dev/null
	printf 'subjectAltName = IP:127.0.0.1\n' >"$C/ext"
	openssl x509 -req -in "$C/server.csr" -CA "$C/ca.pem" -CAkey "$C/ca-key.pem" -CAcreateserial -days 2 \
		-extfile "$C/ext" -out "$C/server.pem" 2>/dev/null
	export ETCD_TLS="$C"
	export ETCD_BCRYPT_COST="$BCRYPT_COST"   # etcd reads ETCD_<FLAG> as --bcrypt-cost
fi
EP=$(tests/tools/etcd-cluster.sh start "$TMP/etcd")
EP1=${EP%%,*}
if [ "$AUTH" = 1 ]; then
	mkdir -m 0700 "$TMP/pw"
	"$NODETUNE" fleet init-auth --endpoints "$EP" --cacert "$C/ca.pem" --password-dir "$TMP/pw" --print \
		--hosts "$(seq -s, -f 'h%.0f' 1 "$HOSTS")" >"$TMP/auth.sh"
	python3 bench/fleet_auth_apply.py "$EP1" "$C/ca.pem" <"$TMP/auth.sh"
	CTL="--cacert $C/ca.pem --user nodetune-controller --password-file $TMP/pw/nodetune-controller"
	CURLCA="--cacert $C/ca.pem"
	ETCDCTL_AUTH="--cacert $C/ca.pem --user root:$(cat "$TMP/pw/root")"
	SIMCRED="--cacert $C/ca.pem --password-dir $TMP/pw"
fi
# the cluster's /metrics summed: VALUE of the samples named $1 (grep -E)
metric() {
	# shellcheck disable=SC2086
	for u in $(echo "$EP" | tr , ' '); do curl -s $CURLCA "$u/metrics"; done |
		awk -v re="^($1)[ {]" '$0 ~ re { s += $NF } END { printf "%.0f\n", s }'
}
handled() { metric grpc_server_handled_total; }
# shellcheck disable=SC2086
alive() { "$NODETUNE" fleet hosts --endpoints "$EP" $CTL --json | python3 -c '
import json, sys; print(sum(1 for h in json.load(sys.stdin)["hosts"] if h["alive"]))'; }

# the controller's signing key, which every host trusts (fleet keygen)
mkdir -m 700 "$TMP/sk" && mkdir -m 755 "$TMP/keys.d"
"$NODETUNE" fleet keygen --out "$TMP/sk" --name ctl >/dev/null && cp "$TMP/sk/ctl.pub" "$TMP/keys.d/"
# the gate the rollout names: a command and its arguments, no shell
mkdir -p "$TMP/gates.d" && chmod 755 "$TMP/gates.d"
if [ "$GATE_CMD" = steady ]; then
	# shellcheck disable=SC2016
	printf '%s\n' 'command = /bin/sh' 'arg = -c' \
		'arg = i=0; while [ $i -lt 20 ]; do i=$((i + 1)); echo "{\"step\": $i, \"t\": 0.05, \"samples\": 1}" >&$NODETUNE_STEP_FD; done' \
		'user = nobody' >"$TMP/gates.d/scale.conf"
	chmod 644 "$TMP/gates.d/scale.conf"
elif [ -n "$GATE_CMD" ]; then
	set -f
	# shellcheck disable=SC2086
	set -- $GATE_CMD
	set +f
	{ echo "command = $1"; shift; for a in "$@"; do echo "arg = $a"; done; echo "user = nobody"; } >"$TMP/gates.d/scale.conf"
	chmod 644 "$TMP/gates.d/scale.conf"
fi
# each host's tree (a copy: apply writes into it) and state
# (copied in one process: a tar or cp per host is a fork per host)
python3 -c '
import shutil, sys
for i in range(1, int(sys.argv[3]) + 1):
    shutil.copytree(sys.argv[1], "%s/h%d/root" % (sys.argv[2], i), symlinks=True)
' tests/fixtures/sysroot/gpu-host-untuned "$TMP" "$HOSTS"
printf '# fleet_scale: this host refuses defrag = never\n[thp]\ndefrag = madvise\n' >"$TMP/$REFUSER/limits.conf"
chmod 644 "$TMP/$REFUSER/limits.conf"
xml() { case $(($1 % 3)) in 0) echo g4dnmetal.xml ;; 1) echo nvidiaDGX2.xml ;; *) echo 96em64t-4n4d3ca2co-pci.xml ;; esac; }
echo "bench: $(date +%T) hosts start" >&2
t_start=$(date +%s.%N)
if [ "$DAEMONS" = 1 ]; then
	i=0
	while [ $i -lt "$HOSTS" ]; do
		i=$((i + 1)); d=$TMP/h$i
		# shellcheck disable=SC2086
		"$NODETUNE" daemon --sysroot "$d/root" --topology "$topos/$(xml $i)" --policy policies/baseline.conf \
			--fleet "$EP" --host "h$i" ${C:+--cacert $C/ca.pem --user nodetune-host-h$i --password-file $TMP/pw/nodetune-host-h$i} \
			--limits "$d/limits.conf" --fleet-keys "$TMP/keys.d" --gates-dir "$TMP/gates.d" --no-metrics \
			--socket "$d/sock" --state-dir "$d/state" --interval "$INTERVAL" >"$d/log" 2>&1 &
		echo $! >"$d/pid"
	done
else
	# sim NAME FIRST COUNT RAMP: a fleetsim of hosts hFIRST.., started over
	# RAMP s, its pid in TMP/NAME.pid
	sim() {
		# shellcheck disable=SC2086
		"$FLEETSIM" --endpoints "$EP" --dir "$TMP" --first "$2" --count "$3" --policy policies/baseline.conf \
			--topologies "$topos/nvidiaDGX2.xml,$topos/96em64t-4n4d3ca2co-pci.xml,$topos/g4dnmetal.xml" \
			--keys-dir "$TMP/keys.d" --gates-dir "$TMP/gates.d" --interval "$INTERVAL" --ramp "$4" $SIMCRED \
			>"$TMP/$1.out" 2>>"$TMP/$1.log" &
		echo $! >"$TMP/$1.pid"
	}
	die_n=0
	[ "$FAULT" = die ] && die_n=$(((HOSTS + 99) / 100))
	first=1 k=0
	while [ $first -le $((HOSTS - die_n)) ]; do
		n=$((HOSTS - die_n - first + 1)); [ $n -gt "$PER_PROC" ] && n=$PER_PROC
		k=$((k + 1))
		sim "sim$k" $first $n "$RAMP_S"
		first=$((first + n))
	done
	[ "$die_n" = 0 ] || sim simdie $first "$die_n" "$RAMP_S"
fi
# every 5 s: each look reads every host's keys (about 2 kB a host)
n=0
while [ "$(alive 2>/dev/null || echo 0)" != "$HOSTS" ] && [ $n -lt 240 ]; do sleep 5; n=$((n + 1)); done
[ "$(alive)" = "$HOSTS" ] || { echo "bench: only $(alive) of $HOSTS hosts registered" >&2; tail -3 "$TMP"/sim*.log >&2; exit 3; }
reg_s=$(python3 -c "import time; print('%.0f' % (time.time() - $t_start))")
if [ "$DAEMONS" = 1 ]; then
	rss=$(for p in "$TMP"/h*/pid; do awk '/VmRSS/ { print $2 }' "/proc/$(cat "$p")/status"; done | awk '{ s += $1 } END { print s }')
else
	rss=$(for p in "$TMP"/sim*.pid; do awk '/VmRSS/ { print $2 }' "/proc/$(cat "$p")/status"; done | awk '{ s += $1 } END { print s }')
fi

echo "bench: $(date +%T) registered in ${reg_s} s" >&2
# idle: every host registered and past its first cycle (its first status
# written: the cycles start spread over an interval), nothing rolling out
sleep "${SETTLE_S:-$((INTERVAL + 5))}"
h0=$(handled); t0=$(date +%s.%N)
sleep "$IDLE_S"
h1=$(handled); t1=$(date +%s.%N)
load_idle=$(load)

# the controller: its wall, CPU and peak RSS (python's children's rusage)
rollout() {
	python3 - "$NODETUNE" "$EP" "$1" "$WAVES" "$GATE_CMD" "$GATE_BUDGET" "$CTL" "$TMP/sk/ctl.key" "$2" "$WAVE_TIMEOUT" <<'EOF'
import resource, subprocess, sys, time
nt, ep, pol, waves, gate, budget, ctl, key, name, wt = sys.argv[1:]
cmd = [nt, "fleet", "rollout", "--endpoints", ep, "--policy", pol, "--name", name, "--waves", waves,
       "--wave-timeout", wt, "--signing-key", key] + ctl.split()
if gate:
    cmd += ["--gate", "scale", "--gate-budget", budget, "--gate-allow-inconclusive"]
t = time.monotonic()
p = subprocess.run(cmd, stdout=open(sys.argv[3] + ".out", "w"), stderr=open(sys.argv[3] + ".err", "w"))
wall = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(p.returncode, "%.2f" % wall, "%.2f" % (ru.ru_utime + ru.ru_stime), ru.ru_maxrss)
EOF
}
# the failure, in the background while the controller runs: when wave
# FAULT_WAVE is sent (the controller's timeline, on its stdout), kill the dying hosts'
# fleetsim or member 1; the time is kept in TMP/fault.t
fault_at_wave() {
	until grep -q "wave $FAULT_WAVE (.*) sent to" "$TMP/p.conf.out" 2>/dev/null; do
		[ -f "$TMP/ctl" ] && [ -s "$TMP/ctl" ] && return 0
		sleep 0.1
	done
	date +%s.%N >"$TMP/fault.t"
	case $FAULT in
	die) kill -9 "$(cat "$TMP/simdie.pid")" ;;
	member) tests/tools/etcd-cluster.sh kill-member "$TMP/etcd" 1 ;;
	esac
}
# FAULT=ctl: the controller killed -9 in its first pause, resumed, KILLS
# times; prints what rollout() prints (its status, wall, CPU of all the
# controllers, peak RSS) and keeps each kill's pause line in TMP/kills
rollout_killed() {
	t0=$(date +%s.%N) kills=0
	: >"$TMP/kills"
	export NODETUNE_FLEET_PAUSE=1.5
	rollout "$1" "$2" >"$TMP/ctl.0" &
	pid=$!
	while [ $kills -lt "$KILLS" ]; do
		# the controller's own process: rollout()'s python runs it
		until grep -q "(NODETUNE_FLEET_PAUSE)" "$1.out" 2>/dev/null || ! kill -0 $pid 2>/dev/null; do sleep 0.02; done
		kill -0 $pid 2>/dev/null || break
		sleep 0.3
		# the controller itself: its argv[0] is $NODETUNE (a bare -f pattern
		# also took this script's own process once)
		pkill -9 -f "^$NODETUNE fleet (rollout|resume) --endpoints $EP " || break
		kills=$((kills + 1))
		grep "(NODETUNE_FLEET_PAUSE)" "$1.out" | head -n 1 >>"$TMP/kills"
		# (a resume killed -9 exits 247, its python's sys.exit(-9): not
		# this script's end under set -e, as it was in the first runs)
		wait $pid || true
		[ "$(rstate "$2")" = running ] || break
		mv "$1.out" "$1.out.$kills"
		[ $kills -lt "$KILLS" ] || unset NODETUNE_FLEET_PAUSE
		resume "$1" "$2" >"$TMP/ctl.$kills" &
		pid=$!
	done
	wait $pid || true
	unset NODETUNE_FLEET_PAUSE
	st=$(rstate "$2")
	python3 -c 'import sys, time; print(sys.argv[1], "%.2f" % (time.time() - float(sys.argv[2])), "0", "0")' \
		"$([ "$st" = done ] && echo 0 || echo 3)" "$t0"
}
resume() {
	# shellcheck disable=SC2086
	python3 -c 'import subprocess, sys; sys.exit(subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".out", "w"),
stderr=open(sys.argv[1] + ".err", "w")).returncode)' "$1" "$NODETUNE" fleet resume --endpoints "$EP" --name "$2" \
		--signing-key "$TMP/sk/ctl.key" $CTL
}
# shellcheck disable=SC2086
rstate() { "$NODETUNE" fleet status --endpoints "$EP" $CTL --name "$1" --json | python3 -c '
import json, sys; print(json.load(sys.stdin)["rollouts"][0]["state"])' 2>/dev/null; }
# each host's desired key's version (etcd counts its puts), "HOST VERSION" lines
desired_versions() {
	# shellcheck disable=SC2086
	env ETCDCTL_API=3 etcdctl --endpoints "$EP" $ETCDCTL_AUTH --command-timeout=60s get --prefix /nodetune/hosts/ \
		--keys-only -w json | python3 -c '
import base64, json, sys
for kv in json.load(sys.stdin).get("kvs", []):
    k = base64.b64decode(kv["key"]).decode()
    if k.endswith("/desired"):
        print(k.split("/")[3], kv["version"])' | sort
}
printf '[main]\nsummary = fleet_scale\n[thp]\ndefrag = madvise\n' >"$TMP/p.conf"
printf '[main]\nsummary = fleet_scale, refused by one host\n[thp]\ndefrag = never\n' >"$TMP/q.conf"
chmod 644 "$TMP/p.conf" "$TMP/q.conf"
echo "bench: $(date +%T) rollout" >&2
e0=$(metric process_cpu_seconds_total)
h2=$(handled)
case $FAULT in
die | member)
	fault_at_wave &
	fpid=$!
	rollout "$TMP/p.conf" scale >"$TMP/ctl"
	wait $fpid
	;;
ctl)
	desired_versions >"$TMP/v0"
	rollout_killed "$TMP/p.conf" scale >"$TMP/ctl"
	desired_versions >"$TMP/v1"
	;;
*) rollout "$TMP/p.conf" scale >"$TMP/ctl" ;;
esac
h3=$(handled)
e1=$(metric process_cpu_seconds_total)
load_roll=$(load)
read -r rc wall cpu maxrss <"$TMP/ctl"
etcd_rss=$(metric process_resident_memory_bytes)
# shellcheck disable=SC2086
db=$(curl -s $CURLCA "$EP1/metrics" | awk '/^etcd_mvcc_db_total_size_in_bytes / { printf "%.0f", $2 }')
# the rollout whole (its head and pages, read back by the controller's own
# code), and its size in the store: docsz the largest key (etcd's request
# limit applies to each put), docall the head and every page
rollout_json() {
	# shellcheck disable=SC2086
	"$NODETUNE" fleet status --endpoints "$EP" $CTL --name "$1" --json >"$2" 2>"$2.err" || true
}
rollout_json scale "$TMP/doc.json"
# shellcheck disable=SC2086
env ETCDCTL_API=3 etcdctl --endpoints "$EP" $ETCDCTL_AUTH --command-timeout=30s get --prefix /nodetune/rollouts/scale \
	-w json >"$TMP/docs.json" || true
sizes=$(python3 -c 'import base64, json, sys
kvs = json.load(open(sys.argv[1])).get("kvs", [])
n = [len(base64.b64decode(k["value"])) for k in kvs]
print(max(n or [0]), sum(n))' "$TMP/docs.json")
docsz=${sizes% *} docall=${sizes#* }
# FAULT: what the failure did, and (die) the dead hosts back
if [ -n "$FAULT" ]; then
	fstate=$(rstate scale)
	case $FAULT in
	die)
		# the dying hosts' states in the rollout as it ended, then their
		# fleetsim started again: every host must converge to p.conf
		dead=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["rollouts"][0]
first, n = int(sys.argv[2]), int(sys.argv[3])
st = {}
for w in d["waves"]:
    for h in w["hosts"]:
        if first <= int(h["host"][1:]) < first + n:
            st[h["state"]] = st.get(h["state"], 0) + 1
print(",".join("%s:%d" % kv for kv in sorted(st.items())))' "$TMP/doc.json" $((HOSTS - die_n + 1)) "$die_n")
		tb=$(date +%s.%N)
		sim simdie $((HOSTS - die_n + 1)) "$die_n" 0
		# shellcheck disable=SC2086
		conv() { "$NODETUNE" fleet hosts --endpoints "$EP" $CTL --json | python3 -c '
import json, sys
print(sum(1 for h in json.load(sys.stdin)["hosts"] if h["alive"] and (h.get("status") or {}).get("policy") == "p.conf"
          and (h.get("status") or {}).get("state") == "verified"))'; }
		n=0
		[ "$fstate" = done ] || n=120   # nothing to converge to
		while [ $n -lt 120 ] && [ "$(conv 2>/dev/null || echo 0)" != "$HOSTS" ]; do sleep 5; n=$((n + 1)); done
		back=$(conv)
		back_s=$(python3 -c "import time; print('%.0f' % (time.time() - $tb))")
		detail="$die_n hosts killed -9 when wave $FAULT_WAVE was sent; in the rollout they ended $dead; started again: $back of $HOSTS hosts run p.conf verified after $back_s s"
		;;
	member)
		tests/tools/etcd-cluster.sh start-member "$TMP/etcd" 1 >/dev/null
		detail="etcd member 1 killed when wave $FAULT_WAVE was sent (started again after the rollout)"
		;;
	ctl)
		puts=$(join -a 2 -e 0 -o 1.2,2.2 "$TMP/v0" "$TMP/v1" | awk '{ d = $2 - $1; c[d]++ }
			END { for (k in c) printf "%s%d host(s) put %d time(s)", (n++ ? ", " : ""), c[k], k }')
		detail="controller killed -9 $(wc -l <"$TMP/kills") times, in its first pause each time, resumed; desired keys: $puts"
		sed 's/^/# killed after: /' "$TMP/kills"
		;;
	esac
	echo "fault: $FAULT: rollout $fstate (exit $rc) in $wall s; $detail"
	[ -s "$FAULT_OUT" ] || printf 'hosts\tfault\trc\tstate\twall_s\tload\tdetail\n' >"$FAULT_OUT"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$HOSTS" "$FAULT" "$rc" "$fstate" "$wall" "$(load)" "$detail" >>"$FAULT_OUT"
fi
bad=0
for d in "$TMP"/h*/root; do [ "$(cat "$d/sys/kernel/mm/transparent_hugepage/defrag")" = madvise ] || bad=$((bad + 1)); done

rb="-"
if [ "$ROLLBACK" = 1 ] && [ "$rc" = 0 ]; then
	GATE_CMD="" rollout "$TMP/q.conf" refused >"$TMP/ctl2" || true
	rollout_json refused "$TMP/doc2.json"
	rb=$(python3 bench/fleet_scale_report.py rollback "$TMP/doc2.json" "$REFUSER")
fi

python3 bench/fleet_scale_report.py summary "$TMP/doc.json" "$HOSTS" "$rc" "$wall" "$cpu" "$maxrss" \
	"$h0" "$h1" "$t0" "$t1" "$h2" "$h3" "$e0" "$e1" "$etcd_rss" "$db" "$docsz" "$bad" "$rss" "$reg_s" \
	"$AUTH" "$DAEMONS" "$load0" "$load_idle" "$load_roll" "$rb" "$docall" "$OUT"
