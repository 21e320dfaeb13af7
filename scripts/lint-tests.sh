#!/bin/sh
# SPDX-License-Identifier: MIT
# lint-tests.sh [FILE...] -- the shell patterns that made checks unable to
# fail (issue 23), found in the integration tests (default:
# tests/integration/test_*.sh, attacks/*.sh and lib.sh).
#
#   outside   `check DESC -- CMD && MORE` (or `|| MORE`, or expect_fail's):
#             the condition after the operator falls outside the check; put
#             it inside, as `check DESC -- sh -c "A && B"`.
#   ge0       `-ge 0`, `-gt -1` (either quoted) or `>= 0` (`>= 0.0`): true of
#             every count.  Not flagged when the same operand has an upper
#             bound on the line (`.x >= 0 and .x <= 1`).
#   true      `|| true` (or `|| :`) as the command right before a check, a
#             t_ok, a run or an expect_fail; and a check of `true` or `:`
#             (`check DESC -- true`), which cannot fail.
#   status    a command whose status is ignored, writing a file that a later
#             check (or a `run` feeding one) of the same script reads.  A heuristic: the command
#             writes `>"$T_TMP/NAME"` (stdout) or takes `--json`, `--out`,
#             `--dump-weights` or `-o` with "$T_TMP/NAME"; its status counts
#             as used when it is followed by && or ||, is under if, while,
#             until or !, runs in the background (& -- its status is wait's),
#             or the next command reads $? (or is `wait PID` followed by one
#             that reads $?: a function that starts jobs in the background).  Text tools (echo, printf, cat,
#             sed, awk, grep, jq, sort, head, tail, cut, tr, cp, mkdir, rm,
#             python3 -c writing a fixture) and a loop's or a group's
#             redirection (`done >FILE`) are not flagged.  The path is
#             matched literally: one built from a variable ("$T_TMP/$out")
#             is not followed.
#   sleep     a fixed `sleep N` (or `sleep $VAR`) as a command of its own, outside a loop's
#             body and not in the background: a check that waits a fixed
#             time instead of for its event (wait_until, a loop with a
#             deadline).  A sleep that is a window on purpose (evidence
#             that nothing happens meanwhile, a point inside a pause) says
#             so and gives its margin in the comment right above it, one of
#             whose lines starts `# window:`.
#
# The scanner knows shell quoting well enough for these tests: single and
# double quotes, $( ) and $(( )) nested, backslash continuations, comments,
# here-documents.  Prints "FILE:LINE: KIND: what" per finding; exit 1 when
# there is any, 0 when none, 2 on a file it cannot read.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$#" -eq 0 ]; then
	set -- "$top"/tests/integration/lib.sh "$top"/tests/integration/test_*.sh
	for f in "$top"/tests/integration/attacks/*.sh; do [ -f "$f" ] && set -- "$@" "$f"; done
fi
bad=0
for f in "$@"; do
	[ -r "$f" ] || { echo "lint-tests.sh: cannot read $f" >&2; exit 2; }
	awk -v file="$f" '
# ---- scanning: the file into commands ------------------------------------
# Each command (a pipeline element, or what lies between &&, ||, ;, & and
# newlines at the top level) becomes C[i] (its text), CL[i] (its first
# line), CB[i] (the operator before it), CA[i] (the operator after it).
function endcmd(op) {
	t = cur; gsub(/^[ \t]+|[ \t]+$/, "", t)
	if (t != "") { nc++; C[nc] = t; CL[nc] = cl; CB[nc] = prevop; CA[nc] = op; prevop = op }
	else if (op != "nl") prevop = op
	cur = ""; cl = 0
}
{ lines[NR] = $0 }
END {
	n = NR; sp = 0; prevop = "nl"; cur = ""; cl = 0; hd = ""
	for (ln = 1; ln <= n; ln++) {
		s = lines[ln]
		if (hd != "") {	# inside a here-document: skip to its end word
			x = s; if (hdtab) sub(/^\t+/, "", x)
			if (x == hd) hd = ""
			continue
		}
		L = length(s); wordstart = 1
		for (i = 1; i <= L; i++) {
			c = substr(s, i, 1); c2 = substr(s, i, 2)
			top_ = sp > 0 ? st[sp] : ""
			if (cl == 0 && c !~ /[ \t]/) cl = ln
			if (top_ == "S") { cur = cur c; if (c == "\x27") sp--; continue }
			if (top_ == "D") {
				if (c == "\\") { cur = cur c2; i++; continue }
				if (c == "\"") { sp--; cur = cur c; continue }
				if (c2 == "$(") { st[++sp] = "P"; cur = cur c2; i++; continue }
				cur = cur c; continue
			}
			# top level or inside $( )
			if (c == "\\") { if (i == L) { cur = cur " "; break }; cur = cur c2; i++; continue }
			if (c == "#" && wordstart) break
			if (c == "\x27") { st[++sp] = "S"; cur = cur c; wordstart = 0; continue }
			if (c == "\"") { st[++sp] = "D"; cur = cur c; wordstart = 0; continue }
			if (c2 == "$(") { st[++sp] = "P"; cur = cur c2; i++; wordstart = 1; continue }
			if (c == "(" && top_ == "P") { st[++sp] = "P"; cur = cur c; continue }
			if (c == ")" && top_ == "P") { sp--; cur = cur c; continue }
			if (sp == 0 && substr(s, i, 2) == "<<" && substr(s, i, 3) != "<<<") {
				rest = substr(s, i + 2); hdtab = (rest ~ /^-/)
				if (match(rest, /^-?[ \t]*["\x27]?[A-Za-z_][A-Za-z_0-9]*/)) {
					hd = substr(rest, RSTART, RLENGTH); gsub(/^-?[ \t]*["\x27]?/, "", hd)
				}
			}
			if (sp == 0) {
				if (c2 == "&&" || c2 == "||") { endcmd(c2); i++; wordstart = 1; continue }
				if (c2 == ";;") { endcmd(";"); i++; wordstart = 1; continue }
				if (c == ";" || c == "|") { endcmd(c); wordstart = 1; continue }
				if (c == "&" && substr(s, i - 1, 1) != ">" && substr(s, i + 1, 1) != ">") { endcmd("&"); wordstart = 1; continue }
			}
			cur = cur c
			wordstart = (c ~ /[ \t(]/)
		}
		if (sp == 0 && substr(s, length(s)) != "\\") endcmd("nl")
		else if (sp > 0) cur = cur "\n"
	}
	endcmd("nl")
	findings()
}

