#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# The command line as a user meets it: `nodetune help [VERB]` and `VERB
# --help` for every verb and two-word sub-verb, with one layout (usage, a
# paragraph, the option list from the verb's table), at most 40 lines of at
# most 80 columns (the long story is the man page's); every option of a
# table in its verb's synopsis (unless it says [OPTIONS]); --json taken and
# listed, or refused with a reason and not listed, by every verb; global
# options before or after the verb; the old option names as aliases; one
# version for both binaries.  Changes nothing on the host.
. "$(dirname "$0")/lib.sh"
t_plan 54

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
# a help text that is too long or too wide: "FILE: N lines, M columns"
too_big() {
	awk -v f="$2" '{ if (length > w) w = length } END { if (NR > 40 || w > 80) print f ": " NR " lines, " w " columns" }' "$1"
}
bad_layout= bad_help= bad_usage= bad_json= bad_size=$(too_big "$T_TMP/verbs" "nodetune help")
while read -r verb; do
	# shellcheck disable=SC2086 # a sub-verb is two words
	"$NODETUNE" help $verb >"$T_TMP/h1" 2>&1 || bad_help="$bad_help [$verb: help exit $?]"
	# shellcheck disable=SC2086
	"$NODETUNE" $verb --help >"$T_TMP/h2" 2>&1 || bad_help="$bad_help [$verb --help exit $?]"
	cmp -s "$T_TMP/h1" "$T_TMP/h2" || bad_help="$bad_help [$verb: help differs from --help]"
	bad_size="$bad_size$(too_big "$T_TMP/h1" "$verb")"
	# Usage: nodetune VERB ...; a blank line; the paragraph; a blank line;
	# Options: (the table); a blank line; Global options
	awk -v v="$verb" 'NR == 1 && index($0, "Usage: nodetune " v) != 1 { bad = 1 }
		/^$/ { blank++ } /^Options:$/ { opt = blank } /^Global options/ { glob = blank }
		END { exit bad || blank < 3 || !opt || glob <= opt }' "$T_TMP/h1" || bad_layout="$bad_layout $verb"
	# every option of the table is in the synopsis, unless it says [OPTIONS]
	sed '/^$/q' "$T_TMP/h1" >"$T_TMP/usage"
	grep -q 'OPTIONS\]' "$T_TMP/usage" ||
	sed -n '/^Options:$/,/^$/p' "$T_TMP/h1" | grep -oE '^(  -., |      )--[a-z-]+' |
		sed 's/^ *//' | while read -r o; do
			# "-n, --ranks": the synopsis may show either form
			long=${o##* } short=${o%%,*}
			grep -qE -- "$long\\b|(^|[[ ])$short " "$T_TMP/usage" || echo "$verb: $long"
		done >>"$T_TMP/missing"
	# --json: in the table, or refused with a reason when given (F31: an
	# option a verb refuses is not listed)
	# shellcheck disable=SC2086
	grep -q '^      --json  ' "$T_TMP/h1" || "$NODETUNE" $verb --json 2>&1 | grep -q -- '--json: ..' ||
		bad_json="$bad_json $verb"
done <"$T_TMP/names"
check "help VERB and VERB --help: exit 0 and the same text, for every verb and sub-verb${bad_help:+:$bad_help}" -- \
	[ -z "$bad_help" ]
check "every help: usage line, paragraph, Options: (the table), Global options${bad_layout:+ (not:$bad_layout)}" -- \
	[ -z "$bad_layout" ]
check "every option a verb takes is in its synopsis$( [ -s "$T_TMP/missing" ] && printf ' (not: %s)' "$(tr '\n' ' ' <"$T_TMP/missing")")" -- \
	[ ! -s "$T_TMP/missing" ]
check "every verb lists --json, or refuses it and says why${bad_json:+ (not:$bad_json)}" -- [ -z "$bad_json" ]
check "every help is at most 40 lines of at most 80 columns${bad_size:+ (not: $bad_size)}" -- [ -z "$bad_size" ]
# the size check, on a help one line too long and one a column too wide
{ seq 41 >"$T_TMP/long" && printf '%081d\n' 0 >"$T_TMP/wide"; } || t_not_ok "writing the oversized helps"
check "the size check finds 41 lines and 81 columns: $(too_big "$T_TMP/long" long) $(too_big "$T_TMP/wide" wide)" -- \
	sh -c "[ -n '$(too_big "$T_TMP/long" long)' ] && [ -n '$(too_big "$T_TMP/wide" wide)' ]"
for v in run exec daemon "fleet keygen" "fleet init-auth" "fleet timestamp"; do
	# shellcheck disable=SC2086
	check "$v refuses --json, saying why, and does not list it" -- sh -c \
		"'$NODETUNE' $v --json 2>&1 | grep -q -- '--json: ..' && ! '$NODETUNE' help $v | grep -qE -- '^ +--json'"
done
echo "# the options accepted but once documented nowhere are in their verb's list:"
for pair in "plan|-n, --ranks" "apply|-n, --ranks" "apply|--synthetic" "verify|-n, --ranks" "verify|--synthetic" \
	"doctor|-n, --ranks" "exec|--topology" "discover|-v, --verbose"; do
	v=${pair%%|*} o=${pair#*|}
	check "  $v: $o" -- sh -c "'$NODETUNE' help $v | grep -qE -- '(^  *|^Global options: )$o[ ,]'"
done

# help --json: the same tables as data (what man-page checks and completion use)
run "$NODETUNE" help --json
check "help --json: every verb of the list, with the version" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(jq -r '.verbs[].verb' '$OUT')\" = \"\$(cat '$T_TMP/names')\" ] && jq -e '.version == \"$(cat VERSION)\"' '$OUT' >/dev/null"
cp "$OUT" "$T_TMP/help.json"
bad=
while read -r verb; do
	# shellcheck disable=SC2086
	{ "$NODETUNE" help $verb | sed -n '/^Options:$/,/^$/p' | grep -oE '^(  -., |      )--[a-z-]+'
	  "$NODETUNE" help $verb | grep '^Global options:' | grep -oE -- '--[a-z-]+'; } |
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
	# the sub-verbs as the group's help lists them, comma-separated
	subs=$(sed -n '/^Sub-verbs:/,/^$/p' "$T_TMP/$g.help" | sed -n 's/^  \([a-z-]*\) .*/\1/p' | paste -sd, - | sed 's/,/, /g')
	run "$NODETUNE" $g
	check "$g alone: exit 2, one line naming its sub-verbs ($subs) on stderr" -- sh -c \
		"[ $RC -eq 2 ] && [ \"\$(cat '$ERR')\" = 'nodetune: $g: expected a sub-verb: $subs (see nodetune $g --help)' ] && [ ! -s '$OUT' ]"
	run "$NODETUNE" $g bogus
	check "$g bogus: exit 2, one line" -- sh -c \
		"[ $RC -eq 2 ] && [ \"\$(cat '$ERR')\" = \"nodetune: $g: unknown sub-verb 'bogus' (expected $subs; see nodetune $g --help)\" ] && [ ! -s '$OUT' ]"
done
for h in help --help -h; do
	run "$NODETUNE" help $h
	check "help $h: the help of help, the verbs' list (exit 0)" -- sh -c "[ $RC -eq 0 ] && cmp -s '$OUT' '$T_TMP/verbs' && [ ! -s '$ERR' ]"
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
	"'$NODETUNE' help daemon | tr -s ' \n' '  ' | grep -q -- '--endpoints URL\[,URL...\] etcd URLs.*(also --fleet)'"
check "fleet rollout --endpoints, the same option (also --fleet), fleet.conf's endpoints by default, not required" -- sh -c \
	"'$NODETUNE' help fleet rollout | tr -s ' \n' '  ' | grep -q -- '--endpoints URL\[,URL...\] etcd URLs (default: fleet.conf.s) (also --fleet) --cacert'"

# ---- durations: one rule (a bare number counts seconds; ms, s, m, h) --------
run "$NODETUNE" observe --interval 100ms --duration 0.3s --json
check "observe --interval 100ms --duration 0.3s: exit 0, records" -- sh -c "[ $RC -eq 0 ] && [ -s '$OUT' ]"
run "$NODETUNE" observe --interval 0.1 --duration 0.3 --json
check "observe --interval 0.1 --duration 0.3 (bare: seconds, both): exit 0, records" -- sh -c "[ $RC -eq 0 ] && [ -s '$OUT' ]"

# Every duration option of every verb (the tables' value DURATION or
# N/DURATION, from help --json: a new one is covered by being there) takes
# each example its own help shows, and each its refusal shows; so does the
# harness's.  An option is fed its example before --help: exit 0 is taken
# (values are parsed in order, --help then ends), 2 refused.
DUR='[0-9]+(\.[0-9]+)?(ms|s|m|h)'
# dur_examples VALUE TEXT: the examples in TEXT of a value named VALUE, one a
# line (N/DURATION: "N/D" as written, and any duration D alone as "1/D")
dur_examples() {
	case $1 in
	*/DURATION)
		printf '%s\n' "$2" | grep -oE "\\b[0-9]+/$DUR\\b"
		printf '%s\n' "$2" | sed -E "s#[0-9]+/$DUR##g" | grep -oE "\\b$DUR\\b" | sed 's#^#1/#' ;;
	*) printf '%s\n' "$2" | grep -oE "\\b$DUR\\b" ;;
	esac
}
# dur_try WHO EXAMPLE CMD...: CMD --help after the option and EXAMPLE;
# a refusal goes to $T_TMP/dur-bad
dur_try() {
	who=$1 ex=$2
	shift 2
	"$@" "$ex" --help >/dev/null 2>"$T_TMP/dur-err" ||
		echo "[$who $ex: exit $?: $(head -c 160 "$T_TMP/dur-err")]" >>"$T_TMP/dur-bad"
}
# dur_option WHO VALUE HELP CMD...: CMD (ending with the option) takes the
# examples of HELP and those of its refusal of "x"
dur_option() {
	who=$1 value=$2 help=$3
	shift 3
	ex=$(dur_examples "$value" "$help")
	[ -n "$ex" ] || echo "[$who: no example in its help: $help]" >>"$T_TMP/dur-bad"
	"$@" x --help >/dev/null 2>"$T_TMP/dur-err"
	rc=$?
	[ $rc -eq 2 ] && [ "$(wc -l <"$T_TMP/dur-err")" -eq 1 ] ||
		echo "[$who x: exit $rc, not one line refusing it]" >>"$T_TMP/dur-bad"
	msg_ex=$(dur_examples "$value" "$(cat "$T_TMP/dur-err")")
	[ -n "$msg_ex" ] || echo "[$who: no example in its refusal: $(head -c 160 "$T_TMP/dur-err")]" >>"$T_TMP/dur-bad"
	for e in $ex $msg_ex; do
		dur_try "$who" "$e" "$@"
		echo "$who $e" >>"$T_TMP/dur-tried"
	done
}
printf '' >"$T_TMP/dur-bad"
printf '' >"$T_TMP/dur-tried"
jq -r '.verbs[] | .verb as $v | .options[] | select(.need != "refused" and ((.value // "") | test("DURATION")))
	| [$v, .name, .value, .help] | @tsv' "$T_TMP/help.json" >"$T_TMP/dur-opts"
