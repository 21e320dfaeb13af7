#!/bin/sh
# SPDX-License-Identifier: MIT
# Run cmocka unit-test binaries; print one closing tally line.
# A binary's exit status is its number of failed tests (cmocka).
#
# A skipped test says why on a "SKIP host: ..." or "SKIP need DEP: ..."
# line (tests/unit/test_util.h's test_skip_host and test_need) before
# cmocka's "[  SKIPPED ] name": a skip without one is a failure.  A test
# that returned having made no assertion fails in the binary itself
# (tests/unit/assert_count.c).  The closing line is
# "unit: N passed, N failed, N skipped", followed, when something skipped,
# by ": BINARY.TEST: KIND: REASON; ..." naming every skip.  With
# NODETUNE_SKIP_LOG set, each skip is appended there too, one a line;
# with NODETUNE_FAIL_LOG set, each failed test (make check says them again).
set -u
pass=0 fail=0 skip=0 failed="" skips="" notok=""
# the skips of one binary's output (stdin), "TEST: REASON" a line
skipped() {
	awk '/^\[ RUN      \] / { t = $4; why = "" }
	     /^SKIP (host|need)/ { why = substr($0, 6) }
	     /^\[  SKIPPED \] / && $4 == t { print t ": " (why == "" ? "no reason given" : why); t = "" }'
}
for bin in "$@"; do
	out=$("$bin" 2>&1); rc=$?
	printf '%s\n' "$out"
	# the sums over every group of the binary (test_etcd.c has two)
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
	s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
	pass=$((pass + ${p:-0})); skip=$((skip + ${s:-0}))
	if [ "$rc" -ne 0 ]; then
		fail=$((fail + (rc < 128 ? rc : 1))); failed="$failed $(basename "$bin")"
		# what failed, said again at the end: the test's name and
		# cmocka's message (the values, the file:line of the
		# assertion); or the last line of a binary that died without
		# its summary (a signal counts as one failure)
		said=$(printf '%s\n' "$out" | awk -v b="$(basename "$bin")" '
			/^\[ RUN      \] / { t = $4; msg = "" }
			/^\[  ERROR   \] |^\[   LINE   \] / { msg = msg " " substr($0, 14) }
			/^ERROR: / { msg = msg " " substr($0, 8) }
			/^\[  FAILED  \] / && $4 == t { print b "." t ":" msg; t = "" }' | cut -c1-400)
		[ -n "$said" ] || said="$(basename "$bin"): exit $rc; its last line: $(printf '%s\n' "$out" | tail -n 1 | cut -c1-300)"
		notok="$notok$said
"
	fi
	why=$(printf '%s\n' "$out" | skipped)
	while IFS= read -r w; do
		[ -n "$w" ] || continue
		# a skip must say why (test_skip_host, test_need): a bare
		# cmocka skip() is a failure, not a skip
		case $w in
		*": no reason given")
			fail=$((fail + 1)) skip=$((skip - 1))
			case " $failed " in *" $(basename "$bin") "*) ;; *) failed="$failed $(basename "$bin")" ;; esac
			notok="$notok$(basename "$bin").${w%%: *}: skipped without a reason (test_skip_host CAP or test_need DEP)
"
			continue ;;
		esac
		skips="$skips${skips:+; }$(basename "$bin").$w"
		[ -z "${NODETUNE_SKIP_LOG:-}" ] || echo "${NODETUNE_SKIP_TAG:-}unit $(basename "$bin").$w" >>"$NODETUNE_SKIP_LOG"
	done <<EOF
$why
EOF
done
[ -z "$notok" ] || printf 'unit: the failed tests:\n%s' "$notok"
[ -z "${NODETUNE_FAIL_LOG:-}" ] || [ -z "$notok" ] ||
	printf '%s' "$notok" | sed "s/^/${NODETUNE_SKIP_TAG:-}unit /" >>"$NODETUNE_FAIL_LOG"
echo "unit: $pass passed, $fail failed, $skip skipped${skips:+: $skips}"
[ "$fail" -eq 0 ] || { echo "unit: failing:$failed" >&2; exit 1; }
