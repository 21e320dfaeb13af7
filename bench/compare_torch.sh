#!/bin/sh
# SPDX-License-Identifier: MIT
# compare_torch.sh — nodetune-harness against PyTorch DDP on the same
# dlrm-small, side by side: world $NP through mpirun, batch $BATCH per rank,
# $STEPS measured steps after $WARMUP, $REPS interleaved pairs.
#   bench/compare_torch.sh            (needs python3-torch: scripts/install-deps.sh bench)
#   HARNESS_ARGS=--frozen-batch bench/compare_torch.sh
#                                     like for like: the reference trains on
#                                     batches kept in memory, so does the harness
. "$(dirname "$0")/lib.sh"
$PY -c 'import torch' 2>/dev/null || { echo "bench: python3-torch missing (scripts/install-deps.sh bench)" >&2; exit 2; }
echo "# nodetune-harness vs PyTorch $($PY -c 'import torch; print(torch.__version__)') DDP (gloo): dlrm-small${HARNESS_ARGS:+ (harness $HARNESS_ARGS)}, world $NP, batch $BATCH/rank, $STEPS steps ($WARMUP warm-up), $REPS interleaved pairs"
printf '%-4s %14s %14s %8s\n' rep harness_sps torch_sps ratio
for r in $(seq 1 "$REPS"); do
	# shellcheck disable=SC2086
	h=$(harness ${HARNESS_ARGS:-} | jq .samples_per_s)
	t=$(pytorch $((29500 + r)))
	echo "$h" >>"$TMP/hs"; echo "$t" >>"$TMP/ts"
	printf '%-4s %14.0f %14.0f %8.2f\n' "$r" "$h" "$t" "$(echo "$h $t" | awk '{print $1 / $2}')"
done
hm=$(median <"$TMP/hs") tm=$(median <"$TMP/ts")
printf 'median %12.0f %14.0f %8.2f\n' "$hm" "$tm" "$(echo "$hm $tm" | awk '{print $1 / $2}')"
