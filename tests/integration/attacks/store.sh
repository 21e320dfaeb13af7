# SPDX-License-Identifier: MIT
# attacks/store.sh — the transport to the store and the secrets it takes
# (security.md M1, L4, L7, L8), sourced by test_attacks.sh after lib.sh and
# etcd_lib.sh's helpers, against a real etcd: a 3-member TLS cluster with
# auth (etcd_tls_auth_start) and a plain-http one with auth on.
#
#   M1  --cacert pins the CA: CA-A, which signs the members' certificate,
#       is put in the system store (update-ca-certificates); a fleet verb
#       and a daemon given --cacert of an unrelated CA-B must refuse the
#       members (TLS, exit 3, one line naming the endpoint; the daemon's
#       tree byte-identical), where libcurl's default CA directory
#       (/etc/ssl/certs) used to let them in.
#   L4  a login over http:// (and a mixed https/http list) is refused,
#       exit 2, one line, the daemon's tree byte-identical; taken with
#       --insecure-plaintext.
#   L7  a daemon holding an etcd password that crashes leaves no core
#       file (PR_SET_DUMPABLE 0, soft RLIMIT_CORE 0), where it used to
#       leave one with the password in it.  Root can still gcore it
#       (CAP_SYS_PTRACE passes PR_SET_DUMPABLE): the check is the kernel's
#       own core dump and the limit, which is what the fix changes.
#   L8  init-auth --print (whose etcdctl commands feed each user's file to
#       etcd as the password) refuses a planted password file (mode 0644, a
#       symlink, another user's), exit 2 naming it, the dir unchanged.
#       (Through the gateway the old code already refused these files when
#       it read them, as --password-file; --print never read them.)

. "$SRCDIR/tests/integration/etcd_lib.sh"

# one TLS + auth cluster (EP, ETCD_CA, ETCD_PW) and one plain http cluster
store_setup() {
	etcd_have || return 1
	[ -f "$SHARED/g4dnmetal.xml" ] || { t_need ../shared "no $SHARED topologies"; return 1; }
	STORE_TOPO=$(cd "$SHARED" && pwd)/g4dnmetal.xml         # absolute: L7's daemon runs elsewhere
	STORE=$T_TMP/store
	mkdir -p "$STORE" || return 1
	etcd_tls_auth_start "$STORE/tls" h1,h2 || return 1
	STORE_CERTS=$STORE/tls/certs
	STORE_HTTP=$(tests/tools/etcd-cluster.sh start "$STORE/http") ||
		{ t_not_ok "store: the http etcd cluster started"; return 1; }
	t_defer "tests/tools/etcd-cluster.sh stop '$STORE/http'"
	printf '[main]\nsummary = store attack\n[thp]\nenabled = madvise\n' >"$STORE/thp.conf"
	chmod 644 "$STORE/thp.conf"
}

# a fresh host tree DIR/root (the sysroot a daemon acts on)
store_host() {
	rm -rf "$1" && mkdir -p "$1" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$1/root"
}

# store_daemon_refused CODE REGEX DESC DIR ENDPOINTS HOST CREDS...: a daemon
# on a fresh tree DIR/root (30 s at most) must exit CODE with one error line
# matching the grep REGEX, its tree byte-identical (syslog priorities, so
# that error lines are counted)
store_daemon_refused() {
	sd_code=$1 sd_re=$2 sd_desc=$3 sd_dir=$4 sd_ep=$5 sd_host=$6
	shift 6
	store_host "$sd_dir" || { t_not_ok "$sd_desc: made $sd_dir"; return; }
	sd_before=$(tree_hash "$sd_dir/root")
	run timeout 30 "$NODETUNE" daemon --sysroot "$sd_dir/root" --topology "$STORE_TOPO" --policy "$STORE/thp.conf" \
		--fleet "$sd_ep" --host "$sd_host" "$@" --no-metrics --socket "$sd_dir/sock" --state-dir "$sd_dir/state" \
		--interval 1 --log-format=syslog
	check "$sd_desc: exit $sd_code ($RC), one error line naming the endpoint, host byte-identical" -- \
		sh -c '[ "$1" -eq "$2" ] && [ "$(grep -c "<3>" "$3")" -eq 1 ] && grep -q "$4" "$3" && [ "$5" = "$6" ]' - \
		"$RC" "$sd_code" "$ERR" "$sd_re" "$sd_before" "$(tree_hash "$sd_dir/root")"
	if [ "$RC" -eq "$sd_code" ]; then grep '<3>' "$ERR"; else tail -n 2 "$ERR"; fi | sed 's/^/#   /'
}

