#!/bin/sh
# SPDX-License-Identifier: MIT
# host: thp sysctl knobs cgroup state
# Standard output belongs to the job: under `nodetune run` and `nodetune exec`
# a job's stdout is byte for byte what it is without nodetune, and nodetune's
# own lines go to stderr (none with --quiet).  Where nodetune itself writes
# stdout, a failed write is an error: exit 3 and a line saying so.
. "$(dirname "$0")/lib.sh"
t_plan 29

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
UNTUNED=tests/fixtures/sysroot/gpu-host-untuned
HAZ=tests/fixtures/sysroot/gpu-host-hazards
GT=policies/gpu-train.conf

# A fixed text: several lines, a tab, an empty line, trailing spaces, and no
# newline at the end (a line-buffering wrapper would add one).
JOB='printf "first line\n\tsecond, tabbed  \n\nfourth: %s\nlast, no newline" "$0"'
sh -c "$JOB" job >"$T_TMP/bare.out" 2>"$T_TMP/bare.err"
brc=$?
check "the bare job exits 0 ($brc), prints its text and nothing on stderr" -- sh -c "[ $brc -eq 0 ] && [ -s '$T_TMP/bare.out' ] && [ ! -s '$T_TMP/bare.err' ]"

# A policy with a host knob this host has (THP defrag, set to a value other
# than the current one, so that run really changes and restores something)
# and a job cgroup of its own, which exec (no apply ran) warns is missing.
DEFRAG=/sys/kernel/mm/transparent_hugepage/defrag
CG=nodetune-stdout-$$
if [ -r $DEFRAG ]; then
	d0=$(sed 's/.*\[\(.*\)\].*/\1/' $DEFRAG)
	if [ "$d0" = defer+madvise ]; then d1=madvise; else d1=defer+madvise; fi
	printf '[main]\nsummary = test_stdout\n[thp]\ndefrag = %s\n[cgroup]\nname = %s\n' "$d1" $CG >"$T_TMP/p.conf"
else
	d0=
	printf '[main]\nsummary = test_stdout\n[cgroup]\nname = %s\n' $CG >"$T_TMP/p.conf"
fi
chmod 644 "$T_TMP/p.conf"
ST=$T_TMP/state

# every stderr line is nodetune's, for VERB: "nodetune: VERB: ..."
only_nodetune_lines() { # FILE VERB
	[ -s "$1" ] && ! grep -qv "^nodetune: $2: " "$1"
}

# ---- exec -----------------------------------------------------------------
run "$NODETUNE" exec --policy "$T_TMP/p.conf" --local-rank 0 -- sh -c "$JOB" job
check "exec: exit 0, the job's stdout byte for byte as without nodetune" -- sh -c "[ $RC -eq 0 ] && cmp -s '$T_TMP/bare.out' '$OUT'"
check "exec: nodetune's line (the missing job cgroup) on stderr: $(head -1 "$ERR")" -- \
	grep -q "^nodetune: exec: warning: local rank 0: job cgroup $CG does not exist" "$ERR"
check "exec: stderr holds only nodetune: exec: lines" -- only_nodetune_lines "$ERR" exec
run "$NODETUNE" exec --quiet --policy "$T_TMP/p.conf" --local-rank 0 -- sh -c "$JOB" job
check "exec --quiet: same stdout, nothing on stderr" -- sh -c "[ $RC -eq 0 ] && cmp -s '$T_TMP/bare.out' '$OUT' && [ ! -s '$ERR' ]"
# (exec's own status kept beside the pipe: the pipeline's is cat's)
{ OMPI_COMM_WORLD_LOCAL_RANK=0 "$NODETUNE" exec -q --policy "$T_TMP/p.conf" -- sh -c "$JOB" job 2>"$T_TMP/e"; echo $? >"$T_TMP/rc"; } | cat >"$T_TMP/o"
check "exec -q under a launcher's rank, into a pipe: exit $(cat "$T_TMP/rc"), same stdout, nothing on stderr" -- sh -c \
	"[ \"\$(cat '$T_TMP/rc')\" = 0 ] && cmp -s '$T_TMP/bare.out' '$T_TMP/o' && [ ! -s '$T_TMP/e' ]"

# ---- run (root only: it applies to this host and reverts) ----------------
if [ "$(id -u)" -ne 0 ]; then
	t_skips 8 t_skip_host root "run: not root (run applies to this host)"
