#!/bin/sh
# SPDX-License-Identifier: MIT
# The runner's own count (tests/tap-check.sh, tests/run-unit.sh with
# tests/unit/assert_count.c) and the host-capability rule, shown on planted
# faults, and the review's 23 lint probes (tests.md, section D) run as tiny
# integration scripts through the real runner:
#   - caught by the runner, whatever their shape: a failing check in a pipe,
#     in `&`, in `( )` or in `$( )`, a check in a branch not taken (`&&`,
#     `if` without else), a skip decided by nodetune where the host has the
#     capability, a unit test that returns before its assertions;
#   - caught by the lint (scripts/lint-tests.sh), being checks that cannot
#     fail or statuses lost, which no count can see: `-- true`, the ge0
#     variants, `--json=PATH`, `2>PATH`, `| tee PATH`, a reader in `V=$( )`,
#     `echo "# rc $?"` taken for a use, the --report/--write-data/
#     --screenshot=/--state-dir writers, `sleep $D`, `sleep 2 &` + `wait`,
#     `wait_until 3 false`, `|| true` before t_ok/run/expect_fail,
#     `|| echo "# ..."` before a check, `expect_fail ... && more`; and a
#     probe of the forms each rule leaves alone;
#   - caught by neither: listed, each with why (not a failure of this test).
set -u
# the probes fail and skip on purpose: none of theirs belongs in make
# check's lists of failed checks, skips and times (a red CI log named
# test_noplan.sh's "failure" beside the real ones)
unset NODETUNE_FAIL_LOG NODETUNE_SKIP_LOG NODETUNE_TIME_LOG
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
: "${NODETUNE:=$top/build/nodetune}"
export NODETUNE
mkdir -p "$top/build"
# two levels below the repository root, as lib.sh wants its script
pd=$(mktemp -d "$top/build/tap-probes-XXXXXX")
trap 'rm -rf "$pd"' EXIT INT TERM
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
nok() { fail=$((fail + 1)); echo "FAIL: $1"; }

# probe NAME LINES...: $pd/test_NAME.sh, a plan of 2: one plain check, then
# the lines
probe() {
	n=$1
	shift
	{
		echo '. "$SRCDIR_/tests/integration/lib.sh"'
		echo 't_plan 2'
		echo 'check "a plain check" -- test 1 = 1'
		printf '%s\n' "$@"
		echo 't_done'
	} >"$pd/test_$n.sh"
}
# runner NAME WANT: the runner fails the probe, its output matching WANT
runner() {
	out=$(SRCDIR_=$top SANITIZED= sh tests/run-integration.sh "$pd/test_$1.sh" 2>&1) && {
		nok "$1: the runner passed it: $(printf '%s\n' "$out" | tail -n 3)"
		return
	}
	if printf '%s\n' "$out" | grep -Eq -- "$2"; then
		ok "$1: the runner fails it: $(printf '%s\n' "$out" | grep -E -- "$2" | head -n 1 | cut -c1-300)"
	else
		nok "$1: failed without naming it: $(printf '%s\n' "$out" | tail -n 4)"
	fi
}
# linted NAME WANT: scripts/lint-tests.sh flags the probe with WANT
linted() {
	if out=$(sh scripts/lint-tests.sh "$pd/test_$1.sh" 2>&1); then
		nok "$1: the lint passed it"
	elif printf '%s\n' "$out" | grep -q -- "$2"; then
		ok "$1: the lint flags it: $(printf '%s\n' "$out" | grep -- "$2" | head -n 1 | sed "s|$pd/||")"
	else
		nok "$1: the lint failed without naming $2: $out"
	fi
}

# ---- the runner: a count that differs from the plan or the tally ----------
probe control 'check "a second check" -- test 2 = 2'
out=$(SRCDIR_=$top sh tests/run-integration.sh "$pd/test_control.sh" 2>&1) &&
	ok "control: a script that runs its plan passes ($(printf '%s\n' "$out" | tail -n 1))" ||
	nok "control: $(printf '%s\n' "$out" | tail -n 3)"