# ---- M1: --cacert is the only CA trusted ---------------------------------------

store_undo_ca() {
	rm -f "$STORE_SYSCA"
	update-ca-certificates --fresh >/dev/null 2>&1
}

store_m1() {
	STORE_SYSCA=/usr/local/share/ca-certificates/nodetune-test-$$.crt
	cp "$STORE_CERTS/ca.pem" "$STORE_SYSCA" || { t_not_ok "M1: CA-A into the system store"; return; }
	t_defer store_undo_ca
	update-ca-certificates >/dev/null 2>&1
	# the attack's premise: the system store now trusts the members' certificate
	check "M1: the system store (/etc/ssl/certs) trusts CA-A, which signs the members" -- \
		openssl verify -CApath /etc/ssl/certs "$STORE_CERTS/server.pem"
	expect_fail 3 "^nodetune: fleet hosts: etcd https://127\.0\.0\.1:[0-9]+: TLS: " \
		"M1: fleet hosts --cacert CA-B against members of CA-A (in the system store): refused" -- \
		"$NODETUNE" fleet hosts --endpoints "$EP" --cacert "$STORE_CERTS/other-ca.pem" \
		--user nodetune-controller --password-file "$ETCD_PW/nodetune-controller"
	store_daemon_refused 3 "https://127.0.0.1:[0-9]*: TLS: " "M1: a daemon --cacert CA-B" "$STORE/m1" "$EP" h2 \
		--cacert "$STORE_CERTS/other-ca.pem" --user nodetune-host-h2 --password-file "$ETCD_PW/nodetune-host-h2"
	store_undo_ca
}

# ---- L4: no login over plain http ------------------------------------------------

store_l4() {
	expect_fail 2 "^nodetune: fleet hosts: etcd http://127\.0\.0\.1:[0-9]+: a login over plain http" \
		"L4: a login to an http:// endpoint: refused before anything is sent" -- \
		"$NODETUNE" fleet hosts --endpoints "$STORE_HTTP" --user nodetune-controller \
		--password-file "$STORE/http-pw/nodetune-controller"
	expect_fail 2 "^nodetune: fleet hosts: etcd http://127\.0\.0\.1:[0-9]+: a login over plain http" \
		"L4: a mixed list (https first, then http) with a login: refused, naming the http one" -- \
		"$NODETUNE" fleet hosts --endpoints "${EP%%,*},${STORE_HTTP%%,*}" --cacert "$ETCD_CA" \
		--user nodetune-controller --password-file "$ETCD_PW/nodetune-controller"
	store_daemon_refused 2 "http://127.0.0.1:[0-9]*: a login over plain http" "L4: a daemon with a login over http" \
		"$STORE/l4" "$STORE_HTTP" h1 --user nodetune-host-h1 --password-file "$STORE/http-pw/nodetune-host-h1"
	run "$NODETUNE" fleet hosts --endpoints "$STORE_HTTP" --user nodetune-controller \
		--password-file "$STORE/http-pw/nodetune-controller" --insecure-plaintext --json
	check "L4: --insecure-plaintext lets the same login through (exit $RC)" -- \
		sh -c '[ "$1" -eq 0 ] && jq -e ".hosts | type == \"array\"" "$2" >/dev/null' - "$RC" "$OUT"
}

# ---- L8: init-auth and planted password files ---------------------------------------

# store_planted HOW: a password dir whose controller file an attacker made
# (mode 0644 / a symlink to a file of theirs / theirs, 0600)
store_planted() {
	d=$STORE/l8-$1
	rm -rf "$d" && mkdir -m 0700 "$d" || return 1
	case $1 in
	mode) printf 'attacker-knows-this\n' >"$d/nodetune-controller" && chmod 644 "$d/nodetune-controller" ;;
	symlink) printf 'attacker-knows-this\n' >"$STORE/l8-theirs" && chmod 600 "$STORE/l8-theirs" &&
		ln -s "$STORE/l8-theirs" "$d/nodetune-controller" ;;
	owner) printf 'attacker-knows-this\n' >"$d/nodetune-controller" && chmod 600 "$d/nodetune-controller" &&
		chown nobody "$d/nodetune-controller" ;;
	esac
}

