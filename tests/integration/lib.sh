# SPDX-License-Identifier: MIT
# lib.sh — helpers shared by the integration tests (sourced).
#
#   NODETUNE   the binary under test (set by `make integration`)
#   SRCDIR     the repository root; tests run from there
#   SHARED     ../shared/topologies when it exists
#
# A script declares at its top the checks it will run, `t_plan N`, which
# prints TAP's plan line "1..N".  Each check prints "ok N - what" or
# "not ok N - what" plus the evidence; t_done prints "# N checks, F failed,
# S skipped", each skip's reason on a "# skipped: ..." line, and exits 1
# when a check failed (or none ran), 77 when everything was skipped.  The
# runner does not trust that tally: tests/tap-check.sh counts the lines
# itself and fails a script whose count differs from its plan or its
# tally (a check in a branch not taken, a check in a pipe or `&`).
#
# A check that does not run says so, by name, with the kind of skip:
#   t_skip_host CAP REASON     this host lacks the capability CAP, one of
#                               tests/host-caps.sh's list (gpu, irq, root,
#                               cpufreq ...).  That list's probe, not the
#                               code under test, decides: when the probe
#                               finds CAP here, the skip is a failure.
#   t_need DEP WHAT            DEP, which scripts/install-deps.sh provides
#                               (etcd, slurm, promtool, chromium, torch,
#                               mpirun, ../shared ...), is missing: a skip,
#                               but under CI=true a failure
#   t_gap WHAT                 a check the suite cannot make on any host
#                               yet (a known gap, named on every run)
#   t_rest                     after one of those: every check left in the
#                               plan is skipped for the same reason, and
#                               the script ends (t_done)

set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
# The host lock (`flock /tmp/nodetune-host.lock make ...`) reaches the test
# as an inherited descriptor.  It is closed here (the flock process keeps
# the lock): a daemon the test starts (munged double-forks) would inherit
# it and, left running by a test that was killed, hold the lock for ever.
for t_fd in 3 4 5 6 7 8 9; do
	case $(readlink "/proc/$$/fd/$t_fd" 2>/dev/null) in
	*/nodetune-host.lock) eval "exec $t_fd>&-" ;;
	esac
done
cd "$SRCDIR" || exit 1
: "${NODETUNE:=$SRCDIR/build/nodetune}"
SHARED=../shared/topologies
T_N=0 T_FAIL=0 T_SKIP=0 T_PLAN="" T_LAST=""
. "$SRCDIR/tests/host-caps.sh"
T_TMP=$(mktemp -d /tmp/nodetune-it-XXXXXX)
trap 't_cleanup' EXIT

# ---- cleaning up: a test leaves nothing behind ---------------------------
# Every process a test starts inherits NODETUNE_TEST_RUN (mpirun passes it
# on to the ranks it forks), so whatever is still running at the end, a
# hung rank, a launcher's daemon, a background job, can be found, reported
# and killed: the next test starts on a clean host whatever the order.
# Other things to undo (a mount, a cgroup, a sysctl) are registered with
# t_defer as they are made, and undone at the end, newest first.
NODETUNE_TEST_RUN=$T_TMP
export NODETUNE_TEST_RUN
T_DEFER=""
# nodetune's cgroups (a job cgroup per apply): those there when the test
# started, to find the ones it leaves (rmdir'd, and the test fails)
t_cgroups() { find /sys/fs/cgroup -maxdepth 3 -type d -name 'nodetune*' 2>/dev/null | sort; }
T_CG0=$(t_cgroups)

# t_defer CMD...: run CMD (eval'd) when the test ends, however it ends
t_defer() {
	T_DEFER="$*
$T_DEFER"
}

# the processes carrying this run's tag, but this shell, into $T_TMP/.left
# (the scan runs without the tag, so it does not find itself)
t_leftovers() {
	env -u NODETUNE_TEST_RUN TAG="NODETUNE_TEST_RUN=$T_TMP" SELF=$$ sh -c '
		for e in /proc/[0-9]*/environ; do
			p=${e#/proc/}; p=${p%/environ}
			[ "$p" = "$SELF" ] && continue
			tr "\0" "\n" <"$e" 2>/dev/null | grep -qxF "$TAG" && echo "$p"
		done' >"$T_TMP/.left" 2>/dev/null
}

# t_reap: kill what is left (SIGCONT first: a stopped process); what was
# left, as "pid(comm) ...", goes to $T_TMP/.reaped (empty: nothing)
t_reap() {
	: >"$T_TMP/.reaped"
	t_leftovers
	for p in $(cat "$T_TMP/.left"); do
		printf '%s(%s) ' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)" >>"$T_TMP/.reaped"
		kill -CONT "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
}

