#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# nodetune discover from the command line: bad input gives one clear line
# and exit 2 (nothing else printed), runtime failures exit 3.
. "$(dirname "$0")/lib.sh"
t_plan 34

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
TUNED=tests/fixtures/sysroot/gpu-host-tuned

# ---- usage -------------------------------------------------------------
expect_fail 2 "^nodetune: unknown verb 'disco'" "unknown verb" -- "$NODETUNE" disco
expect_fail 2 "^nodetune: discover: unknown option '--jsn'" "unknown option" -- "$NODETUNE" discover --jsn
expect_fail 2 "^nodetune: discover: option '--topology' needs a value" "option without its value" -- "$NODETUNE" discover --topology
expect_fail 2 "mutually exclusive" "--topology with --synthetic" -- "$NODETUNE" discover --topology "$HGX" --synthetic "pack:2 pu:1"
expect_fail 2 "unexpected argument 'extra'" "stray argument" -- "$NODETUNE" discover extra
run "$NODETUNE" discover --help
check "--help goes to stdout and exits 0" -- sh -c "[ $RC -eq 0 ] && grep -q '^Usage: nodetune discover' '$OUT' && [ ! -s '$ERR' ]"
run "$NODETUNE"
check "no verb: usage on stderr, exit 2" -- sh -c "[ $RC -eq 2 ] && grep -q '^Usage: nodetune' '$ERR'"

# ---- bad topology files -------------------------------------------------
D=$T_TMP/in
mkdir -p "$D"
: >"$D/empty.xml"
printf 'hello, world\n' >"$D/text.xml"
printf '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"></svg>\n' >"$D/svg.xml"
head -c 20000 "$HGX" >"$D/truncated.xml"
head -c 4096 /bin/ls >"$D/binary.xml"
cp "$HGX" "$D/unreadable.xml" && chmod 000 "$D/unreadable.xml"

expect_fail 2 "nonexistent.xml: no such file or directory" "nonexistent XML" -- "$NODETUNE" discover --topology "$D/nonexistent.xml"
expect_fail 2 "empty.xml: empty file" "empty XML" -- "$NODETUNE" discover --topology "$D/empty.xml"
expect_fail 2 "text.xml: not XML" "text file as XML" -- "$NODETUNE" discover --topology "$D/text.xml"
expect_fail 2 "svg.xml: XML without a <topology> element" "non-hwloc XML" -- "$NODETUNE" discover --topology "$D/svg.xml"
expect_fail 2 "truncated.xml: truncated hwloc XML" "truncated XML" -- "$NODETUNE" discover --topology "$D/truncated.xml"
expect_fail 2 "binary.xml: not XML" "binary file as XML" -- "$NODETUNE" discover --topology "$D/binary.xml"
expect_fail 2 "in: is a directory" "directory as XML" -- "$NODETUNE" discover --topology "$D"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	# root reads anything: drop to nobody to see a real EACCES
	chmod 755 "$T_TMP" "$D"
	expect_fail 2 "unreadable.xml: permission denied" "unreadable XML (as nobody)" -- \
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$NODETUNE" discover --topology "$D/unreadable.xml"
elif [ "$(id -u)" -ne 0 ]; then
	expect_fail 2 "unreadable.xml: permission denied" "unreadable XML" -- "$NODETUNE" discover --topology "$D/unreadable.xml"
else
	t_need setpriv "unreadable XML: running as root without setpriv (util-linux)"
fi

# ---- bad synthetic descriptions -----------------------------------------
for desc in "pack:x" "banana:2" "" "pack:2 pu:2 core:2"; do
	expect_fail 2 "invalid synthetic topology '$desc'" "bad --synthetic '$desc'" -- "$NODETUNE" discover --synthetic "$desc"
done

# ---- bad sysroots -------------------------------------------------------
expect_fail 2 "^nodetune: discover: --sysroot $T_TMP/none: no such file" "nonexistent sysroot" -- "$NODETUNE" discover --sysroot "$T_TMP/none"
expect_fail 2 "no sys/devices/system/cpu/cpu\*/topology" "kernel-only tree as a topology source" -- "$NODETUNE" discover --sysroot "$TUNED"

garbage() { # garbage FILE CONTENT PATTERN
	G=$T_TMP/g
	rm -rf "$G" && cp -r "$TUNED" "$G"
	printf '%s\n' "$2" >"$G/$1"
	before=$(tree_hash "$G")
	expect_fail 2 "$3" "garbage in $1" -- "$NODETUNE" discover --topology "$HGX" --sysroot "$G"
	check "garbage in $1 leaves the tree unchanged" -- [ "$before" = "$(tree_hash "$G")" ]
}
garbage sys/kernel/mm/transparent_hugepage/enabled "sometimes" "$T_TMP/g/sys/kernel/mm/transparent_hugepage/enabled: expected one of"
garbage proc/sys/kernel/numa_balancing "on" "numa_balancing: expected 0, 1, 2 or 3, got 'on'"
garbage proc/meminfo "SwapTotal: x kB" "$T_TMP/g/proc/meminfo:1: expected 'SwapTotal: <n> kB'"
garbage proc/mounts "oops" "$T_TMP/g/proc/mounts:1: expected"
garbage sys/devices/system/cpu/nohz_full "2-" "nohz_full: expected a CPU list"

# A missing file: the field is unknown (null), exit 0; nothing to act on, so
# quiet, and a note naming the file with -v.
G=$T_TMP/m
rm -rf "$G" && cp -r "$TUNED" "$G" && rm "$G/proc/sys/kernel/numa_balancing"
run "$NODETUNE" discover --topology "$HGX" --sysroot "$G" --json
check "missing numa_balancing: exit 0, null, nothing on stderr" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(jq -r .kernel.numa_balancing '$OUT')\" = null ] && [ ! -s '$ERR' ]"
run "$NODETUNE" discover --topology "$HGX" --sysroot "$G" --json -v
check "missing numa_balancing, -v: exit 0, a note naming the file, no warning" -- sh -c \
	"[ $RC -eq 0 ] && [ \"\$(jq -r .kernel.numa_balancing '$OUT')\" = null ] &&
	 grep -q '^nodetune: discover: note: $G/proc/sys/kernel/numa_balancing: missing; numa_balancing unknown' '$ERR' &&
	 ! grep -q 'warning:' '$ERR'"

# ---- runtime failure: stdout cannot be written ---------------------------
if [ -w /dev/full ]; then
	"$NODETUNE" discover --topology "$HGX" >/dev/full 2>"$T_TMP/err"; RC=$?
	check "stdout to /dev/full: exit 3 and says so" -- sh -c \
		"[ $RC -eq 3 ] && grep -q 'writing standard output failed' '$T_TMP/err'"
else
	t_skip_host devfull "/dev/full not writable"
fi

t_done
