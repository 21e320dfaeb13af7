# SPDX-License-Identifier: MIT
# fleet-fresh.sh — freshness and identity of the fleet's documents (issue
# 38 item 2, ../shared/reviews/security.md M2), attacked against a real
# 3-member etcd with TLS and auth (etcd_lib.sh), hosts' daemons with their
# own etcd users and the controller's signing key:
#  (b) the current gate document put again after its gate, and the daemon
#      restarted: the gate runs once (first: (a) leaves the old code's h1
#      refusing everything);
#  (a) a store that lies about its revision once (a TLS proxy in front of
#      etcd answering every range with revision 9e18) must not freeze the
#      hosts: the next rollout through the honest store is applied, and the
#      host's fleet-seq is not 9e18;
#  (c) a document signed for fleet staging (its own store), copied with its
#      policy into fleet prod's store for the same host name: refused
#      (other_fleet), the host byte-identical;
#  (d) a store that withholds updates (no new timestamp): the host says it
#      is frozen (status, metric, log) and keeps its policy.
# Sourced by test_attacks.sh after lib.sh; run against the code before the
# fix with NODETUNE=/work/old/build/nodetune (it lacks --fleet-id,
# --fleet-max-age and `fleet timestamp`: those are left out, and the checks
# fail there as the attacks succeed).
. "$SRCDIR/tests/integration/etcd_lib.sh"

FF=$T_TMP/ff
FF_THP=sys/kernel/mm/transparent_hugepage
FF_TOPO=$SHARED/g4dnmetal.xml
FF_NEW=0

ff_policy() { # NAME SECTION KEY VALUE
	printf '[main]\nsummary = fleet-fresh %s\n[%s]\n%s = %s\n' "$1" "$2" "$3" "$4" >"$FF/$1.conf"
	chmod 644 "$FF/$1.conf"
}

# ff_host DIR HOST ENDPOINTS FLEET [ARGS...]: start host HOST's daemon on
# its own tree (made at its first start) in $FF/DIR; FLEET: its fleet id
# (given to the code that has --fleet-id)
ff_host() {
	ff_d=$FF/$1 ff_name=$2 ff_ep=$3 ff_fleet=$4
	shift 4
	if [ ! -d "$ff_d/root" ]; then
		mkdir -p "$ff_d" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$ff_d/root"
	fi
	[ "$FF_NEW" = 1 ] && set -- "$@" --fleet-id "$ff_fleet"
	"$NODETUNE" daemon --sysroot "$ff_d/root" --topology "$FF_TOPO" --policy policies/baseline.conf \
		--endpoints "$ff_ep" --host "$ff_name" --fleet-keys "$FF/keys.d" --gates-dir "$FF/gates.d" --no-metrics \
		--textfile-dir "$ff_d" --socket "$ff_d/sock" --state-dir "$ff_d/state" --interval 1 "$@" >>"$ff_d/log" 2>&1 &
	echo $! >"$ff_d/pid"
}
ff_stop() { # NAME
	[ -f "$FF/$1/pid" ] || return 0
	kill "$(cat "$FF/$1/pid")" 2>/dev/null
	wait "$(cat "$FF/$1/pid")" 2>/dev/null
	rm -f "$FF/$1/pid"
}
# the prod store's credentials: the controller's, a host's
ff_ctl() { echo "--endpoints $EP --cacert $ETCD_CA --user nodetune-controller --password-file $ETCD_PW/nodetune-controller"; }
ff_hcreds() { echo "--cacert $ETCD_CA --user nodetune-host-$1 --password-file $ETCD_PW/nodetune-host-$1"; }
ff_alive() { # HOST ARGS...: is HOST's lease alive in the store ARGS (--endpoints, credentials) name?
	ff_h=$1
	shift
	"$NODETUNE" fleet hosts "$@" --json | python3 -c '
import json, sys; sys.exit(0 if any(h["host"] == sys.argv[1] and h["alive"] for h in json.load(sys.stdin)["hosts"]) else 1)' "$ff_h"
}
ff_seq() { cut -d' ' -f1 "$FF/$1/state/fleet-seq" 2>/dev/null; }

