#!/bin/sh
# SPDX-License-Identifier: MIT
# Run integration scripts (tests/integration/test_*.sh); each prints its own
# "ok"/"not ok" lines, closes with "# N checks, F failed, S skipped" and a
# "# skipped: KIND: REASON" line per skip (lib.sh's t_done), and exits
# non-zero when a check failed, 77 when every check skipped.
#
# The tally is the runner's own: tests/tap-check.sh counts each script's
# "ok"/"not ok"/SKIP lines and fails a script whose count differs from its
# plan ("1..N", lib.sh's t_plan) or its own tally, naming what never ran.
# The tally counts checks, not files: a file with one skipped check among
# forty passed ones shows that skip.  A file that exits non-zero without a
# failed check in its tally (it died before t_done) counts as one failure.
# The closing line is "integration: N passed, N failed, N skipped", followed,
# when something skipped, by ": FILE: KIND: REASON; ..." naming every skip.
# With NODETUNE_SKIP_LOG set, each skip is appended there too, one a line
# (make check names them all in its own last line).
# Every failed check is said again just before the closing line, with the
# first diagnostic lines under it (each cut to 400 characters): a CI log
# that keeps only its end still names what failed.
set -u
pass=0 fail=0 skip=0 failed="" skips=""
log=$(mktemp) rcf=$(mktemp) notok=$(mktemp)
trap 'rm -f "$log" "$rcf" "$notok"' EXIT INT TERM
for t in "$@"; do
	echo "== $t"
	{ sh "$t" 2>&1; echo $? >"$rcf"; } | tee "$log"
	rc=$(cat "$rcf")
	tally=$("$(dirname "$0")/tap-check.sh" "$log" "$rc")
	read -r tn tf ts rc <<EOF
$tally
EOF
	tn=${tn:-0} tf=${tf:-0} ts=${ts:-0}
	[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || [ "$tf" -gt 0 ] || {
		tf=1 tn=$((tn + 1))
		echo "$(basename "$t"): exit $rc before its tally; its last line: $(tail -n 1 "$log")" | cut -c1-400 >>"$notok"
	}
	pass=$((pass + tn - tf - ts)); fail=$((fail + tf)); skip=$((skip + ts))
	[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || failed="$failed $t"
	awk -v f="$(basename "$t")" '/^not ok / { print f ": " $0; n = 3; next }
		n > 0 && /^#/ { print f ":   " $0; n--; next } { n = 0 }' "$log" | cut -c1-400 >>"$notok"
	sed -n 's/^# skipped: //p' "$log" >"$rcf"
	while IFS= read -r why; do
		skips="$skips${skips:+; }$(basename "$t"): $why"
		[ -z "${NODETUNE_SKIP_LOG:-}" ] || echo "${NODETUNE_SKIP_TAG:-}integration $(basename "$t"): $why" >>"$NODETUNE_SKIP_LOG"
	done <"$rcf"
done
[ ! -s "$notok" ] || { echo "integration: the failed checks:"; cat "$notok"; }
echo "integration: $pass passed, $fail failed, $skip skipped${skips:+: $skips}"
[ -z "$failed" ] || { echo "integration: failing:$failed" >&2; exit 1; }
