#!/bin/sh
# SPDX-License-Identifier: MIT
# gpu.sh — the GPU figures, side by side on the same GPU(s) in one run:
#   1. samples/s: nodetune-harness against PyTorch DDP (nccl) on the same
#      dlrm-small, same batch, steps and world size (interleaved pairs);
#   2. H2D: the loader's copies (bytes over copy time, CUDA events on the copy
#      stream) against cudaMemcpy of the same size from cudaHostAlloc memory,
#      measured by the harness in the same process;
#   3. loader efficiency: the real loader over --frozen-batch (the batch
#      pre-placed on the device).
#   bench/gpu.sh                 NP defaults to the GPUs here (one rank each)
#   PY=/path/to/python3 bench/gpu.sh   a Python whose torch has CUDA
: "${NP:=$(nvidia-smi -L 2>/dev/null | wc -l)}"
[ "$NP" -ge 1 ] 2>/dev/null || { echo "bench: no GPU here (nvidia-smi -L lists none)" >&2; exit 2; }
DEVICE=cuda
. "$(dirname "$0")/lib.sh"
"$HARNESS" --version | grep -q '^cuda: yes' || { echo "bench: $HARNESS was built without CUDA" >&2; exit 2; }
echo "# GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1), world $NP, dlrm-small, batch $BATCH/rank, $STEPS steps ($WARMUP warm-up), $REPS interleaved reps"

echo "## 1. nodetune-harness vs PyTorch DDP (nccl)"
if $PY -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	printf '%-4s %14s %14s %8s\n' rep harness_sps torch_sps ratio
	: >"$TMP/hs"; : >"$TMP/ts"
	for r in $(seq 1 "$REPS"); do
		h=$(harness | jq .samples_per_s)
		t=$(pytorch $((29600 + r)) --device cuda)
		echo "$h" >>"$TMP/hs"; echo "$t" >>"$TMP/ts"
		printf '%-4s %14.0f %14.0f %8.2f\n' "$r" "$h" "$t" "$(echo "$h $t" | awk '{print $1 / $2}')"
	done
	hm=$(median <"$TMP/hs") tm=$(median <"$TMP/ts")
	printf 'median %12.0f %14.0f %8.2f\n' "$hm" "$tm" "$(echo "$hm $tm" | awk '{print $1 / $2}')"
else
	echo "not measured: $PY has no torch with CUDA (set PY to one that has)"
fi

echo "## 2. loader H2D against cudaMemcpy from pinned memory, 3. loader efficiency"
printf '%-4s %12s %12s %10s %12s %12s %10s\n' rep h2d_gbps pinned_gbps h2d_eff sps sps_frozen loader_eff
: >"$TMP/e"; : >"$TMP/r"; : >"$TMP/f"
for r in $(seq 1 "$REPS"); do
	s=$(harness)
	f=$(harness --frozen-batch | jq .samples_per_s)
	set -- $(echo "$s" | jq -r '[.gpu.h2d_gbps, .gpu.h2d_pinned_gbps, .gpu.h2d_efficiency, .samples_per_s] | @tsv')
	echo "$3" >>"$TMP/e"; echo "$4" >>"$TMP/r"; echo "$f" >>"$TMP/f"
	printf '%-4s %12.2f %12.2f %10.3f %12.0f %12.0f %10.3f\n' "$r" "$1" "$2" "$3" "$4" "$f" "$(echo "$4 $f" | awk '{print $1 / $2}')"
done
a=$(median <"$TMP/r") f=$(median <"$TMP/f")
printf 'median %10s %12s %10.3f %12.0f %12.0f %10.3f\n' "" "" "$(median <"$TMP/e")" "$a" "$f" "$(echo "$a $f" | awk '{print $1 / $2}')"
