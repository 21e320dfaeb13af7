# SPDX-License-Identifier: MIT
# attacks/fleet-sign.sh — the controller as a signing oracle (security.md
# H1) and key rotation (L11), against a real 3-member etcd with TLS and
# auth (etcd_lib.sh), two host daemons (h1, h2) each logged in as its own
# etcd user, and a controller logged in as nodetune-controller.  The
# attacker holds the controller's etcd password, not its signing key.
# Sourced by test_attacks.sh (after lib.sh).
#
#   (c) L11: a policy rolled out with key K1, the hosts moved to K2 only
#       (K1 removed, daemons restarted), the same policy rolled out with K2:
#       the hosts run it (before: unknown_key, rolled back); and a host
#       restarted without the store after K1's removal does not start with
#       the policy K1 signed, kept in its state dir (before: it did);
#   (a) H1: a bare desired planted for h1 naming a signed policy h1 never
#       ran, then a rollout and an operator's signed `fleet abort`: h1 is
#       left as it is, byte-identical, its state "kept" (before: the
#       controller signed the planted document and h1 applied it);
#   (b) H1: the rollout document rewritten with the controller's etcd
#       password (the sha256 of that other signed policy, the wave sent
#       again, h1's prev_desired the bare document): `fleet resume` and
#       `fleet abort` refuse it, naming the key and the reason, exit 3,
#       nothing written (before: resume sent that policy to every host).

. "$SRCDIR/tests/integration/etcd_lib.sh"

fleet_sign_policy() { # NAME SECTION KEY VALUE: a policy file
	printf '[main]\nsummary = attack %s\n[%s]\n%s = %s\n' "$1" "$2" "$3" "$4" >"$FLEET_SIGN_D/$1.conf"
	chmod 644 "$FLEET_SIGN_D/$1.conf"
}

fleet_sign_host_start() { # N
	fleet_sign_h=$FLEET_SIGN_D/h$1
	[ -d "$fleet_sign_h/root" ] || { mkdir -p "$fleet_sign_h" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$fleet_sign_h/root"; }
	"$NODETUNE" daemon --sysroot "$fleet_sign_h/root" --topology "$SHARED/g4dnmetal.xml" --policy policies/baseline.conf \
		--fleet "$EP" --host "h$1" --cacert "$ETCD_CA" --user "nodetune-host-h$1" --password-file "$ETCD_PW/nodetune-host-h$1" \
		--fleet-keys "$FLEET_SIGN_D/keys.d" --no-metrics --socket "$fleet_sign_h/sock" --state-dir "$fleet_sign_h/state" \
		--interval 1 >>"$fleet_sign_h/log" 2>&1 &
	echo $! >"$fleet_sign_h/pid"
}

fleet_sign_host_stop() { # N
	[ -f "$FLEET_SIGN_D/h$1/pid" ] || return 0
	kill "$(cat "$FLEET_SIGN_D/h$1/pid")" 2>/dev/null
	wait "$(cat "$FLEET_SIGN_D/h$1/pid")" 2>/dev/null
	rm -f "$FLEET_SIGN_D/h$1/pid"
}

fleet_sign_cleanup() {
	[ -f "$FLEET_SIGN_D/ctl.pid" ] && kill -9 "$(cat "$FLEET_SIGN_D/ctl.pid")" 2>/dev/null
	fleet_sign_host_stop 1
	fleet_sign_host_stop 2
}

# the fleet verbs as the controller's etcd user: $FLEET_SIGN_CTL VERB ARGS...
# (a script, so that timeout and a background job run it)
fleet_sign_ctl_script() {
	FLEET_SIGN_CTL=$FLEET_SIGN_D/ctl.sh
	printf '#!/bin/sh
verb=$1
shift
exec "%s" fleet "$verb" --endpoints "%s" --cacert "%s" --user nodetune-controller --password-file "%s" "$@"\n' \
		"$NODETUNE" "$EP" "$ETCD_CA" "$ETCD_PW/nodetune-controller" >"$FLEET_SIGN_CTL" && chmod 755 "$FLEET_SIGN_CTL"
}

fleet_sign_alive2() {
	[ "$("$FLEET_SIGN_CTL" hosts --json | grep -c '"alive": true')" = 2 ]
}

# the sha256 each host's status says it runs, "h1=SHA h2=SHA"
fleet_sign_running() {
	"$FLEET_SIGN_CTL" hosts --json | python3 -c '
import json, sys
print(" ".join("%s=%s" % (h["host"], h.get("status", {}).get("sha256", "")) for h in json.load(sys.stdin)["hosts"]))'
}

# both hosts alive and running sha256 SHA
fleet_sign_both_run() { # SHA
	[ "$(fleet_sign_running)" = "h1=$1 h2=$1" ]
}

fleet_sign_both_run_rollout() { # ROLLOUT
	fleet_sign_s=$(fleet_sign_sha "$1") && [ -n "$fleet_sign_s" ] && fleet_sign_both_run "$fleet_sign_s"
}

fleet_sign_sha() { # ROLLOUT: the sha256 of the policy it rolls out (of the flattened text it stored)
	"$FLEET_SIGN_CTL" status --name "$1" --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["rollouts"][0]["sha256"])'
}

