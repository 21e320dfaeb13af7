#!/bin/sh
# discover --json against the expected output kept beside each fixture.
# The expected files were produced by nodetune and checked by hand against
# lstopo-no-graphics; UPDATE_GOLDEN=1 rewrites them (review the diff!).
. "$(dirname "$0")/lib.sh"

golden() { # golden EXPECTED -- ARGS...
	exp=$1
	shift 2
	run "$NODETUNE" discover --json "$@"
	if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
		cp "$OUT" "$exp"
		t_ok "rewrote $exp"
	elif [ "$RC" -eq 0 ] && diff -u "$exp" "$OUT" >"$T_TMP/diff"; then
		t_ok "discover $* matches $(basename "$exp")"
	else
		t_not_ok "discover $* (exit $RC) differs from $exp"
		head -40 "$T_TMP/diff" | sed 's/^/#   /'
		head -5 "$ERR" | sed 's/^/#   /'
	fi
}

F=tests/fixtures
golden $F/topologies/hgx-2s8g8n.expected.json -- --topology $F/topologies/hgx-2s8g8n.xml
golden $F/topologies/epyc-2s-numa0-8-mi300.expected.json -- --topology $F/topologies/epyc-2s-numa0-8-mi300.xml
golden $F/sysroot/debian12-kvm-2cpu.expected.json -- --sysroot $F/sysroot/debian12-kvm-2cpu
golden $F/sysroot/gpu-host-untuned.expected.json -- --topology $F/topologies/hgx-2s8g8n.xml --sysroot $F/sysroot/gpu-host-untuned
golden $F/sysroot/gpu-host-tuned.expected.json -- --topology $F/topologies/hgx-2s8g8n.xml --sysroot $F/sysroot/gpu-host-tuned
golden $F/synthetic-pack2-numa1-core8-pu2.expected.json -- --synthetic "pack:2 numa:1 core:8 pu:2"

if [ -d "$SHARED" ]; then
	for x in "$SHARED"/*.xml; do
		golden "$F/shared-expected/$(basename "$x" .xml).json" -- --topology "$x"
	done
else
	t_need ../shared "$SHARED is absent: real-machine exports not checked"
fi
t_done
