#!/bin/sh
# Run integration scripts (tests/integration/test_*.sh); each prints its own
# "ok"/"not ok" lines and exits non-zero when one failed, 77 when skipped.
set -u
pass=0 fail=0 skip=0 failed=""
for t in "$@"; do
	echo "== $t"
	sh "$t"; rc=$?
	case $rc in
	0) pass=$((pass + 1)) ;;
	77) skip=$((skip + 1)) ;;
	*) fail=$((fail + 1)); failed="$failed $t" ;;
	esac
done
echo "integration: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] || { echo "integration: failing:$failed" >&2; exit 1; }
