#!/bin/sh
# Run cmocka unit-test binaries; print one closing tally line.
# A binary's exit status is its number of failed tests (cmocka).
set -u
pass=0 fail=0 skip=0 failed=""
for bin in "$@"; do
	out=$("$bin" 2>&1); rc=$?
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -n 1)
	pass=$((pass + ${p:-0})); skip=$((skip + ${s:-0}))
	if [ "$rc" -ne 0 ]; then
		fail=$((fail + (rc < 255 ? rc : 1))); failed="$failed $(basename "$bin")"
	fi
done
echo "unit: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] || { echo "unit: failing:$failed" >&2; exit 1; }