# the command with leading keywords, a case pattern and assignments removed
function bare(t) {
	while (1) {
		if (match(t, /^(then|do|else|elif|if|while|until|!|\{|\()[ \t]+/)) { t = substr(t, RLENGTH + 1); continue }
		if (match(t, /^[^ \t"\x27]*\)[ \t]+/)) { t = substr(t, RLENGTH + 1); continue }
		if (match(t, /^[A-Za-z_][A-Za-z_0-9]*=([^ \t"\x27$]|\$[A-Za-z_{])*[ \t]+/)) { t = substr(t, RLENGTH + 1); continue }
		break
	}
	return t
}
# ge0(x): x compares an operand with `-ge 0`, `-gt -1` or `>= 0` (quoted,
# 0.0) and has no upper bound for that same operand (OP -le, -lt, <=, <)
function ge0(x,   rest, m, op, k, b, j) {
	rest = x
	while (match(rest, /[^ \t\[(]+[ \t]+(-ge[ \t]+["\x27]?0(\.0*)?["\x27]?|-gt[ \t]+["\x27]?-1["\x27]?|>=[ \t]*0(\.0*)?)([^.0-9]|$)/)) {
		m = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH)
		op = m; sub(/[ \t].*/, "", op); sub(/^["\x27(]+/, "", op)
		b = 0
		split("-le -lt <= <", k, " ")
		for (j = 1; j <= 4; j++)
			if (index(x, op " " k[j] " ") || index(x, op " " k[j] "\"") || index(x, op " " k[j] "\x27")) b = 1
		if (!b) return 1
	}
	return 0
}
function firstword(t) { split(bare(t), w, /[ \t\n]+/); return w[1] }
function report(line, kind, msg) { printf "%s:%d: %s: %s\n", file, line, kind, msg; found = 1 }

# ---- the four patterns ---------------------------------------------------
function findings(   win, i, j, t, fw, p, m, path, used, nxt, lnk, x, a) {
	for (i = 1; i <= nc; i++) {
		t = C[i]; fw = firstword(t)
		if ((fw == "check" || fw == "expect_fail") && t ~ /[ \t\n]--([ \t\n]|$)/ && (CA[i] == "&&" || CA[i] == "||"))
			report(CL[i], "outside", "a condition after `" fw " ... --` joined by " CA[i] ", outside the check")
		if (fw == "true" || fw == ":") if (CB[i] == "||" && i < nc && firstword(C[i + 1]) ~ /^(check|t_ok|run|expect_fail)$/)
			report(CL[i], "true", "`|| " fw "` right before a " firstword(C[i + 1]))
		if (fw == "check" && t ~ /[ \t\n]--[ \t\n]+(true|:)[ \t\n]*$/)
			report(CL[i], "true", "a check of `" (t ~ /:[ \t\n]*$/ ? ":" : "true") "`: it cannot fail (a heading is an echo \"# ...\")")
	}
	depth = 0
	for (i = 1; i <= nc; i++) {
		t = C[i]
		if (t ~ /^do([ \t\n]|$)/ || t ~ /^(while|until|for)[ \t].*[ \t]do([ \t\n]|$)/) depth++
		fw = firstword(t)
		win = 0
		for (j = CL[i] - 1; j > 0 && lines[j] ~ /^[ \t]*#/; j--) if (lines[j] ~ /^[ \t]*# window:/) win = 1
		if (fw == "sleep" && bare(t) ~ /^sleep[ \t]+([0-9.]+|"?\$\{?[A-Za-z_][A-Za-z_0-9]*\}?"?)[ \t]*$/ && depth == 0 && CA[i] != "&" && !win)
			report(CL[i], "sleep", "a fixed `" bare(t) "` outside a wait loop: wait for the event (wait_until), or give the window and its margin in a `# window:` comment right above")
		if (t ~ /^done([ \t\n);|&]|$)/ && depth > 0) depth--
	}
	for (ln = 1; ln <= n; ln++) {
		x = lines[ln]; if (x ~ /^[ \t]*#/) continue
		if (ge0(x))
			report(ln, "ge0", "`-ge 0` / `-gt -1` / `>= 0`: true of every count")
	}
	for (i = 1; i <= nc; i++) {
		t = bare(C[i]); fw = firstword(t)
		if (fw ~ /^(done|fi|esac|\}|\)|check|run|expect_fail|echo|printf|cat|sed|awk|grep|jq|sort|head|tail|cut|tr|cp|mkdir|rm|ln|chmod|touch|tee|python3|local|export|wait)$/) continue
		if (fw ~ /^[A-Za-z_][A-Za-z_0-9]*=/ && t !~ /[ \t]/) continue
		if (C[i] ~ /^(if|while|until|!)[ \t]/ || CB[i] == "&&" || CA[i] == "&&" || CA[i] == "||" || CA[i] == "&" || CA[i] == "|") continue
		if (i < nc && C[i + 1] ~ /\$\?/) continue
		# a background job (a function that starts one): the waits after it
		for (j = i + 1; j < nc && firstword(C[j]) == "wait" && C[j + 1] ~ /\$\?/; j += 2) ;
		if (j > i + 1) continue
		# each file it writes: the first a later check or run reads is reported
		rest = t
		while (match(rest, /((^|[ \t])>>?|--json|--out|--dump-weights|-o)[ \t=]*"?\$T_TMP\/[A-Za-z0-9_.\/-]+/)) {
			path = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH)
			sub(/^.*\$T_TMP\//, "$T_TMP/", path)
			for (j = i + 1; j <= nc; j++)
				if (firstword(C[j]) ~ /^(check|run)$/ && index(C[j], path) && !index(C[j], path "."))
					break
			if (j <= nc) {
				report(CL[i], "status", "the status of `" fw "` writing " path " is ignored, and the " firstword(C[j]) " at line " CL[j] " reads it")
				break
			}
		}
	}
	exit found
}' "$f" || bad=1
done
exit $bad