# t_undo: run what t_defer registered, newest first, once
t_undo() {
	printf '%s\n' "$T_DEFER" | while IFS= read -r c; do
		[ -n "$c" ] && eval "$c"
	done
	T_DEFER=""
}

t_cleanup() {
	t_undo
	t_reap
	[ -s "$T_TMP/.reaped" ] && echo "# cleanup: killed what the test left running: $(cat "$T_TMP/.reaped")"
	# mounts below the test's directory (a tracefs, a bind mount)
	awk -v d="$T_TMP" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null && echo "# cleanup: unmounted $m"
	done
	rm -rf "$T_TMP"
}

# t_plan N: the number of checks this script runs, whatever the host
# (a check that cannot run here is skipped by name, and counts)
t_plan() {
	case $1 in
	'' | *[!0-9]*) echo "not ok - t_plan: '$1' is not a count"; exit 1 ;;
	esac
	T_PLAN=$1
	echo "1..$1"
}

t_ok() { T_N=$((T_N + 1)); T_LAST=""; echo "ok $T_N - $*"; }
t_not_ok() { T_N=$((T_N + 1)); T_FAIL=$((T_FAIL + 1)); T_LAST=""; echo "not ok $T_N - $*"; }
T_SKIPPED=""
T_SKIP_QUIET=""
t_skip_() {
	T_N=$((T_N + 1)) T_SKIP=$((T_SKIP + 1)) T_LAST=$*
	echo "ok $T_N - # SKIP $*"
	[ -n "$T_SKIP_QUIET" ] || T_SKIPPED="$T_SKIPPED$*
"
}
# t_skip_host CAP REASON: a skip only when tests/host-caps.sh's probe finds
# no CAP on this host; when it finds one, whatever said CAP is missing (the
# code under test, most often) is wrong: a failure
t_skip_host() {
	T_CAP=$1
	shift
	if ! host_cap_known "$T_CAP"; then
		t_not_ok "$* -- t_skip_host: '$T_CAP' is not a capability tests/host-caps.sh probes"
	elif host_cap "$T_CAP"; then
		t_not_ok "$* -- but this host has $T_CAP ($(host_cap_why "$T_CAP")): not a host skip, a failure"
	else
		t_skip_ "host: no $T_CAP: $*"
	fi
}
t_gap() { t_skip_ "gap: $*"; }
t_need() {
	dep=$1
	shift
	if [ "${CI:-}" = true ]; then
		t_not_ok "$* -- $dep is missing, and scripts/install-deps.sh provides it (CI=true: a failure, not a skip)"
	else
		t_skip_ "need $dep: $*"
	fi
}
# t_skips N SKIP ARGS...: N checks skipped alike (the N checks of a block
# that cannot run here), each by SKIP (t_skip_host or t_need) with ARGS,
# named once ("... (N checks)"); a skip refused fails N times
t_skips() {
	T_KS=$1
	shift
	"$@"
	T_SKIP_QUIET=1
	T_KI=1
	while [ "$T_KI" -lt "$T_KS" ]; do
		"$@"
		T_KI=$((T_KI + 1))
	done
	T_SKIP_QUIET=""
	[ "$T_KS" -le 1 ] || [ -z "$T_LAST" ] || T_SKIPPED=$(printf '%s' "$T_SKIPPED" | sed '$s/$/ ('"$T_KS"' checks)/')"
"
}
# t_rest: the checks of the plan not run yet are skipped, for the reason of
# the skip just made (one "# skipped:" line names them all), and the
# script ends.  After a failure (t_need under CI=true, or a skip refused)
# it only ends: the runner names the checks that never ran.
t_rest() {
	k=$((${T_PLAN:-0} - T_N))
	if [ -n "$T_LAST" ] && [ "$k" -gt 0 ]; then
		i=0
		while [ "$i" -lt "$k" ]; do
			i=$((i + 1))
			echo "ok $((T_N + i)) - # SKIP $T_LAST (as check $T_N)"
		done
		T_SKIPPED=$(printf '%s' "$T_SKIPPED" | sed '$d')"
$T_LAST (and the $k checks after it)
"
		T_SKIPPED=${T_SKIPPED#
}
		T_N=$((T_N + k)) T_SKIP=$((T_SKIP + k))
	fi
	t_done
}

