#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/run-integration.sh's order and passes.  tests/integration/
# durations.txt, the order a fresh clone's runner starts its scripts in: a
# line per tests/integration/test_*.sh and none for another file, each with
# its plain and ASan seconds, "-" in the ASan column exactly for the
# scripts asan-out.txt keeps out of that pass; the check shown to fail on
# planted copies; the runner shown to start the longest first by the file,
# each pass by its own column.  A second pass in the same run (PASS:FILE,
# INTEGRATION_ENV_PASS): its scripts get its assignments, its tag in the
# time and failure logs, and never run beside themselves in the other pass.
# The probes take their locks in a directory of their own.
set -u
unset NODETUNE_FAIL_LOG NODETUNE_SKIP_LOG NODETUNE_TIME_LOG
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
mkdir -p "$top/build"
tmp=$(mktemp -d "$top/build/runner-probes-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
nok() { fail=$((fail + 1)); echo "FAIL: $1"; }

# durations_bad FILE DIR ASANOUT: each fault of FILE against DIR's
# test_*.sh and ASANOUT, one a line; nothing when it is right
durations_bad() {
	for f in "$2"/test_*.sh; do [ -e "$f" ] && basename "$f"; done | sort >"$tmp/have"
	sed -n 's/^\(test_[^ ]*\.sh\) .*/\1/p' "$3" | sort >"$tmp/out"
	awk -v have="$tmp/have" -v out="$tmp/out" '
		BEGIN { while ((getline f < have) > 0) h[f] = 1; while ((getline f < out) > 0) o[f] = 1 }
		/^#/ || NF == 0 { next }
		{ if (NF != 3) { print FILENAME ":" FNR ": " NF " fields, not 3: " $0; next }
		  if (!($1 in h)) print FILENAME ":" FNR ": " $1 ": no such script"
		  if (seen[$1]++) print FILENAME ":" FNR ": " $1 ": a second line"
		  if ($2 !~ /^[0-9]+(\.[0-9]+)?$/) print FILENAME ":" FNR ": " $1 ": plain seconds \"" $2 "\""
		  if (($1 in o) && $3 != "-") print FILENAME ":" FNR ": " $1 ": ASan seconds for a script asan-out.txt keeps out"
		  if (!($1 in o) && $3 !~ /^[0-9]+(\.[0-9]+)?$/) print FILENAME ":" FNR ": " $1 ": ASan seconds \"" $3 "\"" }
		END { for (f in h) if (!(f in seen)) print FILENAME ": " f ": no line" }' "$1"
}

d=tests/integration/durations.txt
bad=$(durations_bad $d tests/integration tests/integration/asan-out.txt)
[ -z "$bad" ] && ok "$d: a line per script, $(grep -c '^test_' $d) of them" || nok "$d: $bad"

# planted: a line gone, a line for no script, an ASan time for a script
# the ASan pass does not run
first=$(grep -m1 '^test_' $d | cut -d' ' -f1)
out1=$(sed -n 's/^\(test_[^ ]*\.sh\) .*/\1/p' tests/integration/asan-out.txt | head -n 1)
grep -v "^$first " $d >"$tmp/gone.txt"
{ cat $d; echo "test_nothing.sh 1 1"; } >"$tmp/extra.txt"
sed "s/^$out1 \([^ ]*\) -$/$out1 \1 9.9/" $d >"$tmp/asan.txt"
for p in "gone:$first: no line" "extra:test_nothing.sh: no such script" "asan:$out1: ASan seconds for a script"; do
	f=${p%%:*} want=${p#*:}
	bad=$(durations_bad "$tmp/$f.txt" tests/integration tests/integration/asan-out.txt)
	case $bad in *"$want"*) ok "planted $f: $(printf '%s' "$bad" | head -n 1 | sed "s|$tmp/||")" ;;
	*) nok "planted $f: not named ($bad)" ;; esac
done

# the runner: no times of a last run, one script at a time; test_short
# comes first in the order given, the file says test_long is longer in
# the plain pass and shorter in the ASan one
for n in short long; do
	printf '. "$SRCDIR_/tests/integration/lib.sh"\nt_plan 1\ncheck "%s" -- true\nt_done\n' $n >"$tmp/test_$n.sh"
