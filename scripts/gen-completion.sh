#!/bin/sh
# SPDX-License-Identifier: MIT
# gen-completion.sh NODETUNE TEMPLATE POLICY_PATH -- the bash completion for
# nodetune: TEMPLATE (contrib/bash-completion/nodetune.in) with its @TABLE@
# replaced by the option tables of NODETUNE (`NODETUNE --dump-options`), one
# "VERB<TAB>OPTION<TAB>ARG" line per long and short option (a short one's
# line ends "<TAB>--LONG"), and its @POLICY_PATH@ by POLICY_PATH, the policy
# path NODETUNE was built with (the Makefile's POLICY_PATH).  Writes stdout;
# exits 1 when the dump fails or is not what it should be.
set -eu
[ $# -eq 3 ] || { echo "usage: gen-completion.sh NODETUNE TEMPLATE POLICY_PATH" >&2; exit 2; }
case $3 in *[!-A-Za-z0-9_./:]* | '') echo "gen-completion.sh: unexpected policy path: $3" >&2; exit 1 ;; esac
dump=$("$1" --dump-options) || { echo "gen-completion.sh: $1 --dump-options failed" >&2; exit 1; }
table=$(printf '%s\n' "$dump" | awk -F'\t' '
	NF != 4 || /[^-A-Za-z0-9 \t|]/ { print "gen-completion.sh: unexpected dump line: " $0 > "/dev/stderr"; bad = 1; exit 1 }
	{ print $1 "\t--" $2 "\t" $4; if ($3 != "-") print $1 "\t-" $3 "\t" $4 "\t--" $2 }
	END { exit bad }') || exit 1
# the table goes in single quotes: the awk above admits no quote
printf '%s\n' "$table" >"${TMPDIR:-/tmp}/gen-completion.$$"
trap 'rm -f "${TMPDIR:-/tmp}/gen-completion.$$"' EXIT
awk -v tf="${TMPDIR:-/tmp}/gen-completion.$$" -v pp="$3" '
	/@TABLE@/ { i = index($0, "@TABLE@"); printf "%s", substr($0, 1, i - 1)
		    n = 0; while ((getline l < tf) > 0) { if (n++) printf "\n"; printf "%s", l }
		    print substr($0, i + 7); next }
	{ gsub(/@POLICY_PATH@/, pp); print }' "$2"