while IFS='	' read -r verb name value help; do
	# shellcheck disable=SC2086 # a sub-verb is two words
	dur_option "$verb --$name" "$value" "$help" "$NODETUNE" $verb "--$name"
done <"$T_TMP/dur-opts"
if [ -x "$HARNESS" ]; then
	"$HARNESS" --help >"$T_TMP/h-help" || t_not_ok "nodetune-harness --help: exit $?"
	sed -nE 's/^  --([a-z-]+) ([A-Z/]*DURATION) +(.*)$/\1\t\2\t\3/p' "$T_TMP/h-help" >"$T_TMP/dur-h"
	while IFS='	' read -r name value help; do
		dur_option "nodetune-harness --$name" "$value" "$help" "$HARNESS" "--$name"
	done <"$T_TMP/dur-h"
	check "the harness's --timeout is a duration in its help" -- grep -q '^timeout	DURATION	' "$T_TMP/dur-h"
else
	t_need nodetune-harness "the harness's --timeout and its examples: nodetune-harness not built"
fi
check "$(wc -l <"$T_TMP/dur-opts") duration options in the tables, --flap and the budgets among them" -- sh -c \
	"grep -q '^daemon	flap	N/DURATION' '$T_TMP/dur-opts' && grep -q '^fleet rollout	wave-timeout	' '$T_TMP/dur-opts' &&
	 grep -q '^doctor	window	' '$T_TMP/dur-opts' && grep -q '^observe	interval	' '$T_TMP/dur-opts'"
check "every duration option takes each example of its help and of its refusal ($(wc -l <"$T_TMP/dur-tried") tried)$(
	[ -s "$T_TMP/dur-bad" ] && printf ': %s' "$(tr '\n' ' ' <"$T_TMP/dur-bad")")" -- [ ! -s "$T_TMP/dur-bad" ]

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
