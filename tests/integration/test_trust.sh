#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# Trust (DESIGN.md): nothing a non-root user can write steers a root write.
# A forged journal entry, a state dir or journal not to be trusted: exit 2,
# one stderr line naming the file (and the journal line), nothing restored
# or written: the sysroot tree byte-identical (tree_hash), the decoy file
# beside it untouched, the state dir as it was.
. "$(dirname "$0")/lib.sh"
t_plan 37

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
UNTUNED=tests/fixtures/sysroot/gpu-host-untuned
GT=policies/gpu-train.conf
T=$T_TMP/root ST=$T_TMP/state J=$T_TMP/state/journal
DECOY=$T_TMP/etc/passwd
TAB=$(printf '\t')

cp -r "$UNTUNED" "$T"
mkdir "$T_TMP/etc" && printf 'root:x:0:0:root:/root:/bin/sh\n' >"$DECOY"
# a symlink inside the tree to the decoy beside it
ln -s ../../../etc/passwd "$T/sys/kernel/evil"
d0=$(sha256sum <"$DECOY")
h0=$(tree_hash "$T")

run "$NODETUNE" apply --policy $GT --topology $HGX --sysroot "$T" --state-dir "$ST"
check "apply on the tree: exit 0, a journal of seven entries (THP twice, NUMA balancing, 4 governors)" -- sh -c "[ $RC -eq 0 ] && [ \$(grep -c '^file' '$J') -eq 7 ]"
h1=$(tree_hash "$T")
check "apply changed the tree" -- [ "$h0" != "$h1" ]
grep -v '^commit$' "$J" >"$T_TMP/entries"
n=$(($(wc -l <"$T_TMP/entries") + 1))     # the forged line's number

# intact DESC: the tree as applied, the decoy and the state dir as they were
intact() {
	check "$1: tree as applied, decoy untouched, state dir unchanged" -- sh -c \
		"[ '$h1' = '$(tree_hash "$T")' ] && [ '$d0' = \"\$(sha256sum <'$DECOY')\" ] &&
		 [ '$s0' = '$(ls -ln "$ST" | sha256sum)' ]"
}

# forge FILE DESC PATTERN: FILE (the forged lines) before the commit; revert
# exits 2 with one line naming the journal, the line, and PATTERN
forge() {
	{ cat "$T_TMP/entries" "$1"; echo commit; } >"$J"
	s0=$(ls -ln "$ST" | sha256sum)
	expect_fail 2 "^nodetune: revert: $J:$n: $3; nothing was restored\$" "$2" -- \
		"$NODETUNE" revert --sysroot "$T" --state-dir "$ST"
	intact "$2"
}
line() { printf '%s\n' "$*" >"$T_TMP/forged"; }

line "file${TAB}sys/../../etc/passwd${TAB}x${TAB}pwned%0A"
forge "$T_TMP/forged" "a forged '..' entry" "corrupt journal line: path 'sys/\.\./\.\./etc/passwd' has a '\.\.' component"
line "file${TAB}$DECOY${TAB}x${TAB}pwned%0A"
forge "$T_TMP/forged" "a forged absolute path" "corrupt journal line: path '$DECOY' is absolute \(entries are relative to the root\)"
line "file${TAB}etc/passwd${TAB}x${TAB}pwned%0A"
forge "$T_TMP/forged" "a path no knob writes" "corrupt journal line: path 'etc/passwd' is not below sys/, proc/sys/ or proc/irq/ \(no knob writes there\)"
line "file${TAB}sys/kernel/evil${TAB}x${TAB}pwned%0A"
forge "$T_TMP/forged" "a symlink inside the tree pointing out of it" "sys/kernel/evil leads out of $T \(a symlink\)"
line "exec${TAB}rm -rf /"
forge "$T_TMP/forged" "an unknown entry kind" "corrupt journal line: unknown entry 'exec'"
line "cgroup${TAB}../../init.scope"
forge "$T_TMP/forged" "a cgroup name with '..'" "corrupt journal line: '\.\./\.\./init\.scope' is not a cgroup name apply creates"
line "cgroup${TAB}job"
forge "$T_TMP/forged" "a job cgroup in a captured tree's journal" "a job cgroup \(job\) in the journal of $T, not the live host, where apply never creates one"
{ printf 'file\tsys/kernel/mm/transparent_hugepage/enabled\tx\t'; head -c 10485760 /dev/zero | tr '\0' x; echo; } >"$T_TMP/forged"
forge "$T_TMP/forged" "a 10 MB line" "corrupt journal line: longer than 32768 bytes"

