#!/bin/sh
# The command line as a user meets it: `nodetune help [VERB]` and `VERB
# --help` for every verb and two-word sub-verb, with one layout (usage, a
# paragraph, the option list from the verb's table); every option of a table
# in its verb's synopsis; --json taken, or refused with a reason, by every
# verb; global options before or after the verb; the old option names as
# aliases; one version for both binaries.  Changes nothing on the host.
. "$(dirname "$0")/lib.sh"

GT=policies/gpu-train.conf
SYN="pack:1 core:2 pu:1"

# ---- nodetune help: every verb, each with the same layout -------------------
run "$NODETUNE" help
check "nodetune help: exit 0, the verbs on stdout, nothing on stderr" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^Verbs:' '$OUT' && [ ! -s '$ERR' ]"
cp "$OUT" "$T_TMP/verbs"
run "$NODETUNE" --help
check "nodetune --help is nodetune help" -- cmp -s "$OUT" "$T_TMP/verbs"
# the verbs: the list's first column (two words for a group's sub-verb)
sed -n '/^Verbs:/,/^$/p' "$T_TMP/verbs" | sed 1d | cut -c3-18 | sed 's/ *$//' | grep -v -e '^$' -e '^help' >"$T_TMP/names"
check "the list has the verbs and the sub-verbs ($(wc -l <"$T_TMP/names") of them)" -- sh -c \
	"grep -qx plan '$T_TMP/names' && grep -qx 'fleet rollout' '$T_TMP/names' && grep -qx 'policy show' '$T_TMP/names'"
