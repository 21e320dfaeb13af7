#!/bin/sh
# SPDX-License-Identifier: MIT
# run-fuzz.sh — run libFuzzer targets for a fixed time each.
#
# Usage: tests/fuzz/run-fuzz.sh SECONDS BIN...
#
# BIN is a target built from tests/fuzz/fuzz_<name>.c (make fuzz-build); it
# starts from a copy of tests/fuzz/corpus/<name>/ in a temporary directory,
# so the checked-in seeds stay as they are.  Prints one line per target,
#   fuzz_<name>: N execs in S s, C crashes
# keeps crash reproducers (and the target's log) in $FUZZ_ARTIFACTS
# (default: the directory of the first BIN, /artifacts) and exits 1 when a
# target crashed or could not run, naming the reproducer; 2 on bad usage.
# FUZZ_ARGS adds libFuzzer options (e.g. -jobs, -dict).
set -u

usage() { echo "usage: run-fuzz.sh SECONDS BIN..." >&2; exit 2; }
[ $# -ge 2 ] || usage
secs=$1; shift
case $secs in '' | *[!0-9]*) usage ;; esac
[ "$secs" -gt 0 ] || usage

here=$(cd "$(dirname "$0")" && pwd)
artifacts=${FUZZ_ARTIFACTS:-$(cd "$(dirname "$1")" 2>/dev/null && pwd)/artifacts}
mkdir -p "$artifacts" || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/run-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

failed=""
for bin in "$@"; do
	target=$(basename "$bin")
	name=${target#fuzz_}
	seeds=$here/corpus/$name
	corpus=$tmp/$name
	log=$artifacts/$target.log
	if [ ! -x "$bin" ]; then
		echo "$target: not built ($bin)"
		failed="$failed $target"
		continue
	fi
	mkdir -p "$corpus"
	if [ -d "$seeds" ]; then
		cp "$seeds"/* "$corpus"/ 2>/dev/null
	else
		echo "$target: no seeds in $seeds (starting from nothing)" >&2
	fi
	start=$(date +%s)
	# shellcheck disable=SC2086
	"$bin" "$corpus" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$artifacts/$target-" ${FUZZ_ARGS:-} >"$log" 2>&1
	rc=$?
	took=$(( $(date +%s) - start ))
	execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
	repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
	crashes=0
	if [ -n "$repro" ] || [ "$rc" -ne 0 ]; then
		crashes=1
	fi
	echo "$target: ${execs:-?} execs in $took s, $crashes crashes"
	if [ "$crashes" -ne 0 ]; then
		failed="$failed $target"
		grep -m 1 -E '^==[0-9]+==ERROR|runtime error|^==[0-9]+== ERROR|deadly signal|out-of-memory|timeout' "$log" >&2
		if [ -n "$repro" ]; then
			echo "$target: reproduce with: $bin $repro (log: $log)" >&2
		else
			echo "$target: exit status $rc, no reproducer written (log: $log)" >&2
		fi
	fi
done
if [ -n "$failed" ]; then
	echo "fuzz: failing:$failed" >&2
	exit 1
fi
echo "fuzz: $# targets, ${secs} s each, 0 crashes"