# ---- a state dir or journal not to be trusted ---------------------------
{ cat "$T_TMP/entries"; echo commit; } >"$J"
cp "$J" "$T_TMP/good"
# refused DESC PATTERN -- CMD...: revert refuses, naming the file
refused() {
	desc=$1 pat=$2
	shift 3
	s0=$(ls -ln "$ST" | sha256sum)
	expect_fail 2 "$pat" "$desc" -- "$@"
	intact "$desc"
}
chmod 0770 "$ST"
refused "a group-writable state dir" "^nodetune: revert: state directory $ST: writable by group or others \(mode 0770\); refusing it" -- \
	"$NODETUNE" revert --sysroot "$T" --state-dir "$ST"
chmod 0702 "$ST"
refused "an other-writable state dir" "^nodetune: revert: state directory $ST: writable by group or others \(mode 0702\)" -- \
	"$NODETUNE" revert --sysroot "$T" --state-dir "$ST"
chmod 0700 "$ST"
chmod 0644 "$J"
refused "a journal with mode 0644" "^nodetune: revert: $J: mode 0644, must be 0600 \(no group or other bits\); refusing it\$" -- \
	"$NODETUNE" revert --sysroot "$T" --state-dir "$ST"
chmod 0600 "$J"
ln -s "$ST" "$T_TMP/state-link"
refused "a state dir that is a symlink" "^nodetune: revert: state directory $T_TMP/state-link: a symbolic link; refusing it\$" -- \
	"$NODETUNE" revert --sysroot "$T" --state-dir "$T_TMP/state-link"
rm "$T_TMP/state-link"
mv "$J" "$T_TMP/real-journal" && ln -s "$T_TMP/good" "$J"
refused "a journal that is a symlink" "^nodetune: revert: $J: not a regular file; refusing it\$" -- \
	"$NODETUNE" revert --sysroot "$T" --state-dir "$ST"
rm "$J" && mv "$T_TMP/real-journal" "$J"
if [ "$(id -u)" -eq 0 ]; then
	chown 65534:65534 "$J"
	refused "a journal owned by another user (nobody)" \
		"^nodetune: revert: $J: owned by uid 65534, not by uid 0 \(who runs nodetune\); refusing it\$" -- \
		"$NODETUNE" revert --sysroot "$T" --state-dir "$ST"
	chown 0:0 "$J"
	chown 65534:65534 "$ST"
	refused "a state dir owned by another user (nobody)" \
		"^nodetune: revert: state directory $ST: owned by uid 65534, not by uid 0" -- \
		"$NODETUNE" revert --sysroot "$T" --state-dir "$ST"
	chown 0:0 "$ST"
else
	t_skips 4 t_skip_host root "journal and state dir owned by another user: not root"
fi

# apply into a state dir not to be trusted writes nothing at all: no change
# to a fresh tree, not even the lock file
T2=$T_TMP/root2 ST2=$T_TMP/state2
cp -r "$UNTUNED" "$T2" && mkdir "$ST2" && chmod 0775 "$ST2"
h2=$(tree_hash "$T2")
expect_fail 2 "^nodetune: apply: state directory $ST2: writable by group or others \(mode 0775\); refusing it" \
	"apply into a group-writable state dir" -- \
	"$NODETUNE" apply --policy $GT --topology $HGX --sysroot "$T2" --state-dir "$ST2"
check "apply refused: the tree unchanged, the state dir empty (no lock, no journal)" -- sh -c \
	"[ '$h2' = '$(tree_hash "$T2")' ] && [ -z \"\$(ls -A '$ST2')\" ]"
chmod 0700 "$ST2"
printf 'nodetune-journal 1\troot\t%s\tpolicy\tp\tpid\t1\ncommit\n' "$T2" >"$ST2/journal" && chmod 0644 "$ST2/journal"
expect_fail 2 "^nodetune: apply: $ST2/journal: mode 0644, must be 0600" "apply beside a journal with mode 0644" -- \
	"$NODETUNE" apply --policy $GT --topology $HGX --sysroot "$T2" --state-dir "$ST2"
check "apply refused: the tree unchanged, no lock file" -- sh -c "[ '$h2' = '$(tree_hash "$T2")' ] && [ ! -e '$ST2/lock' ]"

# ---- the real journal still reverts -------------------------------------
run "$NODETUNE" revert --sysroot "$T" --state-dir "$ST"
check "the genuine journal reverts: exit 0, the tree byte for byte as before, decoy untouched" -- sh -c \
	"[ $RC -eq 0 ] && [ '$h0' = '$(tree_hash "$T")' ] && [ '$d0' = \"\$(sha256sum <'$DECOY')\" ] && [ ! -e '$J' ]"
t_done
