#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# shellcheck disable=SC2034 # BASE, A, GT...: used by the rows, which are eval'd
# Bad input, every verb: a missing, empty, unreadable file, a directory or a
# FIFO where a file belongs, a file where a directory belongs, numbers out of
# range or with trailing garbage, an option given twice, arguments a verb
# does not take.  Each row must give exit 2, exactly one line on stderr,
# "nodetune: VERB: ..." naming the file or the option, nothing on stdout,
# and change nothing: the verbs that write run against a copy of a captured
# tree, hashed after every row.
. "$(dirname "$0")/lib.sh"
t_plan 159

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
GT=policies/gpu-train.conf
BASE=policies/baseline.conf           # run's rows: a policy that changes nothing
SR=$T_TMP/sysroot                     # the tree apply and revert may write
ST=$T_TMP/state                       # their state dir (no journal may appear)
D=$T_TMP/in                           # the bad inputs
cp -r tests/fixtures/sysroot/gpu-host-untuned "$SR"
mkdir -p "$D/dir"
: >"$D/empty"
printf 'not a directory\n' >"$D/file"
mkfifo "$D/fifo"
printf '# credentials only, no endpoints\nfleet-id = default\n' >"$D/fleet.conf" && chmod 600 "$D/fleet.conf"
cp $GT "$D/unreadable" && chmod 000 "$D/unreadable"
A="--topology $HGX --sysroot $SR --state-dir $ST"   # apply's machine and state
h0=$(tree_hash "$SR")
CHANGED=0                             # rows that changed the tree

# table: rows "verb|args|pattern|description" on stdin.  args are eval'd
# (variables, quotes); the pattern is grep -E, after "^nodetune: VERB: ".
# A verb may be preceded by VAR=value words: the launcher's environment.
# $AS runs the command as another user (the unreadable files).
# shellcheck disable=SC2120 # "set --" inside is for the row's arguments
table() {
	while IFS='|' read -r verb args pattern desc; do
		case $verb in '' | '#'*) continue ;; esac
		envs=
		while case $verb in *=*' '*) true ;; *) false ;; esac; do
			envs="$envs ${verb%% *}"
			verb=${verb#* }
		done
		eval "set -- $args"
		# shellcheck disable=SC2086 # $AS and $envs are lists of words
		expect_fail 2 "^nodetune: $verb: $pattern" "$verb: $desc" -- \
			timeout 60 $AS env -u OMPI_COMM_WORLD_LOCAL_RANK -u SLURM_LOCALID -u LOCAL_RANK $envs \
			"$NODETUNE" "$verb" "$@"
		if [ "$(tree_hash "$SR")" != "$h0" ] || [ -e "$ST/journal" ]; then
			t_not_ok "$verb: $desc: changed the tree or left a journal"
			CHANGED=$((CHANGED + 1))
			rm -rf "$SR" "$ST" && cp -r tests/fixtures/sysroot/gpu-host-untuned "$SR"
		fi
	done
}

