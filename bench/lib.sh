# lib.sh — shared by the benchmark scripts (sourced).  Every benchmark runs
# its variants interleaved (A B A B ...) in one invocation so that drift on the
# machine hits both sides, and reports medians and their ratio.
set -eu
cd "$(dirname "$0")/.."
: "${HARNESS:=build/nodetune-harness}" "${NP:=2}" "${REPS:=3}" "${STEPS:=50}" "${WARMUP:=5}" "${BATCH:=2048}"
: "${DEVICE:=cpu}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
TMP=$(mktemp -d /tmp/nodetune-bench-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

[ -x "$HARNESS" ] || { echo "bench: $HARNESS not built (run make)" >&2; exit 2; }

# harness ARGS...: one harness run under mpirun; prints its JSON summary
harness() {
	mpirun -np "$NP" "$HARNESS" --device "$DEVICE" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --quiet \
		--json "$TMP/h.json" "$@" >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err" >&2; exit 3; }
	# verify outside the timed region: a real result, not a crash or NaN
	jq -e '.summary.samples_per_s > 0 and (.summary.final_loss | isnormal) and .summary.final_loss < 1.5' \
		"$TMP/h.json" >/dev/null || { echo "bench: implausible harness result" >&2; exit 3; }
	jq -c .summary "$TMP/h.json"
}

# median of numbers on stdin
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