# the store's value of KEY, and its mod_revision
fleet_sign_get() { etcd_as "$FLEET_SIGN_D/etcd" root get --print-value-only "$1"; }
fleet_sign_rev() {
	etcd_as "$FLEET_SIGN_D/etcd" root get -w json "$1" | python3 -c '
import json, sys; kvs = json.load(sys.stdin).get("kvs", []); print(kvs[0]["mod_revision"] if kvs else 0)'
}

# what the attacker leaves unchanged, to compare: both trees and both desired keys' revisions
fleet_sign_state() {
	echo "$(tree_hash "$FLEET_SIGN_D/h1/root") $(tree_hash "$FLEET_SIGN_D/h2/root")" \
		"$(fleet_sign_rev /nodetune/hosts/h1/desired) $(fleet_sign_rev /nodetune/hosts/h2/desired)"
}

# start rollout NAME of POLICY in the background with KEY, pausing 10 s
# after each step; once both hosts run it, kill the controller -9 (the
# rollout stays running, for an abort or a resume to lead)
fleet_sign_rollout_killed() { # NAME POLICY KEY
	NODETUNE_FLEET_PAUSE=10 "$FLEET_SIGN_CTL" rollout --signing-key "$3" --policy "$2" --name "$1" --waves 100% \
		--wave-timeout 60 >"$FLEET_SIGN_D/$1.out" 2>&1 &
	echo $! >"$FLEET_SIGN_D/ctl.pid"
	wait_until 30 fleet_sign_both_run_rollout "$1"
	fleet_sign_rc=$?
	kill -9 "$(cat "$FLEET_SIGN_D/ctl.pid")" 2>/dev/null
	wait "$(cat "$FLEET_SIGN_D/ctl.pid")" 2>/dev/null
	rm -f "$FLEET_SIGN_D/ctl.pid"
	return $fleet_sign_rc
}

fleet_sign_setup() {
	FLEET_SIGN_D=$T_TMP/fleet-sign
	mkdir -p "$FLEET_SIGN_D" && chmod 711 "$T_TMP" || return 1
	etcd_tls_auth_start "$FLEET_SIGN_D/etcd" h1,h2 || return 1
	t_defer fleet_sign_cleanup
	fleet_sign_ctl_script || { t_not_ok "fleet-sign: the controller's script"; return 1; }
	mkdir -m 700 "$FLEET_SIGN_D/k1" "$FLEET_SIGN_D/k2" && mkdir -m 755 "$FLEET_SIGN_D/keys.d" &&
		"$NODETUNE" fleet keygen --out "$FLEET_SIGN_D/k1" --name k1 >/dev/null &&
		"$NODETUNE" fleet keygen --out "$FLEET_SIGN_D/k2" --name k2 >/dev/null &&
		cp "$FLEET_SIGN_D/k1/k1.pub" "$FLEET_SIGN_D/keys.d/" || { t_not_ok "fleet-sign: the keys"; return 1; }
	fleet_sign_policy nobal sched numa_balancing 0
	fleet_sign_policy thp thp enabled madvise
	fleet_sign_policy never thp enabled never
	fleet_sign_policy defrag thp defrag madvise
	fleet_sign_policy dnever thp defrag never
	fleet_sign_host_start 1
	fleet_sign_host_start 2
	wait_until 20 fleet_sign_alive2 || { t_not_ok "fleet-sign: h1 and h2 registered"; return 1; }
}

