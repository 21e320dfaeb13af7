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
# (make check names them all in its own last line); with NODETUNE_FAIL_LOG
# set, each failed check's lines (make check says them again at its end).
# Every failed check is said again just before the closing line, with the
# first diagnostic lines under it (each cut to 400 characters): a CI log
# that keeps only its end still names what failed.
#
# Scripts run INTEGRATION_JOBS at a time (default 2: on 2 vCPUs a third
# one only waits for a CPU; bench/RESULTS.md, "make check's time"; the
# ASan pass alone, and make check's run of both passes, run 3:
# ASAN_INTEGRATION_JOBS in the Makefile).  Each
# script names the host state it touches on a line of its header,
#   # host: NAME...        or  # host: none
# and holds an exclusive flock(1) on $NODETUNE_LOCK_DIR/NAME.lock for each
# NAME while it runs, so two scripts naming one never overlap, in this run
# or in another run on the host.  The names:
#   cpu       it measures time, throughput or CPU shares (an A/B verdict,
#             a culprit, an injected cause): it runs with nothing beside it
#   build     it rebuilds in $BUILD (make install with another PREFIX): it
#             runs with nothing beside it
#   thp       the live /sys/kernel/mm/transparent_hugepage, written, or
#             read and compared with what nodetune says
#   sysctl    the live /proc/sys, written or read and compared
#   knobs     the other live knobs a policy writes: cpufreq governors,
#             IRQ affinity
#   cgroup    makes nodetune* cgroups other than ab's (a policy's job
#             cgroup), memory cgroups, or changes the root's controllers
#   abcg      runs `nodetune ab` or `bisect`, or a fleet gate (an ab): their
#             trial groups, nodetune-ab/PID-NAME, are made in the live
#             cgroup tree.  Apart from cgroup, so that a gate's scripts run
#             beside the Slurm, package and container ones
#   state     nodetune's host paths: /run/nodetune, /var/lib/nodetune,
#             /etc/nodetune, the installed policies
#   slurm     a Slurm of its own (slurmd's fixed cgroup paths)
#   dpkg      installs packages on this host
#   ca        the system's CA store (update-ca-certificates)
#   port9477  the daemon's default /metrics port
# Every script holds cpu and build shared unless it names them, so a script
# naming either runs alone; a script with no "# host:" line runs alone too,
# and one naming an unknown NAME fails unrun.  The locks are taken in one
# order (sorted), so two runs cannot deadlock; a script's time is counted
# from when it holds them.  The runner starts a script only when no script
# it runs holds one of its names, so a free slot takes the next script that
# can run rather than wait.  Scripts start longest first, by the times of
# the previous run ($BUILD/integration-times.txt when INTEGRATION_TIMES
# names it), else by tests/integration/durations.txt (a fresh clone), else
# in the order given.
#
# Each script's output is kept until it ends and printed whole, under
# "== FILE (S s; host: NAMES)".  The ten slowest scripts close the run;
# with NODETUNE_TIME_LOG set, "SUITE FILE SECONDS START END" is appended
# there per script, START and END in seconds since the epoch (make check
# prints the ten slowest of both passes; the times line up the scripts that
# ran side by side).
#
# A script given as PASS:FILE (PASS a name of [a-z0-9]) runs in another
# pass of the same run: with the assignments INTEGRATION_ENV_PASS holds
# ("NAME=VALUE ...", no spaces inside a value) added to its environment.
# make check's `integration` runs the ASan pass so, beside the plain one,
# as asan:FILE with the ASan build's binaries, SANITIZED=1 and
# NODETUNE_SKIP_TAG=asan-: one pool, where the ASan scripts, most of them
# waiting on etcd and daemons, fill the slots the plain ones leave.  Each
# pass has its own times file, tag and durations column (the values of
# INTEGRATION_TIMES, NODETUNE_SKIP_TAG and SANITIZED in its assignments),
# and one script never runs in two passes at once.
#
# lib.sh's t_done fails a script that leaves nodetune* cgroups when it held
# "cgroup" (those but nodetune-ab) or "abcg" (nodetune-ab)
# (NODETUNE_TEST_EXCLUSIVE: the names it holds alone, "all" when it ran
# alone): no other script made any such beside it.  For the other scripts,
# the runner compares the cgroups at the start and at the end of the run.
set -u
jobs=${INTEGRATION_JOBS:-2}
locks=${NODETUNE_LOCK_DIR:-/tmp/nodetune-test-locks}
known="cpu build thp sysctl knobs cgroup abcg state slurm dpkg ca port9477"
pass=0 fail=0 skip=0 failed="" skips=""
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$locks" || exit 1
cgroups() { find /sys/fs/cgroup -maxdepth 3 -type d -name 'nodetune*' 2>/dev/null | sort; }
cg0=$(cgroups)