# wait_until SECONDS CMD...: poll CMD every 0.1 s until it succeeds, for up
# to SECONDS (times T_SLOW: 4 under the sanitizers); returns 1 when it
# never did.  An event waited for with a deadline, never a fixed sleep.
T_SLOW=1
[ -z "${SANITIZED:-}" ] || T_SLOW=4
wait_until() {
	n=$(awk -v s="$1" -v k="$T_SLOW" 'BEGIN { print int(s * k * 10) }')
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$n" -gt 0 ] || return 1
		n=$((n - 1))
		sleep 0.1
	done
}

# run CMD...: sets RC, OUT (stdout file), ERR (stderr file)
run() {
	OUT=$T_TMP/out ERR=$T_TMP/err
	"$@" >"$OUT" 2>"$ERR"
	RC=$?
}

# free_port: a loopback TCP port free right now, from the kernel (bound to
# port 0, then released), for programs that take a port number and cannot
# bind port 0 themselves.  A port picked by arithmetic may be the local end
# of another connection (the ephemeral range starts at 32768): a bind there
# fails, and `ss sport = :PORT` finds that connection instead.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# expect_fail CODE PATTERN DESC -- CMD...: exit status CODE, exactly one line
# on stderr, matching the grep -E PATTERN, nothing on stdout.
expect_fail() {
	code=$1 pattern=$2 desc=$3
	shift 4
	run "$@"
	lines=$(wc -l <"$ERR")
	if [ "$RC" -eq "$code" ] && [ "$lines" -eq 1 ] && grep -Eq -- "$pattern" "$ERR" && [ ! -s "$OUT" ]; then
		t_ok "$desc (exit $RC: $(cat "$ERR"))"
	else
		t_not_ok "$desc: want exit $code and one stderr line matching /$pattern/"
		echo "#   got exit $RC, $lines stderr line(s):"; sed 's/^/#   /' "$ERR" | head -5
		[ -s "$OUT" ] && { echo "#   and stdout:"; head -3 "$OUT" | sed 's/^/#   /'; }
	fi
}

# check DESC -- CMD...: passes when CMD succeeds
check() {
	desc=$1
	shift 2
	if "$@" >/dev/null; then t_ok "$desc"; else t_not_ok "$desc"; fi
}

# podman_base_image: prints the Debian 12 base image for a test's podman
# build: $NODETUNE_BASE_IMAGE or debian:12 when podman has one, else
# localhost/debian:12, made once by scripts/podman-debian-base.sh from
# Debian's archive (kept, like a download cache).  No container registry is
# asked: the test reaches only Debian's archive.  Fails (status 1) printing
# the reason, for a t_skip_host, when there is none and none can be made.
podman_base_image() {
	for b in ${NODETUNE_BASE_IMAGE:-} docker.io/library/debian:12 localhost/debian:12; do
		podman image exists "$b" 2>/dev/null && { echo "$b"; return 0; }
	done
	if command -v debootstrap >/dev/null && scripts/podman-debian-base.sh >"$T_TMP/base" 2>&1; then
		echo localhost/debian:12
		return 0
	fi
	echo "no Debian 12 base image: podman has none, and scripts/podman-debian-base.sh (debootstrap from Debian's archive) failed: $(tail -1 "$T_TMP/base" 2>/dev/null)"
	return 1
}