# (c') L11, revoked: h1 runs nobal, which K1 signed, kept in its state dir;
# K1 is removed from the keys it trusts; h1 starts while the store is out
# of reach (an endpoint nothing listens on): it starts with its own policy
# file, saying that the kept one's signer is no longer trusted (before: it
# ran the revoked key's policy until the store answered)
fleet_sign_revoked() {
	fleet_sign_h=$FLEET_SIGN_D/h1
	: >"$fleet_sign_h/revoked.log"
	"$NODETUNE" daemon --sysroot "$fleet_sign_h/root" --topology "$SHARED/g4dnmetal.xml" --policy policies/baseline.conf \
		--fleet https://127.0.0.1:1 --host h1 --cacert "$ETCD_CA" --fleet-keys "$FLEET_SIGN_D/keys.d" --no-metrics \
		--socket "$fleet_sign_h/sock" --state-dir "$fleet_sign_h/state" --interval 1 >"$fleet_sign_h/revoked.log" 2>&1 &
	fleet_sign_p=$!
	fleet_sign_said() { grep -q "the policy the store named last" "$fleet_sign_h/revoked.log"; }
	wait_until 20 fleet_sign_said
	kill "$fleet_sign_p" 2>/dev/null
	wait "$fleet_sign_p" 2>/dev/null
	fleet_sign_line=$(grep -m 1 "the policy the store named last" "$fleet_sign_h/revoked.log" | sed 's/.*fleet: //')
	check "L11: K1 revoked, h1 restarted without the store: not the policy K1 signed (${fleet_sign_line:-nothing said})" -- \
		sh -c 'case $1 in "not starting with "*"is no longer trusted"*) ;; *) exit 1 ;; esac' - "$fleet_sign_line"
}

# (c) L11: P with K1; the hosts trust K2 only; Q with K2; P again with K2
fleet_sign_rotation() {
	K1=$FLEET_SIGN_D/k1/k1.key K2=$FLEET_SIGN_D/k2/k2.key
	run "$FLEET_SIGN_CTL" rollout --signing-key "$K1" --policy "$FLEET_SIGN_D/nobal.conf" --name rot-1 --waves 100% --wave-timeout 30
	[ "$RC" -eq 0 ] || { t_not_ok "L11: rollout of nobal with K1 (exit $RC: $(tail -n 1 "$ERR"; tail -n 1 "$OUT"))"; return 1; }
	cp "$FLEET_SIGN_D/k2/k2.pub" "$FLEET_SIGN_D/keys.d/" && rm "$FLEET_SIGN_D/keys.d/k1.pub"
	fleet_sign_host_stop 1
	fleet_sign_host_stop 2
	fleet_sign_revoked
	fleet_sign_host_start 1
	fleet_sign_host_start 2
	wait_until 20 fleet_sign_alive2 || { t_not_ok "L11: h1 and h2 back with K2 only"; return 1; }
	# the controller rotates from K1: it trusts K1's public key besides its
	# own (--fleet-keys) for what K1 signed of its state (the counter),
	# which it signs again with K2 at its first step
	mkdir -m 755 "$FLEET_SIGN_D/ctlkeys.d" && cp "$FLEET_SIGN_D/k1/k1.pub" "$FLEET_SIGN_D/ctlkeys.d/"
	run "$FLEET_SIGN_CTL" rollout --signing-key "$K2" --fleet-keys "$FLEET_SIGN_D/ctlkeys.d" --policy "$FLEET_SIGN_D/thp.conf" \
		--name rot-2 --waves 100% --wave-timeout 30
	[ "$RC" -eq 0 ] || { t_not_ok "L11: rollout of thp with K2 (exit $RC: $(tail -n 1 "$ERR"))"; return 1; }
	run "$FLEET_SIGN_CTL" rollout --signing-key "$K2" --policy "$FLEET_SIGN_D/nobal.conf" --name rot-3 --waves 100% --wave-timeout 30
	fleet_sign_now=$(fleet_sign_running)
	fleet_sign_want=$(fleet_sign_sha rot-1)
	if [ "$RC" -eq 0 ] && [ "$fleet_sign_now" = "h1=$fleet_sign_want h2=$fleet_sign_want" ]; then
		t_ok "L11: a policy first stored under K1, rolled out again with K2 after K1's removal: both hosts run it ($(grep -o 'signed again with key [0-9a-f]*' "$OUT" | head -n 1))"
	else
		t_not_ok "L11: nobal again with K2: exit $RC, hosts run $fleet_sign_now (want $fleet_sign_want)"
		grep -h 'refused' "$FLEET_SIGN_D"/h?/log | tail -n 2 | sed 's/^/#   /'
		tail -n 2 "$OUT" | sed 's/^/#   /'
	fi
}