# ---- (a) a store lying about its revision ----------------------------------------

# The proxy: TLS with the members' certificate (the controller checks it
# against the test's CA), every request forwarded to the first member, the
# header revision of every range answer replaced by 9e18.
ff_proxy_start() {
	cat >"$FF/proxy.py" <<'EOF'
import http.client, http.server, re, socketserver, ssl, sys
port, upstream, certs = int(sys.argv[1]), sys.argv[2], sys.argv[3]
host, uport = upstream.split("//")[1].split(":")
up_ctx = ssl.create_default_context(cafile=certs + "/ca.pem")
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        c = http.client.HTTPSConnection(host, int(uport), context=up_ctx, timeout=3)
        hdr = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
        try:
            c.request("POST", self.path, body, hdr)
            r = c.getresponse()
            data, status = r.read(), r.status
        except Exception:
            data, status = b'{"error":"proxy: upstream timeout"}', 504
        if self.path == "/v3/kv/range":
            data = re.sub(rb'"revision":"[0-9]+"', b'"revision":"9000000000000000000"', data)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(certs + "/server.pem", certs + "/server-key.pem")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print("listening", flush=True)
s.serve_forever()
EOF
	FF_PPORT=$(free_port)
	python3 "$FF/proxy.py" "$FF_PPORT" "${EP%%,*}" "$FF/certs" >"$FF/proxy.log" 2>&1 &
	echo $! >"$FF/proxy.pid"
	t_defer "kill $(cat "$FF/proxy.pid") 2>/dev/null"
	wait_until 10 grep -q listening "$FF/proxy.log"
}

ff_inflated_seq() {
	# shellcheck disable=SC2046
	if ! ff_proxy_start; then
		t_not_ok "(a) the lying TLS proxy started"
		return
	fi
	# shellcheck disable=SC2046
	run "$NODETUNE" fleet rollout --endpoints "https://127.0.0.1:$FF_PPORT" --cacert "$ETCD_CA" \
		--user nodetune-controller --password-file "$ETCD_PW/nodetune-controller" --signing-key "$FF/ctl/ctl.key" \
		$([ "$FF_NEW" = 1 ] && echo --fleet-id prod) --policy "$FF/thp.conf" --name r-ff-lie --waves 100% --wave-timeout 30 --json
	check "(a) a rollout through the store that lies about its revision reached h1 (exit $RC; h1 thp $(cat "$FF/h1/root/$FF_THP/enabled"))" -- \
		sh -c '[ "$1" -eq 0 ] && [ "$(cat "$2")" = madvise ]' - "$RC" "$FF/h1/root/$FF_THP/enabled"
	check "(a) h1's fleet-seq did not come from the store's lie of 9000000000000000000 (h1's: '$(ff_seq h1)')" -- \
		sh -c '[ -n "$1" ] && [ "$1" != 9000000000000000000 ]' - "$(ff_seq h1)"
	# the next rollout through the honest store: applied, not refused as a replay
	before=$(tree_hash "$FF/h1/root")
	# shellcheck disable=SC2046
	run "$NODETUNE" fleet rollout $(ff_ctl) --signing-key "$FF/ctl/ctl.key" $([ "$FF_NEW" = 1 ] && echo --fleet-id prod) \
		--policy "$FF/defrag.conf" --name r-ff-honest --waves 100% --wave-timeout 20 --json
	if [ "$RC" -eq 0 ] && [ "$(cat "$FF/h1/root/$FF_THP/defrag")" = madvise ]; then
		t_ok "(a) after the lie, a rollout through the honest store is applied on h1 (defrag madvise, seq $(ff_seq h1))"
	else
		t_not_ok "(a) after the lie, the honest rollout: exit $RC, h1 defrag '$(cat "$FF/h1/root/$FF_THP/defrag")', tree $([ "$(tree_hash "$FF/h1/root")" = "$before" ] && echo unchanged || echo changed)"
		grep -E 'refused|applied' "$FF/h1/log" | tail -3 | sed 's/^/#   /'
	fi
	# the controller's counter: signed, in the store, above the lie's revisions never
	run etcd_as "$FF" root get --print-value-only /nodetune/seq
	check "(a) the seq is the controller's own: /nodetune/seq is a signed counter document" -- \
		sh -c '[ "$1" -eq 0 ] && grep -q "\"kind\":\"counter\"" "$2"' - "$RC" "$OUT"
}