# deb_of_tree: DEBS, a directory holding this tree's packages
# (nodetune_V_ARCH.deb, nodetune-slurm_V_ARCH.deb, their .changes and
# .buildinfo), made by `make deb` once per tree and shared by the scripts
# that install them (test_deb.sh, test_systemd.sh: one build of 50 s, not
# one each): $SRCDIR/build/test-deb/KEY, KEY the hash of what make deb
# packs (the tree but build/ and .git: each file's path, mode and content,
# tar's, mtimes left out).  Built under an flock, so two scripts never build
# it at once; another KEY's directory is removed.  DEB_TOOK: the seconds
# make deb took here, "" when the packages were there.  Returns make deb's
# status (its output in $OUT and $ERR, as run leaves them).
deb_of_tree() {
	c=${NODETUNE_DEB_CACHE:-$SRCDIR/build/test-deb}
	DEB_TOOK="" DEBS=""
	mkdir -p "$c" || return 1
	k=$(tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - --exclude=./build --exclude=./.git . |
		sha256sum | cut -c1-16) || return 1
	exec 9>"$c/lock"
	if ! flock -w 900 9; then
		exec 9>&-
		ERR=$T_TMP/err
		echo "deb_of_tree: $c/lock held for 15 minutes" >"$ERR"
		return 1
	fi
	if [ ! -f "$c/$k/done" ]; then
		find "$c" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
		s=$(date +%s)
		# make deb, run from a test, must not see the SAN= or BUILD= of the
		# make that runs the test
		run env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make --no-print-directory -s deb BUILD="$c/$k.b" INSTALL_DEPS=true
		if [ "$RC" -ne 0 ]; then
			rm -rf "$c/$k.b"
			exec 9>&-
			return "$RC"
		fi
		mv "$c/$k.b/deb" "$c/$k" && rm -rf "$c/$k.b" && : >"$c/$k/done"
		DEB_TOOK=$(($(date +%s) - s))
	fi
	exec 9>&-
	DEBS=$c/$k
}

# tree_hash DIR: one hash of every file's path, mode and content
tree_hash() {
	(cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum; find . -printf '%p %m\n' | sort) | sha256sum | cut -d' ' -f1
}

t_done() {
	# what the test registered to undo is undone first; a test that
	# leaves a process running beyond that fails: the next one would
	# run beside it (a stopped rank, a spinning neighbour).  These checks
	# are the clean-up's, beyond the plan (tests/tap-check.sh compares
	# the plan with the checks before this line)
	echo "# clean-up"
	t_undo
	t_reap
	if [ -s "$T_TMP/.reaped" ]; then
		t_not_ok "the test left processes running (now killed): $(cat "$T_TMP/.reaped")"
	fi
	# new nodetune* cgroups are this test's own when no other test made
	# any such beside it: ab's trial groups (nodetune-ab) when it holds
	# "abcg", the others when it holds "cgroup", all when it runs alone
	# (run-integration.sh's NODETUNE_TEST_EXCLUSIVE; unset: run by
	# itself); the runner checks the other tests' at the end of its run
	cg_left=$(t_cgroups | grep -vxF "$T_CG0" | sort -r)
	case " ${NODETUNE_TEST_EXCLUSIVE-all} " in *" all "* | *" cgroup "*) ;;
	*) cg_left=$(printf '%s\n' "$cg_left" | grep '/nodetune-ab$') ;; esac
	case " ${NODETUNE_TEST_EXCLUSIVE-all} " in *" all "* | *" abcg "*) ;;
	*) cg_left=$(printf '%s\n' "$cg_left" | grep -v '/nodetune-ab$') ;; esac
	if [ -n "$cg_left" ]; then
		# each with the groups it still holds (an ab's PID-NAME: whose)
		t_not_ok "the test left cgroups (now removed): $(for d in $cg_left; do
			printf '%s%s ' "$d" "$(find "$d" -mindepth 1 -maxdepth 1 -type d -printf ' %f' | sed 's/^ / (holding: /; s/.$/&)/')"; done)"
		for d in $cg_left; do rmdir "$d" 2>/dev/null; done
	fi
	# a script with no check at all has shown nothing
	[ "$T_N" -gt 0 ] || t_not_ok "no check ran: the script ended before its first check"
	echo "# $T_N checks, $T_FAIL failed, $T_SKIP skipped"
	printf '%s' "$T_SKIPPED" | sed 's/^/# skipped: /'
	[ "$T_FAIL" -eq 0 ] || exit 1
	[ "$T_SKIP" -lt "$T_N" ] || exit 77
	exit 0
}
