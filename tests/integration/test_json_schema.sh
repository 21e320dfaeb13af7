#!/bin/sh
# SPDX-License-Identifier: MIT
# host: abcg
# test_json_schema.sh — every --json document nodetune prints against its
# JSON Schema, docs/schema/NAME.schema.json (draft 2020-12), validated by
# Debian's python3-jsonschema (tests/tools/json_schema_check.py).  NAME is
# the verb ("discover"), a sub-verb with a dot ("policy.list"); the document
# says "schema": "nodetune.NAME/1" (the schema requires that constant).
#
# The verbs are run on the captured fixtures (tests/fixtures/sysroot/*,
# tests/fixtures/topologies/*, a copy of a tree where they write), the
# daemon on a copy of a tree with its own socket, the fleet against a
# throwaway etcd on loopback with one such daemon; ab and bisect on
# `true` with policies that change nothing on the host (as root their
# trials still run in nodetune-ab groups of the live cgroup tree: abcg).
#
# Coverage, derived and not a hand list: every verb that takes --json
# (nodetune help --json: its json option not refused) has a schema file, and
# every schema file had a document validated here, so a new --json verb
# without a schema, or a schema no test feeds, fails.  The checker itself
# refuses a planted wrong type.
. "$(dirname "$0")/lib.sh"
t_plan 50

PY=/usr/bin/python3
if ! $PY -c 'import jsonschema' 2>/dev/null; then
	t_need python3-jsonschema "Debian's python3-jsonschema validates the documents (scripts/install-deps.sh core)"
	t_rest
fi
SD=docs/schema
CHK="$PY tests/tools/json_schema_check.py"
F=tests/fixtures
HGX=$F/topologies/hgx-2s8g8n-synthetic.xml
GT=policies/gpu-train.conf
: >"$T_TMP/validated"
: >"$T_TMP/skipped"

# valid NAME RCS DESC -- CMD...: CMD exits with one of RCS ("0" or "0|1"),
# and its stdout is a document of schema NAME (observe: each line one)
valid() {
	v_name=$1 v_rcs=$2 v_desc=$3
	shift 4
	run "$@"
	v_lines=
	[ "$v_name" = observe ] && v_lines=--lines
	# shellcheck disable=SC2086 # --lines or nothing
	v_bad=$($CHK $v_lines "$SD" "$v_name" "$OUT" 2>&1)
	v_ok=$?
	case "|$v_rcs|" in *"|$RC|"*) v_rc_ok=1 ;; *) v_rc_ok= ;; esac
	if [ "$v_ok" -eq 0 ] && [ -n "$v_rc_ok" ]; then
		t_ok "$v_name: $v_desc (exit $RC) is valid against $SD/$v_name.schema.json"
		echo "$v_name" >>"$T_TMP/validated"
	else
		t_not_ok "$v_name: $v_desc: exit $RC (want $v_rcs), against $SD/$v_name.schema.json"
		printf '%s\n' "$v_bad" | head -8 | sed 's/^/#   /'
		head -3 "$ERR" | sed 's/^/#   stderr: /'
	fi
}

# ---- the schema files, and the checker ---------------------------------------
run $CHK --schemas "$SD"
check "every $SD/*.schema.json ($(find "$SD" -name '*.schema.json' | wc -l)) is a draft 2020-12 schema naming its file, \"schema\" a required constant$( [ "$RC" -eq 0 ] || echo ": $(head -3 "$OUT" | tr '\n' ' ')")" -- [ "$RC" -eq 0 ]
"$NODETUNE" keys --json >"$T_TMP/keys.json" 2>/dev/null
sed 's/"scope": "host"/"scope": 7/' "$T_TMP/keys.json" >"$T_TMP/planted.json"
run $CHK "$SD" keys "$T_TMP/planted.json"
check "a planted wrong type is refused: $(head -1 "$OUT")" -- sh -c \
	"[ $RC -eq 1 ] && grep -q 'at /keys/[0-9]*/scope: 7 is not of type .string.' '$OUT'"
sed 's/"schema": "nodetune.keys\/1"/"schema": "nodetune.keys\/2"/' "$T_TMP/keys.json" >"$T_TMP/planted.json"
run $CHK "$SD" keys "$T_TMP/planted.json"
check "a document of another version is refused: $(head -1 "$OUT")" -- sh -c "[ $RC -eq 1 ] && grep -q 'at /schema:' '$OUT'"

