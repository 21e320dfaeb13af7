#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# test_fleet_auth.sh — the fleet's credentials to etcd (issue 24, items 1
# and 2) against a real 3-member etcd (tests/tools/etcd-cluster.sh) whose
# client URLs are TLS with certificates made here by openssl, and with
# auth enabled by the commands `nodetune fleet init-auth --print` prints.
#
# Checks: init-auth creates the roles and users through the gateway and
# enables auth (--print: the same as etcdctl commands), and again as root
# adds a host; a host daemon (h1) joins with
# its own user over TLS (registration, status) and a rollout led with the
# controller's user reaches it after its token went old (a role added); h1's credentials cannot write h2's keys
# nor any desired key (its own included), and can write its own status;
# a wrong password, a wrong CA and no login each give one line naming the
# endpoint and exit 3, the daemon's with its tree byte-identical and no
# journal; fleet.conf holds the same keys, and a password file others can
# read is refused (exit 2); against a second TLS cluster that requires
# client certificates (--client-cert-auth): --cert/--key (and fleet.conf's
# cert and key) work, for the fleet verbs and a host daemon, and without
# them, or with a certificate of another CA, one line naming the endpoint,
# exit 3, the daemon's tree byte-identical.
. "$(dirname "$0")/lib.sh"
t_plan 35
. "$(dirname "$0")/etcd_lib.sh"

ETCD=${ETCD:-/usr/bin/etcd}
etcd_have || t_rest
TOPO=$SHARED/g4dnmetal.xml
[ -f "$TOPO" ] || { t_need ../shared "no $SHARED topologies"; t_rest; }

# ---- certificates: a CA, the members' certificate for 127.0.0.1, another CA

C=$T_TMP/certs
mkdir -p "$C"
etcd_ca "$C" ca && etcd_ca "$C" other-ca && etcd_server_cert "$C" ca
# client certificates (for the cluster that requires them): one of our CA, one of another
etcd_client_cert "$C" client ca && etcd_client_cert "$C" stranger other-ca
[ -s "$C/server.pem" ] && [ -s "$C/client.pem" ] && [ -s "$C/stranger.pem" ] ||
	{ t_not_ok "openssl made the certificates"; t_done; }

CL=$T_TMP/etcd
EP=$(ETCD_TLS=$C tests/tools/etcd-cluster.sh start "$CL") || { t_not_ok "the TLS etcd cluster started"; t_done; }
auth_cleanup() {
	[ -f "$T_TMP/h1/pid" ] && { kill "$(cat "$T_TMP/h1/pid")" 2>/dev/null; wait "$(cat "$T_TMP/h1/pid")" 2>/dev/null; }
	[ -f "$T_TMP/h9/pid" ] && { kill "$(cat "$T_TMP/h9/pid")" 2>/dev/null; wait "$(cat "$T_TMP/h9/pid")" 2>/dev/null; }
	tests/tools/etcd-cluster.sh stop "$CL"
	tests/tools/etcd-cluster.sh stop "$T_TMP/etcd-cc"
}
t_defer auth_cleanup
case $EP in https://*) t_ok "the members serve TLS: $EP" ;; *) t_not_ok "TLS endpoints: got $EP" ;; esac
FIRST=${EP%%,*}

# ---- init-auth ------------------------------------------------------------------

P=$T_TMP/passwords
mkdir -m 0700 "$P"
run "$NODETUNE" fleet init-auth --endpoints "$EP" --cacert "$C/ca.pem" --hosts h1,h2 --password-dir "$P" --print
cp "$OUT" "$T_TMP/init-auth.sh"
[ "$RC" -eq 0 ] && [ "$(grep -c 'etcdctl ' "$T_TMP/init-auth.sh")" -eq 25 ] && grep -q "auth enable" "$T_TMP/init-auth.sh" &&
	! grep -Fq "$(cat "$P/root")" "$T_TMP/init-auth.sh" &&
	t_ok "init-auth --print: 25 etcdctl commands, passwords fed on stdin, none on a command line" ||
	t_not_ok "init-auth --print (exit $RC)"