# (a) H1: a bare desired planted for h1, then a rollout and an operator's abort
fleet_sign_planted() {
	run "$FLEET_SIGN_CTL" rollout --signing-key "$K2" --policy "$FLEET_SIGN_D/defrag.conf" --name plant-0 --shadow --wave-timeout 30
	FLEET_SIGN_BAD=$(fleet_sign_sha plant-0)
	[ -n "$(fleet_sign_get "/nodetune/policies/$FLEET_SIGN_BAD")" ] ||
		{ t_not_ok "H1: the shadow rollout stored defrag, signed (exit $RC: $(tail -n 1 "$ERR"))"; return 1; }
	FLEET_SIGN_BARE='{"rollout":"x","mode":"apply","policy":"defrag.conf","sha256":"'$FLEET_SIGN_BAD'"}'
	etcd_as "$FLEET_SIGN_D/etcd" nodetune-controller put /nodetune/hosts/h1/desired "$FLEET_SIGN_BARE" >/dev/null ||
		{ t_not_ok "H1: planted a bare desired with the controller's password"; return 1; }
	wait_until 20 grep -q 'refused (unsigned)' "$FLEET_SIGN_D/h1/log" ||
		{ t_not_ok "H1: h1 did not refuse the bare desired"; return 1; }
	fleet_sign_rollout_killed plant-1 "$FLEET_SIGN_D/never.conf" "$K2" ||
		{ t_not_ok "H1: rollout plant-1 reached both hosts ($(fleet_sign_running))"; return 1; }
	fleet_sign_before=$(tree_hash "$FLEET_SIGN_D/h1/root")
	run timeout 120 "$FLEET_SIGN_CTL" abort --signing-key "$K2" --name plant-1
	fleet_sign_after=$(tree_hash "$FLEET_SIGN_D/h1/root")
	cp "$OUT" "$FLEET_SIGN_D/abort.out"
	fleet_sign_abort_rc=$RC
	run "$FLEET_SIGN_CTL" status --name plant-1 --json
	fleet_sign_h1=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["rollouts"][0]
print(" ".join(h["state"] for w in r["waves"] for h in w["hosts"] if h["host"] == "h1"))' "$OUT" 2>/dev/null)
	RC=$fleet_sign_abort_rc
	if [ "$RC" -eq 1 ] && [ "$fleet_sign_h1" = kept ] && [ "$fleet_sign_after" = "$fleet_sign_before" ] &&
		grep -q 'h1 .*left as it is' "$FLEET_SIGN_D/abort.out" && ! grep -q "applied defrag.conf" "$FLEET_SIGN_D/h1/log"; then
		t_ok "H1: a planted bare desired is not signed by an abort: h1 kept, byte-identical ($(grep -o 'h1 .*left as it is.*' "$FLEET_SIGN_D/abort.out" | head -n 1))"
	else
		t_not_ok "H1: abort over a planted bare desired: exit $RC, h1 '$fleet_sign_h1', tree $( [ "$fleet_sign_after" = "$fleet_sign_before" ] && echo same || echo CHANGED)"
		grep -h 'applied defrag.conf' "$FLEET_SIGN_D/h1/log" | tail -n 1 | sed 's/^/#   h1: /'
		fleet_sign_get /nodetune/hosts/h1/desired | python3 -c '
import base64, json, sys
e = json.load(sys.stdin)
print("#   h1 desired now:", e.get("key_id", "unsigned"), base64.b64decode(e["doc"]).decode() if "doc" in e else e)'
	fi
}