# ---- what takes --json, from the verbs' own tables ---------------------------
run "$NODETUNE" help --json
cp "$OUT" "$T_TMP/help.json"
# a verb's NAME: its usage's words before the first option or argument
# ("nodetune slurm gres [--topology ...]": slurm.gres)
jq -r '.verbs[] | select(any(.options[]; .name == "json" and .need != "refused")) |
	.usage | split(" ")[1:] | .[:(map(test("^[a-z][a-z-]*$")) | indices(false)[0])] | join(".")' \
	"$T_TMP/help.json" >"$T_TMP/json-verbs"
echo help >>"$T_TMP/json-verbs"     # help --json, the document that lists the rest
check "help --json lists the --json verbs ($(wc -l <"$T_TMP/json-verbs"): $(tr '\n' ' ' <"$T_TMP/json-verbs"))" -- sh -c \
	"grep -qx plan '$T_TMP/json-verbs' && grep -qx fleet.hosts '$T_TMP/json-verbs' && grep -qx slurm.gres '$T_TMP/json-verbs' &&
	 ! grep -qx exec '$T_TMP/json-verbs'"
missing=$(while read -r v; do [ -f "$SD/$v.schema.json" ] || printf '%s ' "$v"; done <"$T_TMP/json-verbs")
check "every verb that takes --json has $SD/VERB.schema.json${missing:+ (missing: $missing)}" -- [ -z "$missing" ]
extra=$(for s in "$SD"/*.schema.json; do n=$(basename "$s" .schema.json); grep -qx "$n" "$T_TMP/json-verbs" || printf '%s ' "$n"; done)
check "every schema file names a verb that takes --json${extra:+ (not a verb: $extra)}" -- [ -z "$extra" ]

# ---- the verbs on the fixtures -----------------------------------------------
valid help 0 "every verb's table" -- cat "$T_TMP/help.json"
for x in "$F"/topologies/*.xml; do
	valid discover 0 "discover --topology $(basename "$x")" -- "$NODETUNE" discover --topology "$x" --json
done
for d in "$F"/sysroot/*/; do
	d=${d%/}
	if [ -d "$d/sys/devices/system/cpu/cpu0/topology" ]; then
		valid discover 0 "discover --sysroot $(basename "$d")" -- "$NODETUNE" discover --sysroot "$d" --json
	else
		valid discover 0 "discover --sysroot $(basename "$d") (its topology: hgx)" -- \
			"$NODETUNE" discover --topology "$HGX" --sysroot "$d" --json
	fi
done
valid discover 0 "discover --synthetic" -- "$NODETUNE" discover --synthetic "pack:2 numa:1 core:4 pu:2" --json
valid plan 0 "plan gpu-train, hgx, gpu-host-untuned" -- \
	"$NODETUNE" plan --policy $GT --topology "$HGX" --sysroot $F/sysroot/gpu-host-untuned --json
valid plan 0 "plan gpu-train -n 2 on a synthetic machine" -- \
	"$NODETUNE" plan --policy $GT --synthetic "pack:1 core:2 pu:1" -n 2 --json
check "plan: each host setting is {knob, path from /, current, wanted}" -- jq -e \
	'.host | length > 0 and all(.[]; (.knob | test("^[a-z_]+[.]")) and (.path | startswith("/")) and has("current") and has("wanted"))' "$OUT"
valid verify 1 "verify gpu-train on gpu-host-untuned (drift)" -- \
	"$NODETUNE" verify --policy $GT --topology "$HGX" --sysroot $F/sysroot/gpu-host-untuned --json
check "verify names a drift as plan names the setting: {knob, path from /, current, wanted}" -- jq -e \
	'.drift | length == 7 and any(.[]; . == {knob: "thp.enabled", path: "/sys/kernel/mm/transparent_hugepage/enabled",
	 current: "always", wanted: "madvise"})' "$OUT"
valid verify 0 "verify gpu-train on gpu-host-tuned (none)" -- \
	"$NODETUNE" verify --policy $GT --topology "$HGX" --sysroot $F/sysroot/gpu-host-tuned --json
cp -a $F/sysroot/gpu-host-untuned "$T_TMP/tree"
valid apply 0 "apply --dry-run" -- \
	"$NODETUNE" apply --dry-run --policy $GT --topology "$HGX" --sysroot "$T_TMP/tree" --state-dir "$T_TMP/st" --json
