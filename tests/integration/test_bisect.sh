#!/bin/sh
# nodetune bisect end to end: between an empty good policy and a bad one of
# four host knobs, against a workload that slows down only when two of them
# are set together (THP defrag=never and vm.stat_interval=2), bisect names
# exactly those two; the host is as it was after.  Bad input exits 2.
. "$(dirname "$0")/lib.sh"
W="tests/integration/slow-when.sh /sys/kernel/mm/transparent_hugepage/defrag \[never\] /proc/sys/vm/stat_interval ^2$"

printf '[main]\nsummary = good\n' >"$T_TMP/good.conf"
printf '[main]\nsummary = bad\n[thp]\nenabled = never\ndefrag = never\n[sysctl]\nvm.swappiness = 10\nvm.stat_interval = 2\n' >"$T_TMP/bad.conf"
printf '[main]\nsummary = bad\n[thp]\nenabld = never\n' >"$T_TMP/typo.conf"

expect_fail 2 "--good POLICY and --bad POLICY are required" "no --bad" -- "$NODETUNE" bisect --good "$T_TMP/good.conf"
expect_fail 2 "$T_TMP/nope.conf: no such file" "a missing policy" -- "$NODETUNE" bisect --good "$T_TMP/nope.conf" --bad "$T_TMP/bad.conf"
expect_fail 2 "typo.conf:4: unknown key 'enabld' in \[thp\]" "a bad policy: file:line" -- "$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/typo.conf"
expect_fail 2 "set every knob alike: nothing to bisect" "two policies alike" -- "$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/good.conf"
expect_fail 2 "arm A: no-such-command: command not found" "a command not found" -- "$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/bad.conf" -- no-such-command

if [ "$(id -u)" -ne 0 ] || [ ! -w /sys/kernel/mm/transparent_hugepage/defrag ] || [ ! -w /proc/sys/vm/stat_interval ]; then
	t_skip_host "bisect on this host: needs root and writable THP and vm sysctls"
	t_done
fi
before=$(cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag \
	/proc/sys/vm/swappiness /proc/sys/vm/stat_interval | tr '\n' ' ')
# --threshold 10: the pair doubles the workload's time, and one knob alone
# moves it for real by a little (vm.stat_interval=2 alone measured B/A 0.985
# and 0.987 here; in one fresh-clone run thp.defrag=never alone was judged a
# regression beyond the default 2% and bisect stopped at it); a user
# bisecting a 2x slowdown asks about that size, not about 2%
# shellcheck disable=SC2086
run "$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/bad.conf" --trials 4 --budget 10 --threshold 10 --json -- $W
after=$(cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag \
	/proc/sys/vm/swappiness /proc/sys/vm/stat_interval | tr '\n' ' ')
check "the two knobs that slow the workload only together, and no other ($(jq -c '[.culprits[] | .section + "." + .key]' "$OUT" 2>/dev/null), $(jq '.tests | length' "$OUT" 2>/dev/null) A/B tests: $(jq -c '[.tests[] | "{" + .knobs + "} " + .verdict + " " + (.ratio * 1000 | round / 1000 | tostring)]' "$OUT" 2>/dev/null))" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.reproduced and .knobs_differing == 4 and
	  ([.culprits[] | .section + \".\" + .key + \"=\" + .bad] == [\"thp.defrag=never\", \"sysctl.vm.stat_interval=2\"]) and
	  .tests[0].verdict == \"regression\"' '$OUT'"
check "progress on stderr, one line per A/B test" -- sh -c \
	"[ \$(grep -c '^nodetune: bisect: test [0-9]* {' '$ERR') -eq \$(jq '.tests | length' '$OUT') ]"
check "the host as it was ($before)" -- test "$before" = "$after"

# shellcheck disable=SC2086
run "$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/bad.conf" --trials 4 --budget 5 -- sleep 0.05
check "a workload the knobs do not touch: no regression to bisect, exit 1" -- sh -c \
	"[ $RC -eq 1 ] && grep -q 'does not regress against' '$OUT'"
t_done
