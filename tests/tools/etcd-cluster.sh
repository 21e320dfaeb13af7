#!/bin/sh
# SPDX-License-Identifier: MIT
# etcd-cluster.sh — a throwaway 3-member etcd cluster on loopback, for tests.
#
# Usage: tests/tools/etcd-cluster.sh start DIR
#        tests/tools/etcd-cluster.sh stop DIR
#        tests/tools/etcd-cluster.sh kill-member DIR N     (N = 1, 2 or 3)
#        tests/tools/etcd-cluster.sh start-member DIR N
#        tests/tools/etcd-cluster.sh endpoints DIR
#
# start: picks six free loopback ports at run time (a client and a peer port
#   per member; the kernel chooses them, nothing is fixed), starts three
#   etcd processes (Debian's /usr/bin/etcd, or $ETCD) with their data in
#   DIR/mN, their logs in DIR/mN.log and their pids in DIR/mN.pid, waits
#   (bounded: $ETCD_WAIT seconds, default 30) until every member answers
#   /health with a leader, and prints the client endpoints on stdout,
#   comma-separated ("http://127.0.0.1:P1,http://127.0.0.1:P2,...").
# stop: stops every member (SIGTERM, SIGKILL after 10 s) and waits for it;
#   a member already stopped, or a DIR never started, is not an error.
# kill-member / start-member: stop one member (for failover tests) and start
#   it again on the same ports and data, waiting until it is healthy.
#
# TLS: with ETCD_TLS=CERTDIR at start (CERTDIR/ca.pem, server.pem,
#   server-key.pem; the server certificate valid for 127.0.0.1), the client
#   URLs are https:// with that certificate (the peers stay plain http on
#   loopback); the choice is kept in DIR/tls, so start-member does the same.
#   With NODETUNE_ETCD_CERT_AUTH=1 as well (not ETCD_*: etcd reads those as
#   its flags), the members require a client
#   certificate signed by CERTDIR/ca.pem (--client-cert-auth
#   --trusted-ca-file; etcd also requires one with --trusted-ca-file alone); the health
#   checks here present CERTDIR/server.pem (its extendedKeyUsage includes
#   clientAuth); kept in DIR/client-cert-auth.
#
# Nothing is written outside DIR.  A pid is signalled only when its
# /proc/PID/cmdline names this DIR, so a recycled pid is never hit.
# Exit status: 0, 1 on failure (a line on stderr, the member's log tail),
# 2 on bad usage.
set -u

ETCD=${ETCD:-/usr/bin/etcd}
WAIT=${ETCD_WAIT:-30}
MEMBERS="1 2 3"

die() { echo "etcd-cluster.sh: $*" >&2; exit 1; }
usage() { echo "usage: etcd-cluster.sh start|stop|endpoints DIR | kill-member|start-member DIR N" >&2; exit 2; }

# six distinct free ports, all held open at once while the kernel picks them
pick_ports() {
	python3 -c '
import socket
socks = []
for _ in range(6):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))'
}

# member N's client port ($1 = N) and peer port, from DIR/ports
client_port() { awk -v n="$1" 'NR == n { print $1 }' "$dir/ports"; }
peer_port() { awk -v n="$1" 'NR == n { print $2 }' "$dir/ports"; }
tls_dir() { [ -f "$dir/tls" ] && cat "$dir/tls"; return 0; }
client_url() { echo "http$([ -n "$(tls_dir)" ] && echo s)://127.0.0.1:$(client_port "$1")"; }
cert_auth() { [ -f "$dir/client-cert-auth" ]; }
tls_flags() {
	t=$(tls_dir)
	# without client-cert-auth: no client certificates, users log in
	[ -n "$t" ] && echo "--cert-file $t/server.pem --key-file $t/server-key.pem"
	[ -n "$t" ] && cert_auth && echo "--client-cert-auth --trusted-ca-file $t/ca.pem"
	return 0
}

endpoints() {
	out=""
	for n in $MEMBERS; do out="$out${out:+,}$(client_url "$n")"; done
	echo "$out"
}

initial_cluster() {
	out=""
	for n in $MEMBERS; do out="$out${out:+,}m$n=http://127.0.0.1:$(peer_port "$n")"; done
	echo "$out"
}

# the pid in DIR/mN.pid when that process is still our etcd, else nothing
live_pid() {
	[ -f "$dir/m$1.pid" ] || return 0
	pid=$(cat "$dir/m$1.pid")
	case $pid in '' | *[!0-9]*) return 0 ;; esac
	tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "--data-dir $dir/m$1 " && echo "$pid"
	return 0
}