# entry_pass ENTRY, entry_file ENTRY: PASS and FILE of PASS:FILE ("" and
# ENTRY for a plain FILE); pass_env PASS: its assignments; pass_var PASS
# NAME: NAME's value in the pass (its assignment, else the runner's own)
entry_pass() { case $1 in [a-z0-9]*:*) echo "${1%%:*}" ;; *) echo "" ;; esac; }
entry_file() { case $1 in [a-z0-9]*:*) echo "${1#*:}" ;; *) echo "$1" ;; esac; }
pass_env() { [ -z "$1" ] || eval "echo \"\${INTEGRATION_ENV_$1:-}\""; }
pass_var() {
	for kv in $(pass_env "$1"); do
		case $kv in "$2"=*) echo "${kv#*=}"; return ;; esac
	done
	eval "echo \"\${$2:-}\""
}

# the last run's time of script $1; else its time in durations.txt
# (INTEGRATION_DURATIONS: another file), the ASan pass's column under
# SANITIZED=1; else 0 (it starts last)
durations=${INTEGRATION_DURATIONS:-$(dirname "$0")/integration/durations.txt}
last_time() {
	f=$(basename "$(entry_file "$1")")
	tf=$(pass_var "$(entry_pass "$1")" INTEGRATION_TIMES)
	if [ -r "$tf" ] && grep -q "^$f " "$tf"; then
		awk -v f="$f" '$1 == f { t = $2 } END { print t + 0 }' "$tf"
	else
		awk -v f="$f" -v c="$([ "$(pass_var "$(entry_pass "$1")" SANITIZED)" = 1 ] && echo 3 || echo 2)" \
			'$1 == f && $c != "-" { t = $c } END { print t + 0 }' "$durations" 2>/dev/null || echo 0
	fi
}

# the scripts, numbered in the order they start: H_i its names, A_i 1 when
# it runs alone, B_i its bad names
n=0
for t in "$@"; do
	n=$((n + 1))
	echo "$(last_time "$t") $n $t"
done | sort -k1,1nr -k2,2n >"$work/order"
n=0 queue="" passes=""
while read -r _ _ e; do
	n=$((n + 1))
	p=$(entry_pass "$e") t=$(entry_file "$e")
	case $p in *[!a-z0-9]*) echo "integration: $e: a pass is named with [a-z0-9]" >&2; exit 2 ;; esac
	h=$(sed -n 's/^# host:[[:space:]]*//p' "$t" | head -n 1)
	a=0 bad=""
	[ -n "$h" ] || a=1
	[ "$h" != none ] || h=""
	for w in $h; do
		case " $known " in *" $w "*) ;; *) bad="$bad $w" ;; esac
		[ "$w" != cpu ] && [ "$w" != build ] || a=1
	done
	eval "T_$n=\$t H_$n=\$h A_$n=\$a B_$n=\$bad P_$n=\$p G_$n=\$(pass_var \"\$p\" NODETUNE_SKIP_TAG)"
	queue="$queue $n "
	# the passes, "." the plain one
	case " $passes " in *" $p. "*) ;; *) passes="$passes $p." ;; esac
done <"$work/order"

running=0 alone=0 busy=" " tag=""
# pick: the first script of the queue that can start now
pick() {
	for i in $queue; do
		eval "h=\$H_$i a=\$A_$i"
		[ "$alone" -eq 0 ] || return 1
		if [ "$a" -eq 1 ]; then
			[ "$running" -eq 0 ] && { echo "$i"; return 0; }
			continue
		fi
		free=1
		eval "t=\$T_$i"
		for w in $h "=$(basename "$t")"; do
			case $busy in *" $w "*) free=0 ;; esac
		done
		[ "$free" -eq 0 ] || { echo "$i"; return 0; }
	done
	return 1
}

# start I: the script under its locks, in the background; its output to
# $work/I.out, its exit status to I.rc, its start and end times to I.time;
# then its number to the fifo
start() {
	i=$1
	eval "t=\$T_$i h=\$H_$i a=\$A_$i bad=\$B_$i p=\$P_$i"
	queue=$(printf '%s' "$queue" | sed "s/ $i / /")
	running=$((running + 1))
	if [ "$a" -eq 1 ]; then
		alone=1 x=all
	else
		busy="$busy$h =$(basename "$t") " x=$h
	fi
	if [ -n "$bad" ]; then
		echo "# host: unknown name(s):$bad (known: $known); not run" >"$work/$i.out"
		echo 1 >"$work/$i.rc"
		echo "0 0" >"$work/$i.time"
		echo "$i" >&3
		return
	fi
	# its names alone, cpu and build shared (alone: those too), in order
	cmd=""
	for w in $(echo "$known" | tr ' ' '\n' | sort); do
		case " $h " in
		*" $w "*) m=-x ;;
		*) case $w in cpu | build) m=-s ;; *) continue ;; esac
			[ "$a" -eq 0 ] || m=-x ;;
		esac
		cmd="$cmd flock -o $m $locks/$w.lock"
	done
	(
		NODETUNE_TEST_EXCLUSIVE=$x
		export NODETUNE_TEST_EXCLUSIVE
		# shellcheck disable=SC2046,SC2086,SC2016 # the lock commands and the pass's assignments are words; $1, $2 are sh -c's
		$cmd env $(pass_env "$p") sh -c 'date +%s.%N >"$1"; exec sh "$2"' - "$work/$i.start" "$t" >"$work/$i.out" 2>&1 3>&-
		echo $? >"$work/$i.rc"
		echo "$(cat "$work/$i.start" 2>/dev/null || date +%s.%N) $(date +%s.%N)" >"$work/$i.time"
		echo "$i" >&3
	) &
}

