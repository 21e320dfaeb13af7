#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# fleet keygen: the controller's Ed25519 key pair, its files' modes, and
# each bad input as one line and exit 2 with nothing written.
. "$(dirname "$0")/lib.sh"
t_plan 9

K=$T_TMP/keys
mkdir -m 700 "$K"

run "$NODETUNE" fleet keygen --out "$K" --name ctl-2026
check "keygen: exit 0, prints both files and a 16-digit key id" -- sh -c \
	"[ $RC -eq 0 ] && grep -qx '$K/ctl-2026.key' '$OUT' && grep -qx '$K/ctl-2026.pub' '$OUT' && grep -Eqx 'key id [0-9a-f]{16}' '$OUT'"
check "the secret is mode 0600, the public key 0644" -- sh -c \
	"[ \$(stat -c %a '$K/ctl-2026.key') = 600 ] && [ \$(stat -c %a '$K/ctl-2026.pub') = 644 ]"
check "each file is one line of its kind" -- sh -c \
	"grep -Eqx 'nodetune-ed25519-secret [A-Za-z0-9+/]{43}=' '$K/ctl-2026.key' && grep -Eqx 'nodetune-ed25519-pub [A-Za-z0-9+/]{43}=' '$K/ctl-2026.pub'"
run "$NODETUNE" fleet keygen --out "$K" --name ctl-b
check "a second pair has another key" -- sh -c "[ $RC -eq 0 ] && ! cmp -s '$K/ctl-2026.pub' '$K/ctl-b.pub'"

h0=$(tree_hash "$K")
expect_fail 2 "ctl-2026.pub: file exists" "a pair is never overwritten" -- \
	"$NODETUNE" fleet keygen --out "$K" --name ctl-2026
expect_fail 2 "key name 'Ctl/x': expected 1 to 64 of a-z" "a name that is not a key name" -- \
	"$NODETUNE" fleet keygen --out "$K" --name Ctl/x
expect_fail 2 "nope/k.key: no such file or directory" "a directory that does not exist" -- \
	"$NODETUNE" fleet keygen --out "$T_TMP/nope" --name k
expect_fail 2 "--out DIR is required" "--out is required" -- "$NODETUNE" fleet keygen --name k
check "none of those wrote a file" -- [ "$h0" = "$(tree_hash "$K")" ]
t_done