run "$NODETUNE" fleet init-auth --endpoints "$EP" --cacert "$C/ca.pem" --hosts h1,h2 --password-dir "$P"
[ "$RC" -eq 0 ] && grep -q "auth is enabled" "$OUT" && t_ok "init-auth through the gateway: $(cat "$OUT")" ||
	{ t_not_ok "init-auth through the gateway (exit $RC)"; sed 's/^/#   /' "$ERR"; t_done; }
[ "$(stat -c %a "$P/nodetune-host-h1")" = 600 ] && t_ok "a password file is 0600" || t_not_ok "password file mode"
# a second run, as root: what exists is left as it is, a new host is added
run "$NODETUNE" fleet init-auth --endpoints "$EP" --cacert "$C/ca.pem" --hosts h1,h2,h3 --password-dir "$P" \
	--user root --password-file "$P/root"
[ "$RC" -eq 0 ] && grep -q "existed already" "$OUT" && [ -f "$P/nodetune-host-h3" ] &&
	t_ok "init-auth again as root: $(cat "$OUT")" || { t_not_ok "init-auth again (exit $RC)"; sed 's/^/#   /' "$ERR"; }

CTL="--endpoints $EP --cacert $C/ca.pem --user nodetune-controller --password-file $P/nodetune-controller"
H1="--cacert $C/ca.pem --user nodetune-host-h1 --password-file $P/nodetune-host-h1"
# etcdctl as user U (the test's own check; a password on its command line is fine here)
as() { u=$1; shift; ETCDCTL_API=3 etcdctl --endpoints "$EP" --cacert "$C/ca.pem" --user "$u:$(cat "$P/$u")" "$@"; }

run env ETCDCTL_API=3 etcdctl --endpoints "$EP" --cacert "$C/ca.pem" put /nodetune/hosts/h2/desired x
# refused for want of a user, not for a TLS or endpoint error
if [ "$RC" -ne 0 ] && grep -q 'user name is empty\|permission denied' "$ERR"; then
	t_ok "auth is on: a write without a user is refused ($(cat "$ERR"))"
else
	t_not_ok "auth enabled: an anonymous put: exit $RC, $(cat "$ERR")"
fi

# ---- a host over TLS with its own user, a rollout with the controller's ------------

mkdir -p "$T_TMP/h1" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$T_TMP/h1/root"
# the controller's signing key, which h1 trusts
mkdir -m 700 "$T_TMP/sk" && mkdir -m 755 "$T_TMP/keys.d"
"$NODETUNE" fleet keygen --out "$T_TMP/sk" --name ctl >/dev/null && cp "$T_TMP/sk/ctl.pub" "$T_TMP/keys.d/" ||
	t_not_ok "fleet keygen"
printf '[main]\nsummary = test thp\n[thp]\nenabled = madvise\n' >"$T_TMP/thp.conf"
chmod 644 "$T_TMP/thp.conf"
# shellcheck disable=SC2086
"$NODETUNE" daemon --sysroot "$T_TMP/h1/root" --topology "$TOPO" --policy policies/baseline.conf \
	--fleet "$EP" --host h1 $H1 --fleet-keys "$T_TMP/keys.d" --no-metrics --socket "$T_TMP/h1/sock" --state-dir "$T_TMP/h1/state" \
	--interval 1 >>"$T_TMP/h1/log" 2>&1 &
echo $! >"$T_TMP/h1/pid"
i=0
# shellcheck disable=SC2086
until "$NODETUNE" fleet hosts $CTL --json 2>/dev/null | grep -q '"alive": true' || [ $i -ge 80 ]; do sleep 0.25; i=$((i + 1)); done
# shellcheck disable=SC2086
run "$NODETUNE" fleet hosts $CTL --json
grep -q '"alive": true' "$OUT" && grep -q '"state": "verified"' "$OUT" &&
	t_ok "h1 registered and wrote its status over TLS with its own user" ||
	{ t_not_ok "h1 joined over TLS (exit $RC)"; sed 's/^/#   /' "$ERR" "$T_TMP/h1/log" | tail -5; }