bad_layout= bad_help= bad_usage= bad_json=
while read -r verb; do
	# shellcheck disable=SC2086 # a sub-verb is two words
	"$NODETUNE" help $verb >"$T_TMP/h1" 2>&1 || bad_help="$bad_help [$verb: help exit $?]"
	# shellcheck disable=SC2086
	"$NODETUNE" $verb --help >"$T_TMP/h2" 2>&1 || bad_help="$bad_help [$verb --help exit $?]"
	cmp -s "$T_TMP/h1" "$T_TMP/h2" || bad_help="$bad_help [$verb: help differs from --help]"
	# Usage: nodetune VERB ...; a blank line; the paragraph; a blank line;
	# Options: (the table); a blank line; Global options
	awk -v v="$verb" 'NR == 1 && index($0, "Usage: nodetune " v) != 1 { bad = 1 }
		/^$/ { blank++ } /^Options:$/ { opt = blank } /^Global options/ { glob = blank }
		END { exit bad || blank < 3 || !opt || glob <= opt }' "$T_TMP/h1" || bad_layout="$bad_layout $verb"
	# every option of the table is in the synopsis (those refused excepted)
	sed '/^$/q' "$T_TMP/h1" >"$T_TMP/usage"
	sed -n '/^Options:$/,/^$/p' "$T_TMP/h1" | grep -v 'not taken:' | grep -oE '^(  -., |      )--[a-z-]+' |
		sed 's/^ *//' | while read -r o; do
			# "-n, --ranks": the synopsis may show either form
			long=${o##* } short=${o%%,*}
			grep -qE -- "$long\\b|(^|[[ ])$short " "$T_TMP/usage" || echo "$verb: $long"
		done >>"$T_TMP/missing"
	# --json: in the table, taken or refused with a reason
	grep -q '^      --json  ' "$T_TMP/h1" || bad_json="$bad_json $verb"
done <"$T_TMP/names"
check "help VERB and VERB --help: exit 0 and the same text, for every verb and sub-verb${bad_help:+:$bad_help}" -- \
	[ -z "$bad_help" ]
check "every help: usage line, paragraph, Options: (the table), Global options${bad_layout:+ (not:$bad_layout)}" -- \
	[ -z "$bad_layout" ]
check "every option a verb takes is in its synopsis$( [ -s "$T_TMP/missing" ] && printf ' (not: %s)' "$(tr '\n' ' ' <"$T_TMP/missing")")" -- \
	[ ! -s "$T_TMP/missing" ]
check "every verb lists --json: taken, or 'not taken' and why${bad_json:+ (not:$bad_json)}" -- [ -z "$bad_json" ]
for v in run exec daemon; do
	check "$v refuses --json in its help, saying why" -- sh -c \
		"'$NODETUNE' help $v | grep -A1 -- '^      --json' | grep -q 'not taken: '"
done
check "the options accepted but once documented nowhere are in their verb's list:" -- true
for pair in "plan|-n, --ranks" "apply|-n, --ranks" "apply|--synthetic" "verify|-n, --ranks" "verify|--synthetic" \
	"doctor|-n, --ranks" "exec|--topology" "discover|-v, --verbose"; do
	v=${pair%%|*} o=${pair#*|}
	check "  $v: $o" -- sh -c "'$NODETUNE' help $v | grep -q -- '^  *$o '"
done

# help --json: the same tables as data (what man-page checks and completion use)
run "$NODETUNE" help --json
check "help --json: every verb of the list, with the version" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(jq -r '.verbs[].verb' '$OUT')\" = \"\$(cat '$T_TMP/names')\" ] && jq -e '.version == \"$(cat VERSION)\"' '$OUT' >/dev/null"
cp "$OUT" "$T_TMP/help.json"
bad=
while read -r verb; do
	# shellcheck disable=SC2086
	"$NODETUNE" help $verb | sed -n '/^Options:$/,/^$/p;/^Global options/,$p' | grep -oE '^(  -., |      )--[a-z-]+' |
		sed 's/.*--//' >"$T_TMP/text-opts"
	jq -r --arg v "$verb" '.verbs[] | select(.verb == $v) | .options[].name' "$T_TMP/help.json" >"$T_TMP/json-opts"
	echo help >>"$T_TMP/json-opts"
	cmp -s "$T_TMP/text-opts" "$T_TMP/json-opts" || bad="$bad $verb"
done <"$T_TMP/names"
check "help --json names the options help VERB lists, in order, for every verb${bad:+ (not:$bad)}" -- [ -z "$bad" ]

# ---- groups: the sub-verbs ----------------------------------------------------
for g in fleet policy; do
	run "$NODETUNE" $g --help
	check "$g --help: exit 0, usage, the sub-verbs on stdout" -- sh -c \
		"[ $RC -eq 0 ] && head -1 '$OUT' | grep -q '^Usage: nodetune $g SUB-VERB' && grep -q '^Sub-verbs:' '$OUT' && [ ! -s '$ERR' ]"
	cp "$OUT" "$T_TMP/$g.help"
	run "$NODETUNE" help $g
	check "help $g is $g --help" -- cmp -s "$OUT" "$T_TMP/$g.help"
	run "$NODETUNE" $g
	check "$g alone: exit 2, the sub-verbs on stderr" -- sh -c "[ $RC -eq 2 ] && grep -q '^Sub-verbs:' '$ERR' && [ ! -s '$OUT' ]"
done
check "fleet --help lists rollout, resume, abort, status, hosts" -- sh -c \
	"for s in rollout resume abort status hosts; do grep -q \"^  \$s \" '$T_TMP/fleet.help' || exit 1; done"

# ---- global options anywhere; one name per concept ----------------------------
"$NODETUNE" plan --policy $GT --synthetic "$SYN" --ranks 2 --json >"$T_TMP/ranks" 2>/dev/null
lrc=$?
run "$NODETUNE" plan --policy $GT --synthetic "$SYN" -n 2 --json
check "plan -n 2 is plan --ranks 2 (exit $lrc, $RC)" -- sh -c "[ $lrc/$RC = 0/0 ] && cmp -s '$OUT' '$T_TMP/ranks'"
run "$NODETUNE" policy active --socket "$T_TMP/no.sock" --state-dir "$T_TMP/nost" -v
check "-v after the verb: exit 0, debug lines on stderr" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^nodetune: policy active: debug: no daemon is listening on $T_TMP/no.sock' '$ERR'"
run "$NODETUNE" -v policy active --socket "$T_TMP/no.sock" --state-dir "$T_TMP/nost"
check "-v before the verb: the same" -- sh -c "[ $RC -eq 0 ] && grep -q '^nodetune: policy active: debug: ' '$ERR'"
run "$NODETUNE" policy active --socket "$T_TMP/no.sock" --state-dir "$T_TMP/nost"
check "without -v: no debug line" -- sh -c "[ $RC -eq 0 ] && ! grep -q 'debug:' '$ERR'"
run "$NODETUNE" plan --policy $GT --synthetic "$SYN" --log-format=syslog --ranks 0
check "--log-format=syslog after the verb: <3> on the error" -- grep -q "^<3>nodetune: plan: --ranks '0'" "$ERR"
run "$NODETUNE" plan --policy $GT --synthetic "$SYN" --ranks 0
check "a terminal or a file (no journald): no <N> prefix" -- grep -q "^nodetune: plan: --ranks '0'" "$ERR"
# help text as one line (options wrap)
check "daemon --endpoints, with --fleet its alias, said in help" -- sh -c \
	"'$NODETUNE' help daemon | tr -s ' \n' '  ' | grep -q -- '--endpoints URL\[,URL...\] join a fleet.*(also --fleet)'"
check "fleet rollout --endpoints, the same option (also --fleet), fleet.conf's endpoints by default, not required" -- sh -c \
	"'$NODETUNE' help fleet rollout | tr -s ' \n' '  ' | grep -q -- '--endpoints URL\[,URL...\] the fleet.s etcd client URLs, comma-separated (default: fleet.conf.s endpoints) (also --fleet) --cacert'"

# ---- durations: units, and a bare number in the option's own unit ------------
run "$NODETUNE" observe --interval 100ms --duration 0.3s --json
check "observe --interval 100ms --duration 0.3s: exit 0, records" -- sh -c "[ $RC -eq 0 ] && [ -s '$OUT' ]"
run "$NODETUNE" observe --interval 100 --duration 300ms --json
check "observe --interval 100 (bare: milliseconds) --duration 300ms: exit 0, records" -- sh -c "[ $RC -eq 0 ] && [ -s '$OUT' ]"
check "observe's help says what a bare --interval counts" -- sh -c \
	"'$NODETUNE' help observe | tr -s ' \n' '  ' | grep -q -- '--interval DURATION between samples (default 100ms; a bare number counts milliseconds)'"
check "the daemon's help says what a bare --interval counts" -- sh -c \
	"'$NODETUNE' help daemon | tr -s ' \n' '  ' | grep -q -- '--interval DURATION between verifies (default 30s; a bare number counts seconds)'"

# ---- one version ---------------------------------------------------------------
v=$(cat VERSION)
run "$NODETUNE" --version
check "nodetune --version is VERSION ($v)" -- grep -q "^nodetune $v " "$OUT"
run "$NODETUNE" discover --version
check "--version after a verb too" -- grep -q "^nodetune $v " "$OUT"
if [ -x "$HARNESS" ]; then
	run "$HARNESS" --version
	check "nodetune-harness --version is the same VERSION" -- grep -qx "nodetune-harness $v" "$OUT"
else
	t_need nodetune-harness "nodetune-harness not built"
fi

# ---- --json where it reports -------------------------------------------------------
run "$NODETUNE" keys --json
check "keys --json: every key with its values, scope, file and help (the columns of --markdown)" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '(.keys | length > 20) and (.keys[] | select(.knob == \"thp.enabled\") |
	 .values == \"always, madvise, never\" and .scope == \"host\" and
	 .path == \"/sys/kernel/mm/transparent_hugepage/enabled\" and (.help | length > 0))' '$OUT' >/dev/null"
t_done