# ---- (b) the gate document put again ------------------------------------------------

ff_gates() { grep -c "fleet: gate 'quick'" "$FF/h1/log"; }
# a barrier: an unsigned shadow for h1, which h1 refuses (said in its log) in
# the same pass of its keys as the desired one, after it
ff_barrier() { # N: wait until h1 said N refusals of the shadow
	etcd_as "$FF" root put /nodetune/hosts/h1/shadow '{"rollout":"x","policy":"p","sha256":"'"$FF_SHA0"'"}' >/dev/null &&
		wait_until 30 sh -c '[ "$(grep -c "hosts/h1/shadow refused" "$1")" -ge "$2" ]' - "$FF/h1/log" "$1"
}

ff_gate_replay() {
	FF_SHA0=0000000000000000000000000000000000000000000000000000000000000000
	# shellcheck disable=SC2046
	"$NODETUNE" fleet rollout $(ff_ctl) --signing-key "$FF/ctl/ctl.key" $([ "$FF_NEW" = 1 ] && echo --fleet-id prod) \
		--policy "$FF/nobal.conf" --name r-ff-gate --waves 100% --gate quick --gate-budget 6 --wave-timeout 120 \
		>"$FF/gate-rollout.out" 2>&1 &
	ff_ctl_pid=$!
	if ! wait_until 30 grep -q "fleet: gate 'quick'" "$FF/h1/log"; then
		kill "$ff_ctl_pid" 2>/dev/null
		wait "$ff_ctl_pid" 2>/dev/null
		t_not_ok "(b) h1 started the gate of r-ff-gate"
		sed 's/^/#   /' "$FF/gate-rollout.out" | tail -3
		return
	fi
	# the controller dies: the gate document stays the current desired
	kill -9 "$ff_ctl_pid" 2>/dev/null
	wait "$ff_ctl_pid" 2>/dev/null
	check "(b) h1's gate gave its verdict" -- wait_until 60 grep -q "fleet: gate verdict" "$FF/h1/log"
	# the same envelope, put again (a new mod_revision, the same bytes)
	v=$(etcd_as "$FF" root get --print-value-only /nodetune/hosts/h1/desired)
	etcd_as "$FF" root put /nodetune/hosts/h1/desired "$v" >/dev/null
	check "(b) h1 read its keys after the re-put (the shadow barrier)" -- ff_barrier 1
	check "(b) the gate document put again: the gate ran once ($(ff_gates) gate start(s) in h1's log)" -- \
		test "$(ff_gates)" -eq 1
	# a restart reads the same document again
	ff_stop h1
	# shellcheck disable=SC2046
	ff_host h1 h1 "$EP" prod $(ff_hcreds h1)
	check "(b) h1 restarted and read its keys (the shadow barrier)" -- \
		wait_until 30 sh -c '[ "$(grep -c "hosts/h1/shadow refused" "$1")" -ge 2 ]' - "$FF/h1/log"
	check "(b) after a restart the gate did not run again ($(ff_gates) gate start(s) in h1's log)" -- \
		test "$(ff_gates)" -eq 1
	etcd_as "$FF" root del /nodetune/hosts/h1/shadow >/dev/null
	# shellcheck disable=SC2046
	run "$NODETUNE" fleet abort $(ff_ctl) --signing-key "$FF/ctl/ctl.key" $([ "$FF_NEW" = 1 ] && echo --fleet-id prod) \
		--name r-ff-gate
	check "(b) r-ff-gate aborted, so that the next rollout may start (exit $RC)" -- test "$RC" -le 1
}

