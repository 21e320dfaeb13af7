#!/bin/sh
# SPDX-License-Identifier: MIT
# bucket_sweep.sh — DDP bucket cap from 1 to 100 MB, overlap on and off, on
# the harness's dlrm-small and on a compute-heavy mlp; world $NP, batch
# $BATCH/rank.  Reports samples/s (median of $REPS, on/off interleaved), the
# bucket count, exposed communication, and the overlap speedup.
#   bench/bucket_sweep.sh [MODEL_ARGS...]   e.g. --model mlp --mlp-depth 8 --mlp-width 1024
#   LAUNCH=torchrun bench/bucket_sweep.sh   the torchrun launch (TCP collectives)
. "$(dirname "$0")/lib.sh"
echo "# bucket sweep: ${*:-dlrm-small}, $LAUNCH, world $NP, batch $BATCH/rank, $STEPS steps ($WARMUP warm-up), median of $REPS"
printf '%-9s %7s %12s %12s %10s %10s %8s\n' bucket_mb buckets sps_overlap sps_no_ovl exp_ms_on exp_ms_off speedup
for mb in 1 2 5 10 25 50 100; do
	: >"$TMP/on"; : >"$TMP/off"; : >"$TMP/eon"; : >"$TMP/eoff"
	for r in $(seq 1 "$REPS"); do
		s=$(harness --bucket-mb "$mb" "$@"); echo "$s" | jq .samples_per_s >>"$TMP/on"
		echo "$s" | jq .phases.comm_exposed_ms >>"$TMP/eon"; nb=$(echo "$s" | jq .buckets)
		s=$(harness --bucket-mb "$mb" --no-overlap "$@"); echo "$s" | jq .samples_per_s >>"$TMP/off"
		echo "$s" | jq .phases.comm_exposed_ms >>"$TMP/eoff"
	done
	on=$(median <"$TMP/on") off=$(median <"$TMP/off")
	printf '%-9s %7s %12.0f %12.0f %10.2f %10.2f %8.3f\n' "$mb" "$nb" "$on" "$off" "$(median <"$TMP/eon")" \
		"$(median <"$TMP/eoff")" "$(echo "$on $off" | awk '{print $1 / $2}')"
done
