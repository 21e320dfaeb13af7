#!/bin/sh
# SPDX-License-Identifier: MIT
# The man pages (built into $BUILD/man from man/, mdoc(7)) are `mandoc -T
# lint` clean, and scripts/check-man.py finds them in step with the option
# tables (`nodetune --dump-options`, and nodetune-harness --help): each
# verb's section lists exactly its options, and no page names an option no
# table has (the SPANK page's srun option, --nodetune, is the plugin's own,
# taken from its source); and with `nodetune VERB --help` of every verb and
# sub-verb: each option's value name and its text (default and units) word
# for word.  Each check is shown to fail on planted faults: a missing option
# (of a verb, of the harness), an unknown option, another verb's option, an
# option added to a table, a default, a unit and a value name that differ
# from --help, a help line changed in the table and not in the page, and a
# broken macro.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
case $build in /*) ;; *) build=$top/$build ;; esac
nodetune=${NODETUNE:-$build/nodetune}
check=$top/scripts/check-man.py
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
nok() { fail=$((fail + 1)); echo "FAIL: $1"; }

command -v mandoc >/dev/null || { echo "FAIL: mandoc is not installed (scripts/install-deps.sh pkg)"; exit 1; }
"$nodetune" --dump-options >"$tmp/dump" || { echo "FAIL: $nodetune --dump-options"; exit 1; }
# the harness's options: those its --help names, as dump lines
harness=${HARNESS:-$(dirname "$nodetune")/nodetune-harness}
"$harness" --help >"$tmp/hhelp" 2>&1 || { echo "FAIL: $harness --help"; exit 1; }
{ grep -o -- '--[a-z][a-z0-9-]*' "$tmp/hhelp"; echo --help; } | sort -u |
	sed 's/^--\(.*\)/nodetune-harness\t\1\t-\t-/' >>"$tmp/dump"
pages="nodetune.8 nodetune-fleet.8 nodetune.conf.5 nodetune_spank.8 nodetune-harness.1 nodetune-limits.conf.5
	nodetune-gates.5 nodetune-fleet.conf.5"
# every verb's and sub-verb's --help, as DIR/VERB ("fleet_rollout")
mkdir -p "$tmp/helps"
cut -f1 "$tmp/dump" | sort -u | grep -v '^nodetune' | while read -r verb; do
	# shellcheck disable=SC2086 # a sub-verb is two words
	"$nodetune" $verb --help >"$tmp/helps/$(echo "$verb" | tr ' ' _)" || echo "$verb"
done >"$tmp/nohelp"
[ -s "$tmp/nohelp" ] && nok "--help failed: $(cat "$tmp/nohelp")" || ok "--help of $(ls "$tmp/helps" | wc -l) verbs"
# the plugin's srun option: the name in its struct spank_option
spank=--$(sed -n '/^static struct spank_option/{n;s/^[[:space:]]*"\([a-z-]*\)".*/\1/p;q}' \
	"$top/deploy/slurm/nodetune_spank.c")
[ "$spank" = --nodetune ] && ok "the plugin's option is $spank" || nok "the plugin's option: '$spank'"

for p in $pages; do
	[ -f "$build/man/$p" ] || { nok "$build/man/$p was not built (make man)"; continue; }
	out=$(mandoc -T lint -W warning "$build/man/$p" 2>&1) && ok "mandoc -T lint $p: clean" ||
		nok "mandoc -T lint $p: $out"
done

