#!/bin/sh
# SPDX-License-Identifier: MIT
# host: thp sysctl knobs cgroup state
# plan, apply, verify, revert, exec and run from the command line: on copied
# sysroot trees (compared by hash) and on this live host (restored after).
. "$(dirname "$0")/lib.sh"
t_plan 70

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
UNTUNED=tests/fixtures/sysroot/gpu-host-untuned
GT=policies/gpu-train.conf
ST=$T_TMP/state

# ---- plan on this host -------------------------------------------------
run "$NODETUNE" plan --policy $GT --ranks 2 --json
check "plan --json on this host exits 0" -- [ "$RC" -eq 0 ]
cp "$OUT" "$T_TMP/plan.json"
c0=$(jq -r '.ranks[0].cpus' "$T_TMP/plan.json") c1=$(jq -r '.ranks[1].cpus' "$T_TMP/plan.json")
if [ "$(getconf _NPROCESSORS_ONLN)" -eq 2 ]; then
	check "2-CPU host: rank 0 on CPU 0, rank 1 on CPU 1 (got $c0, $c1)" -- [ "$c0,$c1" = 0,1 ]
else
	check "rank 0 and rank 1 on CPUs of their own (got $c0, $c1)" -- sh -c "[ -n '$c0' ] && [ -n '$c1' ] && [ '$c0' != '$c1' ] && [ '$c0' != null ]"
fi
check "plan JSON has ranks[].{local_rank,gpu,cpus,mems,nic}, host[], cgroup, irqs[]" -- \
	jq -e '(.ranks[0] | has("local_rank") and has("gpu") and has("cpus") and has("mems") and has("nic"))
	       and (.host | type == "array") and (.cgroup.name == "nodetune-job") and (.irqs | type == "array")' "$T_TMP/plan.json"
run "$NODETUNE" plan --policy $GT --topology ../shared/topologies/g4dnmetal.xml --json
if [ -f ../shared/topologies/g4dnmetal.xml ]; then
	check "plan of gpu-train on g4dn.metal: 8 ranks on their T4's socket" -- \
		jq -e '[.ranks[] | .mems] == ["0","0","0","0","1","1","1","1"]' "$OUT"
else
	t_need ../shared "plan of gpu-train on g4dn.metal: no ../shared/topologies/g4dnmetal.xml"
fi
expect_fail 2 "3 ranks but only 2 CPUs" "more ranks than CPUs" -- "$NODETUNE" plan --policy $GT --synthetic "pack:1 core:2 pu:1" --ranks 3
expect_fail 2 "^nodetune: plan: --policy FILE\|NAME is required" "plan without --policy" -- "$NODETUNE" plan
expect_fail 2 "--ranks '0': expected a whole number from 1" "--ranks 0" -- "$NODETUNE" plan --policy $GT --ranks 0

# ---- bad policies and impossible plans change nothing --------------------
T=$T_TMP/tree
cp -r "$UNTUNED" "$T"
h0=$(tree_hash "$T")
printf '[main]\nsummary = x\n[afinity]\nmode = numa\n' >"$T_TMP/typo.conf"
expect_fail 2 "typo.conf:3: unknown section \[afinity\] \(did you mean \[affinity\]\?\)" "apply of a policy with a typo" -- \
	"$NODETUNE" apply --policy "$T_TMP/typo.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
printf '[main]\ninclude = b.conf\n' >"$T_TMP/a.conf"; printf '[main]\ninclude = a.conf\n' >"$T_TMP/b.conf"
expect_fail 2 "b.conf:2: include cycle: .*a.conf -> .*b.conf -> .*a.conf" "apply of an include cycle" -- \
	"$NODETUNE" apply --policy "$T_TMP/a.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
expect_fail 2 "nope.conf: no such file" "apply of a missing policy" -- \
	"$NODETUNE" apply --policy "$T_TMP/nope.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
printf '[affinity]\nmode = gpu-local\nhousekeeping = 0-95\n[thp]\nenabled = never\n' >"$T_TMP/impossible.conf"
expect_fail 2 "no CPUs left for rank 0" "apply of an impossible plan" -- \
	"$NODETUNE" apply --policy "$T_TMP/impossible.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