probe v01 'check "in a pipe" -- false | tee /dev/null'
runner v01 'tap-check: .*a check ran in a subshell'
probe v14 'check "in the background" -- false &' 'wait'
runner v14 'tap-check: .*a check ran in a subshell'
probe v15 '( check "in a subshell" -- false )'
runner v15 'tap-check: .*a check ran in a subshell'
probe v23 'x=$(check "in a command substitution" -- false)'
runner v23 'tap-check: planned 2, ran 1: check 2 never ran'
probe v02 '[ -n "" ] && check "behind &&" -- test 1 = 1'
runner v02 'tap-check: planned 2, ran 1: check 2 never ran; the last one that ran: ok 1 - a plain check'
probe v22 'if false; then' '	check "in a branch not taken" -- test 1 = 1' 'fi'
runner v22 'tap-check: planned 2, ran 1: check 2 never ran'
probe death 'exit 3'
runner death 'tap-check: planned 2, ran 1: check 2 never ran.*no tally line: it exited 3 before t_done'
probe noplan 'check "x" -- test 1 = 1'
sed -i '/^t_plan 2$/d' "$pd/test_noplan.sh"
runner noplan 'tap-check: no plan line'
# a skip named, in the branch not taken: counted, and the runner passes it
probe skipped 'if false; then' '	check "in a branch not taken" -- test 1 = 1' 'else' \
	'	t_need nothing "the branch not taken, skipped by name"' 'fi'
out=$(SRCDIR_=$top CI= sh tests/run-integration.sh "$pd/test_skipped.sh" 2>&1) &&
	ok "the same branch with its named skip: passes, the skip named ($(printf '%s\n' "$out" | tail -n 1))" ||
	nok "the named skip: $(printf '%s\n' "$out" | tail -n 3)"

# ---- a cgroup left: the script that holds its lock names it --------------
# A probe that makes a nodetune* group and leaves it.  Holding the lock for
# that kind (abcg: ab's nodetune-ab; cgroup: the others), the script fails
# naming it; holding the other lock, its own t_done cannot say it is its
# (a script holding that lock may run beside it), and the runner's check at
# the end of its run fails it.  (cgroup2: the unified mount, v2 or hybrid)
cg2=""
for m in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	[ "$(stat -f -c %T "$m" 2>/dev/null)" = cgroup2fs ] && cg2=$m && break
done
# leaver NAME HOSTLINE DIR: the probe, with its host line, making DIR
leaver() {
	probe "$1" "mkdir $cg2/$3" 'check "made a group" -- test -d '"$cg2/$3"
	sed -i "1i # host: $2" "$pd/test_$1.sh"
}
if [ "$(id -u)" -ne 0 ] || [ -z "$cg2" ] || [ -e "$cg2/nodetune-ab" ] || [ -e "$cg2/nodetune-probe" ]; then
	echo "not run: the cgroup probes (need root, a cgroup2 mount, and no nodetune-ab or nodetune-probe group there)"
else
	leaver ab_abcg abcg nodetune-ab
	runner ab_abcg "not ok 3 - the test left cgroups \\(now removed\\): $cg2/nodetune-ab"
	leaver ab_cgroup cgroup nodetune-ab
	runner ab_cgroup "integration: cgroups left by a script that did not hold their lock \\('abcg' for nodetune-ab, else 'cgroup'\\) \\(now removed\\): $cg2/nodetune-ab"
	leaver other_cgroup cgroup nodetune-probe
	runner other_cgroup "not ok 3 - the test left cgroups \\(now removed\\): $cg2/nodetune-probe"
	leaver other_abcg abcg nodetune-probe
	runner other_abcg "integration: cgroups left by a script that did not hold their lock \\('abcg' for nodetune-ab, else 'cgroup'\\) \\(now removed\\): $cg2/nodetune-probe"
	[ ! -e "$cg2/nodetune-ab" ] && [ ! -e "$cg2/nodetune-probe" ] &&
		ok "the cgroup probes: their groups removed" || nok "the cgroup probes left a group behind"
fi

# ---- a skip decided by nodetune: the host's probe decides -----------------
# nodetune observe told to count TLB shootdowns from no source says "not
# countable"; a test that believed it would skip.  tests/host-caps.sh reads
# the TLB line of /proc/interrupts: where it moves, the skip is a failure.
probe nodetune_says \
	'run env NODETUNE_TLB_SOURCES=none "$NODETUNE" observe --json --duration 0.3' \
	'if jq -se "all(.[]; .tlb_shootdowns == null)" "$OUT" >/dev/null; then' \
	'	t_skip_host tlb "TLB shootdowns: nodetune says not countable on this host"' \
	'else' \
	'	check "TLB shootdowns counted" -- test 1 = 1' \
	'fi'
if sh tests/host-caps.sh tlb; then
	runner nodetune_says 'not ok 2 - TLB shootdowns: nodetune says not countable on this host -- but this host has tlb'
else
	out=$(SRCDIR_=$top sh tests/run-integration.sh "$pd/test_nodetune_says.sh" 2>&1) &&
		ok "nodetune_says: this host has no moving TLB line: a skip, named" || nok "nodetune_says: $out"