# ---- (c) another fleet's document -----------------------------------------------------

ff_cross_fleet() {
	FF_SEP=$(tests/tools/etcd-cluster.sh start "$FF/stg-etcd") || { t_not_ok "(c) staging's etcd started"; return; }
	t_defer "tests/tools/etcd-cluster.sh stop '$FF/stg-etcd'"
	# staging's h2, and a rollout there signed with the same key for fleet staging
	ff_host stg-h2 h2 "$FF_SEP" staging
	wait_until 20 ff_alive h2 --endpoints "$FF_SEP" || { t_not_ok "(c) staging's h2 registered"; return; }
	# shellcheck disable=SC2046
	run "$NODETUNE" fleet rollout --endpoints "$FF_SEP" --signing-key "$FF/ctl/ctl.key" \
		$([ "$FF_NEW" = 1 ] && echo --fleet-id staging) --policy "$FF/never.conf" --name r-stg --waves 100% --wave-timeout 20 --json
	check "(c) staging's rollout r-stg applied on staging's h2 (exit $RC)" -- test "$RC" -eq 0
	# prod's h2
	# shellcheck disable=SC2046
	ff_host h2 h2 "$EP" prod $(ff_hcreds h2)
	# shellcheck disable=SC2046
	wait_until 20 ff_alive h2 $(ff_ctl) || { t_not_ok "(c) prod's h2 registered"; return; }
	wait_until 10 grep -q "nodetune_knobs_checked" "$FF/h2/nodetune.prom"
	before=$(tree_hash "$FF/h2/root")
	# the copy: staging's signed desired for h2 and its signed policy
	des=$(ETCDCTL_API=3 etcdctl --endpoints "$FF_SEP" get --print-value-only /nodetune/hosts/h2/desired)
	sha=$(printf '%s' "$des" | python3 -c '
import base64, json, sys; print(json.loads(base64.b64decode(json.load(sys.stdin)["doc"]))["sha256"])')
	pol=$(ETCDCTL_API=3 etcdctl --endpoints "$FF_SEP" get --print-value-only "/nodetune/policies/$sha")
	etcd_as "$FF" root put "/nodetune/policies/$sha" "$pol" >/dev/null &&
		etcd_as "$FF" root put /nodetune/hosts/h2/desired "$des" >/dev/null ||
		{ t_not_ok "(c) staging's documents copied into prod's store"; return; }
	wait_until 20 grep -Eq "fleet: applied never.conf|hosts/h2/desired refused" "$FF/h2/log"
	if grep -q "refused (other_fleet)" "$FF/h2/log" && [ "$(tree_hash "$FF/h2/root")" = "$before" ]; then
		t_ok "(c) staging's document in prod's store: $(grep -o 'refused (other_fleet)[^;]*' "$FF/h2/log" | head -n 1); prod's h2 byte-identical"
	else
		t_not_ok "(c) staging's document in prod's store: h2 $(grep -Eo 'fleet: applied never.conf[^:]*|refused \([a-z_]*\)' "$FF/h2/log" | head -n 1), thp '$(cat "$FF/h2/root/$FF_THP/enabled")', tree $([ "$(tree_hash "$FF/h2/root")" = "$before" ] && echo unchanged || echo changed)"
	fi
}

# ---- (d) a store that withholds updates: frozen -----------------------------------------

ff_metric() { grep -E "^nodetune_fleet_frozen $1\$" "$FF/h3/nodetune.prom"; }
ff_frozen() {
	# shellcheck disable=SC2046
	run "$NODETUNE" fleet timestamp $(ff_ctl) --signing-key "$FF/ctl/ctl.key" --fleet-id prod
	check "(d) the controller signed a timestamp (exit $RC: $(head -c 80 "$OUT"))" -- test "$RC" -eq 0
	# shellcheck disable=SC2046
	ff_host h3 h3 "$EP" prod $(ff_hcreds h3) $([ "$FF_NEW" = 1 ] && echo --fleet-max-age 4)
	check "(d) h3 verified the timestamp: not frozen" -- wait_until 20 ff_metric 0
	# its start done before the tree is taken as it must stay: a host that
	# joins follows its class's policy of record (here r-ff-honest's
	# defrag.conf, applied, then "ready"), and only then may it freeze
	wait_until 10 grep -q "nodetune_knobs_checked" "$FF/h3/nodetune.prom"
	wait_until 10 grep -q "daemon: ready:" "$FF/h3/log"
	before=$(tree_hash "$FF/h3/root")
	rm -rf "$FF/h3/root.before" && cp -a "$FF/h3/root" "$FF/h3/root.before"
	# the store goes on serving that timestamp, and nothing newer
	if wait_until 20 ff_metric 1; then
		run "$NODETUNE" status --socket "$FF/h3/sock"
		if grep -q "^fleet: .*FROZEN" "$OUT" && grep -q "fleet: frozen" "$FF/h3/log" &&
			[ "$(tree_hash "$FF/h3/root")" = "$before" ]; then
			t_ok "(d) the withheld timestamp: h3 frozen (nodetune_fleet_frozen 1, '$(grep '^fleet:' "$OUT")', the log says it), its policy kept (tree byte-identical)"
		else
			t_not_ok "(d) frozen: status '$(grep '^fleet:' "$OUT")', log '$(grep -c 'fleet: frozen' "$FF/h3/log")', tree $([ "$(tree_hash "$FF/h3/root")" = "$before" ] && echo unchanged || echo changed)"
			diff -r "$FF/h3/root.before" "$FF/h3/root" 2>&1 | head -n 6 | sed 's/^/#   /'
			grep -v '^$' "$FF/h3/log" | tail -n 4 | sed 's/^/#   log: /'
		fi
	else
		t_not_ok "(d) a store withholding the timestamp: h3 never said frozen (nodetune_fleet_frozen: '$(grep '^nodetune_fleet_frozen' "$FF/h3/nodetune.prom")')"
	fi
}

ff_main() {
	etcd_have || return 0
	[ -f "$FF_TOPO" ] || { t_need ../shared "no $SHARED topologies"; return 0; }
	"$NODETUNE" daemon --help 2>/dev/null | grep -q -- --fleet-id && FF_NEW=1
	mkdir -p "$FF" && chmod 711 "$T_TMP" "$FF"
	etcd_tls_auth_start "$FF" h1,h2,h3 || return 0
	t_defer "for h in h1 h2 h3 stg-h2; do [ -f '$FF'/\$h/pid ] && kill \$(cat '$FF'/\$h/pid) 2>/dev/null; done"
	mkdir -m 700 "$FF/ctl" && mkdir -m 755 "$FF/keys.d" "$FF/gates.d" &&
		"$NODETUNE" fleet keygen --out "$FF/ctl" --name ctl >/dev/null && cp "$FF/ctl/ctl.pub" "$FF/keys.d/" ||
		{ t_not_ok "fleet keygen"; return 0; }
	printf 'command = /bin/sleep\narg = 0.05\nuser = nobody\nbudget = 6\n' >"$FF/gates.d/quick.conf"
	chmod 644 "$FF/gates.d/quick.conf"
	ff_policy thp thp enabled madvise
	ff_policy defrag thp defrag madvise
	ff_policy nobal sched numa_balancing 0
	ff_policy never thp enabled never
	# shellcheck disable=SC2046
	ff_host h1 h1 "$EP" prod $(ff_hcreds h1)
	# shellcheck disable=SC2046
	wait_until 20 ff_alive h1 $(ff_ctl) || { t_not_ok "h1 registered"; return 0; }
	ff_gate_replay
	ff_inflated_seq
	ff_cross_fleet
	ff_frozen
	for h in h1 h2 h3 stg-h2; do ff_stop $h; done
}
ff_main
