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
#
# A binary whose source (tests/unit/DIR/NAME.c for .../tests/DIR/NAME)
# (UNIT_SRCDIR: another directory than tests/unit) says "unit-runner:
# beside" in its first 20 lines is started first, in
# the background, and the others run one after the other beside it; its
# output is counted last.  Only a test that waits on processes of its own
# on loopback and touches no host state says so: test_etcd.c, a real
# 3-member cluster on ports picked at run time, 15 of the 42 s the unit
# tests took one after the other, most of it waiting.
set -u
pass=0 fail=0 skip=0 failed="" skips="" notok=""
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
# beside BIN: whether BIN's source asks to run beside the others
beside() {
	head -n 20 "${UNIT_SRCDIR:-$top/tests/unit}/${1##*/tests/}.c" 2>/dev/null | grep -q 'unit-runner: beside'
}
# the skips of one binary's output (stdin), "TEST: REASON" a line
skipped() {
	awk '/^\[ RUN      \] / { t = $4; why = "" }
	     /^SKIP (host|need)/ { why = substr($0, 6) }
	     /^\[  SKIPPED \] / && $4 == t { print t ": " (why == "" ? "no reason given" : why); t = "" }'
}
# count BIN OUT RC: one binary's output and exit status, printed and counted
count() {
	bin=$1 out=$2 rc=$3
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
}
n=0 bg=""
for bin in "$@"; do
	n=$((n + 1))
	beside "$bin" || continue
	( "$bin" >"$work/$n.out" 2>&1; echo $? >"$work/$n.rc" ) &
	bg="$bg $n"
done
n=0
for bin in "$@"; do
	n=$((n + 1))
	case " $bg " in *" $n "*) continue ;; esac
	out=$("$bin" 2>&1)
	count "$bin" "$out" $?
done
wait
n=0
for bin in "$@"; do
	n=$((n + 1))
	case " $bg " in *" $n "*) count "$bin" "$(cat "$work/$n.out")" "$(cat "$work/$n.rc" 2>/dev/null || echo 1)" ;; esac
done
[ -z "$notok" ] || printf 'unit: the failed tests:\n%s' "$notok"
[ -z "${NODETUNE_FAIL_LOG:-}" ] || [ -z "$notok" ] ||
	printf '%s' "$notok" | sed "s/^/${NODETUNE_SKIP_TAG:-}unit /" >>"$NODETUNE_FAIL_LOG"
echo "unit: $pass passed, $fail failed, $skip skipped${skips:+: $skips}"
[ "$fail" -eq 0 ] || { echo "unit: failing:$failed" >&2; exit 1; }
