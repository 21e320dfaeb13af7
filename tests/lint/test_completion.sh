#!/bin/sh
# SPDX-License-Identifier: MIT
# The bash completion ($BUILD/bash-completion/nodetune, generated from
# `nodetune --dump-options`) is exercised in bash: sourced, COMP_WORDS and
# COMP_CWORD set, _nodetune called, COMPREPLY read.  It must offer every
# verb (the first words, then the second word of "fleet rollout"), exactly
# each verb's options after "-" (those not given yet), policy names from
# NODETUNE_POLICY_PATH (default: the binary's) and .conf files for a POLICY
# and `policy show`, directories for a DIR, files for a FILE, the values of
# a "a|b" option, the verbs after `help`.  The comparison is shown to fail on
# a completion whose table lost a row and on one with a verb that no table
# has.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
case $build in /*) ;; *) build=$top/$build ;; esac
nodetune=${NODETUNE:-$build/nodetune}
comp=$build/bash-completion/nodetune
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
nok() { fail=$((fail + 1)); echo "FAIL: $1"; }

[ -f "$comp" ] || { echo "FAIL: $comp was not built (make all)"; exit 1; }
"$nodetune" --dump-options >"$tmp/dump" || { echo "FAIL: $nodetune --dump-options"; exit 1; }

# complete COMPLETION WORD... -> COMPREPLY, one per line, sorted
complete_words() {
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _nodetune
		 [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort -u' sh "$@"
}

# compare COMPLETION against the dump: every verb and option; prints the
# differences, returns 1 when there is any
compare() {
	c=$1 bad=0
	want=$(awk -F'\t' '$1 != "nodetune" { split($1, w, " "); print w[1] }' "$tmp/dump" | sort -u)
	got=$(complete_words "$c" nodetune "")
	[ "$(printf '%s\nhelp\n' "$want" | sort)" = "$got" ] ||
		{ echo "first words: want $(echo $want) help, got $(echo $got)"; bad=1; }
	got=$(complete_words "$c" nodetune help "")
	[ "$want" = "$got" ] || { echo "help: want $(echo $want), got $(echo $got)"; bad=1; }
	for group in $(awk -F'\t' '$1 ~ / / { split($1, w, " "); print w[1] }' "$tmp/dump" | sort -u); do
		want=$(awk -F'\t' -v g="$group" 'index($1, g " ") == 1 { print substr($1, length(g) + 2) }' \
			"$tmp/dump" | sort -u)
		got=$(complete_words "$c" nodetune "$group" "")
		[ "$want" = "$got" ] || { echo "$group: want $(echo $want), got $(echo $got)"; bad=1; }
	done
	cut -f1 "$tmp/dump" | sort -u >"$tmp/verbs"
	while IFS= read -r verb; do
		want=$(awk -F'\t' -v v="$verb" '$1 == v { print "--" $2; if ($3 != "-") print "-" $3 }' \
			"$tmp/dump" | sort -u)
		if [ "$verb" = nodetune ]; then
			got=$(complete_words "$c" nodetune -)
		else
			# shellcheck disable=SC2086
			got=$(complete_words "$c" nodetune $verb -)
		fi
		[ "$want" = "$got" ] || { echo "$verb -: want $(echo $want), got $(echo $got)"; bad=1; }
	done <"$tmp/verbs"
	return $bad
}

out=$(compare "$comp" 2>&1) && ok "every verb, sub-verb and option of the tables completes, and only those" ||
	nok "the completion against the tables: $out"

# values: policy names and .conf files, directories, files
mkdir -p "$tmp/pp" "$tmp/cwd/sub" && touch "$tmp/pp/gpu-train.conf" "$tmp/pp/gpu-other.txt" \
	"$tmp/cwd/gpu-mine.conf" "$tmp/cwd/topo.xml"
cd "$tmp/cwd" || exit 1
got=$(NODETUNE_POLICY_PATH=$tmp/pp complete_words "$comp" nodetune apply --policy gpu | tr '\n' ' ')
[ "$got" = "gpu-mine.conf gpu-train " ] && ok "--policy gpu: $got" || nok "--policy gpu: '$got'"
# (bash splits "--policy=gpu" at the "=")
got=$(NODETUNE_POLICY_PATH=$tmp/pp complete_words "$comp" nodetune apply --policy = gpu | tr '\n' ' ')
[ "$got" = "gpu-mine.conf gpu-train " ] && ok "--policy=gpu: $got" || nok "--policy=gpu: '$got'"
got=$(NODETUNE_POLICY_PATH=$tmp/pp complete_words "$comp" nodetune policy show gpu | tr '\n' ' ')
[ "$got" = "gpu-mine.conf gpu-train " ] && ok "policy show gpu: names and files: $got" || nok "policy show gpu: '$got'"
got=$(NODETUNE_POLICY_PATH=$tmp/pp complete_words "$comp" nodetune policy use gpu | tr '\n' ' ')
[ "$got" = "gpu-train " ] && ok "policy use gpu: names only: $got" || nok "policy use gpu: '$got'"
got=$(complete_words "$comp" nodetune plan --sysroot "" | tr '\n' ' ')
[ "$got" = "sub " ] && ok "--sysroot: directories: $got" || nok "--sysroot: '$got'"
got=$(complete_words "$comp" nodetune plan --topology t | tr '\n' ' ')
[ "$got" = "topo.xml " ] && ok "--topology t: files: $got" || nok "--topology t: '$got'"
got=$(complete_words "$comp" nodetune fleet rollout --name "" | tr '\n' ' ')
[ -z "$got" ] && ok "--name: a free value, nothing offered" || nok "--name: '$got'"
got=$(complete_words "$comp" nodetune exec --policy p -- ech | grep -x echo)
[ "$got" = echo ] && ok "after --: commands" || nok "after --: '$got'"
got=$(NODETUNE_POLICY_PATH=$tmp/pp complete_words "$comp" nodetune policy show gpu | tr '\n' ' ')
[ "$got" = "gpu-mine.conf gpu-train " ] && ok "policy show gpu: $got" || nok "policy show gpu: '$got'"
got=$(NODETUNE_POLICY_PATH=$tmp/pp complete_words "$comp" nodetune policy show gpu-train "" | tr '\n' ' ')
[ "$got" = "--help --json -h " ] && ok "policy show NAME: one word, then its options: $got" ||
	nok "policy show NAME: '$got'"
got=$(complete_words "$comp" nodetune help fleet ro | tr '\n' ' ')
[ "$got" = "rollout " ] && ok "help fleet ro: $got" || nok "help fleet ro: '$got'"
got=$(complete_words "$comp" nodetune --log-format "" | tr '\n' ' ')
[ "$got" = "syslog text " ] && ok "--log-format: $got" || nok "--log-format: '$got'"
got=$(complete_words "$comp" nodetune plan --log-format s | tr '\n' ' ')
[ "$got" = "syslog " ] && ok "plan --log-format s (a global option after the verb): $got" ||
	nok "plan --log-format s: '$got'"
got=$(complete_words "$comp" nodetune ab --metric-kind "" | tr '\n' ' ')
[ "$got" = "throughput time " ] && ok "ab --metric-kind: $got" || nok "ab --metric-kind: '$got'"
for v in "fleet keygen --out" "fleet init-auth --password-dir" "ab --trial-dir"; do
	# shellcheck disable=SC2086 # $v is the verb and option, as words
	got=$(complete_words "$comp" nodetune $v "" | tr '\n' ' ')
	[ "$got" = "sub " ] && ok "$v: directories: $got" || nok "$v: '$got'"
done
# an option given, by either name, is not offered again
got=$(complete_words "$comp" nodetune plan --json - | tr '\n' ' ')
want=$(awk -F'\t' '$1 == "plan" && $2 != "json" { print "--" $2; if ($3 != "-") print "-" $3 }' "$tmp/dump" |
	sort -u | tr '\n' ' ')
[ "$got" = "$want" ] && ok "plan --json -: all but --json" || nok "plan --json -: want '$want', got '$got'"
for given in "-n 4" "--ranks 4" "--ranks=4"; do
	# shellcheck disable=SC2086 # $given is an option and its value, as words
	got=$(complete_words "$comp" nodetune plan $(echo "$given" | sed 's/=/ = /') - | tr '\n' ' ')
	case " $got" in
	*" -n "* | *" --ranks "* | " ") nok "plan $given -: '$got'" ;;
	*) ok "plan $given -: neither -n nor --ranks" ;;
	esac
done
cd "$top" || exit 1

# the default policy path is the binary's (its own checkout's directories
# aside): /usr/local/share/nodetune/policies too when built for /usr/local
want=$(env -u NODETUNE_POLICY_PATH "$nodetune" policy list --json |
	python3 -c 'import json, sys; print(":".join(d for d in json.load(sys.stdin)["path"].split(":") if not d.startswith(sys.argv[1])))' "$top")
got=$(sed -n 's/^	for dir in ${NODETUNE_POLICY_PATH:-\(.*\)}; do$/\1/p' "$comp")
[ -n "$want" ] && [ "$got" = "$want" ] && ok "the default policy path: $got" ||
	nok "the default policy path: want '$want', got '$got'"

# plant: a completion whose table lost plan's --json, and one with a verb
# no table has; the comparison must name each
sed '/^plan	--json	-$/d' "$comp" >"$tmp/lost"
out=$(compare "$tmp/lost" 2>&1) && nok "a lost row: passed" ||
	{ printf '%s\n' "$out" | grep -q '^plan -: want' && ok "a lost row: $(printf '%s\n' "$out" | head -n 1)" ||
		nok "a lost row: $out"; }
sed 's/^plan	--json	-$/&\nfrob	--json	-/' "$comp" >"$tmp/extra"
out=$(compare "$tmp/extra" 2>&1) && nok "an extra verb: passed" ||
	{ printf '%s\n' "$out" | grep -q '^first words:.*frob' && ok "an extra verb: $(printf '%s\n' "$out" | head -n 1)" ||
		nok "an extra verb: $out"; }
echo "lint completion: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
