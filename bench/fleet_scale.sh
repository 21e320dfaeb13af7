#!/bin/sh
# SPDX-License-Identifier: MIT
# fleet_scale.sh — `nodetune fleet` over $HOSTS simulated hosts (default 200):
# a local 3-member etcd (tests/tools/etcd-cluster.sh) and one real
# `nodetune daemon --fleet` per host, each on its own copy of the
# gpu-host-untuned tree with a real topology (three hardware classes:
# g4dnmetal, nvidiaDGX2, 96em64t-4n4d3ca2co-pci), at the daemon's default
# --interval ($INTERVAL, 30 s: a lease of 60 s, a keepalive every 20 s).
# A trivial gate on the first wave: each canary A/Bs the current policy
# against the new one on the job of the gate "scale" that each host lists
# (its gates.d: $GATE_CMD, /bin/sleep 0.1 by default: the same job either
# way, so an A/A, run as nobody), --gate-allow-inconclusive; GATE_CMD= runs
# no gate.
#
# Reported:
#  - the rollout's wall time through the waves $WAVES (5 waves), the gate's
#    time (from the rollout's own timeline: the first wave sent to "every
#    canary passed its gate"), the wall time minus the gate's, and the
#    controller's CPU time (utime + stime of `nodetune fleet rollout`);
#  - etcd requests per host per minute, idle ($IDLE_S seconds with every
#    host registered and nothing rolling out) and during the rollout:
#    grpc_server_handled_total summed over the 3 members' /metrics (the
#    v3 JSON gateway's calls are gRPC calls inside etcd, so they count;
#    the members' own raft traffic is not gRPC and does not), divided by
#    the hosts and the minutes.  During the rollout it includes the
#    controller's requests;
#  - the rollout document's size (/nodetune/rollouts/NAME) against etcd's
#    request limit.
# AUTH=1: the members serve TLS (certificates made here by openssl) with
# auth enabled by `nodetune fleet init-auth --print`; each host logs in as
# its own user (nodetune-host-hN), the controller as nodetune-controller:
# the cost of TLS and tokens, against the same run without.
set -eu
cd "$(dirname "$0")/.."
: "${NODETUNE:=build/nodetune}" "${HOSTS:=200}" "${INTERVAL:=30}" "${IDLE_S:=120}"
: "${WAVES:=1/class,1%,10%,50%,100%}" "${ETCD:=/usr/bin/etcd}"
: "${GATE_CMD=/bin/sleep 0.1}" "${GATE_BUDGET:=60}" "${AUTH:=0}"
export ETCD
TMP=$(mktemp -d /tmp/nodetune-bench-XXXXXX)
topos=../shared/topologies
cleanup() {
	trap - EXIT INT TERM
	for p in "$TMP"/h*/pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
	for p in "$TMP"/h*/pid; do [ -f "$p" ] && while kill -0 "$(cat "$p")" 2>/dev/null; do sleep 0.1; done; done
	tests/tools/etcd-cluster.sh stop "$TMP/etcd" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
[ -x "$NODETUNE" ] || { echo "bench: $NODETUNE not built (run make)" >&2; exit 2; }
[ -x "$ETCD" ] || { echo "bench: no etcd ($ETCD)" >&2; exit 2; }

CTL="" HOSTCRED="" CURLCA="" ETCDCTL_AUTH=""
if [ "$AUTH" = 1 ]; then
	C=$TMP/certs
	mkdir -p "$C"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=fleet_scale CA" -keyout "$C/ca-key.pem" \
		-out "$C/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=etcd" -keyout "$C/server-key.pem" -out "$C/server.csr" 2>/dev/null
	printf 'subjectAltName = IP:127.0.0.1\n' >"$C/ext"
	openssl x509 -req -in "$C/server.csr" -CA "$C/ca.pem" -CAkey "$C/ca-key.pem" -CAcreateserial -days 2 \
		-extfile "$C/ext" -out "$C/server.pem" 2>/dev/null
	export ETCD_TLS=$C
fi
EP=$(tests/tools/etcd-cluster.sh start "$TMP/etcd")
if [ "$AUTH" = 1 ]; then
	mkdir -m 0700 "$TMP/pw"
	"$NODETUNE" fleet init-auth --endpoints "$EP" --cacert "$C/ca.pem" --password-dir "$TMP/pw" --print \
		--hosts "$(seq -s, -f 'h%.0f' 1 "$HOSTS")" | sh >/dev/null
	CTL="--cacert $C/ca.pem --user nodetune-controller --password-file $TMP/pw/nodetune-controller"
	CURLCA="--cacert $C/ca.pem"
	ETCDCTL_AUTH="--cacert $C/ca.pem --user root:$(cat "$TMP/pw/root")"
fi
# requests handled so far by the whole cluster
handled() {
	# shellcheck disable=SC2086
	for u in $(echo "$EP" | tr , ' '); do curl -s $CURLCA "$u/metrics"; done |
		awk '/^grpc_server_handled_total/ { s += $NF } END { printf "%d\n", s }'
}
# shellcheck disable=SC2086
alive() { "$NODETUNE" fleet hosts --endpoints "$EP" $CTL --json | python3 -c '
import json, sys; print(sum(1 for h in json.load(sys.stdin)["hosts"] if h["alive"]))'; }

# the controller's signing key, which every host trusts (fleet keygen)
mkdir -m 700 "$TMP/sk" && mkdir -m 755 "$TMP/keys.d"
"$NODETUNE" fleet keygen --out "$TMP/sk" --name ctl >/dev/null && cp "$TMP/sk/ctl.pub" "$TMP/keys.d/"
i=0
# the gate the rollout names: a command and its arguments, no shell
mkdir -p "$TMP/gates.d" && chmod 755 "$TMP/gates.d"
if [ -n "$GATE_CMD" ]; then
	set -f
	# shellcheck disable=SC2086
	set -- $GATE_CMD
	set +f
	{ echo "command = $1"; shift; for a in "$@"; do echo "arg = $a"; done; echo "user = nobody"; } >"$TMP/gates.d/scale.conf"
	chmod 644 "$TMP/gates.d/scale.conf"
fi
while [ $i -lt "$HOSTS" ]; do
	i=$((i + 1)); d=$TMP/h$i
	case $((i % 3)) in 0) x=g4dnmetal.xml ;; 1) x=nvidiaDGX2.xml ;; *) x=96em64t-4n4d3ca2co-pci.xml ;; esac
	mkdir -p "$d" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$d/root"
	[ "$AUTH" = 1 ] && HOSTCRED="--cacert $C/ca.pem --user nodetune-host-h$i --password-file $TMP/pw/nodetune-host-h$i"
	# shellcheck disable=SC2086
	"$NODETUNE" daemon --sysroot "$d/root" --topology "$topos/$x" --policy policies/baseline.conf \
		--fleet "$EP" --host "h$i" $HOSTCRED --fleet-keys "$TMP/keys.d" --gates-dir "$TMP/gates.d" --no-metrics --socket "$d/sock" --state-dir "$d/state" \
		--interval "$INTERVAL" >"$d/log" 2>&1 &
	echo $! >"$d/pid"