AS=
table <<'EOF'
# ---- discover -----------------------------------------------------------
discover|--topology $D/missing|.*/missing: no such file or directory|missing --topology file
discover|--topology $D/empty|.*/empty: empty file|empty --topology file
discover|--topology $D/dir|.*/dir: is a directory|a directory as --topology
discover|--topology $D/fifo|.*/fifo: not a regular file|a FIFO as --topology (refused, no hang)
discover|--sysroot $D/file|--sysroot .*/file: not a directory|a file as --sysroot
discover|--sysroot $D/missing|--sysroot .*/missing: no such file or directory|missing --sysroot
discover|--sysroot ''|--sysroot: empty path|empty --sysroot
discover|--json --json|--json given twice|--json twice
discover|--sysroot $SR --topology $HGX --sysroot $SR|--sysroot given twice|--sysroot twice
discover|--synthetic 'pack:1 pu:1' extra|unexpected argument 'extra'|a stray argument
discover|--json=yes|option '--json' takes no value|a value for a flag
# ---- plan ---------------------------------------------------------------
plan|--policy $D/missing|.*/missing: no such file or directory|missing policy
plan|--policy $D/empty|.*/empty: empty file, expected a policy file|empty policy
plan|--policy $D/dir|.*/dir: is a directory, not a policy file|a directory as policy
plan|--policy $D/fifo|.*/fifo: not a regular file|a FIFO as policy (refused, no hang)
plan|--policy ''|--policy: empty path|empty --policy
plan|--policy $GT --policy $BASE|--policy given twice|--policy twice
plan|--policy $GT -n 0|--ranks '0': expected a whole number from 1 to [0-9]+$|-n 0
plan|--policy $GT -n 999999|--ranks '999999': expected a whole number from 1 to|-n 999999
plan|--policy $GT --ranks -1|--ranks '-1': expected a whole number|--ranks -1
plan|--policy $GT --ranks 2x|--ranks '2x': expected a whole number|--ranks with trailing garbage
plan|--policy $GT --ranks ' 2'|--ranks ' 2': expected a whole number|--ranks with a leading space
plan|--policy $GT --ranks 99999999999999999999999|--ranks '9+': expected a whole number|--ranks beyond 64 bits
plan|--policy $GT -n 2 --ranks 2|--ranks given twice|-n and --ranks are one option
plan|--policy $GT --topology $D/empty|.*/empty: empty file|empty --topology
plan|--policy $GT extra|unexpected argument 'extra'|a stray argument
plan|--policy $GT --|unexpected argument '--': plan takes no command|'--' where no command is taken
# ---- apply (on the copied tree) ------------------------------------------
apply|--policy $D/missing $A|.*/missing: no such file or directory|missing policy
apply|--policy $D/empty $A|.*/empty: empty file|empty policy
apply|--policy $D/dir $A|.*/dir: is a directory|a directory as policy
apply|--policy $D/fifo $A|.*/fifo: not a regular file|a FIFO as policy
apply|--policy $GT $A --ranks 0|--ranks '0': expected a whole number|--ranks 0
apply|--policy $GT $A --dry-run --dry-run|--dry-run given twice|--dry-run twice
apply|--policy $GT $A --state-dir $ST|--state-dir given twice|--state-dir twice
apply|--policy $GT --topology $HGX --sysroot $SR --state-dir $D/file|--state-dir .*/file: not a directory|a file as --state-dir
apply|--policy $GT --topology $HGX --sysroot $D/missing --state-dir $ST|--sysroot .*/missing: no such file or directory|missing --sysroot
apply|--policy $GT --topology $HGX --sysroot $D/file --state-dir $ST|--sysroot .*/file: not a directory|a file as --sysroot
apply|--policy $GT --topology $HGX --sysroot $SR --state-dir ''|--state-dir: empty path|empty --state-dir
apply|--policy $GT $A extra|unexpected argument 'extra'|a stray argument
# ---- revert (on the copied tree) -----------------------------------------
revert|--sysroot $SR --state-dir $D/file|--state-dir .*/file: not a directory|a file as --state-dir
revert|--sysroot $D/missing --state-dir $ST|--sysroot .*/missing: no such file or directory|missing --sysroot
revert|--sysroot $SR --state-dir $ST --state-dir $ST|--state-dir given twice|--state-dir twice
revert|--sysroot $SR --state-dir $ST extra|unexpected argument 'extra'|a stray argument
revert|--policy $GT --state-dir $ST|unknown option '--policy'|revert takes no policy
# ---- verify ---------------------------------------------------------------
verify|--topology $HGX --sysroot $SR|--policy FILE.NAME is required|no policy
verify|--policy $D/empty --topology $HGX --sysroot $SR|.*/empty: empty file|empty policy
verify|--policy $GT --topology $D/dir --sysroot $SR|.*/dir: is a directory|a directory as --topology
verify|--policy $GT --topology $HGX --sysroot $SR --json --json|--json given twice|--json twice
verify|--policy $GT --topology $HGX --sysroot $SR --ranks 0x10|--ranks '0x10': expected a whole number|--ranks in hex
# ---- exec -----------------------------------------------------------------
exec|--policy $GT --local-rank -1 -- true|--local-rank '-1': expected a whole number|--local-rank -1
exec|--policy $GT --local-rank 2x -- true|--local-rank '2x': expected a whole number|--local-rank with trailing garbage
exec|--policy $GT --local-rank 999999 -- true|--local-rank '999999': expected a whole number|--local-rank 999999
exec|--policy $GT --local-rank 0 --local-size 0 -- true|--local-size '0': expected a whole number from 1|--local-size 0
exec|--policy $GT --local-rank 0 --local-rank 1 -- true|--local-rank given twice|--local-rank twice
exec|--policy $GT --local-rank 0 --quiet -q -- true|--quiet given twice|--quiet and -q are one option
exec|--policy $D/empty --local-rank 0 -- true|.*/empty: empty file|empty policy
exec|--policy $D/fifo --local-rank 0 -- true|.*/fifo: not a regular file|a FIFO as policy
exec|--policy $GT --local-rank 0|expected '-- COMMAND \[ARGS...\]'|no command
exec|--policy $GT --local-rank 0 --|expected '-- COMMAND \[ARGS...\]', got '--' alone|'--' and no command
exec|--policy $GT --local-rank 0 -- $D/missing|.*/missing: command not found|a command that does not exist
OMPI_COMM_WORLD_LOCAL_RANK=1x exec|--policy $GT -- true|OMPI_COMM_WORLD_LOCAL_RANK='1x': expected a whole number|a launcher's rank with trailing garbage
LOCAL_RANK=0 LOCAL_WORLD_SIZE=0 exec|--policy $GT -- true|LOCAL_WORLD_SIZE='0': expected a whole number from 1|a launcher's local size 0
SLURM_LOCALID=0 SLURM_TASKS_PER_NODE=2x exec|--policy $GT -- true|SLURM_TASKS_PER_NODE='2x': expected a whole number|SLURM_TASKS_PER_NODE with trailing garbage
# ---- run (root-only live; every row must fail before anything is applied) --
run|-n 0 --policy $BASE --state-dir $ST -- true|--ranks '0': expected a whole number from 1|-n 0
run|-n 999999 --policy $BASE --state-dir $ST -- true|--ranks '999999': expected a whole number|-n 999999
run|-n 2x --policy $BASE --state-dir $ST -- true|--ranks '2x': expected a whole number|-n with trailing garbage
run|--ranks -1 --policy $BASE --state-dir $ST -- true|--ranks '-1': expected a whole number|--ranks -1
run|--policy $BASE --state-dir $ST -- true|-n/--ranks N is required|no -n
run|-n 1 -n 1 --policy $BASE --state-dir $ST -- true|--ranks given twice|-n twice
run|-n 1 --policy $D/missing --state-dir $ST -- true|.*/missing: no such file or directory|missing policy
run|-n 1 --policy $D/dir --state-dir $ST -- true|.*/dir: is a directory|a directory as policy
run|-n 1 --policy $BASE --state-dir $D/file -- true|--state-dir .*/file: not a directory|a file as --state-dir
run|-n 1 --policy $BASE --state-dir $ST true|expected '-- COMMAND \[ARGS...\]'|a command without '--'
run|-n 1 --policy $BASE --sysroot $SR --state-dir $ST -- true|unknown option '--sysroot'|--sysroot (run starts ranks on this host)
# ---- doctor ---------------------------------------------------------------
doctor|--window 0|--window '0': expected a duration from 200ms to 1h \(e.g. 250ms, 30s, 5m; a bare number counts seconds\)$|--window 0 (the examples within its range: never 100ms)
doctor|--window 100ms|--window '100ms': expected a duration from 200ms to 1h|--window 100ms (below its range)
doctor|--window 2x|--window '2x': expected a duration|--window with trailing garbage
doctor|--window 2sec|--window '2sec': expected a duration|--window with a unit it does not know
doctor|--window 2h|--window '2h': expected a duration from 200ms to 1h|--window above its range, in hours
doctor|--window ' 1'|--window ' 1': expected a duration|--window with a leading space
doctor|--window nan|--window 'nan': expected a duration|--window nan
doctor|--window 1 --window 1|--window given twice|--window twice
doctor|--policy $D/empty|.*/empty: empty file|empty policy
doctor|--sysroot $D/file|--sysroot .*/file: not a directory|a file as --sysroot
doctor|--topology $HGX --sysroot $SR extra|unexpected argument 'extra'|a stray argument
# ---- ab (every row fails before a trial) ----------------------------------
ab|--a policy=$D/empty --b cmd=true|arm A: .*/empty: empty file|empty policy in an arm
ab|--a cmd=true --b policy=$D/dir|arm B: .*/dir: is a directory|a directory as an arm's policy
ab|--a cmd=true --b policy=$D/missing|arm B: .*/missing: no such file or directory|missing policy in an arm
ab|--a cmd=true|--a SPEC and --b SPEC are required|no --b
ab|--a cmd=true --a cmd=true --b cmd=true|--a given twice|--a twice
ab|--a cmd=true --b cmd=true --trials 1|--trials '1': expected a whole number from 2|--trials 1
ab|--a cmd=true --b cmd=true --trials 5x|--trials '5x': expected a whole number|--trials with trailing garbage
ab|--a cmd=true --b cmd=true --threshold 2x|--threshold '2x': expected a percentage|--threshold with trailing garbage
ab|--a cmd=true --b cmd=true --alpha 0|--alpha '0': expected a probability|--alpha 0
ab|--a cmd=true --b cmd=true --budget -5|--budget '-5': expected a duration|negative --budget
ab|--a cmd=true --b cmd=true --seed 1e3|--seed '1e3': expected a whole number|--seed in exponent notation
ab|--a cmd=true --b cmd=true --seed 0|--seed '0': expected a whole number from 1|--seed 0 (never silently replaced)
ab|--a cmd=true --b cmd=true --threshold 101|--threshold '101': expected a percentage from 0 to 100|--threshold above 100%
ab|--a cmd=true --b cmd=true --trim 45|--trim '45': expected a percentage from 0 to 40|--trim beyond 40% of the pairs from each end
ab|--a cmd=true --b cmd=true --report $D/dir|--report .*/dir: is a directory|a directory as --report
ab|--a cmd=true --b cmd=true --report $D/missing/r.html|--report .*/missing/r.html: cannot write in .*/missing: no such file or directory|--report in a missing directory
ab|--a cmd=true --b cmd=true extra|unexpected argument 'extra'|a stray argument
ab|--a cmd=true --b cmd=true --|expected '-- COMMAND \[ARGS...\]', got '--' alone|'--' and no command
# ---- bisect ---------------------------------------------------------------
bisect|--good $D/empty --bad $GT|.*/empty: empty file|empty --good
bisect|--good $GT --bad $D/missing|.*/missing: no such file or directory|missing --bad
bisect|--good $GT --bad $D/fifo|.*/fifo: not a regular file|a FIFO as --bad
bisect|--good $GT|--good POLICY and --bad POLICY are required|no --bad
bisect|--good $GT --bad $GT|.*set every knob alike: nothing to bisect|no knob differs
bisect|--good $GT --good $BASE --bad $GT|--good given twice|--good twice
bisect|--good $BASE --bad $GT --steps 0|--steps '0': expected a whole number from 1|--steps 0
# ---- observe ---------------------------------------------------------------
observe|--interval 0|--interval '0': expected a duration from 10ms to 1m|--interval 0
observe|--interval 90|--interval '90': expected a duration from 10ms to 1m \(e.g. 100ms, 30s, 1m; a bare number counts seconds\)$|--interval 90 (seconds, as everywhere: the message names the unit, its examples in range)
observe|--interval 5ms|--interval '5ms': expected a duration from 10ms|--interval 5ms (below its range)
observe|--interval 2m|--interval '2m': expected a duration from 10ms to 1m|--interval 2m (above its range)
observe|--duration 0|--duration '0': expected a duration|--duration 0
observe|--duration -1|--duration '-1': expected a duration|negative --duration
observe|--pid 0|--pid '0': expected a whole number from 1|--pid 0
observe|--pid 1,,2|--pid '1,,2': expected process ids separated by commas|--pid with an empty item
observe|--pid 1 --pid 1|--pid given twice|--pid twice (a list is one --pid)
observe|--pid 1 -- true|--pid and a command exclude each other|--pid and a command
observe|extra|unexpected argument 'extra'|a stray argument
observe|--|expected '-- COMMAND \[ARGS...\]', got '--' alone|'--' and no command
# ---- keys ------------------------------------------------------------------
keys|extra|unexpected argument 'extra'|a stray argument
keys|--markdown --markdown|--markdown given twice|--markdown twice
keys|--json --markdown|--markdown and --json are mutually exclusive|--json with --markdown
keys|--dry-run|unknown option '--dry-run'|an option keys does not take
# ---- --json where stdout is not nodetune's: refused, saying why -------------
run|-n 1 --policy $BASE --state-dir $ST --json -- true|--json: run's standard output is the ranks'|run --json
exec|--policy $GT --local-rank 0 --json -- true|--json: exec's standard output is the command's|exec --json
daemon|--json|--json: the daemon reports through .nodetune status --json.|daemon --json
# ---- one name per concept: old forms are aliases, a pair goes together ----
daemon|--host h1 --policy $GT $A --no-metrics --fleet-conf $D/fleet.conf|no etcd endpoints: give --endpoints URLS or endpoints = in .*/in/fleet.conf$|daemon --host without --endpoints, and a fleet.conf without endpoints
daemon|--fleet http://127.0.0.1:1 --policy $GT $A --no-metrics|--endpoints URLS and --host NAME go together|daemon --fleet (the old --endpoints) without --host
daemon|--fleet http://127.0.0.1:1 --endpoints http://127.0.0.1:1 --host h|--endpoints given twice|--fleet and --endpoints are one option
daemon|--endpoints notaurl --host h1 --policy $GT $A --no-metrics|etcd: endpoint 'notaurl' is not an http:// or https:// URL$|an endpoint that is no URL (https:// is one too)
# ---- policies by name ------------------------------------------------------
plan|--policy 'a b'|'a b': not a policy name|a policy NAME with a space
plan|--policy ../x|.*../x: no such file or directory|a path is a file, never a NAME
# ---- global options, anywhere ----------------------------------------------
plan|--policy $GT -v -v|--verbose given twice|-v twice after the verb
plan|--policy $GT --log-format=json|--log-format 'json': expected text or syslog|a bad --log-format after the verb
EOF