if [ "$(id -u)" -eq 0 ]; then
	cp $GT "$T_TMP/open.conf" && chmod 666 "$T_TMP/open.conf"
	expect_fail 2 "open.conf: refusing a policy writable by group or others" "root refuses a world-writable policy" -- \
		"$NODETUNE" apply --policy "$T_TMP/open.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
else
	t_skip_host root "a permission check that applies only to root: not root"
fi
# ---- site limits (issue 24 item 5): refused before anything changes ------
printf '[main]\ninclude = %s\n[cgroup]\ncpu_weight = 5000\n' "$(pwd)/$GT" >"$T_TMP/heavy.conf"
printf '# site\n[cgroup]\ncpu_weight = 2000\n[hugetlb]\nshare = 25%%\n' >"$T_TMP/limits.conf"
expect_fail 2 "heavy.conf:4: \[cgroup\] cpu_weight = 5000 is above the site limit 2000 \(.*limits.conf:3\)$" \
	"apply of a policy beyond --limits names the key and the limit" -- \
	"$NODETUNE" apply --policy "$T_TMP/heavy.conf" --limits "$T_TMP/limits.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
expect_fail 2 "heavy.conf:4: \[cgroup\] cpu_weight = 5000 is above the site limit 2000" "--dry-run is refused the same" -- \
	"$NODETUNE" apply --dry-run --policy "$T_TMP/heavy.conf" --limits "$T_TMP/limits.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
printf '[hugetlb]\npages_1g = 300\n' >"$T_TMP/huge.conf"
expect_fail 2 "huge.conf:2: \[hugetlb\] pages reserve 307200 MiB on NUMA node 0, above the site limit share = 25% of its 1031018 MiB" \
	"hugetlb pages beyond the share of a node's memory" -- \
	"$NODETUNE" apply --policy "$T_TMP/huge.conf" --limits "$T_TMP/limits.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
expect_fail 2 "heavy.conf:4: \[cgroup\] cpu_weight = 5000 is above the site limit 2000" "run is refused before it starts anything" -- \
	"$NODETUNE" run -n 1 --policy "$T_TMP/heavy.conf" --limits "$T_TMP/limits.conf" --state-dir "$ST" -- true
# the value beyond the limit in an included base file (review G4): the
# error names the base file and its line, not the top file that includes it
printf '[main]\ninclude = %s\n[cgroup]\ncpu_weight = 5000\n' "$(pwd)/$GT" >"$T_TMP/limbase.conf"
printf '[main]\nsummary = top within them\ninclude = %s\n[thp]\nenabled = never\n' "$T_TMP/limbase.conf" >"$T_TMP/limtop.conf"
chmod 644 "$T_TMP/limbase.conf" "$T_TMP/limtop.conf"
expect_fail 2 "limbase.conf:4: \[cgroup\] cpu_weight = 5000 is above the site limit 2000 \(.*limits.conf:3\)$" \
	"apply of a policy whose included base file is beyond --limits names base.conf:LINE" -- \
	"$NODETUNE" apply --policy "$T_TMP/limtop.conf" --limits "$T_TMP/limits.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
printf '[cgroup]\ncpu_weight = lots\n' >"$T_TMP/badlimits.conf"
expect_fail 2 "badlimits.conf:2: \[cgroup\] cpu_weight 'lots': expected a whole number from 1 to 10000" "a bad limits file" -- \
	"$NODETUNE" apply --policy $GT --limits "$T_TMP/badlimits.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
run "$NODETUNE" apply --dry-run --policy $GT --limits "$T_TMP/limits.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
check "a policy within the limits goes on (dry run, exit 0)" -- [ "$RC" -eq 0 ]
if [ "$(id -u)" -eq 0 ]; then
	chmod 666 "$T_TMP/limits.conf"
	expect_fail 2 "limits.conf: refusing site limits writable by group or others" "root refuses world-writable limits" -- \
		"$NODETUNE" apply --dry-run --policy $GT --limits "$T_TMP/limits.conf" --topology $HGX --sysroot "$T" --state-dir "$ST"
else
	t_skip_host root "a permission check that applies only to root: not root"
fi
check "none of those changed the tree or left a journal" -- sh -c "[ '$h0' = '$(tree_hash "$T")' ] && [ ! -e '$ST/journal' ]"