# any change to users or roles makes every token issued before it old ("revision of
# auth store is old"): h1 must log in again to follow the rollout below
run as root role add nodetune-test-bump
[ "$RC" -eq 0 ] && t_ok "the auth store changed under h1's token" || t_not_ok "role add as root (exit $RC)"
# shellcheck disable=SC2086
run "$NODETUNE" fleet rollout $CTL --signing-key "$T_TMP/sk/ctl.key" --policy "$T_TMP/thp.conf" --name r-tls --waves 100% --wave-timeout 30 --json
[ "$RC" -eq 0 ] && grep -q '"state": "done"' "$OUT" && grep -q 'fleet: applied thp.conf' "$T_TMP/h1/log" &&
	t_ok "a rollout with the controller's user reached h1, which logged in again (done, applied)" ||
	{ t_not_ok "rollout over TLS (exit $RC)"; sed 's/^/#   /' "$ERR" "$T_TMP/h1/log" | tail -8; }

# ---- least privilege: h1's credentials -------------------------------------------

for key in /nodetune/hosts/h2/status /nodetune/hosts/h2 /nodetune/hosts/h2/desired /nodetune/hosts/h1/desired \
	/nodetune/hosts/h1/shadow /nodetune/policies/x /nodetune/rollouts/r-evil /nodetune/classes/x/record; do
	run as nodetune-host-h1 put "$key" '{}'
	[ "$RC" -ne 0 ] && grep -q "permission denied" "$ERR" && t_ok "h1 cannot write $key" ||
		t_not_ok "h1 wrote $key (exit $RC: $(cat "$ERR"))"
done
run as nodetune-host-h1 get --prefix /nodetune/hosts/h2/
[ "$RC" -ne 0 ] && grep -q "permission denied" "$ERR" && t_ok "h1 cannot read h2's keys" || t_not_ok "h1 read h2's keys"
run as nodetune-host-h1 get /nodetune/hosts/h1/desired
[ "$RC" -eq 0 ] && grep -q r-tls "$OUT" && t_ok "h1 reads its own desired key" || t_not_ok "h1 reads its desired (exit $RC)"
run as nodetune-host-h1 get --prefix /nodetune/classes/
[ "$RC" -eq 0 ] && grep -q r-tls "$OUT" && t_ok "h1 reads its class's policy of record (r-tls)" ||
	t_not_ok "h1 reads the classes' records (exit $RC: $(cat "$ERR"))"

# ---- refused: one line naming the endpoint, exit 3, nothing applied -----------------

printf 'wrong\n' >"$T_TMP/wrong" && chmod 600 "$T_TMP/wrong"
expect_fail 3 "^nodetune: .*https://127\.0\.0\.1:[0-9]+.*(authentication failed|refused)" \
	"a wrong password: one line naming the endpoint, exit 3" -- \
	"$NODETUNE" fleet hosts --endpoints "$EP" --cacert "$C/ca.pem" --user nodetune-controller --password-file "$T_TMP/wrong"
expect_fail 3 "^nodetune: .*https://127\.0\.0\.1:[0-9]+: TLS: " "a wrong CA: one line naming the endpoint, exit 3" -- \
	"$NODETUNE" fleet hosts --endpoints "$EP" --cacert "$C/other-ca.pem" --user nodetune-controller \
	--password-file "$P/nodetune-controller"
expect_fail 3 "^nodetune: .*https://127\.0\.0\.1:[0-9]+.*user name is empty" "no login on a store with auth: exit 3" -- \
	"$NODETUNE" fleet hosts --endpoints "$EP" --cacert "$C/ca.pem"
