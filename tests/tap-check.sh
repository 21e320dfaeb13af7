#!/bin/sh
# SPDX-License-Identifier: MIT
# tap-check.sh LOG RC: the runner's own count of one integration script's
# output (LOG; RC its exit status), trusting neither the script's counter
# nor its exit status.  It counts the "ok N", "not ok N" and "# SKIP" lines
# itself and compares them with the plan line ("1..N", lib.sh's t_plan) and
# with the script's tally ("# N checks, F failed, S skipped", t_done):
#   - fewer checks than planned: a check in a branch not taken, or the
#     script died; the ones that never ran are named;
#   - more lines than the tally: a check ran in a subshell (a pipe, `&`,
#     `$( )`, `( )`), where lib.sh's counter cannot see it, a "not ok"
#     among them; fewer: a check's line was redirected away (`check ...
#     >/dev/null`) or captured;
#   - no plan, no tally.
# The clean-up's checks (t_done's: processes or cgroups left), after its
# "# clean-up" line, count in the tally but not against the plan.
# Prints "N F S RC" (checks, failed, skipped, the status to judge the script
# by) for the runner; on a mismatch F and N count one failed check more, RC
# is 1, and the reason, one line, goes to stderr and is appended to LOG as a
# "not ok" line (the runner's list of failed checks names it).
set -u
log=$1 rc=$2
awk -v rc="$rc" '
/^1\.\.[0-9]+/ && plan == "" { plan = substr($1, 4) + 0; next }
/^# clean-up$/ && cleanup == "" { cleanup = n; next }
/^(not )?ok [0-9]+( |$)/ {
	n++
	if ($1 == "not") { f++; num = $3 } else num = $2
	if (index($0, " # SKIP ")) s++
	if (seen[num]++) dup = dup (dup == "" ? "" : ",") num
	if (cleanup == "") lastp = $0
	next
}
/^# [0-9]+ checks, [0-9]+ failed, [0-9]+ skipped$/ { tn = $2; tf = $4; ts = $6; tally = 1 }
END {
	why = ""
	# the checks of the plan: those before the clean-up line
	np = cleanup == "" ? n : cleanup
	if (plan == "")
		why = "no plan line (t_plan N at its top)"
	else if (np < plan)
		why = sprintf("planned %d, ran %d: check%s %d%s never ran; the last one that ran: %s",
			plan, np, plan - np > 1 ? "s" : "", np + 1, plan - np > 1 ? ".." plan : "",
			lastp == "" ? "none" : substr(lastp, 1, 200))
	else if (np > plan)
		why = sprintf("planned %d, ran %d: %d more than its plan (a check counted twice, or a new check without its plan)", plan, np, np - plan)
	if (!tally)
		why = why (why == "" ? "" : "; ") sprintf("no tally line: it exited %d before t_done", rc)
	else if (tn != n || tf != f || ts != s) {
		if (n > tn || f > tf || s > ts)
			how = "a check ran in a subshell (a pipe, &, ( ), $( )), where lib.sh cannot count it"
		else
			how = "the line of a check never reached the runner (redirected, or captured by $( ))"
		if (dup != "")
			how = how " (numbers seen twice: " dup ")"
		why = why (why == "" ? "" : "; ") sprintf("its tally says %d checks, %d failed, %d skipped, its output has %d, %d, %d: %s",
			tn, tf, ts, n, f, s, how)
	}
	if (why != "") {
		print "not ok - tap-check: " why > "/dev/stderr"
		print "not ok - tap-check: " why >> FILENAME
		n++; f++
		if (rc == 0 || rc == 77) rc = 1
	}
	printf "%d %d %d %d\n", n, f, s, rc
}' "$log"