store_l8() {
	for how in mode symlink owner; do
		store_planted $how || { t_not_ok "L8: planted a $how password file"; continue; }
		before=$(tree_hash "$STORE/l8-$how")
		expect_fail 2 "^nodetune: fleet init-auth: $STORE/l8-$how/nodetune-controller: .*refusing to reuse it" \
			"L8: init-auth --print with a planted controller password file ($how): refused, naming it" -- \
			"$NODETUNE" fleet init-auth --print --endpoints "$STORE_HTTP" --hosts h1 --password-dir "$STORE/l8-$how"
		check "L8: the password dir ($how) unchanged: nothing made, nothing reused" -- \
			test "$before" = "$(tree_hash "$STORE/l8-$how")"
	done
}

# auth on the http cluster (for L4), its passwords in STORE/http-pw
store_http_auth() {
	mkdir -m 0700 "$STORE/http-pw" &&
		"$NODETUNE" fleet init-auth --endpoints "$STORE_HTTP" --hosts h1 --password-dir "$STORE/http-pw" \
			>"$STORE/http-auth.out" 2>&1
	run env ETCDCTL_API=3 etcdctl --endpoints "$STORE_HTTP" get /nodetune/x
	check "store: init-auth turned auth on on the http cluster (an anonymous get refused, exit $RC)" -- \
		sh -c '[ "$1" -ne 0 ] && grep -q "auth is enabled" "$2"' - "$RC" "$STORE/http-auth.out"
}

# ---- L7: no core file with the password ------------------------------------------

store_l7() {
	d=$STORE/l7
	store_host "$d" && mkdir -p "$d/cwd"
	# the kernel writes a core to the crashing process's cwd ("core" pattern here)
	pattern=$(cat /proc/sys/kernel/core_pattern)
	case $pattern in
	/* | \|*) t_skip_host core-file "L7: core_pattern is '$pattern', not a file in the cwd: the core cannot be looked at here"; return ;;
	esac
	(cd "$d/cwd" && ulimit -c unlimited && exec "$STORE_BIN" daemon --sysroot "$d/root" \
		--topology "$STORE_TOPO" --policy "$STORE/thp.conf" --fleet "$EP" --host h1 --cacert "$ETCD_CA" \
		--user nodetune-host-h1 --password-file "$ETCD_PW/nodetune-host-h1" --no-metrics --socket "$d/sock" \
		--state-dir "$d/state" --interval 1 >"$d/log" 2>&1) &
	pid=$!
	t_defer "kill -9 $pid 2>/dev/null"
	# logged in: h1 registered (its password read, sent, kept for the next login)
	wait_until 30 sh -c '"$1" fleet hosts --endpoints "$2" --cacert "$3" --user nodetune-controller \
		--password-file "$4" --json | grep -q "\"alive\": true"' - "$NODETUNE" "$EP" "$ETCD_CA" \
		"$ETCD_PW/nodetune-controller" || { t_not_ok "L7: the daemon joined"; sed 's/^/#   /' "$d/log" | tail -3; return; }
	soft=$(awk '/^Max core file size/ { print $5 }' "/proc/$pid/limits")
	kill -SEGV "$pid"
	wait "$pid"
	status=$?
	core=$(ls "$d/cwd" | head -n 1)
	if [ -n "$core" ] && LC_ALL=C grep -aqF "$(cat "$ETCD_PW/nodetune-host-h1")" "$d/cwd/$core"; then
		found="the password is in it"
	else
		found="no password in it"
	fi
	check "L7: a daemon holding a password killed by SIGSEGV (status $status) leaves no core file (core limit $soft; ${core:-none} written, $found)" -- \
		sh -c '[ "$1" -gt 128 ] && [ -z "$2" ] && [ "$3" = 0 ]' - "$status" "$core" "$soft"
}

if store_setup; then
	# the binary's absolute path (L7 starts it from another cwd)
	case $NODETUNE in /*) STORE_BIN=$NODETUNE ;; *) STORE_BIN=$SRCDIR/$NODETUNE ;; esac
	store_m1
	store_l8
	store_http_auth
	store_l4
	store_l7
fi
