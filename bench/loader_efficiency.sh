#!/bin/sh
# SPDX-License-Identifier: MIT
# loader_efficiency.sh — throughput with the real loader over throughput with
# one batch pre-placed and reused (--frozen-batch, the data-path roofline):
# synthetic batches, zstd batches, shards read from disk, and --no-pin.
# World $NP, batch $BATCH/rank, median of $REPS, interleaved.
. "$(dirname "$0")/lib.sh"
"$HARNESS" --write-data "$TMP/data" --samples $((NP * BATCH * (STEPS + WARMUP))) 2>/dev/null
echo "# loader efficiency: dlrm-small, world $NP, batch $BATCH/rank, $STEPS steps ($WARMUP warm-up), median of $REPS"
printf '%-28s %12s %12s %10s %12s\n' loader sps sps_frozen efficiency data_wait_ms
for v in "synthetic" "synthetic --compress zstd" "shards --data" "synthetic --no-pin"; do
	case "$v" in
	"shards --data") args="--data $TMP/data" ;;
	synthetic) args="" ;;
	*) args=${v#synthetic } ;;
	esac
	: >"$TMP/r"; : >"$TMP/f"; : >"$TMP/w"
	for r in $(seq 1 "$REPS"); do
		s=$(harness $args); echo "$s" | jq .samples_per_s >>"$TMP/r"; echo "$s" | jq .phases.data_wait_ms >>"$TMP/w"
		harness --frozen-batch | jq .samples_per_s >>"$TMP/f"
	done
	a=$(median <"$TMP/r") f=$(median <"$TMP/f")
	printf '%-28s %12.0f %12.0f %10.3f %12.3f\n' "$v" "$a" "$f" "$(echo "$a $f" | awk '{print $1 / $2}')" "$(median <"$TMP/w")"
done