fi
probe plain_says 't_skip_host plain "the packages: says the test, on the plain build"'
runner plain_says 'not ok 2 - the packages: says the test, on the plain build -- but this host has plain'
probe unknown_cap 't_skip_host warp-drive "no warp drive"'
runner unknown_cap "not ok 2 - no warp drive -- t_skip_host: 'warp-drive' is not a capability"

# ---- the unit tests: an early return, a bare skip -------------------------
wraps=$(sed -n '/^UNIT_WRAP = /,/)$/p' Makefile | tr -d '\\\n' | sed 's/.*--wrap=%,//; s/)[ \t]*$//')
cat >"$pd/early.c" <<'EOF'
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "test_util.h"

static int host_has_it(void) { return 1; }

static void test_returns_early(void **state)
{
	(void)state;
	if (host_has_it())
		return;         /* planted: a return before the assertions */
	assert_int_equal(1 + 1, 2);
}

static void test_checks(void **state)
{
	(void)state;
	assert_int_equal(1 + 1, 2);
}

static void test_bare_skip(void **state)
{
	(void)state;
	skip();         /* planted: a skip that says nothing */
}

static void test_nodetune_says(void **state)
{
	(void)state;
	test_skip_host("plain", "planted: the code under test says so");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_returns_early),
		cmocka_unit_test(test_checks),
		cmocka_unit_test(test_bare_skip),
		cmocka_unit_test(test_nodetune_says),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
EOF
wl=""
for w in $wraps; do wl="$wl -Wl,--wrap=$w"; done
# shellcheck disable=SC2086
if ! cc -std=c11 -D_GNU_SOURCE -Itests/unit -o "$pd/early" "$pd/early.c" tests/unit/assert_count.c -lcmocka $wl 2>"$pd/cc.err"; then
	nok "the planted unit test does not build: $(head -n 3 "$pd/cc.err")"
else
	out=$(SANITIZED= NODETUNE_SRCDIR=$top sh tests/run-unit.sh "$pd/early" 2>&1) && nok "run-unit.sh passed the planted unit test: $out"
	for want in 'early.test_returns_early:.*test_returns_early returned without a single assertion' \
		'early.test_bare_skip: skipped without a reason' \
		'early.test_nodetune_says:.*a skip for want of plain, but tests/host-caps.sh finds it on this host' \
		'^unit: 1 passed, 3 failed, 0 skipped'; do
		if printf '%s\n' "$out" | grep -Eq -- "$want"; then
			ok "run-unit.sh: $(printf '%s\n' "$out" | grep -E -- "$want" | head -n 1 | cut -c1-300)"
		else
			nok "run-unit.sh does not say /$want/: $(printf '%s\n' "$out" | tail -n 6)"
		fi
	done
	# the same binary again, its source saying "unit-runner: beside": run
	# in the background, its failures counted all the same
	mkdir -p "$pd/src/bg" "$pd/tests/bg"
	{ echo '/* unit-runner: beside */'; cat "$pd/early.c"; } >"$pd/src/bg/test_bg.c"
	cp "$pd/early" "$pd/tests/bg/test_bg"
	out=$(SANITIZED= NODETUNE_SRCDIR=$top UNIT_SRCDIR="$pd/src" sh tests/run-unit.sh "$pd/tests/bg/test_bg" "$pd/early" 2>&1)
	if printf '%s\n' "$out" | grep -q '^unit: 2 passed, 6 failed, 0 skipped' &&
		printf '%s\n' "$out" | grep -q '^test_bg.test_returns_early:'; then
		ok "run-unit.sh: a binary run beside the others counted: $(printf '%s\n' "$out" | tail -n 1 | cut -c1-200)"
	else
		nok "run-unit.sh: a binary run beside the others: $(printf '%s\n' "$out" | grep -E '^unit:|^test_bg' | head -n 4)"
	fi
fi

# ---- the lint: checks that cannot fail, statuses lost ----------------------
probe v03 'check "a heading" -- true'
linted v03 'true: a check of `true`'
probe v04 'check "a range" -- sh -c "[ $a -ge 0 ] && [ $b -le 5 ]"'
linted v04 'ge0:'
probe v05 'check "x" -- [ "$a" -gt -1 ]'
linted v05 'ge0:'
probe v18 'check "x" -- [ "$a" -ge "0" ]'
linted v18 'ge0:'
probe v19 "check \"x\" -- jq -e '.x >= 0.0' \"\$T_TMP/j\""
linted v19 'ge0:'
probe v06 '"$NODETUNE" plan --json="$T_TMP/x"' 'check "reads x" -- jq -e . "$T_TMP/x"'
linted v06 'status: the status of `"$NODETUNE"` writing $T_TMP/x is ignored'
probe v11 'D=2' 'sleep $D' 'check "after" -- test 1 = 1'
linted v11 'sleep: a fixed `sleep $D`'
probe v21 'grep -q x "$T_TMP/j" || true' 't_ok "after it"'
linted v21 'true: `|| true` right before a t_ok'
probe v20 'expect_fail 2 x "y" -- "$NODETUNE" nope && echo more'
linted v20 'outside: a condition after `expect_fail ... --`'

