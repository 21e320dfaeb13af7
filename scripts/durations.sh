#!/bin/sh
# SPDX-License-Identifier: MIT
# durations.sh TIMES — tests/integration/durations.txt from a make check's
# $(BUILD)/times.txt ("SUITE FILE SECONDS START END" a line): each script's
# seconds in the plain pass and in the ASan pass, "-" where it did not run.
# Take it from a fresh clone's make check, where both passes ran whole.
set -u
[ $# -eq 1 ] && [ -r "$1" ] || { echo "usage: durations.sh BUILD/times.txt" >&2; exit 2; }
cat <<'HDR'
# SPDX-License-Identifier: MIT
# durations.txt — each integration script's time in seconds, in the plain
# pass and in the ASan pass ("-": not in it, asan-out.txt), from a
# fresh-clone make check on 2 vCPUs (the commit that last changed this
# file says which).  The runner starts scripts longest first by the last
# run's times ($BUILD/integration-times.txt) and, where it has none (a
# fresh clone: CI), by these.  Alphabetical order, what a fresh clone had
# before, started test_fleet.sh, the ASan pass's longest, a fifth of the
# way into it.
# Refresh: scripts/durations.sh BUILD/times.txt >tests/integration/durations.txt
# (tests/lint/test_runner.sh: a line per script, none for another file).
HDR
awk '$1 == "integration" || $1 == "asan-integration" { t[$2 " " $1] = $3; n[$2] = 1 }
	END { for (f in n) printf "%s %s %s\n", f, (f " integration") in t ? t[f " integration"] : "-",
		(f " asan-integration") in t ? t[f " asan-integration"] : "-" }' "$1" | sort