# shellcheck disable=SC2086 # $pages: the names, split
run_check() { (cd "$1" && python3 "$check" "$2" $pages --foreign "$spank" --helps "${3:-$tmp/helps}"); }
mkdir -p "$tmp/real" && cp "$build"/man/* "$tmp/real/"
out=$(run_check "$tmp/real" "$tmp/dump" 2>&1) &&
	ok "the pages list every verb's options, and only those, as --help says them" ||
	nok "the pages against the tables: $out"

# plant: sed EXPR over PAGE (or the dump); the check must fail with WANT
plant() {
	name=$1 file=$2 expr=$3 want=$4
	rm -rf "$tmp/t"; mkdir -p "$tmp/t"; cp "$tmp/real"/* "$tmp/dump" "$tmp/t/"; cp -r "$tmp/helps" "$tmp/t/"
	sed -i "$expr" "$tmp/t/$file"
	if out=$(run_check "$tmp/t" "$tmp/t/dump" "$tmp/t/helps" 2>&1); then
		nok "$name: passed"
	elif printf '%s\n' "$out" | grep -q -- "$want"; then
		ok "$name: $(printf '%s\n' "$out" | grep -- "$want" | head -n 1)"
	else
		nok "$name: failed without naming it: $out"
	fi
}
plant "an option missing from its verb" nodetune.8 '/^\.It Fl -dry-run$/d' \
	"verb 'apply': --dry-run of its table is missing from its section"
plant "an option no table has" nodetune.8 's/^\.It Fl -markdown$/&\n.It Fl -frobnicate\nx/' \
	'nodetune.8:[0-9]*: --frobnicate: no verb.s option table has it'
plant "another verb's option" nodetune-fleet.8 's/^\.It Fl -gate-budget Ar DURATION$/&\n.It Fl -dry-run/' \
	"--dry-run listed under 'fleet rollout', whose table does not have it"
plant "a harness option missing" nodetune-harness.1 '/^\.It Fl -no-pin$/d' \
	"verb 'nodetune-harness': --no-pin of its table is missing from its section"
plant "an option added to a table" dump '$a plan\tfresh-opt\t-\t-' \
	"verb 'plan': --fresh-opt of its table is missing from its section"
plant "the SPANK page naming another srun option" nodetune_spank.8 's/^\.Fl -nodetune Ns = Ns Ar policy ,$/.Fl -nodetune-x/' \
	'--nodetune-x: no verb.s option table has it'
plant "a default in the page that --help does not say" nodetune.8 's/^trials per arm (default 8)$/trials per arm (default 9)/' \
	"nodetune.8:[0-9]*: ab --trials: 'trials per arm (default 9)', --help says 'trials per arm (default 8)'"
plant "a unit in the page that --help does not say" nodetune.8 '/^\.It Fl -window /{n;s/2s/2 ms/}' \
	"nodetune.8:[0-9]*: doctor --window: 'how long to sample counters (default 2 ms"
plant "a value name in the page that --help does not say" nodetune.8 's/^\.It Fl -window Ar DURATION$/.It Fl -window Ar SECONDS/' \
	"nodetune.8:[0-9]*: doctor --window: value 'SECONDS', --help says 'DURATION'"
plant "a help line changed in the table, not in the page" helps/fleet_rollout 's/etcd URLs (default: fleet.conf.s)/etcd URLs (default: none)/' \
	"nodetune-fleet.8:[0-9]*: fleet rollout --endpoints: 'etcd URLs (default: fleet.conf's) (also --fleet)', --help says 'etcd URLs (default: none) (also --fleet)'"
# the keys of a file format's page (its KEYS: ".It Cm KEY") against the
# parser's own list, the one its "unknown key" message gives
page_keys() { sed -n '/^\.Sh KEYS/,/^\.Sh /s/^\.It Cm \([a-z-]*\).*/\1/p' "$1" | sort | tr '\n' ' '; }
parser_keys() { grep -o "unknown key '[^(]*(\([a-z, -]*\)" "$1" | sed 's/.*(//' | tr -d ' ' | tr ',' '\n' | sort | tr '\n' ' '; }
for pair in "nodetune-gates.5 agent/lib/fleet/gates.c" "nodetune-fleet.conf.5 agent/lib/fleet/fleet_creds.c"; do
	p=${pair% *} src=$top/${pair#* }
	tr -d '\n' <"$src" | sed 's/"[[:space:]]*"//g' >"$tmp/src"
	want=$(parser_keys "$tmp/src") got=$(page_keys "$tmp/real/$p")
	[ -n "$want" ] && [ "$got" = "$want" ] && ok "$p: the keys its parser takes: $got" ||
		nok "$p: keys '$got', its parser takes '$want'"
	sed '/^\.It Cm user /,+1d' "$tmp/real/$p" >"$tmp/nouser"
	[ "$(page_keys "$tmp/nouser")" != "$want" ] && ok "$p without its user key: told apart" ||
		nok "$p without its user key: not told apart"
done
sed '/^\.El$/d' "$tmp/real/nodetune.8" >"$tmp/broken.8"
out=$(mandoc -T lint -W warning "$tmp/broken.8" 2>&1) && nok "mandoc -T lint passed a page without .El" ||
	ok "mandoc -T lint fails a page without .El: $(printf '%s\n' "$out" | head -n 1)"
echo "lint man: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