valid apply 0 "apply on a copy of gpu-host-untuned" -- \
	"$NODETUNE" apply --policy $GT --topology "$HGX" --sysroot "$T_TMP/tree" --state-dir "$T_TMP/st" --json
check "apply: 7 changes (THP twice, NUMA balancing, 4 governors), each path from / as its log line says" -- sh -c \
	"jq -e '.dry_run == false and (.changes | length == 7) and all(.changes[]; .path | startswith(\"/\"))' '$OUT' >/dev/null &&
	 grep -q '^nodetune: apply: /sys/kernel/mm/transparent_hugepage/enabled: always -> madvise' '$ERR'"
valid revert 0 "revert of it" -- "$NODETUNE" revert --sysroot "$T_TMP/tree" --state-dir "$T_TMP/st" --json
check "revert: the tree as it was" -- diff -r $F/sysroot/gpu-host-untuned "$T_TMP/tree"
valid doctor "0|1" "doctor on gpu-host-hazards" -- \
	"$NODETUNE" doctor --topology "$HGX" --sysroot $F/sysroot/gpu-host-hazards --policy $GT --json
valid keys 0 "keys" -- cat "$T_TMP/keys.json"
valid slurm.gres 0 "slurm gres on hgx" -- "$NODETUNE" slurm gres --topology "$HGX" --json
valid observe 0 "observe for 0.3 s" -- "$NODETUNE" observe --interval 100ms --duration 0.3s --json
NODETUNE_POLICY_PATH=$SRCDIR/policies valid policy.list 0 "policy list of policies/" -- "$NODETUNE" policy list --json
NODETUNE_POLICY_PATH=$SRCDIR/policies valid policy.show 0 "policy show gpu-train" -- "$NODETUNE" policy show gpu-train --json
valid policy.recommend 0 "policy recommend on gpu-host-untuned" -- \
	"$NODETUNE" policy recommend --topology "$HGX" --sysroot $F/sysroot/gpu-host-untuned --json
valid policy.active 0 "policy active, no daemon, no journal" -- \
	"$NODETUNE" policy active --state-dir "$T_TMP/none" --socket "$T_TMP/no.sock" --json
valid status 3 "status without a daemon" -- "$NODETUNE" status --socket "$T_TMP/no.sock" --json
check "status without a daemon: running false, the reason, on stdout; the error on stderr too" -- sh -c \
	"jq -e '.running == false and (.error | test(\"no daemon\"))' '$OUT' >/dev/null && grep -q '^nodetune: status: ' '$ERR'"

# ---- ab and bisect: a job of `true`, policies of ranks' bindings only --------
valid ab "0|1" "ab of true against true" -- "$NODETUNE" ab --a cmd=true --b cmd=true --trials 2 --budget 2 --json
valid ab 3 "ab whose arm A fails (verdict error)" -- "$NODETUNE" ab --a cmd=false --b cmd=true --trials 2 --budget 2 --json
printf '[main]\nsummary = unbound\n[affinity]\nmode = none\n' >"$T_TMP/good.conf"
printf '[main]\nsummary = bound\n[affinity]\nmode = numa\n[memory]\npolicy = bind\n' >"$T_TMP/bad.conf"
chmod 644 "$T_TMP/good.conf" "$T_TMP/bad.conf"
valid bisect "0|1" "bisect of two bindings over true" -- \
	"$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/bad.conf" --trials 2 --budget 2 --json -- true