done
n=0
while [ "$(alive 2>/dev/null || echo 0)" != "$HOSTS" ] && [ $n -lt 240 ]; do sleep 0.5; n=$((n + 1)); done
[ "$(alive)" = "$HOSTS" ] || { echo "bench: only $(alive) of $HOSTS hosts registered" >&2; exit 3; }
rss=$(for p in "$TMP"/h*/pid; do awk '/VmRSS/ { print $2 }' "/proc/$(cat "$p")/status"; done |
	awk '{ s += $1 } END { printf "%.0f", s / NR }')

# idle: every host registered, its first status written; nothing rolls out
sleep 5
h0=$(handled); t0=$(date +%s.%N)
sleep "$IDLE_S"
h1=$(handled); t1=$(date +%s.%N)

printf '[main]\nsummary = fleet_scale\n[thp]\ndefrag = madvise\n' >"$TMP/p.conf"
chmod 644 "$TMP/p.conf"
h2=$(handled)
python3 - "$NODETUNE" "$EP" "$TMP/p.conf" "$WAVES" "$GATE_CMD" "$GATE_BUDGET" "$CTL" "$TMP/sk/ctl.key" >"$TMP/ctl" <<'EOF'
import resource, subprocess, sys, time
nt, ep, pol, waves, gate, budget, ctl, key = sys.argv[1:]
cmd = [nt, "fleet", "rollout", "--endpoints", ep, "--policy", pol, "--name", "scale", "--waves", waves,
       "--wave-timeout", "120", "--signing-key", key] + ctl.split()
