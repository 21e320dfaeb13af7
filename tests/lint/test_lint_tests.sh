#!/bin/sh
# SPDX-License-Identifier: MIT
# The integration tests' lint (scripts/lint-tests.sh) passes on the tree and
# fails, naming the file, line and kind, on each planted pattern: a
# condition after `check ... --` outside the check (&& and ||), a `-ge 0` and
# a `>= 0` on a count, `|| true` right before a check, a fixed sleep
# outside a wait loop, ab in a script that does not hold abcg (run as
# "$NODETUNE" ab, or from a docs block), and an ignored status
# of a command whose output a later check reads (issue 23's test_harness.sh
# bug, brought back by deleting the line that keeps mpirun's status).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
lint=$top/scripts/lint-tests.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
nok() { fail=$((fail + 1)); echo "FAIL: $1"; }

out=$("$lint" 2>&1) && ok "the integration tests are clean" || nok "the tree: $out"

# plant NAME FILE SED WANT: FILE (tests/integration/FILE) copied, the sed
# applied (it must change the copy); the lint must fail with WANT
plant() {
	name=$1 file=$2 expr=$3 want=$4
	cp "$top/tests/integration/$file" "$tmp/$file"
	sed -i "$expr" "$tmp/$file"
	if cmp -s "$top/tests/integration/$file" "$tmp/$file"; then
		nok "$name: the plant did not change $file"
	elif out=$("$lint" "$tmp/$file" 2>&1); then
		nok "$name: passed"
	elif printf '%s\n' "$out" | grep -q -- "$want"; then
		ok "$name: $(printf '%s\n' "$out" | grep -- "$want" | head -n 1 | sed "s|$tmp/||")"
	else
		nok "$name: failed without naming it: $out"
	fi
}
plant "&& after check --" test_stdout.sh \
	'$a check "two conditions" -- [ -s "$T_TMP/bare.out" ] \&\& [ ! -s "$T_TMP/bare.err" ]' \
	'test_stdout.sh:[0-9]*: outside: .* joined by &&'
plant "|| after check --, on a continued line" test_stdout.sh \
	'$a check "a condition" -- \\\n\t[ -s "$T_TMP/bare.out" ] || echo no' \
	'test_stdout.sh:[0-9]*: outside: .* joined by ||'
plant "-ge 0 on a count" test_inject.sh \
	'$a check "switches" -- [ "$(s base counters.involuntary_switches)" -ge 0 ]' \
	'test_inject.sh:[0-9]*: ge0:'
plant ">= 0 in a jq program" test_observe_cli.sh \
	"\$a check \"PSI\" -- jq -se 'all(.[]; .psi_ms.cpu_some >= 0)' \"\$OUT\"" \
	'test_observe_cli.sh:[0-9]*: ge0:'
plant "|| true before a check" test_stdout.sh \
	'$a grep -q first "$T_TMP/bare.out" || true\ncheck "x" -- [ -s "$T_TMP/bare.out" ]' \
	'test_stdout.sh:[0-9]*: true: `|| true` right before a check'
plant "mpirun's status ignored (test_harness.sh, issue 23)" test_harness.sh \
	'/^\tmrc=\$?$/d' \
	'test_harness.sh:[0-9]*: status: the status of `timeout` writing \$T_TMP/w2 is ignored'
plant "a status ignored, read by a check" test_stdout.sh \
	'/^brc=\$?$/d' \
	'test_stdout.sh:[0-9]*: status: the status of `sh` writing \$T_TMP/bare.out is ignored, and the check'
plant "a fixed sleep before a check (test_fleet.sh's, issue 23)" test_fleet.sh \
	's/^wait_until 20 status_is 1 "invalid refused (replay)".*$/sleep 2/' \
	'test_fleet.sh:[0-9]*: sleep: a fixed `sleep 2` outside a wait loop'
plant "ab in a script whose host line does not name abcg (test_json_schema.sh's, a red make check)" test_ab.sh \
	's/^# host: cpu thp sysctl knobs cgroup abcg state$/# host: cpu thp sysctl knobs cgroup state/' \
	'test_ab.sh:[0-9]*: abcg: `nodetune ab` makes its trial groups'
plant "ab run from the docs' blocks in a script whose host line does not name abcg (test_docs.sh's, a red integration run)" test_docs.sh \
	's/^# host: thp sysctl knobs cgroup abcg state$/# host: thp sysctl knobs cgroup state/' \
	'test_docs.sh:[0-9]*: abcg: `nodetune [a-z]*` makes its trial groups'
# a part of test_attacks.sh (attacks/*.sh) read under its host line: its
# fleet gate (each canary host runs ab) and its `nodetune ab`, with abcg
# taken out of test_attacks.sh's line (a red fresh clone: fleet-fresh.sh's
# gate left a trial group that test_fleet_scale.sh, beside it, took for
# its own)
mkdir -p "$tmp/attacks"
sed 's/^# host: slurm sysctl cgroup abcg ca$/# host: slurm sysctl cgroup ca/' "$top/tests/integration/test_attacks.sh" \
	>"$tmp/test_attacks.sh"
for part in fleet-fresh.sh job.sh; do
	cp "$top/tests/integration/attacks/$part" "$tmp/attacks/$part"
	if cmp -s "$top/tests/integration/test_attacks.sh" "$tmp/test_attacks.sh"; then
		nok "attacks/$part without abcg: the plant did not change test_attacks.sh"
	elif out=$("$lint" "$tmp/attacks/$part" 2>&1); then
		nok "attacks/$part without abcg in test_attacks.sh: passed"
	elif printf '%s\n' "$out" | grep -q "attacks/$part:[0-9]*: abcg: "; then
		ok "attacks/$part without abcg in test_attacks.sh: $(printf '%s\n' "$out" | head -n 1 | sed "s|$tmp/||" | cut -c1-160)"
	else
		nok "attacks/$part without abcg in test_attacks.sh: failed without naming it: $out"
	fi
done
out=$("$lint" "$top/tests/integration/attacks/fleet-fresh.sh" "$top/tests/integration/attacks/job.sh" 2>&1) &&
	ok "the same parts under test_attacks.sh's own line (abcg): not flagged" || nok "the parts as they are: $out"
# a window said as one, with its margin, is not flagged; the same sleep in a
# loop's body is a poll, not flagged either
cp "$top/tests/integration/test_stdout.sh" "$tmp/w.sh"
printf '# window: 0.2 s in which nothing may happen (it takes ms)\nsleep 0.2\nwhile ! [ -e x ]; do\n\tsleep 0.1\ndone\n' >>"$tmp/w.sh"
out=$("$lint" "$tmp/w.sh" 2>&1) && ok "a sleep under a '# window:' comment, and one in a loop body: not flagged" ||
	nok "a window or a poll flagged: $out"
echo "lint lint_tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
