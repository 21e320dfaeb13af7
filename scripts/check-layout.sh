#!/bin/sh
# SPDX-License-Identifier: MIT
# check-layout.sh [ROOT] -- the layering of agent/lib, checked.
#
# agent/lib is grouped one level deep, and a group includes only itself and
# the groups below it:
#
#     base < machine < tune < observe < {ab, fleet} < daemon
#
# (ab and fleet are siblings: neither includes the other.)  Every include of
# a library header names its group ("tune/plan.h"); common/nt_err.h,
# common/nt_duration.h and common/nt_clock.h are below them all.  agent/README.md is the map: every
# file in agent/lib appears in it as GROUP/NAME.{h,c} (or GROUP/NAME.h for a
# header alone).
#
# Prints one line per violation, "FILE:LINE: ..." and exits 1 when there is
# any; silent with exit 0 otherwise.
set -u
root=${1:-.}
cd "$root" || exit 2

rank() {
	case $1 in
	base) echo 0 ;; machine) echo 1 ;; tune) echo 2 ;; observe) echo 3 ;;
	ab|fleet) echo 4 ;; daemon) echo 5 ;; *) echo -1 ;;
	esac
}

bad=0
for dir in agent/lib/*/; do
	g=$(basename "$dir")
	if [ "$(rank "$g")" -lt 0 ]; then
		echo "$dir: a group that the order does not know (scripts/check-layout.sh)"; bad=1; continue
	fi
done
for f in agent/lib/*.[ch]; do
	[ -e "$f" ] || continue
	echo "$f: outside every group (agent/lib/GROUP/)"; bad=1
done

# "FILE:LINE:#include "X"" for every quoted include in the library
out=$(grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' agent/lib/*/*.[ch] 2>/dev/null)
old_ifs=$IFS
IFS='
'
for line in $out; do
	IFS=$old_ifs
	file=${line%%:*}; rest=${line#*:}; lno=${rest%%:*}
	inc=$(printf '%s\n' "$rest" | sed 's/^[^"]*"\([^"]*\)".*/\1/')
	g=$(basename "$(dirname "$file")")
	case $inc in
	nt_err.h|nt_duration.h|nt_clock.h) continue ;;
	*/*) ig=${inc%%/*} ;;
	*) echo "$file:$lno: \"$inc\" names no group (write \"GROUP/$inc\")"; bad=1; continue ;;
	esac
	r=$(rank "$g"); ir=$(rank "$ig")
	if [ "$ir" -lt 0 ]; then
		echo "$file:$lno: \"$inc\": no such group"; bad=1
	elif [ "$ir" -gt "$r" ] || { [ "$ir" -eq "$r" ] && [ "$ig" != "$g" ]; }; then
		echo "$file:$lno: $g includes \"$inc\", which is not below it (base < machine < tune < observe < {ab, fleet} < daemon)"
		bad=1
	fi
done
IFS=$old_ifs

# the map
for f in agent/lib/*/*.[ch]; do
	rel=${f#agent/lib/}
	stem=${rel%.[ch]}; stem=${stem%_test}
	if ! grep -q -e "$stem\.{h,c}" -e "$rel" agent/README.md; then
		echo "agent/README.md: $f is missing from the map"; bad=1
	fi
done
exit $bad
