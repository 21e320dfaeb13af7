# SPDX-License-Identifier: MIT
# attacks/display.sh — sourced by test_attacks.sh: what a host writes reaches
# an operator's terminal as text, never as a control (security.md L12).  A
# host's own etcd user writes its status with C1 controls in UTF-8 (U+009B,
# CSI: "\u009b2J" clears an 8-bit terminal's screen, "\u009b31m" paints it)
# and a lone 0x9B is not JSON at all; `fleet hosts` as the controller shows
# the host's policy and state with each such character as '?'.

. "$SRCDIR/tests/integration/etcd_lib.sh"

display_l12() {
	etcd_have || return
	etcd_tls_auth_start "$T_TMP/display" h1 || return
	display_ctl="--endpoints $EP --cacert $ETCD_CA --user nodetune-controller --password-file $ETCD_PW/nodetune-controller"
	# shellcheck disable=SC2016
	display_st='{"host":"h1","class":"0123456789ab","label":"1s-1n-2c-0gpu","policy":"p\u009b2J\u009b31mowned.conf","sha256":"","state":"verified","desired_rev":0,"error":"","time":1}'
	etcd_as "$T_TMP/display" nodetune-host-h1 put /nodetune/hosts/h1/status "$display_st" >/dev/null ||
		{ t_not_ok "L12: h1's user wrote its status"; return; }
	# shellcheck disable=SC2086
	run "$NODETUNE" fleet hosts $display_ctl
	check "L12: fleet hosts shows h1's C1 controls (U+009B, CSI) as '?' (exit $RC: $(grep h1 "$OUT" | tr -cd '[:print:] ' | cut -c1-120))" -- \
		sh -c '[ "$1" -eq 0 ] && grep -q "h1" "$2" && ! LC_ALL=C grep -q "$(printf "\302\233")" "$2"' - "$RC" "$OUT"
}

display_l12
