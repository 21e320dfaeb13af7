#!/bin/sh
# SPDX-License-Identifier: MIT
# observer_overhead.sh — what `nodetune observe` costs: its own CPU time as a
# share of one core while it samples a training run (the harness, world
# $NP under mpirun: mpirun plus the ranks and all their threads) at
# $INTERVAL (a duration: 100ms), and the run's samples/s with the observer attached over
# without it, interleaved, median of $REPS.  Target: at most 1% of one core
# at 10 Hz.
. "$(dirname "$0")/lib.sh"
: "${INTERVAL:=100ms}" "${NODETUNE:=build/nodetune}" "${STEPS:=300}"
echo "# observer overhead: interval $INTERVAL, harness world $NP batch $BATCH, $STEPS steps, median of $REPS"
printf '%-4s %8s %14s %12s %12s\n' rep wall_s observer_cpu_% sps_alone sps_observed
: >"$TMP/pct"; : >"$TMP/ratio"
now_ns() { date +%s%N; }
for r in $(seq 1 "$REPS"); do
	alone=$(harness | jq .samples_per_s)
	mpirun -np "$NP" "$HARNESS" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --quiet --json "$TMP/o.json" \
		>/dev/null 2>"$TMP/o.err" &
	mp=$!
	t0=$(now_ns)
	"$NODETUNE" observe --json --interval "$INTERVAL" --pid "$mp" >"$TMP/obs.jsonl" &
	ob=$!
	# steady state: the observer's CPU time (schedstat, ns) from 2 s in
	# (after start-up and its first full scan) to the last reading before
	# the run ends
	sleep 2
	a=$(cut -d' ' -f1 "/proc/$ob/schedstat") ta=$(now_ns) b=$a tb=$ta
	while kill -0 "$mp" 2>/dev/null && [ -r "/proc/$ob/schedstat" ]; do
		b=$(cut -d' ' -f1 "/proc/$ob/schedstat" 2>/dev/null || echo "$b") tb=$(now_ns)
		sleep 0.5
	done
	wait "$mp" || { cat "$TMP/o.err" >&2; exit 3; }
	wait "$ob"
	t1=$(now_ns)
	steady=$(echo "$a $b $ta $tb" | awk '{ printf "%.3f", 100 * ($2 - $1) / ($4 - $3) }')
	[ "$(jq -s length "$TMP/obs.jsonl")" -gt 10 ] || { echo "bench: the observer wrote no samples" >&2; exit 3; }
	observed=$(jq .summary.samples_per_s "$TMP/o.json")
	echo "$steady" >>"$TMP/pct"
	echo "$observed $alone" | awk '{ print $1 / $2 }' >>"$TMP/ratio"
	printf '%-4s %8.1f %14s %12.0f %12.0f\n' "$r" "$(echo "$t0 $t1" | awk '{ print ($2 - $1) / 1e9 }')" "$steady" "$alone" "$observed"
done
echo "median: observer $(median <"$TMP/pct")% of one core (steady state, $(jq -s length "$TMP/obs.jsonl") samples in the last run); samples/s observed / alone = $(median <"$TMP/ratio")"
