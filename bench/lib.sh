# SPDX-License-Identifier: MIT
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

# harness ARGS...: one harness run of $NP ranks, launched by mpirun or, with
# LAUNCH=torchrun, as torchrun would (the RANK/WORLD_SIZE/MASTER_* environment:
# the TCP rendezvous and collectives); prints its JSON summary
: "${LAUNCH:=mpirun}"
harness() {
	if [ "$LAUNCH" = torchrun ]; then
		# a fresh port per run (this runs in a subshell: the count is a file)
		n=$(cat "$TMP/runs" 2>/dev/null || echo 0); echo $((n + 1)) >"$TMP/runs"
		port=$((30000 + ($$ * 7 + n) % 20000)) r=1 pids=""
		while [ "$r" -lt "$NP" ]; do
			env RANK=$r WORLD_SIZE="$NP" LOCAL_RANK=$r LOCAL_WORLD_SIZE="$NP" MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
				"$HARNESS" --device "$DEVICE" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --quiet "$@" \
				>/dev/null 2>"$TMP/h$r.err" &
			pids="$pids $!" r=$((r + 1))
		done
		env RANK=0 WORLD_SIZE="$NP" LOCAL_RANK=0 LOCAL_WORLD_SIZE="$NP" MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			"$HARNESS" --device "$DEVICE" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --quiet \
			--json "$TMP/h.json" "$@" >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err" >&2; exit 3; }
		# shellcheck disable=SC2086
		wait $pids || { cat "$TMP"/h*.err >&2; exit 3; }
	else
		mpirun -np "$NP" "$HARNESS" --device "$DEVICE" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --quiet \
			--json "$TMP/h.json" "$@" >/dev/null 2>"$TMP/h.err" || { cat "$TMP/h.err" >&2; exit 3; }
	fi
	# verify outside the timed region: a real result, not a crash or NaN
	jq -e '.summary.samples_per_s > 0 and (.summary.final_loss | isnormal) and .summary.final_loss < 1.5' \
		"$TMP/h.json" >/dev/null || { echo "bench: implausible harness result" >&2; exit 3; }
	jq -c .summary "$TMP/h.json"
}

# pytorch PORT ARGS...: bench/torch_dlrm.py (the same dlrm-small in PyTorch
# DDP) on $NP ranks under mpirun, batch, steps and warm-up as the harness's;
# prints its samples/s
: "${PY:=/usr/bin/python3}"
pytorch() {
	port=$1; shift
	mpirun -np "$NP" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" $PY bench/torch_dlrm.py \
		--batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" "$@" >"$TMP/t.json" 2>"$TMP/t.err" || { cat "$TMP/t.err" >&2; exit 3; }
	tail -n 1 "$TMP/t.json" | jq .samples_per_s
}

# median of numbers on stdin
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