# ---- a daemon (status), and the fleet with one host -------------------------
daemon_up() { "$NODETUNE" status --socket "$T_TMP/h1/sock" >/dev/null 2>&1; }
fleet_json() {
	if [ ! -x "${ETCD:-/usr/bin/etcd}" ]; then
		t_skips 11 t_need etcd "etcd not installed: the fleet's documents are not run"
		return 1
	fi
	CL=$T_TMP/etcd
	EP=$(tests/tools/etcd-cluster.sh start "$CL") || { t_not_ok "the etcd cluster started"; return 1; }
	t_defer "tests/tools/etcd-cluster.sh stop '$CL'"
	mkdir -m 700 "$T_TMP/ctl" && mkdir -m 755 "$T_TMP/keys.d" && mkdir "$T_TMP/h1" &&
		"$NODETUNE" fleet keygen --out "$T_TMP/ctl" --name ctl >/dev/null && cp "$T_TMP/ctl/ctl.pub" "$T_TMP/keys.d/" &&
		cp -a $F/sysroot/gpu-host-untuned "$T_TMP/h1/root" || { t_not_ok "fleet keygen, the host's tree"; return 1; }
	"$NODETUNE" daemon --sysroot "$T_TMP/h1/root" --topology "$HGX" --policy policies/baseline.conf --fleet "$EP" \
		--host h1 --fleet-keys "$T_TMP/keys.d" --no-metrics --textfile-dir "$T_TMP/h1" --socket "$T_TMP/h1/sock" \
		--state-dir "$T_TMP/h1/state" --interval 1 >>"$T_TMP/h1/log" 2>&1 &
	echo $! >"$T_TMP/h1/pid"
	t_defer "kill \$(cat '$T_TMP/h1/pid') 2>/dev/null; wait \$(cat '$T_TMP/h1/pid') 2>/dev/null"
	if ! wait_until 20 sh -c '"$1" fleet hosts --endpoints "$2" --json | grep -q "\"alive\": true"' - "$NODETUNE" "$EP" ||
		! wait_until 20 daemon_up; then
		t_not_ok "the daemon h1 registered and answers on its socket"
		tail -5 "$T_TMP/h1/log" | sed 's/^/#   /'
		return 1
	fi
	valid status 0 "status of a running daemon" -- "$NODETUNE" status --socket "$T_TMP/h1/sock" --json
	check "status of a running daemon: running true" -- jq -e '.running == true' "$OUT"
	valid policy.active 0 "policy active, the daemon answering" -- \
		"$NODETUNE" policy active --state-dir "$T_TMP/h1/state" --socket "$T_TMP/h1/sock" --json
	valid fleet.hosts 0 "fleet hosts" -- "$NODETUNE" fleet hosts --endpoints "$EP" --json
	printf '[main]\nsummary = thp\n[thp]\nenabled = madvise\n' >"$T_TMP/thp.conf"
	chmod 644 "$T_TMP/thp.conf"
	S="--signing-key $T_TMP/ctl/ctl.key"
	# shellcheck disable=SC2086
	valid fleet.rollout 0 "fleet rollout to h1" -- "$NODETUNE" fleet rollout --endpoints "$EP" $S \
		--policy "$T_TMP/thp.conf" --name r1 --waves 100% --wave-timeout 20 --json
	# shellcheck disable=SC2086
	valid fleet.resume 0 "fleet resume of it" -- "$NODETUNE" fleet resume --endpoints "$EP" $S --name r1 --json
	# shellcheck disable=SC2086
	valid fleet.abort 0 "fleet abort of it" -- "$NODETUNE" fleet abort --endpoints "$EP" $S --name r1 --json
	valid fleet.status 0 "fleet status" -- "$NODETUNE" fleet status --endpoints "$EP" --json
	valid fleet.status 0 "fleet status --name r1" -- "$NODETUNE" fleet status --endpoints "$EP" --name r1 --json
	check "fleet status --name: the one rollout, in rollouts[]" -- jq -e '[.rollouts[].name] == ["r1"]' "$OUT"
	# stopped here, where its exit can be waited for (t_defer's runs in a subshell)
	kill "$(cat "$T_TMP/h1/pid")" && wait "$(cat "$T_TMP/h1/pid")"
	d_rc=$?
	check "the daemon h1 stopped on SIGTERM (exit $d_rc)" -- [ "$d_rc" -eq 0 ]
}
if [ "$(id -u)" -ne 0 ]; then
	t_skips 11 t_skip_host root "not root: the daemon (status, the fleet's host) is not started"
	for n in fleet.rollout fleet.resume fleet.abort fleet.status fleet.hosts; do echo "$n" >>"$T_TMP/skipped"; done
elif ! fleet_json; then
	for n in fleet.rollout fleet.resume fleet.abort fleet.status fleet.hosts; do echo "$n" >>"$T_TMP/skipped"; done
fi

# ---- coverage: every schema had a document ------------------------------------
unfed=$(for s in "$SD"/*.schema.json; do
	n=$(basename "$s" .schema.json)
	grep -qx "$n" "$T_TMP/validated" || grep -qx "$n" "$T_TMP/skipped" || printf '%s ' "$n"
done)
check "every schema file had a document of its verb validated here${unfed:+ (none for: $unfed)}" -- [ -z "$unfed" ]
t_done