# Unreadable files: root reads anything, so drop to nobody for a real EACCES.
if [ "$(id -u)" -ne 0 ]; then
	AS=
elif command -v setpriv >/dev/null; then
	chmod 755 "$T_TMP" "$D"
	chmod -R a+rX "$SR"
	AS="setpriv --reuid=nobody --regid=nogroup --clear-groups"
	# a build below a directory only root may enter (a clone in a mktemp
	# -d): nobody runs a copy (the failures sought are the policy's)
	if ! $AS test -x "$NODETUNE"; then
		mkdir -m 755 "$T_TMP/bin" && cp "$NODETUNE" "$T_TMP/bin/nodetune" && chmod 755 "$T_TMP/bin/nodetune"
		NODETUNE=$T_TMP/bin/nodetune
	fi
else
	AS=skip
fi
if [ "$AS" = skip ]; then
	t_need setpriv "unreadable files: running as root without setpriv (util-linux)"
else
	table <<'EOF'
discover|--topology $D/unreadable|.*/unreadable: permission denied|unreadable --topology
plan|--policy $D/unreadable|.*/unreadable: permission denied|unreadable policy
apply|--policy $D/unreadable $A|.*/unreadable: permission denied|unreadable policy
verify|--policy $D/unreadable --topology $HGX --sysroot $SR|.*/unreadable: permission denied|unreadable policy
exec|--policy $D/unreadable --local-rank 0 -- true|.*/unreadable: permission denied|unreadable policy
run|-n 1 --policy $D/unreadable --state-dir $ST -- true|.*/unreadable: permission denied|unreadable policy
doctor|--policy $D/unreadable|.*/unreadable: permission denied|unreadable policy
ab|--a policy=$D/unreadable --b cmd=true|arm A: .*/unreadable: permission denied|unreadable policy in an arm
bisect|--good $D/unreadable --bad $GT|.*/unreadable: permission denied|unreadable --good
EOF
fi