probe v07 '"$NODETUNE" plan --nope 2>"$T_TMP/e"' 'check "reads e" -- grep -q usage "$T_TMP/e"'
linted v07 'status: the status of `"$NODETUNE"` writing $T_TMP/e is ignored'
probe v08 '"$NODETUNE" plan --topology x | tee "$T_TMP/p"' 'check "reads p" -- grep -q x "$T_TMP/p"'
linted v08 'status: the status of `"$NODETUNE"` is lost in a pipe writing $T_TMP/p'
probe v09 '"$NODETUNE" plan --json >"$T_TMP/p"' 'v=$(jq -r .x "$T_TMP/p")' 'check "v" -- [ "$v" = 1 ]'
linted v09 'status: the status of `"$NODETUNE"` writing $T_TMP/p is ignored, and the assignment'
probe v10 '"$NODETUNE" plan >"$T_TMP/x"' 'echo "# rc $?"' 'check "reads x" -- grep -q a "$T_TMP/x"'
linted v10 'status: the status of `"$NODETUNE"` writing $T_TMP/x is ignored'
probe v17a '"$NODETUNE" ab --report "$T_TMP/r.html"' 'check "r" -- grep -q html "$T_TMP/r.html"'
linted v17a 'status: the status of `"$NODETUNE"` writing $T_TMP/r.html'
probe v17b '"$HARNESS" --rows 10 --write-data "$T_TMP/d"' 'run "$HARNESS" --data "$T_TMP/d"'
linted v17b 'status: the status of `"$HARNESS"` writing $T_TMP/d is ignored, and the run'
probe v17c '"$NODETUNE" discover --screenshot="$T_TMP/s.png"' 'check "s" -- test -s "$T_TMP/s.png"'
linted v17c 'status: the status of `"$NODETUNE"` writing $T_TMP/s.png'
probe v17d '"$NODETUNE" apply --state-dir "$T_TMP/st"' 'check "j" -- test -s "$T_TMP/st/journal"'
linted v17d 'status: the status of `"$NODETUNE"` writing $T_TMP/st is ignored'
probe v12 'sleep 2 &' 'wait' 'check "after" -- test 1 = 1'
linted v12 'sleep: a fixed `sleep 2` in the background, then waited for'
probe v16 'wait_until 3 false' 'check "after" -- test 1 = 1'
linted v16 'sleep: `wait_until 3 false` cannot end before its deadline'
probe v13 'grep -q x "$T_TMP/j" || echo "# no x"' 'check "after" -- test 1 = 1'
linted v13 'true: `|| echo "# ..."` right before a check'
# and what each rule leaves alone: a status kept in a file or compared, a
# stderr file beside a run, a job started in the background by a function,
# a sleep in the background that nothing waits for
probe ok1 '{ "$NODETUNE" plan 2>"$T_TMP/e"; echo $? >"$T_TMP/rc"; } | cat >"$T_TMP/o"' \
	'check "rc" -- grep -qx 0 "$T_TMP/rc" "$T_TMP/e"' \
	'"$NODETUNE" plan >"$T_TMP/x"' 'rc=$?' 'check "x" -- sh -c "[ $rc -eq 0 ] && test -s $T_TMP/x"' \
	'bg() { "$NODETUNE" daemon --state-dir "$T_TMP/st2" & }' 'bg' 'check "j" -- test -s "$T_TMP/st2/journal"' \
	'sleep 2 &' 'check "meanwhile" -- test 1 = 1'
if out=$(sh scripts/lint-tests.sh "$pd/test_ok1.sh" 2>&1); then
	ok "ok1: the lint leaves the statuses used, a background starter and a sleep not waited for alone"
else
	nok "ok1: the lint flags what is right: $out"
fi

# ---- neither: what no count and no pattern sees (said, not failed) --------
for why in \
	"a reader that is neither a check, a run nor a variable a later check names (x=\$(cat f) used only in an if): the lint follows no data further" \
	"a sleep in the background waited for after other commands (sleep 2 & cmd; wait): only a wait right after it is read as one"; do
	echo "not caught: $why"
done
echo "lint tap: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