if gate:
    cmd += ["--gate", "scale", "--gate-budget", budget, "--gate-allow-inconclusive"]
t = time.monotonic()
p = subprocess.run(cmd, stdout=subprocess.DEVNULL)
wall = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(p.returncode, "%.2f" % wall, "%.2f" % (ru.ru_utime + ru.ru_stime))
EOF
h3=$(handled)
read -r rc wall cpu <"$TMP/ctl"
# shellcheck disable=SC2086
"$NODETUNE" fleet status --endpoints "$EP" $CTL --name scale --json >"$TMP/r.json"
# shellcheck disable=SC2086
env ETCDCTL_API=3 etcdctl --endpoints "$EP" $ETCDCTL_AUTH get /nodetune/rollouts/scale --print-value-only >"$TMP/doc.json"
docsz=$(wc -c <"$TMP/doc.json")
waves=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["rollouts"][0]
print(r["state"], "/".join(str(len(w["hosts"])) for w in r["waves"]),
      sum(1 for w in r["waves"] for h in w["hosts"] if h["state"] == "verified"))' "$TMP/r.json")
# the gate's time from the rollout's timeline; its verdicts from the canaries
gate=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
ev = r["events"]
sent = [e["t"] for e in ev if e["what"].startswith("wave 0 ")]
passed = [e["t"] for e in ev if e["what"].startswith("wave 0: every canary passed")]
verdicts = ",".join(h.get("verdict") or "-" for h in r["waves"][0]["hosts"])
print("%.2f %s" % (passed[0] - sent[0], verdicts) if sent and passed else "0 none")' "$TMP/doc.json")
read -r gate_s verdicts <<EOF2
$gate
EOF2
bad=0
for d in "$TMP"/h*; do [ "$(cat "$d/root/sys/kernel/mm/transparent_hugepage/defrag")" = madvise ] || bad=$((bad + 1)); done

echo "# fleet_scale: $HOSTS daemons (--interval $INTERVAL), 3-member etcd on loopback$([ "$AUTH" = 1 ] && echo ", TLS + auth (a user per host)"), waves $WAVES, gate: ${GATE_CMD:-none}"
echo "# host: $(nproc) CPUs, $(uname -r); $("$ETCD" --version | head -1)"
echo "daemon RSS (mean): ${rss} kB"
python3 -c '
import sys
h0, h1, t0, t1, h2, h3, hosts, wall = map(float, sys.argv[1:9])
print("idle: %d requests in %.0f s = %.2f requests/host/min" % (h1 - h0, t1 - t0, (h1 - h0) / hosts / ((t1 - t0) / 60)))
print("rollout: %d requests in %.1f s = %.2f requests/host/min (controller included)" % (h3 - h2, wall, (h3 - h2) / hosts / (wall / 60)))
' "$h0" "$h1" "$t0" "$t1" "$h2" "$h3" "$HOSTS" "$wall"
echo "rollout: exit $rc, $waves (state, hosts per wave, verified); wall ${wall} s; controller CPU ${cpu} s"
echo "gate: ${gate_s} s (canary verdicts: $verdicts); rollout wall minus gate: $(python3 -c "print('%.2f' % ($wall - $gate_s))") s"
echo "rollout document: $docsz bytes (etcd's default request limit: 1572864)"
echo "hosts whose tree does not have the policy: $bad"