# ---- outside the table: the verb is not one word, or there is none ---------
expect_fail 2 "^nodetune: policy show: expected a policy NAME or FILE \(see nodetune policy list\)$" "policy show without a NAME" -- \
	"$NODETUNE" policy show
expect_fail 2 "^nodetune: policy show: policy show takes one word, not 'b' too" "policy show with two words" -- \
	"$NODETUNE" policy show a b
NODETUNE_POLICY_PATH=$(pwd)/policies expect_fail 2 "^nodetune: fleet rollout: no policy named 'nope' in .*/policies " \
	"fleet rollout --policy NAME that the path does not have (said as apply and plan say it)" -- \
	"$NODETUNE" fleet rollout --endpoints http://127.0.0.1:1 --policy nope --name r
NODETUNE_POLICY_PATH=$(pwd)/policies expect_fail 3 "^nodetune: fleet rollout: etcd http://127.0.0.1:1" \
	"fleet rollout --policy gpu-train: the NAME found, then the store (none here) is what fails" -- \
	"$NODETUNE" fleet rollout --endpoints http://127.0.0.1:1 --policy gpu-train --name r
# the endpoints: --endpoints or fleet.conf's, neither is one line and exit 2
for v in "status" "hosts" "rollout --policy $GT --name r" "init-auth --hosts h1 --password-dir $D"; do
	# shellcheck disable=SC2086 # $v is the verb and its options
	expect_fail 2 "^nodetune: fleet ${v%% *}: no etcd endpoints: give --endpoints URLS or endpoints = in .*/in/fleet.conf$" \
		"fleet ${v%% *} without --endpoints, fleet.conf without endpoints" -- "$NODETUNE" fleet $v --fleet-conf "$D/fleet.conf"
done
expect_fail 2 "^nodetune: help: no verb 'nope'" "help of a verb that does not exist" -- "$NODETUNE" help nope
expect_fail 2 "^nodetune: unknown verb 'nope' \(see nodetune help\)" "an unknown verb" -- "$NODETUNE" nope
expect_fail 2 "^nodetune: --verbose given twice" "-v twice before the verb" -- "$NODETUNE" -v -v discover
expect_fail 2 "^nodetune: unknown option '--json'" "a verb's option before the verb" -- "$NODETUNE" --json discover

check "no row changed the copied tree or left a journal ($CHANGED did)" -- \
	sh -c "[ $CHANGED -eq 0 ] && [ '$h0' = '$(tree_hash "$SR")' ] && [ ! -e '$ST/journal' ]"
t_done
