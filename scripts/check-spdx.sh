#!/bin/sh
# SPDX-License-Identifier: MIT
# Every source file of the tree names its licence in its first lines, as
# `SPDX-License-Identifier: MIT` in the file's own comment syntax: C, CUDA,
# shell, Python, awk, make, mdoc, INI and YAML files, wherever they sit, but
# not the captured trees and corpora under tests/fixtures and
# tests/fuzz/corpus (the kernel's files, byte for byte) and not JSON (no
# comments).  Usage: check-spdx.sh [TOP]; lists each file without it, exit 1.
set -u
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 2
if [ -d .git ] || [ -f .git ]; then
	files=$(git ls-files | sort -u)
else
	files=$(find . -type f ! -path './.git/*' ! -path './build/*' | sed 's|^\./||')
fi
bad=0
for f in $files; do
	case $f in
	tests/fixtures/* | tests/fuzz/corpus/* | build/*) continue ;;
	*.c | *.h | *.cu | *.sh | *.py | *.awk | *.mk | *.in | *.conf | *.yaml | *.yml | \
	*.[158] | Makefile | */Makefile | *Containerfile | .ci/run | debian/rules | \
	debian/*.postrm | debian/*.prerm | debian/*.postinst | debian/*.preinst) ;;
	*) continue ;;
	esac
	[ -f "$f" ] || continue
	head -n 5 "$f" | grep -q 'SPDX-License-Identifier: MIT' && continue
	echo "$f: no 'SPDX-License-Identifier: MIT' in its first 5 lines"
	bad=1
done
exit $bad