# finish I: free its names, print its output whole, count its tally
finish() {
	i=$1
	eval "t=\$T_$i h=\$H_$i a=\$A_$i p=\$P_$i tag=\$G_$i"
	running=$((running - 1))
	if [ "$a" -eq 1 ]; then
		alone=0
	else
		for w in $h "=$(basename "$t")"; do busy=$(printf '%s' "$busy" | sed "s/ $w / /"); done
	fi
	took=$(awk '{ printf "%.1f", $2 - $1 }' "$work/$i.time")
	echo "$took $(basename "$t")" >>"$work/times.$p"
	echo "$took $p${p:+:}$(basename "$t")" >>"$work/times"
	[ -z "${NODETUNE_TIME_LOG:-}" ] ||
		echo "${tag}integration $(basename "$t") $took $(awk '{ printf "%.1f %.1f", $1, $2 }' "$work/$i.time")" \
			>>"$NODETUNE_TIME_LOG"
	echo "== $p${p:+:}$t ($took s; host: $(if [ "$a" -eq 1 ] && [ -z "$h" ]; then echo "none declared: alone"; else echo "${h:-none}"; fi))"
	cat "$work/$i.out"
	log=$work/$i.out rcf=$work/$i.rc notok=$work/notok.$p
	tally_one
}

# the tally of script $t: its output $log, its exit status in $rcf
tally_one() {
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
	[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || failed="$failed $p${p:+:}$t"
	awk -v f="$(basename "$t")" '/^not ok / { print f ": " $0; n = 3; next }
		n > 0 && /^#/ { print f ":   " $0; n--; next } { n = 0 }' "$log" | cut -c1-400 >>"$notok"
	sed -n 's/^# skipped: //p' "$log" >"$rcf"
	while IFS= read -r why; do
		skips="$skips${skips:+; }$p${p:+:}$(basename "$t"): $why"
		[ -z "${NODETUNE_SKIP_LOG:-}" ] || echo "${tag}integration $(basename "$t"): $why" >>"$NODETUNE_SKIP_LOG"
	done <"$rcf"
}

mkfifo "$work/done" && exec 3<>"$work/done" || exit 1
t0=$(date +%s)
while [ -n "$(printf '%s' "$queue" | tr -d ' ')" ] || [ "$running" -gt 0 ]; do
	while [ "$running" -lt "$jobs" ] && i=$(pick); do
		start "$i"
	done
	[ "$running" -gt 0 ] || { echo "integration: nothing can start (a bug of the runner)" >&2; exit 1; }
	read -r i <&3
	finish "$i"
done
wall=$(( $(date +%s) - t0 ))

# nodetune* cgroups left by a script that did not hold "cgroup" or "abcg"
left=$(cgroups | grep -vxF "$cg0" | sort -r)
if [ -n "$left" ]; then
	echo "integration: cgroups left by a script that did not hold their lock ('abcg' for nodetune-ab, else 'cgroup') (now removed): $(echo "$left" | tr '\n' ' ')" >>"$work/notok."
	for d in $left; do rmdir "$d" 2>/dev/null; done
	fail=$((fail + 1)) failed="$failed (cgroups)"
fi
[ ! -s "$work/times" ] ||
	echo "integration: $n scripts in $wall s, $jobs at a time; the ten slowest: $(sort -k1,1nr "$work/times" | head -n 10 |
		awk '{ printf "%s%s %s s", (NR > 1 ? ", " : ""), $2, $1 }')"
# each pass's times, and the last ones of the scripts it did not run
for q in $passes; do
	p=${q%.} tf=$(pass_var "${q%.}" INTEGRATION_TIMES)
	[ -n "$tf" ] && [ -s "$work/times.$p" ] || continue
	{ awk '{ print $2, $1 }' "$work/times.$p"; [ ! -r "$tf" ] || cat "$tf"; } |
		awk '!seen[$1]++' >"$work/times.new" && cp "$work/times.new" "$tf"
done
said=""
case " $passes " in *" . "*) ;; *) passes=". $passes" ;; esac
for q in $passes; do
	p=${q%.} notok=$work/notok.${q%.}
	[ -s "$notok" ] || continue
	[ -n "$said" ] || echo "integration: the failed checks:"
	said=1
	sed "s/^/$p${p:+:}/" "$notok"
	[ -z "${NODETUNE_FAIL_LOG:-}" ] || sed "s/^/$(pass_var "$p" NODETUNE_SKIP_TAG)integration /" "$notok" >>"$NODETUNE_FAIL_LOG"
done
echo "integration: $pass passed, $fail failed, $skip skipped${skips:+: $skips}"
[ -z "$failed" ] || { echo "integration: failing:$failed" >&2; exit 1; }
