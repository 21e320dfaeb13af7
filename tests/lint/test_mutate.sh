#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/mutate.py's tokeniser (`make mutation`): every mutant it lists is
# an edit of the source (a mutant whose edit finds no text to replace is the
# original program, and "survives"), a `return "...";` is forced whole (an
# escaped quote or a `;` in the string is not its end), and nothing in a
# comment or a string is mutated.  Checked on a planted C file and on every
# source of tests/mutation/modules.conf.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
nok() { fail=$((fail + 1)); echo "FAIL: $1"; }

cat >"$tmp/planted.c" <<'EOF'
/* a < b in a comment */
static const char *why(int a)
{
	if (a == 1)
		return "\"kind\" is not a; kind";
	if (a > 2)
		return "plain";
	return "a < b";
}
EOF

# $1: the check's name; the python on stdin prints "ok" or what is wrong
py() {
	out=$(cd "$top" && /usr/bin/python3 - "$tmp/planted.c" 2>&1) || out="python failed: $out"
	[ "$out" = ok ] && ok "$1" || nok "$1: $out"
}

py 'a return of a string with an escaped quote and a ";" is forced whole' <<'EOF'
import sys
sys.path.insert(0, "scripts")
import mutate
src = open(sys.argv[1]).read()
rets = [c for c in mutate.candidates(sys.argv[1], []) if c[4] == "ret"]
got = [mutate.apply(src, c).split("\n")[c[0]].strip() for c in rets]
want = ["return 0;"] * 3
print("ok" if got == want else f"the forced returns read {got}, not {want}")
EOF

py 'nothing in a comment or a string is a candidate' <<'EOF'
import sys
sys.path.insert(0, "scripts")
import mutate
bad = [c for c in mutate.candidates(sys.argv[1], []) if c[0] in (0, 4, 6, 7) and c[4] != "ret"]
print("ok" if not bad else f"candidates inside a comment or a string: {bad}")
EOF

py 'every candidate of every module of modules.conf changes its source' <<'EOF'
import os, sys
sys.path.insert(0, "scripts")
import mutate
noop, n = [], 0
for mod in mutate.read_conf("tests/mutation/modules.conf"):
    for spec in mod["src"]:
        path, _, funcs = spec.partition(":")
        src = open(path).read()
        for c in mutate.candidates(path, funcs.split(",") if funcs else []):
            n += 1
            if mutate.apply(src, c) == src:
                noop.append(mutate.mutant_id(path, c))
print("ok" if n and not noop else f"{len(noop)} of {n} mutants edit nothing: {noop[:5]}")
EOF

echo "test_mutate: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
