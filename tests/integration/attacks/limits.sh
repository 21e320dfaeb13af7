# SPDX-License-Identifier: MIT
# attacks/limits.sh — site limits everywhere a policy is applied, and job
# cgroup ownership (security.md L1, L5; issue 38 items 6 and 7), sourced by
# test_attacks.sh after lib.sh.
#
#   L1  a site whose /etc/nodetune/limits.conf caps vm.swappiness at 10 (put
#       there in a mount namespace of the check's own, over /etc, so that
#       the host's /etc is not touched), and a policy of swappiness 100 that
#       apply refuses: through `ab` (a sysroot tree, whose swappiness the job
#       reads during the trials), `ab --limits FILE`, and `bisect` (the live
#       host: the same, restored after); and a limit that is a floor
#       (`[sched] nice = 0`) against a policy of nice -5, through `run` on
#       this host (the rank's own niceness read back)
#   L5  the job cgroup apply made, removed and made again by someone else
#       (a process in it) before the revert: the revert must leave it
#
# Each was run first against the build before the fix (NODETUNE=/work/old/
# build/nodetune): ab and bisect ran their trials with swappiness 100, run
# started its rank at nice -5, and the revert removed the other group,
# moving its process out.

LIMITS_HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
LIMITS_DIR=$T_TMP/limits
mkdir -p "$LIMITS_DIR/ov"
chmod 755 "$LIMITS_DIR"
printf '# site\n[sysctl]\nvm.swappiness = 10\n' >"$LIMITS_DIR/limits.conf"
printf '[main]\nsummary = beyond the limits\n[sysctl]\nvm.swappiness = 100\n' >"$LIMITS_DIR/p.conf"
printf '[main]\nsummary = good\n' >"$LIMITS_DIR/good.conf"
chmod 644 "$LIMITS_DIR"/*.conf

# limits_site CMD...: CMD on a host whose /etc/nodetune/limits.conf is
# $LIMITS_DIR/limits.conf: a private mount namespace with an overlay on /etc
# (its upper layer a tmpfs), gone when CMD and its children end
limits_site() {
	unshare -m sh -c '
		mount --make-rprivate / && mount -t tmpfs none "$0" && mkdir "$0/u" "$0/w" &&
		mount -t overlay overlay -o "lowerdir=/etc,upperdir=$0/u,workdir=$0/w" /etc &&
		mkdir -p /etc/nodetune && cp "$1" /etc/nodetune/limits.conf &&
		chmod 644 /etc/nodetune/limits.conf || exit 99
		shift
		exec "$@"' "$LIMITS_DIR/ov" "$LIMITS_DIR/limits.conf" "$@"
}
LIMITS_SITE_OK=no
if [ "$(id -u)" -eq 0 ] && limits_site grep -q 'swappiness = 10' /etc/nodetune/limits.conf 2>/dev/null; then
	LIMITS_SITE_OK=yes
fi

# ---- L1: ab applies a policy beyond the site limits (a sysroot tree) -----
LIMITS_REFUSED="p.conf:4: \[sysctl\] vm.swappiness = 100 is above the site limit 10 \(.*limits.conf:3\)$"
limits_ab() {
	tree=$LIMITS_DIR/tree
	cp -r tests/fixtures/sysroot/gpu-host-untuned "$tree"
	mkdir -p "$tree/proc/sys/vm"
	echo 60 >"$tree/proc/sys/vm/swappiness"
	h0=$(tree_hash "$tree")
	expect_fail 2 "^nodetune: apply: .*$LIMITS_REFUSED" "L1: apply refuses the policy beyond the site's limits.conf" -- \
		limits_site "$NODETUNE" apply --policy "$LIMITS_DIR/p.conf" \
		--topology $LIMITS_HGX --sysroot "$tree" --state-dir "$LIMITS_DIR/st-apply"
	# the job writes the tree's swappiness during each trial
	expect_fail 2 "^nodetune: ab: arm A: .*$LIMITS_REFUSED" \
		"L1: ab refuses the same policy before any trial, in one line" -- \
		limits_site "$NODETUNE" ab --a="policy=$LIMITS_DIR/p.conf" --b="policy=$LIMITS_DIR/p.conf" \
		--trials 2 --budget 2 --topology $LIMITS_HGX --sysroot "$tree" --trial-dir "$LIMITS_DIR/ab-trials" -- \
		sh -c 'cat "$NODETUNE_SYSROOT/proc/sys/vm/swappiness" >>"$0"' "$LIMITS_DIR/ab-seen"
	check "L1: no trial of ab ran under it (what its job saw: $(sort -u "$LIMITS_DIR/ab-seen" 2>/dev/null | tr '\n' ' '))" -- \
		test ! -e "$LIMITS_DIR/ab-seen"
	check "L1: the tree ab was given is byte-identical" -- test "$h0" = "$(tree_hash "$tree")"
	# the limits a daemon names (--limits), as the fleet gate passes them
	expect_fail 2 "^nodetune: ab: arm A: .*$LIMITS_REFUSED" "L1: ab --limits FILE refuses it the same" -- \
		"$NODETUNE" ab --a="policy=$LIMITS_DIR/p.conf" --b="policy=$LIMITS_DIR/p.conf" --limits "$LIMITS_DIR/limits.conf" \
		--trials 2 --budget 2 --topology $LIMITS_HGX --sysroot "$tree" --trial-dir "$LIMITS_DIR/ab-trials2" -- \
		sh -c 'cat "$NODETUNE_SYSROOT/proc/sys/vm/swappiness" >>"$0"' "$LIMITS_DIR/ab-seen"
	check "L1: the tree is still byte-identical, no trial ran" -- \
		sh -c "[ '$h0' = '$(tree_hash "$tree")' ] && [ ! -e '$LIMITS_DIR/ab-seen' ]"
}

# ---- L1: bisect applies it on this host ---------------------------------
limits_bisect() {
	if [ ! -w /proc/sys/vm/swappiness ]; then
		t_skip_host root "L1 bisect: needs a writable vm.swappiness"
		return
	fi
	before=$(cat /proc/sys/vm/swappiness)
	t_defer "echo $before >/proc/sys/vm/swappiness"
	expect_fail 2 "^nodetune: bisect: --bad: .*$LIMITS_REFUSED" \
		"L1: bisect refuses a --bad policy beyond the limits before any test, in one line" -- \
		limits_site "$NODETUNE" bisect --good "$LIMITS_DIR/good.conf" --bad "$LIMITS_DIR/p.conf" --trials 2 --budget 2 -- \
		sh -c 'cat /proc/sys/vm/swappiness >>"$0"' "$LIMITS_DIR/bisect-seen"
	check "L1: no test of bisect ran (what its job saw: $(sort -u "$LIMITS_DIR/bisect-seen" 2>/dev/null | tr '\n' ' '))" -- \
		test ! -e "$LIMITS_DIR/bisect-seen"
	check "L1: vm.swappiness unchanged ($before)" -- test "$(cat /proc/sys/vm/swappiness)" = "$before"
}

if [ "$LIMITS_SITE_OK" = yes ]; then
	limits_ab
	limits_bisect
else
	t_skip_host root "L1 ab, bisect: needs root, unshare and overlayfs (a limits.conf at the default path of a private /etc)"
fi

# ---- L1: a floor: [sched] nice = 0 against a policy of nice -5 ------------
limits_nice() {
	if [ "$(id -u)" -ne 0 ]; then
		t_skip_host root "L1 nice floor: needs root to start a rank at nice -5"
		return
	fi
	printf '[sched]\nnice = 0\n' >"$LIMITS_DIR/nice-limits.conf"
	printf '[main]\nsummary = more priority than the site allows\n[sched]\nnice = -5\n' >"$LIMITS_DIR/nice.conf"
	chmod 644 "$LIMITS_DIR/nice-limits.conf" "$LIMITS_DIR/nice.conf"
	# the rank writes its own niceness (field 19 of /proc/self/stat)
	expect_fail 2 "^nodetune: run: .*nice.conf:4: \[sched\] nice = -5 is below the site floor 0 \(.*nice-limits.conf:2\)$" \
		"L1: a nice below the site's floor is refused before a rank starts" -- \
		"$NODETUNE" run -n 1 --policy "$LIMITS_DIR/nice.conf" --limits "$LIMITS_DIR/nice-limits.conf" \
		--state-dir "$LIMITS_DIR/st-nice" -- sh -c 'cut -d" " -f19 /proc/self/stat >"$0"' "$LIMITS_DIR/nice-seen"
	check "L1: no rank ran at nice -5 (the rank's nice: $(cat "$LIMITS_DIR/nice-seen" 2>/dev/null))" -- \
		test ! -e "$LIMITS_DIR/nice-seen"
}
limits_nice

# ---- L5: a job cgroup removed and made again by someone else -------------
# The group apply made is removed, and one of its name made again with a
# process in it (another tool's, or an attacker's): it is not ours, and a
# revert must neither remove it nor move its process out.
limits_cg_dir() {
	for h in /sys/fs/cgroup/cpuset /sys/fs/cgroup/unified /sys/fs/cgroup; do
		[ -d "$h/$1" ] && { echo "$h/$1"; return; }
	done
}
limits_cg_undo() {
	[ -n "${LIMITS_SLEEP:-}" ] && kill -KILL "$LIMITS_SLEEP" 2>/dev/null
	[ -n "${LIMITS_SLEEP:-}" ] && wait "$LIMITS_SLEEP" 2>/dev/null
	for d in /sys/fs/cgroup/*/"$1" /sys/fs/cgroup/"$1"; do
		[ -d "$d" ] && wait_until 5 rmdir "$d"
	done
	return 0
}
limits_cgroup() {
	if [ "$(id -u)" -ne 0 ] || [ ! -d /sys/fs/cgroup/cpuset ]; then
		t_skip_host cgroup-cpuset "L5: needs root and a v1 cpuset hierarchy (this host's layout)"
		return
	fi
	cg=nodetune-attack-$$
	t_defer "limits_cg_undo $cg"
	printf '[main]\nsummary = a job cgroup\n[cgroup]\nname = %s\n' $cg >"$LIMITS_DIR/cg.conf"
	chmod 644 "$LIMITS_DIR/cg.conf"
	run "$NODETUNE" apply --policy "$LIMITS_DIR/cg.conf" --state-dir "$LIMITS_DIR/st-cg"
	dir=$(limits_cg_dir $cg)
	check "L5: apply made the job cgroup $cg (exit $RC, $dir)" -- test "$RC" -eq 0 -a -n "$dir"
	[ -n "$dir" ] || return
	# someone else: removes it, makes one of the name, puts a process in it
	rmdir "$dir"
	mkdir "$dir"
	cat /sys/fs/cgroup/cpuset/cpuset.mems >"$dir/cpuset.mems"
	cat /sys/fs/cgroup/cpuset/cpuset.cpus >"$dir/cpuset.cpus"
	sleep 1000 &
	LIMITS_SLEEP=$!
	echo "$LIMITS_SLEEP" >"$dir/tasks"
	ino=$(stat -c %i "$dir")
	run "$NODETUNE" revert --state-dir "$LIMITS_DIR/st-cg"
	check "L5: revert leaves the group that is not ours, with a note (exit $RC: $(tr '\n' ' ' <"$ERR"))" -- \
		sh -c "[ $RC -eq 0 ] && grep -q 'not the group this journal recorded' '$ERR'"
	check "L5: the other group is still there, the same directory (inode $ino: $(stat -c %i "$dir" 2>/dev/null))" -- \
		test "$(stat -c %i "$dir" 2>/dev/null)" = "$ino"
	check "L5: its process was not moved out ($(grep cpuset "/proc/$LIMITS_SLEEP/cgroup" 2>/dev/null))" -- \
		grep -q "cpuset:/$cg\$" "/proc/$LIMITS_SLEEP/cgroup"
	# and an apply now finds the name taken: refused (rolled back: exit 3, as
	# before), nothing adopted
	expect_fail 3 "cgroup $cg exists already and is not ours" "L5: a new apply refuses the other group's name" -- \
		"$NODETUNE" apply --policy "$LIMITS_DIR/cg.conf" --state-dir "$LIMITS_DIR/st-cg"
	check "L5: nothing journalled for it" -- test ! -e "$LIMITS_DIR/st-cg/journal"
}
limits_cgroup
