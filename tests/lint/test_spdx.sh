#!/bin/sh
# SPDX-License-Identifier: MIT
# Every source file names its licence (scripts/check-spdx.sh), and the check
# fails, naming the file, on a planted one without it.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
check=$top/scripts/check-spdx.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
nok() { fail=$((fail + 1)); echo "FAIL: $1"; }

out=$("$check" "$top" 2>&1) && ok "every source file has its SPDX line" || nok "the tree: $out"
[ -f "$top/LICENSE" ] && grep -q '^MIT License' "$top/LICENSE" && ok "LICENSE states MIT" || nok "no MIT LICENSE"
grep -q '^License: Expat' "$top/debian/copyright" && ok "debian/copyright: Expat" || nok "debian/copyright states no Expat licence"

# planted: a C file and a shell script without the line, in a copy (no .git)
mkdir -p "$tmp/t/agent" "$tmp/t/scripts" "$tmp/t/tests/fixtures/x"
printf '/* SPDX-License-Identifier: MIT */\nint a;\n' >"$tmp/t/agent/ok.c"
printf '/* nothing */\nint b;\n' >"$tmp/t/agent/bad.c"
printf '#!/bin/sh\necho hi\n' >"$tmp/t/scripts/bad.sh"
printf 'captured\n' >"$tmp/t/tests/fixtures/x/cpu.sh"
if out=$("$check" "$tmp/t" 2>&1); then
	nok "planted files without SPDX: passed"
else
	case $out in
	*agent/bad.c:*scripts/bad.sh:* | *scripts/bad.sh:*agent/bad.c:*)
		case $out in
		*ok.c* | *fixtures*) nok "named a file it should not: $out" ;;
		*) ok "planted files named: $(printf '%s' "$out" | tr '\n' ' ')" ;;
		esac ;;
	*) nok "failed without naming both: $out" ;;
	esac
fi
echo "lint spdx: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
