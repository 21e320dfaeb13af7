#!/bin/sh
# SPDX-License-Identifier: MIT
# host: thp sysctl knobs cgroup abcg state
# Every command docs/*.md shows runs here, as test_readme.sh does for the
# README: each fenced block is found (tests/tools/doc_blocks.py) and is
# either run or listed below with the reason it is not (a synopsis, a
# configuration fragment, a command another test runs: named).  A block
# that is neither fails the test, so a new example cannot go unrun.
#
# A `$ CMD` line of a block is run and the lines after it, up to the next
# `$`, are its output (stdout and stderr together, as a terminal shows
# them), compared line by line; a `...` line stands for any lines.  Output
# that is a measurement or belongs to the host the docs were written on
# (memory sizes, samples/s, a pid) is compared in its shape: every number
# stands for any number.  Sandboxed as test_readme.sh: a policy NAME
# resolves in a copy of this clone's policies/; the documented live apply,
# verify, revert and run need root and are undone however the test ends.
# It names abcg: docs/ab.md's `nodetune ab` makes its trial groups
# (nodetune-ab); run beside test_fleet_hold.sh without it, one of them read
# as that script's leftovers (a red integration run, 2026-12-07).
. "$(dirname "$0")/lib.sh"
t_plan 21

mkdir -m 755 "$T_TMP/policies" && cp policies/*.conf "$T_TMP/policies/" && chmod 644 "$T_TMP"/policies/*.conf
NODETUNE_POLICY_PATH=$T_TMP/policies
export NODETUNE_POLICY_PATH
# (the docs' `nodetune` and `build/nodetune-harness` are the build's)
mkdir "$T_TMP/bin" && ln -s "$NODETUNE" "$T_TMP/bin/nodetune"
PATH=$T_TMP/bin:$PATH
export PATH
HARNESS=${HARNESS:-$SRCDIR/build/nodetune-harness}

# run_sh CMD: run CMD (a line of the docs) in sh, stdout and stderr together
run_sh() { run sh -c "$1 2>&1"; }
# outcome DESC EXPECTED SHAPE [RC]: the command just run exited RC (0) and
# printed EXPECTED (SHAPE 1: numbers stand for any number)
outcome() {
	check "$1: exit ${4:-0}$([ "$3" = 1 ] && echo ', the output shown in its shape' || echo ', the output shown')" -- \
		sh -c '[ "$1" -eq "$2" ] || echo "# exit $1" >&2; python3 tests/tools/doc_blocks.py --compare "$3" "$4" "$5" >&2 &&
		       [ "$1" -eq "$2" ]' - "$RC" "${4:-0}" "$2" "$OUT" "$3"
}

python3 tests/tools/doc_blocks.py --split "$T_TMP/blocks" docs/*.md || t_not_ok "doc_blocks.py --split docs/*.md failed"
check "docs/*.md show blocks ($(ls "$T_TMP/blocks" | grep -c '\.block$'))" -- \
	sh -c '[ "$(ls "$1" | grep -c "\.block$")" -ge 20 ]' - "$T_TMP/blocks"

# the live apply/run examples: the host's knobs and cgroups as they were
live_ok=
if [ "$(id -u)" -eq 0 ]; then
	live_ok=1
	# apply's state dir (its lock file stays after revert): removed when
	# the test made it
	[ -e /run/nodetune ] || t_defer "rm -rf /run/nodetune"
	t_defer "'$NODETUNE' revert --state-dir /run/nodetune >/dev/null 2>&1"
fi
# a live example not run (not root): skipped by name, one skip per check
not_live() { t_skip_host root "$where: '$1': a live example of this host, run as root only"; }

last_rc=0
for b in "$T_TMP"/blocks/*.block; do
	where=$(sed -n 1p "$b")        # docs/FILE.md:LINE
	first=$(sed -n 2p "$b")        # the block's first line
	case "$where|$first" in
	# ---- not commands -------------------------------------------------------
	*"|nodetune "*"["*"]"* | *"|nodetune-harness [OPTIONS]"* | *"|nodetune daemon ... --endpoints"*)
		echo "# $where: a synopsis (each verb's options: test_cli_help.sh, tests/lint/test_man.sh)" ;;
	*"|[sysctl]"*) echo "# $where: a policy fragment, not a command" ;;
	*"|# /etc/slurm/plugstack.conf"*) echo "# $where: a plugstack.conf line (test_slurm.sh loads the plugin so)" ;;
	*"|common/ "*) echo "# $where: the source map, not a command" ;;
	docs/cli.md:*"|{") echo "# $where: an excerpt of discover --json (test_discover_golden.sh checks that document)" ;;
	# ---- commands another test runs ----------------------------------------
	*"|scripts/install-deps.sh core slurm pkg"*)
		echo "# $where: make deb and apt install of both packages: test_deb.sh (not run here)" ;;
	*"|sudoedit /etc/nodetune/policy.conf"*)
		echo "# $where: the daemon from the package, status, man nodetune: test_deb.sh (not run here: systemd is not PID 1)" ;;
	*"|make deb") echo "# $where: make deb, podman build of the DaemonSet image: test_deb.sh (not run here)" ;;
	*"|make demo"*) echo "# $where: make demo (the demo) and make check (which runs this test): not run here" ;;
	docs/fleet.md:*"|# quick start, "*)
		echo "# $where: the fleet quick start: test_systemd.sh runs its blocks in the container (not run here)" ;;
	*"|srun --exclusive"*) echo "# $where: srun and sbatch with --nodetune: test_slurm.sh (not run here)" ;;
	docs/ab.md:*"|\$ nodetune bisect "*)
		echo "# $where: bisect applies each half to this host for minutes: test_bisect.sh runs this case (not run here)" ;;
	# ---- run here ----------------------------------------------------------------
	*"|nodetune policy list"*)
		sed -n '2,$p' "$b" | sed 's/[[:space:]]\{2,\}#.*$//' >"$T_TMP/cmds"
		while IFS= read -r c; do
			run_sh "$c"
			check "$where: '$c': exit $RC, prints something" -- sh -c '[ "$1" -eq 0 ] && [ -s "$2" ]' - "$RC" "$OUT"
		done <"$T_TMP/cmds" ;;
	*"|\$ "*)
		python3 tests/tools/doc_blocks.py --commands "$b" "${b%.block}"
		for c in "${b%.block}".*.cmd; do
			cmd=$(cat "$c") exp=${c%.cmd}.out
			case $cmd in
			"nodetune discover" )
				run_sh "$cmd"; outcome "$where: '$cmd' (this host)" "$exp" 1 ;;
			"nodetune plan --policy gpu-train --topology g4dnmetal.xml")
				if [ -d "$SHARED" ]; then
					run_sh "cd $SHARED && $cmd"; outcome "$where: '$cmd' (in $SHARED)" "$exp" 0
				else
					t_need ../shared "$where: '$cmd': $SHARED is absent"
				fi ;;
			"nodetune "*"--sysroot tests/fixtures/"*)     # verify, doctor: exit 1, they found something
				run_sh "$cmd"
				case $cmd in "nodetune verify "* | "nodetune doctor "*) want=1 ;; *) want=0 ;; esac
				outcome "$where: '$cmd'" "$exp" 0 $want ;;
			"nodetune apply --policy policies/gpu-train.conf" | "cat /sys/kernel/mm/"* | \
			"nodetune verify --policy policies/gpu-train.conf" | "nodetune revert" | "nodetune run -n 2 "*)
				[ -n "$live_ok" ] || { not_live "$cmd"; continue; }
				run_sh "$cmd"
				last_rc=$RC
				case $cmd in
				"nodetune run "*)       # the ranks' lines in any order, the pid any
					sort "$OUT" >"$OUT.s" && mv "$OUT.s" "$OUT" && sort "$exp" >"$exp.s" && mv "$exp.s" "$exp"
					outcome "$where: '$cmd' (this host, as root)" "$exp" 1 5 ;;
				*) outcome "$where: '$cmd' (this host, as root)" "$exp" 1 ;;
				esac ;;
			'echo $?')
				[ -n "$live_ok" ] || { not_live "$cmd"; continue; }
				check "$where: 'echo \$?' after it: $last_rc, as shown" -- sh -c '[ "$1" = "$(cat "$2")" ]' - "$last_rc" "$exp" ;;
			"mpirun -np 2 nodetune exec --policy policies/gpu-train.conf -- train ...")
				if command -v mpirun >/dev/null; then
					# (stdout alone: it is the job's; nodetune's lines are on stderr)
					run sh -c "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 nodetune exec --policy policies/gpu-train.conf -- true"
					check "$where: '$cmd' (the job: true): exit $RC, nothing on stdout (the job prints nothing)" -- \
						sh -c '[ "$1" -eq 0 ] && [ ! -s "$2" ]' - "$RC" "$OUT"
				else
					t_need mpirun "$where: '$cmd': mpirun is not installed"
				fi ;;
			"mpirun -np 2 build/nodetune-harness "*)
				if command -v mpirun >/dev/null; then
					run_sh "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 $HARNESS ${cmd#mpirun -np 2 build/nodetune-harness }"
					outcome "$where: '$cmd' (a measurement)" "$exp" 1
				else
					t_need mpirun "$where: '$cmd': mpirun is not installed"
				fi ;;
			"nodetune ab --a "*)
				# a measurement: the verdict line in its shape, the rest not
				# compared (the build's harness for build/nodetune-harness)
				run_sh "$(echo "$cmd" | sed "s|cmd=build/nodetune-harness |cmd=$HARNESS |g")"
				head -n 1 "$OUT" >"$OUT.1" && mv "$OUT.1" "$OUT" && head -n 1 "$exp" >"$exp.1" && mv "$exp.1" "$exp"
				if [ "$RC" -eq 0 ] && grep -q '^verdict: inconclusive, refused ' "$OUT"; then
					# ab refuses to judge when its A/A noise exceeds the
					# threshold; whether the host is too noisy is ab's
					# own word, so a refusal is a failure, not a skip (an
					# ab that always refused would otherwise never fail)
					t_not_ok "$where: nodetune ab refused the documented A/B ($(cat "$OUT"))"
				else
					outcome "$where: '$(echo "$cmd" | cut -c1-60)...' (a measurement: its verdict line)" "$exp" 1 1
				fi ;;
			*) t_not_ok "$where: '$cmd' is neither run nor listed in test_docs.sh" ;;
			esac
		done ;;
	*) t_not_ok "$where: a block ('$first') neither run nor listed in test_docs.sh" ;;
	esac
done
check "after the live examples: no journal in /run/nodetune, no nodetune-job cgroup" -- sh -c \
	'[ ! -e /run/nodetune/journal ] && [ -z "$(find /sys/fs/cgroup -maxdepth 2 -name nodetune-job)" ]'
t_done
