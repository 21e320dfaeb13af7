#!/bin/sh
# SPDX-License-Identifier: MIT
# slow-when.sh FILE PATTERN [FILE PATTERN]... — a workload for the bisect
# test that depends on host knobs: 50 ms, and 50 ms more when every FILE
# contains its PATTERN (grep -E), as a kernel setting can slow a real job.
extra=1
while [ $# -ge 2 ]; do
	grep -Eq -- "$2" "$1" || extra=0
	shift 2
done
sleep 0.05
[ "$extra" -eq 0 ] || sleep 0.05