# rewrite rollout NAME's documents as the controller's etcd user; how:
# "resend" (the head: its sha256 that of the policy the hosts never ran,
# the waves pending again; the signed envelope kept, its document
# replaced) or "restore" (the page that holds h1: its prev_desired the
# bare document; the page's document alone, unsigned)
fleet_sign_rewrite() { # NAME HOW
	etcd_as "$FLEET_SIGN_D/etcd" root get --prefix "/nodetune/rollouts/$1" -w json | python3 -c '
import base64, json, sys
name, how, bad, bare = sys.argv[1:5]
b64 = lambda s: base64.b64decode(s).decode()
kvs = {b64(kv["key"]): b64(kv["value"]) for kv in json.load(sys.stdin).get("kvs", [])}
def doc_of(v):
    v = json.loads(v)
    return v, (json.loads(base64.b64decode(v["doc"])) if "nodetune_signed" in v else v)
if how == "resend":
    key = "/nodetune/rollouts/" + name
    v, r = doc_of(kvs[key])
    for w in r["waves"]:
        w["state"] = "pending"
    r["sha256"], r["policy"], r["wave"] = bad, "defrag.conf", 0
    doc = json.dumps(r, separators=(",", ":"))
    if "nodetune_signed" in v:
        v["doc"] = base64.b64encode(doc.encode()).decode()
        doc = json.dumps(v, separators=(",", ":"))
else:
    for key in sorted(k for k in kvs if "/pages/" in k):
        v, p = doc_of(kvs[key])
        if any(h["host"] == "h1" for h in p["hosts"]):
            break
    for h in p["hosts"]:
        if h["host"] == "h1":
            h["prev_desired"] = bare
            h.pop("prev_refused", None)
    doc = json.dumps(p, separators=(",", ":"))
print(key)
print(doc)' "$1" "$2" "$FLEET_SIGN_BAD" "$FLEET_SIGN_BARE" >"$FLEET_SIGN_D/rewritten" &&
		etcd_as "$FLEET_SIGN_D/etcd" nodetune-controller put "$(head -n 1 "$FLEET_SIGN_D/rewritten")" \
			"$(tail -n +2 "$FLEET_SIGN_D/rewritten")" >/dev/null
}

# VERB (resume, abort) of rollout NAME, rewritten: refused, exit 3, one
# line naming the key and REASON (a grep pattern), nothing written (both
# trees and both desired keys as they were)
fleet_sign_refused() { # VERB NAME REASON WHAT
	fleet_sign_before=$(fleet_sign_state)
	run timeout 120 "$FLEET_SIGN_CTL" "$1" --signing-key "$K2" --name "$2"
	fleet_sign_after=$(fleet_sign_state)
	if [ "$RC" -eq 3 ] && [ "$(wc -l <"$ERR")" -eq 1 ] && grep -Eq "rollouts/$2(/pages/[0-9]+\.[0-9]+)?: $3" "$ERR" &&
		[ "$fleet_sign_after" = "$fleet_sign_before" ]; then
		t_ok "H1: $4: $1 refuses, nothing written, both hosts byte-identical ($(cat "$ERR"))"
	else
		t_not_ok "H1: $4: $1 exit $RC, hosts and desired keys $( [ "$fleet_sign_after" = "$fleet_sign_before" ] && echo same || echo CHANGED)"
		sed 's/^/#   /' "$ERR" | tail -n 2
		fleet_sign_running | sed 's/^/#   running: /'
	fi
}

# (b) H1: the rollout document rewritten, then resume and abort
fleet_sign_rewritten() {
	fleet_sign_rollout_killed rw-1 "$FLEET_SIGN_D/dnever.conf" "$K2" ||
		{ t_not_ok "H1: rollout rw-1 reached both hosts ($(fleet_sign_running))"; return 1; }
	fleet_sign_get /nodetune/rollouts/rw-1 >"$FLEET_SIGN_D/rw-1.saved"
	fleet_sign_rewrite rw-1 resend || { t_not_ok "H1: rewrote rollouts/rw-1"; return 1; }
	fleet_sign_refused resume rw-1 'refused \(bad_signature\): the signature does not verify with key [0-9a-f]*' \
		"a rollout document rewritten inside its envelope"
	# the operator puts the document back from its backup and aborts rw-1
	etcd_as "$FLEET_SIGN_D/etcd" root put /nodetune/rollouts/rw-1 <"$FLEET_SIGN_D/rw-1.saved" >/dev/null
	run timeout 120 "$FLEET_SIGN_CTL" abort --signing-key "$K2" --name rw-1
	fleet_sign_rollout_killed rw-2 "$FLEET_SIGN_D/thp.conf" "$K2" ||
		{ t_not_ok "H1: rollout rw-2 reached both hosts ($(fleet_sign_running))"; return 1; }
	fleet_sign_rewrite rw-2 restore || { t_not_ok "H1: rewrote rollouts/rw-2 bare"; return 1; }
	fleet_sign_refused abort rw-2 'refused \(unsigned\)' "a bare rollout page written with the controller's password"
}

fleet_sign_main() {
	etcd_have || return 0
	[ -f "$SHARED/g4dnmetal.xml" ] || { t_need ../shared "fleet-sign: no $SHARED topologies"; return 0; }
	fleet_sign_setup || return 0
	fleet_sign_rotation
	fleet_sign_planted && fleet_sign_rewritten
	fleet_sign_cleanup
}

fleet_sign_main