chmod 644 "$T_TMP/wrong"
expect_fail 2 "password-file .*readable by group or others" "a password file others can read: exit 2" -- \
	"$NODETUNE" fleet hosts --endpoints "$EP" --cacert "$C/ca.pem" --user nodetune-controller --password-file "$T_TMP/wrong"
chmod 600 "$T_TMP/wrong"

mkdir -p "$T_TMP/h2" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$T_TMP/h2/root"
before=$(tree_hash "$T_TMP/h2/root")
for how in password ca; do
	if [ $how = password ]; then creds="--cacert $C/ca.pem --user nodetune-host-h2 --password-file $T_TMP/wrong"
	else creds="--cacert $C/other-ca.pem --user nodetune-host-h2 --password-file $P/nodetune-host-h2"; fi
	# shellcheck disable=SC2086
	run timeout 30 "$NODETUNE" daemon --sysroot "$T_TMP/h2/root" --topology "$TOPO" --policy "$T_TMP/thp.conf" \
		--fleet "$EP" --host h2 $creds --no-metrics --socket "$T_TMP/h2/sock" --state-dir "$T_TMP/h2/state-$how" --interval 1 \
		--log-format=syslog
	# --log-format=syslog: each line carries its priority, so the error lines are counted
	if [ "$RC" -eq 3 ] && [ "$(grep -c '<3>' "$ERR")" -eq 1 ] && grep -q 'https://127.0.0.1' "$ERR" &&
		[ "$(tree_hash "$T_TMP/h2/root")" = "$before" ] && ! ls "$T_TMP/h2/state-$how"/journal* >/dev/null 2>&1; then
		t_ok "daemon with a wrong $how: exit 3, one error line naming the endpoint, host byte-identical"
	else
		t_not_ok "daemon with a wrong $how: exit $RC"; sed 's/^/#   /' "$ERR" | tail -4
	fi
done

# ---- fleet.conf: the same keys, no secret on the command line ----------------------

printf '# test\ncacert = %s\nuser = nodetune-controller\npassword-file = %s\n' "$C/ca.pem" "$P/nodetune-controller" \
	>"$T_TMP/fleet.conf"
chmod 600 "$T_TMP/fleet.conf"
run "$NODETUNE" fleet hosts --endpoints "$EP" --fleet-conf "$T_TMP/fleet.conf" --json
[ "$RC" -eq 0 ] && grep -q '"host": "h1"' "$OUT" && t_ok "fleet.conf's keys log in (--fleet-conf)" ||
	{ t_not_ok "fleet.conf (exit $RC)"; sed 's/^/#   /' "$ERR"; }
printf 'cacert = %s\npassword = hunter2\n' "$C/ca.pem" >"$T_TMP/bad.conf"
chmod 600 "$T_TMP/bad.conf"
expect_fail 2 "bad\.conf:2: unknown key 'password'" "fleet.conf with a password in it: refused, file:line" -- \
	"$NODETUNE" fleet hosts --endpoints "$EP" --fleet-conf "$T_TMP/bad.conf"

# ---- client certificates: a cluster that requires them (--client-cert-auth) ---------

EPC=$(ETCD_TLS=$C NODETUNE_ETCD_CERT_AUTH=1 tests/tools/etcd-cluster.sh start "$T_TMP/etcd-cc")
check "a TLS cluster requiring client certificates started: $EPC" -- sh -c 'case $1 in https://*) true ;; *) false ;; esac' - "$EPC"
CC="--cacert $C/ca.pem --cert $C/client.pem --key $C/client-key.pem"
# shellcheck disable=SC2086
run "$NODETUNE" fleet hosts --endpoints "$EPC" $CC --json
check "--cert/--key: the fleet verbs are let in (exit $RC: $(head -c 80 "$OUT"))" -- sh -c '[ "$1" -eq 0 ] && [ -s "$2" ]' - "$RC" "$OUT"
# (a member refuses a missing certificate or one of another CA with a TLS alert after the
# handshake, "etcd EP: TLS: ... alert ..."; when the request was still being sent, libcurl may
# see only the closed connection: "etcd EP: /v3/kv/range: Failed sending data to the peer",
# or "Failure when receiving data from the peer"; no other request error passes)
expect_fail 3 "^nodetune: fleet hosts: etcd https://127\.0\.0\.1:[0-9]+: (TLS: .*alert|/v3/[a-z/]+: (Failed sending data to|Failure when receiving data from) the peer)" \
	"no client certificate: one line naming the endpoint, exit 3" -- \
	"$NODETUNE" fleet hosts --endpoints "$EPC" --cacert "$C/ca.pem"