# ---- policies by name: the policy path, include = NAME, list, show, active --
PP=$T_TMP/pp
mkdir -p "$PP/etc" "$PP/share" && chmod 755 "$PP" "$PP/etc" "$PP/share"
cp policies/*.conf "$PP/share/" && chmod 644 "$PP"/share/*.conf
printf '[main]\nsummary = site\ninclude = gpu-train\n[sysctl]\nvm.swappiness = 10\n' >"$PP/etc/site.conf"
sed 's/^summary = .*/summary = the site'"'"'s baseline/' policies/baseline.conf >"$PP/etc/baseline.conf"
# the site's gpu-train: the shared one (by its path) and a key more
printf '[main]\nsummary = site gpu-train\ninclude = %s\n[sysctl]\nvm.max_map_count = 1048576\n' "$PP/share/gpu-train.conf" \
	>"$PP/etc/gpu-train.conf"
chmod 644 "$PP"/etc/*.conf
export NODETUNE_POLICY_PATH="$PP/etc:$PP/share"
run "$NODETUNE" plan --policy gpu-train --topology $HGX --json
check "plan --policy NAME: NAME.conf found on NODETUNE_POLICY_PATH" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.policy == \"gpu-train\" and (.host | length) > 0' '$OUT' >/dev/null"
run "$NODETUNE" policy show site --json
check "policy show NAME: include = NAME resolved on the path; each key says its file" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.file == \"$PP/etc/site.conf\" and
	 ([.settings[] | select(.key == \"vm.swappiness\")][0].file == \"$PP/etc/site.conf\") and
	 ([.settings[] | select(.key == \"defrag\")][0].file == \"$PP/share/gpu-train.conf\")' '$OUT' >/dev/null"
check "include = gpu-train took /etc's gpu-train, not the shared one (the first on the path wins)" -- \
	jq -e '[.settings[] | select(.key == "vm.max_map_count")][0].file == "'"$PP"'/etc/gpu-train.conf"' "$OUT"
run "$NODETUNE" policy list --json
check "policy list: every NAME in path order, /etc's baseline first, the shared one shadowed" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '[.policies[] | .name] == [\"baseline\", \"gpu-train\", \"site\", \"baseline\", \"gpu-shared\", \"gpu-train\"] and
	 .policies[0].summary == \"the site'\"'\"'s baseline\" and .policies[3].shadowed and .policies[5].shadowed and
	 (.policies[0].shadowed | not) and (.policies[4].shadowed | not)' '$OUT' >/dev/null"
run "$NODETUNE" policy list
check "policy list (text): the path, then each name with its file" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^policy path: $PP/etc:$PP/share\$' '$OUT' && grep -q '^  gpu-train  *$PP/share/gpu-train.conf (shadowed)\$' '$OUT' &&
	 grep -qx '  looked in $PP/etc: 3 policies' '$OUT' && grep -qx '  looked in $PP/share: 3 policies' '$OUT' && ! grep -q '^\*' '$OUT'"
# F23: show in file order, the provenance column aligned; an empty policy says so
run "$NODETUNE" policy show site
check "policy show (text): each file's keys by line, the policy's own file last, the file:line column aligned" -- \
	awk -v pp="$PP/" 'NR >= 4 { c = index($0, pp); split(substr($0, c), f, ":")
		if (col && c != col) bad = 1; col = c
		if (f[1] == last && f[2] + 0 <= ln) bad = 1; last = f[1]; ln = f[2] + 0 }
		END { exit bad || last != pp "etc/site.conf" || NR < 10 }' "$OUT"
run "$NODETUNE" policy show baseline
check "policy show baseline: '(no keys: changes nothing)'" -- sh -c "[ $RC -eq 0 ] && grep -qx '(no keys: changes nothing)' '$OUT'"
expect_fail 2 "no policy named 'nope' in $PP/etc:$PP/share" "--policy NAME that the path does not have" -- \
	"$NODETUNE" plan --policy nope --topology $HGX
printf '[main]\ninclude = nope\n' >"$PP/etc/broken.conf" && chmod 644 "$PP/etc/broken.conf"
expect_fail 2 "broken.conf:2: include 'nope': no policy named 'nope'" "include = NAME that the path does not have" -- \
	"$NODETUNE" plan --policy broken --topology $HGX
rm "$PP/etc/broken.conf"
expect_fail 2 "'a b': not a policy name" "a NAME with a space" -- "$NODETUNE" plan --policy 'a b' --topology $HGX
if [ "$(id -u)" -eq 0 ]; then
	chmod 777 "$PP/share"
	expect_fail 2 "refusing the directory $PP/share .*mode 0777" "root refuses a group/other-writable directory of the path, even after the one that has the NAME" -- \
		"$NODETUNE" plan --policy site --topology $HGX
	expect_fail 2 "refusing the directory $PP/share" "policy list refuses it too" -- "$NODETUNE" policy list
	chmod 755 "$PP/share"
else
	t_skips 2 t_skip_host root "the permission checks that apply only to root: not root"
fi
NODETUNE_POLICY_PATH=relative/dir expect_fail 2 "'relative/dir' is not an absolute directory" "a relative directory on NODETUNE_POLICY_PATH" -- \
	"$NODETUNE" plan --policy gpu-train --topology $HGX

# policy active: what the journal (here --state-dir's; no daemon) says is applied
AT=$T_TMP/active-tree
cp -r "$UNTUNED" "$AT"
run "$NODETUNE" policy active --state-dir "$T_TMP/ast" --socket "$T_TMP/no.sock" --json
check "policy active before any apply: nothing active, no daemon" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.active == null and .daemon == null and .journals == []' '$OUT' >/dev/null"
"$NODETUNE" apply --policy site --topology $HGX --sysroot "$AT" --state-dir "$T_TMP/ast" >/dev/null 2>&1
arc=$?
run "$NODETUNE" policy active --state-dir "$T_TMP/ast" --socket "$T_TMP/no.sock" --json
check "policy active after apply --policy site (exit $arc): the journal's policy, applied, its originals counted" -- sh -c \
	"[ $arc -eq 0 ] && [ $RC -eq 0 ] && jq -e '.active == \"site\" and .journals[0].committed and .journals[0].changes == 7' '$OUT' >/dev/null"
run "$NODETUNE" policy list --state-dir "$T_TMP/ast" --socket "$T_TMP/no.sock"
check "policy list marks the active one (what policy active says): site" -- sh -c \
	"[ $RC -eq 0 ] && grep -qx '\* site  *$PP/etc/site.conf (active)' '$OUT' && [ \$(grep -c '^\*' '$OUT') -eq 1 ]"
run "$NODETUNE" policy list --state-dir "$T_TMP/ast" --socket "$T_TMP/no.sock" --json
check "policy list --json: active, and the directories looked in" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.active == \"site\" and ([.policies[] | select(.active) | .name] == [\"site\"]) and ([.searched[].exists] == [true, true])' '$OUT' >/dev/null"
run "$NODETUNE" policy active --state-dir "$T_TMP/ast" --socket "$T_TMP/no.sock"
check "policy active (text): no daemon, the journal, the active policy" -- sh -c \
	"grep -q '^daemon:  none answers on $T_TMP/no.sock' '$OUT' && grep -q '^journal: $T_TMP/ast: site, applied, 7 originals kept' '$OUT' && grep -qx 'active:  site' '$OUT'"
"$NODETUNE" revert --sysroot "$AT" --state-dir "$T_TMP/ast" >/dev/null 2>&1
rrc=$?
run "$NODETUNE" policy active --state-dir "$T_TMP/ast" --socket "$T_TMP/no.sock" --json
check "policy active after revert (exit $rrc): nothing" -- sh -c "[ $rrc -eq 0 ] && jq -e '.active == null' '$OUT' >/dev/null"
unset NODETUNE_POLICY_PATH

# ---- apply --dry-run promises what apply does: no job cgroup on a sysroot --
DT=$T_TMP/dry-tree
cp -r "$UNTUNED" "$DT"
run "$NODETUNE" apply --dry-run --policy $GT --topology $HGX --sysroot "$DT" --state-dir "$T_TMP/dst"
cp "$OUT" "$T_TMP/dry.out"
run "$NODETUNE" apply --policy $GT --topology $HGX --sysroot "$DT" --state-dir "$T_TMP/dst"
check "dry run on a sysroot: no 'job cgroup ... would be created', the note apply gives, the same count" -- sh -c \
	"! grep -q 'would be created' '$T_TMP/dry.out' && grep -q 'job cgroup nodetune-job: not created, $DT is not the live host' '$T_TMP/dry.out' &&
	 n=\$(sed -n 's/^dry run of .*: \([0-9]*\) changes*, nothing written/\1/p' '$T_TMP/dry.out') && [ -n \"\$n\" ] &&
	 [ \"\$n\" = \"\$(sed -n 's/.*): \([0-9]*\) changes*$/\1/p' '$OUT')\" ]"
"$NODETUNE" revert --sysroot "$DT" --state-dir "$T_TMP/dst" >/dev/null 2>&1

# ---- apply, verify, revert on a copied tree ----------------------------
run "$NODETUNE" apply --policy $GT --topology $HGX --sysroot "$T" --state-dir "$ST"
check "apply on the tree: exit 0, each change logged as path: old -> new" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^nodetune: apply: /sys/kernel/mm/transparent_hugepage/defrag: always -> defer+madvise$' '$ERR'"
check "the tree holds what was written" -- [ "$(cat "$T/sys/kernel/mm/transparent_hugepage/defrag")" = "defer+madvise" ]
run "$NODETUNE" verify --policy $GT --topology $HGX --sysroot "$T" --json
check "verify after apply: exit 0, no drift" -- sh -c "[ $RC -eq 0 ] && jq -e '.drift == [] and .checked == 7' '$OUT' >/dev/null"
echo 1 >"$T/proc/sys/kernel/numa_balancing"
run "$NODETUNE" verify --policy $GT --topology $HGX --sysroot "$T"
check "verify after someone turned balancing back on: exit 1, names path, expected, actual" -- sh -c \
	"[ $RC -eq 1 ] && grep -q '^drift: /proc/sys/kernel/numa_balancing: expected 0, actual 1$' '$OUT'"
# the plan's notes (HGX: cores left unassigned) are plan's output: verify
# says them with -v only, and never as a warning
check "verify: the plan's notes not repeated on stderr (no warning:)" -- sh -c "[ ! -s '$ERR' ]"
run "$NODETUNE" verify --policy $GT --topology $HGX --sysroot "$T" -v
check "verify -v: the plan's notes, as notes" -- sh -c \
	"[ $RC -eq 1 ] && grep -q '^nodetune: verify: note: GPU 0 (.*): 23 cores for 4 ranks: 3 core(s) left unassigned' '$ERR' &&
	 ! grep -q 'warning:' '$ERR'"
run "$NODETUNE" revert --sysroot "$T" --state-dir "$ST"
check "revert: exit 0 and the tree is byte-for-byte as before" -- sh -c "[ $RC -eq 0 ] && [ '$h0' = '$(tree_hash "$T")' ]"

# ---- SIGKILL between two writes, then revert ----------------------------
# The third setting's file is a FIFO.  The test feeds it once, which serves
# the planner's read; apply then makes its first two writes and blocks
# reading the third file, and is killed there.
K=$T_TMP/killed
cp -r "$UNTUNED" "$K"
hk=$(tree_hash "$K")
NB=$K/proc/sys/kernel/numa_balancing
rm "$NB" && mkfifo "$NB"
"$NODETUNE" apply --policy $GT --topology $HGX --sysroot "$K" --state-dir "$ST" 2>/dev/null &
pid=$!
printf '1\n' >"$NB"
i=0
while [ "$(grep -c '^file' "$ST/journal" 2>/dev/null)" != 2 ] && [ $i -lt 200 ]; do
	sleep 0.05; i=$((i + 1))
done
# then until apply sleeps in the kernel on the FIFO (opening or reading it:
# no writer now), where it can write nothing more: the check below holds
# by construction, with no window to outlast the rest of the apply (whole
# applies took up to 0.15 s plain and 0.67 s under ASan at load 12-15,
# bench/RESULTS.md §14, window_apply_s: a 0.2 s window was 1.3x and 0.3x)
wait_until 10 sh -c "grep -qxE 'wait_for_partner|pipe_read|fifo_open' /proc/$pid/task/*/wchan" ||
	t_not_ok "apply is not asleep on the FIFO $NB within 10 s: $(cat /proc/$pid/task/*/wchan 2>/dev/null)"