launch_member() {
	n=$1 state=$2
	"$ETCD" --name "m$n" --data-dir "$dir/m$n" \
		--listen-client-urls "$(client_url "$n")" --advertise-client-urls "$(client_url "$n")" \
		--listen-peer-urls "http://127.0.0.1:$(peer_port "$n")" \
		--initial-advertise-peer-urls "http://127.0.0.1:$(peer_port "$n")" \
		--initial-cluster "$(initial_cluster)" --initial-cluster-state "$state" \
		--initial-cluster-token "$(cat "$dir/token")" $(tls_flags) \
		</dev/null >>"$dir/m$n.log" 2>&1 &
	echo $! >"$dir/m$n.pid"
}

healthy() {
	t=$(tls_dir)
	c=""
	cert_auth && c=$t
	curl -sf --max-time 2 ${t:+--cacert "$t/ca.pem"} ${c:+--cert "$c/server.pem" --key "$c/server-key.pem"} \
		"$(client_url "$1")/health" 2>/dev/null | grep -q '"health":"true"'
}

# wait until members $@ are healthy, at most $WAIT seconds
wait_healthy() {
	deadline=$(( $(date +%s) + WAIT ))
	for n in "$@"; do
		until healthy "$n"; do
			# (kill -0, not live_pid: the child may not have exec'd etcd yet)
			if ! kill -0 "$(cat "$dir/m$n.pid")" 2>/dev/null; then
				tail -n 5 "$dir/m$n.log" >&2; die "member m$n exited (log: $dir/m$n.log)"
			fi
			[ "$(date +%s)" -lt "$deadline" ] || { tail -n 5 "$dir/m$n.log" >&2
				die "member m$n not healthy after $WAIT s (log: $dir/m$n.log)"; }
			sleep 0.2
		done
	done
}

stop_member() {
	pid=$(live_pid "$1")
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null
		i=0
		while [ -n "$(live_pid "$1")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		[ -z "$(live_pid "$1")" ] || kill -KILL "$pid" 2>/dev/null
		i=0
		while [ -n "$(live_pid "$1")" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		[ -z "$(live_pid "$1")" ] || die "member m$1 (pid $pid) did not stop"
	fi
	rm -f "$dir/m$1.pid"
}

check_member() {
	case ${1:-} in 1 | 2 | 3) ;; *) usage ;; esac
	[ -f "$dir/ports" ] || die "$dir: no cluster started there"
}

[ $# -ge 2 ] || usage
cmd=$1
mkdir -p "$2" 2>/dev/null || die "$2: cannot create"
dir=$(cd "$2" && pwd) || die "$2: cannot enter"

case $cmd in
start)
	[ $# -eq 2 ] || usage
	[ -x "$ETCD" ] || die "$ETCD: not found (apt-get install etcd-server)"
	for n in $MEMBERS; do
		[ -z "$(live_pid "$n")" ] || die "$dir: a cluster is already running there"
	done
	ports=$(pick_ports) || die "cannot pick free ports"
	set -- $ports
	printf '%s %s\n%s %s\n%s %s\n' "$1" "$2" "$3" "$4" "$5" "$6" >"$dir/ports"
	echo "nodetune-test-$$-$(date +%s)" >"$dir/token"
	rm -f "$dir/tls" "$dir/client-cert-auth"
	if [ -n "${ETCD_TLS:-}" ]; then
		t=$(cd "$ETCD_TLS" && pwd) || die "ETCD_TLS=$ETCD_TLS: not a directory"
		for f in ca.pem server.pem server-key.pem; do [ -r "$t/$f" ] || die "$t/$f: missing"; done
		echo "$t" >"$dir/tls"
		[ "${NODETUNE_ETCD_CERT_AUTH:-}" = 1 ] && : >"$dir/client-cert-auth"
	fi
	# a start that fails leaves nothing running
	trap 'trap - EXIT; for n in $MEMBERS; do stop_member "$n"; done' EXIT
	for n in $MEMBERS; do rm -rf "$dir/m$n"; launch_member "$n" new; done
	wait_healthy $MEMBERS
	trap - EXIT
	endpoints
	;;
stop)
	[ $# -eq 2 ] || usage
	[ -f "$dir/ports" ] || exit 0
	for n in $MEMBERS; do stop_member "$n"; done
	;;
kill-member)
	[ $# -eq 3 ] || usage
	check_member "$3"
	stop_member "$3"
	;;
start-member)
	[ $# -eq 3 ] || usage
	check_member "$3"
	[ -z "$(live_pid "$3")" ] || exit 0
	launch_member "$3" existing
	wait_healthy "$3"
	;;
endpoints)
	[ $# -eq 2 ] || usage
	[ -f "$dir/ports" ] || die "$dir: no cluster started there"
	endpoints
	;;
*) usage ;;
esac
