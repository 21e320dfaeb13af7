#!/bin/sh
# SPDX-License-Identifier: MIT
# ab_power.sh — detection quality of `nodetune ab` on this machine: the
# false-alarm rate of A against A, and the power to find a calibrated
# slowdown (--inject slow:PCT stretches compute by PCT percent), over
# $VERDICTS verdicts each, with the time each verdict took.
#
#   VERDICTS=10 BUDGET=90 THRESHOLD=1 CASES="0 2 5 10" bench/ab_power.sh
#
# Case 0 is A/A: an alarm is any `regression` or `improvement`.  For the
# others, power is the share of `regression` verdicts.  The cases run
# round-robin (verdict 1 of every case, then verdict 2, ...) so that drift on
# the machine hits all of them alike; each verdict has its own --seed (its
# own ABBA order).  Raw results: one TSV line per verdict on stderr and in
# $OUT, and with KEEP=DIR each verdict's whole --json (every trial's
# figure, the evidence) in DIR.  WORKLOAD= picks the job:
#   micro    the CPU harness, one process (--comm none), 0.2 s a trial, as
#            in tests/integration/test_ab.sh (the default);
#   default  what `nodetune ab` runs with no command: the harness at world 2
#            under mpirun, 30 steps of batch 2048 after 3 warm-up steps
#            (STEPS=N: N steps instead, to weigh a trial's length; MCA=
#            the mpirun options that pick Open MPI's transports, as ab's:
#            "--mca pml ob1 --mca btl self,vader", or MCA=none for its
#            probing default, to weigh the start-up);
#   torch    the PyTorch example (contrib/examples/ddp_train.py, one
#            process), judged through its step reports: 40 steps of batch
#            1024 through a 512-wide model, about 24 ms a step on this
#            machine's CPU (a step of 1 ms, the example's --batch 128
#            --width 256, times Python's own overhead, not a training step:
#            RESULTS §12); its --slow PCT is the calibrated slowdown
#            (compute stretched by PCT percent, as the harness's slow:PCT).
AB_STEPS=${STEPS:-30}   # before lib.sh, whose STEPS default (50) is its own benches'
. "$(dirname "$0")/lib.sh"
: "${VERDICTS:=10}" "${BUDGET:=90}" "${THRESHOLD:=1}" "${CASES:=0 2 5 10}" "${TRIALS:=8}" "${WORKLOAD:=micro}"
: "${TRIM:=}"   # ab's --trim, in %; empty: ab's default
: "${FIRST:=1}"  # the first verdict's number (its --seed), to run rounds side by side
: "${KEEP:=}"   # a directory: each verdict's --json kept there as case-C-I.json (every trial's figure)
[ -z "$KEEP" ] || mkdir -p "$KEEP" || exit 2
: "${NODETUNE:=build/nodetune}" "${OUT:=$TMP/ab_power.tsv}"
SLOW="--inject slow:"
case "$WORKLOAD" in
micro) C="$HARNESS --comm none --rows 1000 --batch 512 --steps 15 --warmup 2 --blas-threads 1 --quiet" ;;
torch)
	/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "bench: WORKLOAD=torch: /usr/bin/python3 has no torch (scripts/install-deps.sh torch)" >&2; exit 2; }
	C="/usr/bin/python3 $(pwd)/contrib/examples/ddp_train.py --steps 40 --batch 1024 --width 512 --log-every 10"
	SLOW="--slow " ;;
default)
	root=""; [ "$(id -u)" -ne 0 ] || root=--allow-run-as-root
	MCA=${MCA:---mca pml ob1 --mca btl self,vader}; [ "$MCA" != none ] || MCA=
	C="mpirun -np 2 $root --oversubscribe $MCA $HARNESS --quiet --steps $AB_STEPS --warmup 3 --batch 2048" ;;
*) echo "bench: WORKLOAD=$WORKLOAD: micro, default or torch" >&2; exit 2 ;;
esac

echo "# ab_power: WORKLOAD=$WORKLOAD, $VERDICTS verdicts per case, --threshold $THRESHOLD --budget $BUDGET --trials $TRIALS${TRIM:+ --trim $TRIM}, $(nproc) CPUs"
printf 'case\tverdict_no\tverdict\tratio\tci_low\tci_high\tp\ttrials_a\ttrials_b\telapsed_s\tpairs\tpair_noise_pct\trefused\ttrimmed_pairs\tpair_noise_mad_pct\n' >"$OUT"
for i in $(seq "$FIRST" $((FIRST + VERDICTS - 1))); do
	for c in $CASES; do
		if [ "$c" -eq 0 ]; then b="cmd=$C"; else b="cmd=$C $SLOW$c"; fi
		rc=0
		"$NODETUNE" ab --a "cmd=$C" --b "$b" --trials "$TRIALS" --budget "$BUDGET" --threshold "$THRESHOLD" \
			${TRIM:+--trim "$TRIM"} --seed "$i" --json >"$TMP/v.json" 2>"$TMP/v.err" || rc=$?
		[ "$rc" -le 1 ] || { echo "bench: nodetune ab failed (exit $rc):" >&2; cat "$TMP/v.err" >&2; exit 3; }
		line=$(jq -r --arg c "$c" --arg i "$i" \
			'[$c, $i, .verdict, .ratio, .ci_low, .ci_high, .p_value, .trials_a, .trials_b, .elapsed_s, .pairs,
		  ((.noise | exp) - 1) * 100, .refused, .trimmed_pairs, ((.noise_mad | exp) - 1) * 100] | @tsv' "$TMP/v.json")
		echo "$line" >>"$OUT"
		[ -z "$KEEP" ] || cp "$TMP/v.json" "$KEEP/case-$c-$i.json"
		echo "$line" >&2
	done
done

echo "| case | verdicts | regression | improvement | no-difference | inconclusive (refused) | rate | median s/verdict | median trials/arm | median B/A | median pair noise |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for c in $CASES; do
	awk -F'\t' -v c="$c" 'NR > 1 && $1 == c' "$OUT" >"$TMP/c"
	n=$(wc -l <"$TMP/c")
	cnt() { awk -F'\t' -v v="$1" '$3 == v' "$TMP/c" | wc -l; }
	reg=$(cnt regression) imp=$(cnt improvement) nod=$(cnt no-difference) inc=$(cnt inconclusive)
	if [ "$c" -eq 0 ]; then
		name="A/A"; rate="false alarms $((reg + imp))/$n"
	else
		name="slow:$c"; rate="power $(awk -v r="$reg" -v n="$n" 'BEGIN { printf "%.0f%%", 100 * r / n }')"
	fi
	ref=$(awk -F'\t' '$13 == "true"' "$TMP/c" | wc -l)
	printf '| %s | %d | %d | %d | %d | %d (%d) | %s | %.0f | %.0f | %.4f | %.1f%% |\n' "$name" "$n" "$reg" "$imp" "$nod" "$inc" \
		"$ref" "$rate" "$(cut -f10 "$TMP/c" | median)" "$(cut -f8 "$TMP/c" | median)" "$(cut -f4 "$TMP/c" | median)" \
		"$(cut -f12 "$TMP/c" | median)"
done