else
	t_defer '"$NODETUNE" revert --state-dir "$ST" >/dev/null 2>&1'
	run "$NODETUNE" run -n 1 --policy "$T_TMP/p.conf" --state-dir "$ST" -- sh -c "$JOB" job
	check "run -n 1: exit 0, the job's stdout byte for byte as without nodetune" -- sh -c "[ $RC -eq 0 ] && cmp -s '$T_TMP/bare.out' '$OUT'"
	check "run: 'applied ... (undo: ...)' and 'reverted' on stderr" -- sh -c \
		"grep -q '^nodetune: run: applied $T_TMP/p.conf (undo: nodetune revert --state-dir $ST): [0-9]* change' '$ERR' &&
		 grep -q '^nodetune: run: reverted: [0-9]* change' '$ERR'"
	if [ -n "$d0" ]; then
		check "run: the change and its restore on stderr ($DEFRAG: $d0 -> $d1 -> $d0)" -- sh -c \
			"grep -qx 'nodetune: run: $DEFRAG: $d0 -> $d1' '$ERR' && grep -qx 'nodetune: run: $DEFRAG: $d1 -> $d0' '$ERR'"
	else
		t_skip_host thp "run: the change and its restore on stderr: no THP defrag on this host"
	fi
	check "run: stderr holds only nodetune: run: lines" -- only_nodetune_lines "$ERR" run
	{ "$NODETUNE" run -n 1 --policy "$T_TMP/p.conf" --state-dir "$ST" -- sh -c "$JOB" job 2>"$T_TMP/e"; echo $? >"$T_TMP/rc"; } | cat >"$T_TMP/o"
	check "run into a pipe (nodetune run ... | cat): exit $(cat "$T_TMP/rc"), same stdout" -- sh -c \
		"[ \"\$(cat '$T_TMP/rc')\" = 0 ] && cmp -s '$T_TMP/bare.out' '$T_TMP/o'"
	run "$NODETUNE" run -n 1 --quiet --policy "$T_TMP/p.conf" --state-dir "$ST" -- sh -c "$JOB" job
	check "run --quiet: same stdout, nothing on stderr" -- sh -c "[ $RC -eq 0 ] && cmp -s '$T_TMP/bare.out' '$OUT' && [ ! -s '$ERR' ]"
	run "$NODETUNE" run -n 2 -q --policy "$T_TMP/p.conf" --state-dir "$ST" -- sh -c 'echo "rank $LOCAL_RANK"'
	check "run -n 2 -q: stdout is the two ranks' lines and nothing else" -- sh -c \
		"[ $RC -eq 0 ] && [ \"\$(sort '$OUT' | tr '\n' ' ')\" = 'rank 0 rank 1 ' ] && [ ! -s '$ERR' ]"
	check "after the runs: THP defrag as before, no journal, no job cgroup" -- sh -c \
		"{ [ -z '$d0' ] || grep -q '\[$d0\]' $DEFRAG; } && [ ! -e '$ST/journal' ] &&
		 [ ! -d /sys/fs/cgroup/cpuset/$CG ] && [ ! -d /sys/fs/cgroup/$CG ]"
fi

# ---- --json of the other verbs stays on stdout: JSON alone there ----------
J=$T_TMP/jtree
cp -r "$UNTUNED" "$J"
run "$NODETUNE" apply --policy $GT --topology $HGX --sysroot "$J" --state-dir "$T_TMP/jst" --json
check "apply --json: stdout is one JSON document of 7 changes (THP twice, NUMA balancing, 4 governors); each change logged on stderr" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.dry_run == false and (.changes | length == 7)' '$OUT' >/dev/null &&
	 grep -qx 'nodetune: apply: /proc/sys/kernel/numa_balancing: 1 -> 0' '$ERR'"
run "$NODETUNE" revert --state-dir "$T_TMP/jst" --json
check "revert --json: stdout is one JSON document of 7 restores; each logged on stderr" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.changes | length == 7' '$OUT' >/dev/null &&
	 grep -qx 'nodetune: revert: /proc/sys/kernel/numa_balancing: 0 -> 1' '$ERR'"
run "$NODETUNE" plan --policy $GT --topology $HGX --json
check "plan --json: stdout is JSON alone" -- sh -c "[ $RC -eq 0 ] && jq -e '.ranks | length == 8' '$OUT' >/dev/null"

# ---- where nodetune writes stdout, a failed write is exit 3 and one line --
if [ -w /dev/full ]; then
	T=$T_TMP/tree
	cp -r "$UNTUNED" "$T"
	h0=$(tree_hash "$T")
	while IFS='|' read -r args desc; do
		[ -n "$args" ] || continue
		eval "set -- $args"
		"$NODETUNE" "$@" >/dev/full 2>"$T_TMP/e"; RC=$?
		check "$desc >/dev/full: exit 3, one 'writing standard output failed' line (got $RC: $(grep -v warning: "$T_TMP/e" | head -2 | tr '\n' ' '))" -- sh -c \
			"[ $RC -eq 3 ] && [ \$(grep -c 'writing standard output failed' '$T_TMP/e') -eq 1 ] &&
			 [ \$(grep -vc ': warning: ' '$T_TMP/e') -eq 1 ]"
	done <<-EOF
	plan --policy $GT --json|plan --json
	plan --policy $GT|plan
	discover --topology $HGX|discover
	keys --markdown|keys --markdown
	verify --policy $GT --topology $HGX --sysroot $UNTUNED --json|verify --json
	doctor --topology $HGX --sysroot $HAZ --json|doctor --json
	apply --policy $GT --topology $HGX --sysroot $T --state-dir $T_TMP/fst --dry-run|apply --dry-run
	revert --state-dir $T_TMP/fst --json|revert --json
	plan --help|plan --help
	--version|--version
	observe --duration 0.3|observe
	EOF
	"$NODETUNE" apply --policy $GT --topology $HGX --sysroot "$T" --state-dir "$T_TMP/fst" --json >/dev/full 2>"$T_TMP/e"; RC=$?
	check "apply --json >/dev/full: exit 3, rolled back: the tree as before, no journal" -- sh -c \
		"[ $RC -eq 3 ] && grep -q 'writing standard output failed.*rolling back' '$T_TMP/e' &&
		 grep -q 'everything changed was rolled back' '$T_TMP/e' && [ '$h0' = '$(tree_hash "$T")' ] && [ ! -e '$T_TMP/fst/journal' ]"
else
	t_skips 12 t_skip_host devfull "/dev/full not writable"
fi
t_done
