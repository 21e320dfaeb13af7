#!/bin/sh
# SPDX-License-Identifier: MIT
# host: cpu thp sysctl cgroup abcg state
# nodetune bisect end to end: between an empty good policy and a bad one of
# four host knobs, against a workload that slows down only when two of them
# are set together (THP defrag=never and vm.stat_interval=2), bisect names
# exactly those two; the host is as it was after.  Bad input exits 2.
. "$(dirname "$0")/lib.sh"
t_plan 14
W="tests/integration/slow-when.sh /sys/kernel/mm/transparent_hugepage/defrag \[never\] /proc/sys/vm/stat_interval ^2$"

printf '[main]\nsummary = good\n' >"$T_TMP/good.conf"
printf '[main]\nsummary = bad\n[thp]\nenabled = never\ndefrag = never\n[sysctl]\nvm.swappiness = 10\nvm.stat_interval = 2\n' >"$T_TMP/bad.conf"
printf '[main]\nsummary = bad\n[thp]\nenabld = never\n' >"$T_TMP/typo.conf"

expect_fail 2 "--good POLICY and --bad POLICY are required" "no --bad" -- "$NODETUNE" bisect --good "$T_TMP/good.conf"
expect_fail 2 "$T_TMP/nope.conf: no such file" "a missing policy" -- "$NODETUNE" bisect --good "$T_TMP/nope.conf" --bad "$T_TMP/bad.conf"
expect_fail 2 "typo.conf:4: unknown key 'enabld' in \[thp\]" "a bad policy: file:line" -- "$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/typo.conf"
expect_fail 2 "set every knob alike: nothing to bisect" "two policies alike" -- "$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/good.conf"
expect_fail 2 "arm A: no-such-command: command not found" "a command not found" -- "$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/bad.conf" -- no-such-command

expect_fail 2 "^nodetune: bisect: --report: bisect runs many A/B tests: --json gives each one.s verdict" "--report, which one report cannot honestly hold" -- \
	"$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/bad.conf" --report "$T_TMP/r.html"

# ab's options pass through to each test: --metric (the figure a job prints,
# its wall time the same either way), --metric-kind, --sysroot and
# --topology (a copy of a captured tree, not this host), --trial-dir
HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
cp -r tests/fixtures/sysroot/gpu-host-untuned "$T_TMP/tree"
printf '[main]\nsummary = bad\n[thp]\nenabled = never\ndefrag = never\n[sched]\nnuma_balancing = 0\n' >"$T_TMP/badtree.conf"
cat >"$T_TMP/rate.sh" <<'EOF'
#!/bin/sh
# rate 100 per line, 50 when the tree has THP defrag never and NUMA
# balancing off together
r=100
grep -Eq '^never$|\[never\]' "$NODETUNE_SYSROOT/sys/kernel/mm/transparent_hugepage/defrag" &&
	grep -qx 0 "$NODETUNE_SYSROOT/proc/sys/kernel/numa_balancing" && r=50
awk -v r=$r -v s=$$ 'BEGIN { srand(s); for (i = 0; i < 5; i++) printf "rate: %.2f\n", r * (1 + (rand() - 0.5) / 50) }'
EOF
chmod +x "$T_TMP/rate.sh"
if [ "$(id -u)" -ne 0 ]; then
	t_skips 4 t_skip_host root "bisect with ab's options on a tree: needs root (each trial's cgroup)"
else
	run "$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/badtree.conf" --sysroot "$T_TMP/tree" \
		--topology $HGX --trials 4 --budget 10 --metric 'rate: ([0-9.]+)' --trial-dir "$T_TMP/trials" --json -- \
		"$T_TMP/rate.sh"
	check "--metric: the figure the job prints names the two knobs ($(jq -c '[.culprits[] | .section + "." + .key]' "$OUT" 2>/dev/null))" -- \
		sh -c "[ $RC -eq 0 ] && jq -e '.reproduced and ([.culprits[] | .section + \".\" + .key] ==
		       [\"thp.defrag\", \"sched.numa_balancing\"])' '$OUT' >/dev/null"
	check "--trial-dir: kept, with the policies the tests wrote" -- sh -c "ls '$T_TMP/trials' | grep -q '^candidate-001.conf$'"
	check "--sysroot: the tree as it was" -- diff -r tests/fixtures/sysroot/gpu-host-untuned "$T_TMP/tree"
	run "$NODETUNE" bisect --good "$T_TMP/good.conf" --bad "$T_TMP/badtree.conf" --sysroot "$T_TMP/tree" \
		--topology $HGX --trials 4 --budget 5 --metric 'rate: ([0-9.]+)' --metric-kind time -- "$T_TMP/rate.sh"
	check "--metric-kind time: a lower figure is better, no regression (exit 1)" -- sh -c \
		"[ $RC -eq 1 ] && grep -q 'does not regress against' '$OUT'"
fi

if [ "$(id -u)" -ne 0 ] || [ ! -w /sys/kernel/mm/transparent_hugepage/defrag ] || [ ! -w /proc/sys/vm/stat_interval ]; then
	t_skip_host root "bisect on this host: needs root and writable THP and vm sysctls"
	t_rest
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
