#!/bin/sh
# SPDX-License-Identifier: MIT
# The layering check (scripts/check-layout.sh) passes on the tree and fails,
# naming the file, on each planted fault: an include that points up the
# order, one between the siblings ab and fleet, one without its group, and
# a file missing from agent/README.md's map.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
check=$top/scripts/check-layout.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
nok() { fail=$((fail + 1)); echo "FAIL: $1"; }

out=$("$check" "$top" 2>&1) && ok "the tree layers cleanly" || nok "the tree: $out"

# plant FAULT (a sed over FILE) in a fresh copy; the check must fail with WANT
plant() {
	name=$1 file=$2 expr=$3 want=$4
	rm -rf "$tmp/t"; mkdir -p "$tmp/t/agent"
	cp -R "$top/agent/lib" "$tmp/t/agent/lib"; cp "$top/agent/README.md" "$tmp/t/agent/"
	sed -i "$expr" "$tmp/t/$file"
	if out=$("$check" "$tmp/t" 2>&1); then
		nok "$name: passed"
	elif printf '%s\n' "$out" | grep -q -- "$want"; then
		ok "$name: $(printf '%s\n' "$out" | grep -- "$want" | head -n 1)"
	else
		nok "$name: failed without naming it: $out"
	fi
}
plant "upward include" agent/lib/base/log.c '1i #include "daemon/metrics.h"' \
	'agent/lib/base/log.c:1: base includes "daemon/metrics.h"'
plant "sibling include" agent/lib/ab/ab.c '1i #include "fleet/fleet.h"' \
	'agent/lib/ab/ab.c:1: ab includes "fleet/fleet.h"'
plant "include without its group" agent/lib/tune/plan.c '1i #include "topo.h"' \
	'agent/lib/tune/plan.c:1: "topo.h" names no group'
plant "file missing from the map" agent/README.md '/| tune\/bind\.{h,c} |/d' \
	'agent/lib/tune/bind.c is missing from the map'
echo "lint check_layout: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