done
printf 'test_long.sh 9 1\ntest_short.sh 1 9\n' >"$tmp/d.txt"
for s in 0 1; do
	out=$(SRCDIR_=$top NODETUNE_LOCK_DIR="$tmp/locks" SANITIZED=$s INTEGRATION_TIMES='' INTEGRATION_DURATIONS="$tmp/d.txt" INTEGRATION_JOBS=1 \
		sh tests/run-integration.sh "$tmp/test_short.sh" "$tmp/test_long.sh" 2>&1)
	got=$(printf '%s\n' "$out" | sed -n 's|^== .*/\(test_[a-z]*\.sh\) .*|\1|p' | tr '\n' ' ')
	want=$([ $s = 0 ] && echo "test_long.sh test_short.sh " || echo "test_short.sh test_long.sh ")
	[ "$got" = "$want" ] && ok "the runner, SANITIZED=$s: started by the file's column: $got" ||
		nok "the runner, SANITIZED=$s: started $got, want $want"
done
# two passes in one run, two at a time: the same script as test_env.sh and
# asan:test_env.sh, whose check passes only where the pass's assignment
# arrived, and which notes its start and end; a script that fails only in
# the asan pass
cat >"$tmp/test_env.sh" <<'EOF'
. "$SRCDIR_/tests/integration/lib.sh"
t_plan 1
echo "$(date +%s.%N) start ${SANITIZED:-0}" >>"$PROBE_LOG"
sleep 0.5
check "FOO='${FOO:-}' where SANITIZED='${SANITIZED:-}'" -- test "${FOO:-}" = "$([ "${SANITIZED:-}" = 1 ] && echo bar)"
echo "$(date +%s.%N) end ${SANITIZED:-0}" >>"$PROBE_LOG"
t_done
EOF
printf '# host: none
. "$SRCDIR_/tests/integration/lib.sh"
t_plan 1
check "plain only" -- test "${SANITIZED:-0}" != 1
t_done
' \
	>"$tmp/test_asanbad.sh"
sed -i '1i # host: none' "$tmp/test_env.sh"
: >"$tmp/probe.log" >"$tmp/time.log" >"$tmp/fail.log"
out=$(SRCDIR_=$top NODETUNE_LOCK_DIR="$tmp/locks" PROBE_LOG="$tmp/probe.log" NODETUNE_TIME_LOG="$tmp/time.log" \
	NODETUNE_FAIL_LOG="$tmp/fail.log" INTEGRATION_TIMES='' INTEGRATION_JOBS=2 SANITIZED='' FOO='' \
	INTEGRATION_ENV_asan="SANITIZED=1 FOO=bar NODETUNE_SKIP_TAG=asan-" \
	sh tests/run-integration.sh "$tmp/test_env.sh" "asan:$tmp/test_env.sh" "asan:$tmp/test_asanbad.sh" 2>&1)
printf '%s\n' "$out" | grep -q '^integration: 2 passed, 1 failed, 0 skipped' &&
	printf '%s\n' "$out" | grep -q "^integration: failing: asan:$tmp/test_asanbad.sh\$" &&
	ok "two passes: each got its assignments, the failure named in its pass: $(printf '%s\n' "$out" | tail -n 1 | sed "s|$tmp/||g")" ||
	nok "two passes: $(printf '%s\n' "$out" | grep -E '^(integration|not ok|asan:)' | sed "s|$tmp/||g" | head -n 6)"
tags=$(awk '{ print $1 ":" $2 }' "$tmp/time.log" | sort | tr '\n' ' ')
[ "$tags" = "asan-integration:test_asanbad.sh asan-integration:test_env.sh integration:test_env.sh " ] &&
	grep -q '^asan-integration test_asanbad.sh: ok\|^asan-integration test_asanbad.sh: not ok' "$tmp/fail.log" &&
	ok "each pass's tag in the time log ($tags) and the failure log ($(head -n 1 "$tmp/fail.log" | cut -c1-80))" ||
	nok "tags: time log '$tags', failure log '$(cat "$tmp/fail.log")'"
overlap=$(sort -n "$tmp/probe.log" | awk '{ print $2 }' | tr '\n' ' ')
[ "$overlap" = "start end start end " ] && ok "test_env.sh ran in one pass, then the other: $overlap" ||
	nok "test_env.sh ran in both passes at once: $overlap"
echo "lint runner: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