expect_fail 3 "^nodetune: fleet hosts: etcd https://127\.0\.0\.1:[0-9]+: (TLS: .*alert|/v3/[a-z/]+: (Failed sending data to|Failure when receiving data from) the peer)" \
	"a client certificate of another CA: one line naming the endpoint, exit 3" -- \
	"$NODETUNE" fleet hosts --endpoints "$EPC" --cacert "$C/ca.pem" --cert "$C/stranger.pem" --key "$C/stranger-key.pem"
# fleet.conf's cert and key
printf 'cacert = %s\ncert = %s\nkey = %s\n' "$C/ca.pem" "$C/client.pem" "$C/client-key.pem" >"$T_TMP/cc.conf"
chmod 600 "$T_TMP/cc.conf"
run "$NODETUNE" fleet hosts --endpoints "$EPC" --fleet-conf "$T_TMP/cc.conf" --json
check "fleet.conf's cert and key are let in (exit $RC)" -- test "$RC" -eq 0
# a host daemon: with its certificate it registers; without, exit 3 and nothing applied
mkdir -p "$T_TMP/h9" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$T_TMP/h9/root"
before=$(tree_hash "$T_TMP/h9/root")
run timeout 30 "$NODETUNE" daemon --sysroot "$T_TMP/h9/root" --topology "$TOPO" --policy "$T_TMP/thp.conf" \
	--fleet "$EPC" --host h9 --cacert "$C/ca.pem" --no-metrics --socket "$T_TMP/h9/sock" --state-dir "$T_TMP/h9/state-none" \
	--interval 1 --log-format=syslog
check "a daemon without a client certificate: exit 3 ($RC), one error line naming the endpoint, host byte-identical" -- \
	sh -c '[ "$1" -eq 3 ] && [ "$(grep -c "<3>" "$2")" -eq 1 ] && grep -q "https://127.0.0.1:[0-9]*: TLS: " "$2" && [ "$3" = "$4" ] &&
	! ls "$5"/journal* >/dev/null 2>&1' - "$RC" "$ERR" "$before" "$(tree_hash "$T_TMP/h9/root")" "$T_TMP/h9/state-none"
# shellcheck disable=SC2086
"$NODETUNE" daemon --sysroot "$T_TMP/h9/root" --topology "$TOPO" --policy policies/baseline.conf \
	--fleet "$EPC" --host h9 $CC --fleet-keys "$T_TMP/keys.d" --no-metrics --socket "$T_TMP/h9/sock" \
	--state-dir "$T_TMP/h9/state" --interval 1 >>"$T_TMP/h9/log" 2>&1 &
echo $! >"$T_TMP/h9/pid"
# shellcheck disable=SC2086
check "a daemon with --cert/--key registers (alive, verified) within 20 s" -- \
	wait_until 20 sh -c '"$1" fleet hosts --endpoints "$2" --cacert "$3" --cert "$4" --key "$5" --json |
		grep -q "\"alive\": true" && "$1" fleet hosts --endpoints "$2" --cacert "$3" --cert "$4" --key "$5" --json |
		grep -q "\"state\": \"verified\""' - "$NODETUNE" "$EPC" "$C/ca.pem" "$C/client.pem" "$C/client-key.pem"

auth_cleanup
t_done