kill -9 $pid; wait $pid 2>/dev/null
check "apply killed between its 2nd and 3rd write: two settings changed, journal has 2 entries, no commit" -- sh -c \
	"[ \$(grep -c '^file' '$ST/journal') -eq 2 ] && ! grep -q '^commit' '$ST/journal' &&
	 [ \"\$(cat '$K/sys/kernel/mm/transparent_hugepage/defrag')\" = defer+madvise ]"
rm "$NB" && cp "$UNTUNED/proc/sys/kernel/numa_balancing" "$NB"
run "$NODETUNE" revert --sysroot "$K" --state-dir "$ST"
check "revert after SIGKILL restores the tree byte for byte, says the apply did not complete" -- sh -c \
	"[ $RC -eq 0 ] && [ '$hk' = '$(tree_hash "$K")' ] && grep -q 'did not complete' '$ERR' && [ ! -e '$ST/journal' ]"

# ---- the live host -----------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
	t_skip_host root "live apply/exec/run: not root"
	t_rest
fi
CG=nodetune-it-$$
printf '[main]\ninclude = %s/%s\n[cgroup]\nname = %s\n' "$SRCDIR" $GT $CG >"$T_TMP/live.conf"
thp0=$(cat /sys/kernel/mm/transparent_hugepage/defrag) nb0=$(cat /proc/sys/kernel/numa_balancing)
LST=$T_TMP/live-state
cleanup_live() { "$NODETUNE" revert --state-dir "$LST" >/dev/null 2>&1; }
t_defer cleanup_live

run "$NODETUNE" apply --policy "$T_TMP/live.conf" --state-dir "$LST"
check "live apply: exit 0" -- [ "$RC" -eq 0 ]
# whether the job cgroup must be made is read from the host (a cpuset
# controller: cgroup v1's own hierarchy, or in cgroup2's root), never from
# what nodetune says it did
cg_host=0
if [ -e /sys/fs/cgroup/cpuset/cgroup.procs ] || grep -qw cpuset /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	cg_host=1
	check "live apply on a host with a cpuset controller: the job cgroup $CG created" -- grep -q "cgroup:$CG: - -> created" "$ERR"
else
	t_skip_host cgroup-cpuset "job cgroup: no cpuset controller on this host (/sys/fs/cgroup)"
fi
run "$NODETUNE" verify --policy "$T_TMP/live.conf" --json
check "live verify: no drift" -- sh -c "[ $RC -eq 0 ] && jq -e '.drift == []' '$OUT' >/dev/null"

# exec each rank: the kernel's view of the child matches the plan
"$NODETUNE" plan --policy "$T_TMP/live.conf" --ranks 2 --json >"$T_TMP/live-plan.json" ||
	t_not_ok "live plan --json: exit $?"
for r in 0 1; do
	want_c=$(jq -r ".ranks[$r].cpus" "$T_TMP/live-plan.json") want_m=$(jq -r ".ranks[$r].mems" "$T_TMP/live-plan.json")
	"$NODETUNE" exec --policy "$T_TMP/live.conf" --local-rank $r --local-size 2 -- \
		sh -c 'cat /proc/self/status /proc/self/cgroup; sleep 5 & p=$!; grep Cpus_allowed_list /proc/$p/status; s=$?; kill $p; exit $s' \
		>"$T_TMP/st$r" 2>"$T_TMP/e$r"
	erc=$?
	got_c=$(awk '/^Cpus_allowed_list/ {print $2; exit}' "$T_TMP/st$r")
	got_m=$(awk '/^Mems_allowed_list/ {print $2}' "$T_TMP/st$r")
	# the second Cpus_allowed_list: the rank's own child (read while it runs)
	got_g=$(awk '/^Cpus_allowed_list/ {n++} n == 2 {print $2; exit}' "$T_TMP/st$r")
	check "exec rank $r: exit $erc, Cpus_allowed_list $got_c = plan $want_c (its child's: $got_g), Mems_allowed_list $got_m = plan $want_m" -- \
		[ "$erc/$got_c/$got_g/$got_m" = "0/$want_c/$want_c/$want_m" ]
	if [ $cg_host = 1 ]; then # cgroup v1 ("N:cpuset:/CG") or v2 ("0::/CG")
		check "exec rank $r runs in the job cgroup $CG" -- grep -Eq "^[0-9]+:(cpuset|):/$CG\$" "$T_TMP/st$r"
	else
		t_skip_host cgroup-cpuset "exec rank $r in the job cgroup: no cpuset controller"
	fi
done
if command -v mpirun >/dev/null; then
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 mpirun --oversubscribe -np 2 \
		"$NODETUNE" exec --policy "$T_TMP/live.conf" -- sh -c 'echo "$OMPI_COMM_WORLD_LOCAL_RANK $(awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status)"' \
		>"$T_TMP/mpi" 2>"$T_TMP/mpierr"
	mrc=$?
	check "under mpirun -np 2, each rank binds itself from OMPI_COMM_WORLD_LOCAL_RANK (exit $mrc)" -- sh -c \
		"[ $mrc -eq 0 ] && [ \"\$(sort '$T_TMP/mpi' | tr '\n' ' ')\" = '0 $(jq -r '.ranks[0].cpus' "$T_TMP/live-plan.json") 1 $(jq -r '.ranks[1].cpus' "$T_TMP/live-plan.json") ' ]"
else
	t_need mpirun "exec under mpirun -np 2: mpirun is not installed"
fi
run "$NODETUNE" revert --state-dir "$LST"
check "live revert: THP defrag and numa_balancing as before, job cgroup gone" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(cat /sys/kernel/mm/transparent_hugepage/defrag)\" = '$thp0' ] &&
	 [ \"\$(cat /proc/sys/kernel/numa_balancing)\" = '$nb0' ] && ! grep -qs $CG /proc/self/mounts &&
	 [ ! -d /sys/fs/cgroup/cpuset/$CG ] && [ ! -d /sys/fs/cgroup/$CG ]"

# run: apply, N bound ranks, worst status, revert
run "$NODETUNE" run -n 2 --policy "$T_TMP/live.conf" --state-dir "$LST" -- \
	sh -c 'echo "rank $LOCAL_RANK $(awk "/^Cpus_allowed_list/ {print \$2}" /proc/self/status)"; exit $((LOCAL_RANK * 7))'
check "run -n 2: exit is the worst rank status (7), ranks on their planned CPUs" -- sh -c \
	"[ $RC -eq 7 ] && grep -qx 'rank 0 $(jq -r '.ranks[0].cpus' "$T_TMP/live-plan.json")' '$OUT' &&
	 grep -qx 'rank 1 $(jq -r '.ranks[1].cpus' "$T_TMP/live-plan.json")' '$OUT'"
check "after run: host reverted, no journal, no cgroup" -- sh -c \
	"[ \"\$(cat /sys/kernel/mm/transparent_hugepage/defrag)\" = '$thp0' ] && [ ! -e '$LST/journal' ] && [ ! -d /sys/fs/cgroup/cpuset/$CG ] &&
	 [ ! -d /sys/fs/cgroup/$CG ]"

# a job cgroup that exists before apply is someone else's: apply refuses it
# (exit 3, one line, the rest rolled back), and a revert never removes it
if [ $cg_host = 1 ]; then
	cgdir=/sys/fs/cgroup/cpuset/$CG
	[ -d /sys/fs/cgroup/cpuset ] || cgdir=/sys/fs/cgroup/$CG
	mkdir "$cgdir" && t_defer "rmdir '$cgdir' 2>/dev/null"
	expect_fail 3 "^nodetune: apply: cgroup $CG exists already and is not ours.*rolled back" \
		"apply over an existing cgroup $CG: refused, rolled back" -- \
		"$NODETUNE" apply --policy "$T_TMP/live.conf" --state-dir "$LST"
	run "$NODETUNE" revert --state-dir "$LST"
	check "revert after it: exit $RC, THP defrag as before, and $cgdir is still there" -- sh -c \
		"[ $RC -eq 0 ] && [ \"\$(cat /sys/kernel/mm/transparent_hugepage/defrag)\" = '$thp0' ] && [ -d '$cgdir' ]"
	rmdir "$cgdir"
else
	t_skips 2 t_skip_host cgroup-cpuset "a cgroup of the job's name made by another: no cpuset controller"
fi
expect_fail 2 "no-such-command: command not found" "run of a command that does not exist changes nothing" -- \
	"$NODETUNE" run -n 2 --policy "$T_TMP/live.conf" --state-dir "$LST" -- no-such-command
expect_fail 2 "no local rank" "exec outside a launcher without --local-rank" -- \
	env -u OMPI_COMM_WORLD_LOCAL_RANK -u SLURM_LOCALID -u LOCAL_RANK "$NODETUNE" exec --policy "$T_TMP/live.conf" -- true
# ---- revert finds the journal of either default state dir ------------------
# nodetune apply's is /run/nodetune, the daemon's /var/lib/nodetune: a plain
# `nodetune revert` (what the daemon's log says to run) looks in both
if [ -e /run/nodetune/journal ] || [ -e /var/lib/nodetune/journal ]; then
	t_skips 3 t_skip_host clean "revert's lookup: this host already has a journal in /run/nodetune or /var/lib/nodetune"
else
	made_run=1 made_var=1
	[ -d /run/nodetune ] && made_run=0
	[ -d /var/lib/nodetune ] && made_var=0
	sw0=$(cat /proc/sys/vm/swappiness)
	printf '[sysctl]\nvm.swappiness = %s\n' $((sw0 == 61 ? 62 : 61)) >"$T_TMP/sw.conf"
	"$NODETUNE" apply --policy "$T_TMP/sw.conf" --state-dir /var/lib/nodetune >/dev/null 2>&1
	run "$NODETUNE" revert
	check "plain revert finds the daemon's state dir's journal, says so, restores" -- sh -c \
		"[ $RC -eq 0 ] && grep -q 'reverting the journal in /var/lib/nodetune' '$ERR' &&
		 [ \"\$(cat /proc/sys/vm/swappiness)\" = '$sw0' ] && [ ! -e /var/lib/nodetune/journal ]"
	"$NODETUNE" apply --policy "$T_TMP/sw.conf" --state-dir /var/lib/nodetune >/dev/null 2>&1
	a1=$?
	"$NODETUNE" apply --policy "$T_TMP/sw.conf" >/dev/null 2>&1
	a2=$?
	expect_fail 2 "journals in both /run/nodetune .* and /var/lib/nodetune .*: give --state-dir DIR" \
		"revert with a journal in each default dir asks which, restores nothing" -- "$NODETUNE" revert
	# the /var/lib one alone restores sw0 (the /run apply found the value
	# set already): only the exit statuses and the journals show that the
	# /run revert worked too
	"$NODETUNE" revert --state-dir /run/nodetune >/dev/null 2>&1
	r1=$?
	"$NODETUNE" revert --state-dir /var/lib/nodetune >/dev/null 2>&1
	r2=$?
	check "after reverting both: applies $a1 $a2 and reverts $r1 $r2 exit 0, swappiness as before, both journals gone" -- sh -c \
		"[ '$a1 $a2 $r1 $r2' = '0 0 0 0' ] && [ \"\$(cat /proc/sys/vm/swappiness)\" = '$sw0' ] &&
		 [ ! -e /run/nodetune/journal ] && [ ! -e /var/lib/nodetune/journal ]"
	[ $made_run = 1 ] && rm -f /run/nodetune/lock && rmdir /run/nodetune
	[ $made_var = 1 ] && rm -f /var/lib/nodetune/lock && rmdir /var/lib/nodetune
fi

# ---- keys: every key with the values it takes, in 79 columns ------------
"$NODETUNE" keys --json >"$T_TMP/keys.json" && "$NODETUNE" keys --markdown >"$T_TMP/keys.md" ||
	t_not_ok "keys --json or --markdown failed"
run "$NODETUNE" keys
check "keys: a KEY and a VALUES column, each key on a line with its values (those of --markdown)" -- python3 -c '
import json, re, sys
out = open(sys.argv[1]).read().split("\n")
md = {}
for l in open(sys.argv[3]):
    c = [x.strip() for x in l.split("|")]
    if len(c) > 3 and c[2].startswith("`"):
        md.setdefault(c[2].strip("`"), []).append(c[3])
bad = [] if re.match(r"^KEY +VALUES$", out[0]) else ["header: " + out[0]]
for k in json.load(open(sys.argv[2]))["keys"]:
    want = "[%s] %s" % (k["section"], k["key"])
    line = [i for i, l in enumerate(out) if l.startswith(want + " ")]
    vals = md[k["key"]].pop(0)
    text = " ".join(x.strip() for x in out[line[0]:line[0] + 3]) if line else ""
    if not line or vals not in text or k["help"].split()[0] not in text:
        bad.append(want + " (values " + vals + ")")
print("\n".join("# " + b for b in bad), file=sys.stderr)
sys.exit(1 if bad else 0)' "$OUT" "$T_TMP/keys.json" "$T_TMP/keys.md"
check "keys: exit 0, no line past 79 columns" -- sh -c 'awk "length > 79" "$1" >&2; [ "$2" -eq 0 ] && [ -z "$(awk "length > 79" "$1")" ]' - "$OUT" "$RC"
t_done
