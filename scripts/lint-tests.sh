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
#   true      `|| true` (or `|| :`, or `|| echo "# ..."`: a failure made a
#             comment) as the command right before a check, a t_ok, a run
#             or an expect_fail; and a check of `true` or `:`
#             (`check DESC -- true`), which cannot fail.
#   status    a command whose status is ignored, writing a file that a later
#             check (or a `run` feeding one, or a `V=$(...)` whose V a later
#             check or run names) of the same script reads.  A heuristic: the
#             command writes `>"$T_TMP/NAME"` (or `2>`, `>>`, `| tee`) or
#             takes `--json`, `--out`, `--dump-weights`, `-o`, `--report`,
#             `--write-data`, `--screenshot` or `--state-dir` (a directory:
#             a path below it is read) with "$T_TMP/NAME", `=` too; its
#             status counts as used when it is followed by && or ||, is
#             under if, while, until or !, runs in the background (& -- its
#             status is wait's), is the last of a group or a function (the
#             status is theirs), or the next command reads $? other than in
#             a comment (`echo "# rc $?"` is not a use), or is `wait PID`
#             followed by one that reads $?.  A command feeding a pipe (|)
#             that writes such a file: its status is lost (no pipefail).
#             Text tools (echo, printf, cat, sed, awk, grep, jq, sort, head,
#             tail, cut, tr, cp, mkdir, rm, `:`, python3 -c writing a
#             fixture), t_defer's string, a function whose body starts a
#             background job, and a loop's or a group's redirection
#             (`done >FILE`) are not flagged.  The path is matched
#             literally: one built from a variable ("$T_TMP/$out") is not
#             followed.
#   sleep     a fixed `sleep N` (or `sleep $VAR`) as a command of its own, outside a loop's
#             body and not in the background (or in the background with a
#             `wait` right after it); and `wait_until N false` (or `! true`,
#             `sh -c false`), which cannot end before its deadline: a check
#             that waits a fixed time instead of for its event (wait_until,
#             a loop with a deadline).  A sleep that is a window on purpose (evidence
#             that nothing happens meanwhile, a point inside a pause) says
#             so and gives its margin in the comment right above it, one of
#             whose lines starts `# window:`.
#   abcg      `"$NODETUNE" ab` or `bisect` (their trial groups, nodetune-ab,
#             are made in the live cgroup tree) in a script whose `# host:`
#             line does not name abcg (tests/run-integration.sh): beside
#             a script that holds it, they read as that script's
#             leftovers; a fleet rollout's `--gate NAME` too (each canary
#             daemon runs ab).  A part in tests/integration/DIR/ is read
#             under test_DIR.sh's host line.  Also the bare words `nodetune ab` anywhere in
#             the code, as where a script runs commands it reads from
#             elsewhere (test_docs.sh runs docs/ab.md's).  A script with
#             no `# host:` line runs alone.
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
	# a part in tests/integration/DIR/ runs under the host line of
	# test_DIR.sh, which sources it (attacks/*.sh: test_attacks.sh)
	d=$(dirname "$f")
	phl=$(sed -n '/^# host:/{p;q}' "$d/../test_$(basename "$d").sh" 2>/dev/null)
	awk -v file="$f" -v parent_hl="$phl" '
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
function findings(   win, i, j, t, fw, p, m, used, nxt, lnk, x, a, fn, l2) {
	# the functions that start a job in the background (a command of their
	# body ends in &): their own status says nothing
	for (i = 1; i <= nc; i++) {
		if (!match(C[i], /^[A-Za-z_][A-Za-z_0-9]*\(\)/)) continue
		fn = substr(C[i], 1, RLENGTH - 2)
		for (l2 = CL[i]; l2 <= n && lines[l2] !~ /^\}/ && !(l2 == CL[i] && lines[l2] ~ /\}[ \t]*$/); l2++) ;
		for (j = i; j <= nc && CL[j] <= l2; j++) if (CA[j] == "&") bgfn[fn] = 1
	}
	for (i = 1; i <= nc; i++) {
		t = C[i]; fw = firstword(t)
		if ((fw == "check" || fw == "expect_fail") && t ~ /[ \t\n]--([ \t\n]|$)/ && (CA[i] == "&&" || CA[i] == "||"))
			report(CL[i], "outside", "a condition after `" fw " ... --` joined by " CA[i] ", outside the check")
		if (fw == "true" || fw == ":") if (CB[i] == "||" && i < nc && firstword(C[i + 1]) ~ /^(check|t_ok|run|expect_fail)$/)
			report(CL[i], "true", "`|| " fw "` right before a " firstword(C[i + 1]))
		if (fw == "check" && t ~ /[ \t\n]--[ \t\n]+(true|:)[ \t\n]*$/)
			report(CL[i], "true", "a check of `" (t ~ /:[ \t\n]*$/ ? ":" : "true") "`: it cannot fail (a heading is an echo \"# ...\")")
		if (fw == "echo" && bare(t) ~ /^echo[ \t]+["\x27]#/ && CB[i] == "||" && i < nc && firstword(C[i + 1]) ~ /^(check|t_ok|run|expect_fail)$/)
			report(CL[i], "true", "`|| echo \"# ...\"` right before a " firstword(C[i + 1]) ": a failure turned into a comment (t_not_ok it, or put it inside the check)")
		if (fw == "wait_until" && bare(t) ~ /^wait_until[ \t]+[^ \t]+[ \t]+(false|!?[ \t]*(sh|bash)[ \t]+-c[ \t]+["\x27]?(false|exit 1)["\x27]?|![ \t]+(true|:))[ \t]*$/)
			report(CL[i], "sleep", "`" bare(t) "` cannot end before its deadline: a fixed sleep")
	}
	depth = 0
	for (i = 1; i <= nc; i++) {
		t = C[i]
		if (t ~ /^do([ \t\n]|$)/ || t ~ /^(while|until|for)[ \t].*[ \t]do([ \t\n]|$)/) depth++
		fw = firstword(t)
		win = 0
		for (j = CL[i] - 1; j > 0 && lines[j] ~ /^[ \t]*#/; j--) if (lines[j] ~ /^[ \t]*# window:/) win = 1
		if (fw == "sleep" && bare(t) ~ /^sleep[ \t]+([0-9.]+|"?\$\{?[A-Za-z_][A-Za-z_0-9]*\}?"?)[ \t]*$/ && depth == 0 && !win &&
		    (CA[i] != "&" || (i < nc && C[i + 1] ~ /^wait([ \t]+"?\$!"?)?$/)))
			report(CL[i], "sleep", "a fixed `" bare(t) "`" (CA[i] == "&" ? " in the background, then waited for," : "") " outside a wait loop: wait for the event (wait_until), or give the window and its margin in a `# window:` comment right above")
		if (t ~ /^done([ \t\n);|&]|$)/ && depth > 0) depth--
	}
	hl = ""
	for (ln = 1; ln <= n && hl == ""; ln++) if (lines[ln] ~ /^# host:/) hl = lines[ln]
	if (hl == "") hl = parent_hl
	for (ln = 1; ln <= n; ln++) {
		x = lines[ln]; if (x ~ /^[ \t]*#/) continue
		if (ge0(x))
			report(ln, "ge0", "`-ge 0` / `-gt -1` / `>= 0`: true of every count")
		if (!cgsaid && hl != "" && hl !~ /[ \t]abcg([ \t]|$)/ && x ~ /(\$\{?NODETUNE\}?"?|(^|[^-A-Za-z_0-9\/.])nodetune)[ \t]+(ab|bisect)([ \t]|$)/) {
			report(ln, "abcg", "`nodetune " (x ~ /bisect/ ? "bisect" : "ab") "` makes its trial groups (nodetune-ab) in the live cgroup tree, and the `" hl "` line does not name abcg: a script holding it beside this one finds them as its own leftovers")
			cgsaid = 1
		}
		# a rollout with a gate (a name, not one refused as such): each
		# canary host runs `nodetune ab` in its daemon
		if (!cgsaid && hl != "" && hl !~ /[ \t]abcg([ \t]|$)/ && x ~ /--gate[ \t=]+["\047]?[$a-z0-9_]/) {
			report(ln, "abcg", "`--gate` makes each canary host run `nodetune ab`, whose trial groups (nodetune-ab) are made in the live cgroup tree, and the `" hl "` line does not name abcg: a script holding it beside this one finds them as its own leftovers")
			cgsaid = 1
		}
	}
	for (i = 1; i <= nc; i++) {
		t = bare(C[i]); fw = firstword(t)
		if (fw ~ /^(done|fi|esac|\}|\)|check|run|expect_fail|echo|printf|cat|sed|awk|grep|jq|sort|head|tail|cut|tr|cp|mkdir|rm|ln|chmod|touch|tee|python3|local|export|wait|:|t_defer|t_undo)$/) continue
		if (fw in bgfn) continue     # a function that starts a job in the background
		if (i < nc && C[i + 1] ~ /^\}/) continue    # the last of a group or a function: its status is theirs
		if (fw ~ /^[A-Za-z_][A-Za-z_0-9]*=/ && t !~ /[ \t]/) continue
		if (C[i] ~ /^(if|while|until|!)[ \t]/ || CB[i] == "&&" || CA[i] == "&&" || CA[i] == "||" || CA[i] == "&") continue
		if (CA[i] == "|") { piped(i, fw); continue }
		# $? read by the next command: used, unless only said (echo "# rc $?")
		if (i < nc && C[i + 1] ~ /\$\?/ && bare(C[i + 1]) !~ /^(echo|printf)[ \t]+["\x27]?#[^>]*$/) continue
		# a background job (a function that starts one): the waits after it
		for (j = i + 1; j < nc && firstword(C[j]) == "wait" && C[j + 1] ~ /\$\?/; j += 2) ;
		if (j > i + 1) continue
		# each file it writes: the first a later check or run reads is reported
		if ((j = reader(t, i)) > 0)
			report(CL[i], "status", "the status of `" fw "` writing " path " is ignored, and the " rname(j) " at line " CL[j] " reads it")
	}
	exit found
}
# reader(t, i): the first later command (after i) that reads a file the
# command text t writes (path set to it), or 0.  A writer: >, 2> (any
# digit), >>, tee, or an option that names an output (--json, --out, -o,
# --dump-weights, --report, --write-data, --screenshot, --state-dir: a
# directory, read through a path below it), with "$T_TMP/NAME", its = form
# too.  A reader: a check or a run naming the path, or an assignment from
# $( ) that names it (v=$(jq .x "$T_TMP/p")).
function reader(t, i,   rest, j) {
	rest = t
	while (match(rest, /((^|[ \t])[0-9]?>>?|(^|[ \t])tee([ \t]+-a)?|--json|--out|--dump-weights|-o|--report|--write-data|--screenshot|--state-dir)[ \t=]*"?\$T_TMP\/[A-Za-z0-9_.\/-]+/)) {
		path = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH)
		sub(/^.*\$T_TMP\//, "$T_TMP/", path)
		for (j = i + 1; j <= nc; j++)
			if (names(C[j], path) && (firstword(C[j]) ~ /^(check|run)$/ || checked_var(j)))
				return j
	}
	return 0
}
# names(x, path): x names path itself or a path below it (not x.json, not xy)
function names(x, path,   k, c) {
	while ((k = index(x, path)) > 0) {
		c = substr(x, k + length(path), 1)
		if (c !~ /[A-Za-z0-9_.-]/) return 1
		x = substr(x, k + 1)
	}
	return 0
}
# checked_var(j): command j assigns a variable from $( ) that a later check
# or run names
function checked_var(j,   v, k) {
	if (!match(C[j], /^[A-Za-z_][A-Za-z_0-9]*=["]?\$\(/)) return 0
	v = C[j]; sub(/=.*/, "", v)
	for (k = j + 1; k <= nc && index(C[k], v "=") != 1; k++)    # until it is set again
		if (firstword(C[k]) ~ /^(check|run|expect_fail)$/ && (C[k] ~ ("\\$" v "([^A-Za-z_0-9]|$)") || index(C[k], "${" v "}")))
			return 1
	return 0
}
function rname(j) { return firstword(C[j]) ~ /^(check|run)$/ ? firstword(C[j]) : "assignment" }
# piped(i, fw): command i (fw, not a text tool) feeds a pipe; its status is
# lost (sh has no pipefail), which matters when the pipe writes a file a
# later check reads (nodetune ... | tee "$T_TMP/p", then a check of p)
function piped(i, fw,   k, j) {
	for (k = i + 1; k <= nc; k++) {
		if ((j = reader(C[k], k)) > 0) {
			report(CL[i], "status", "the status of `" fw "` is lost in a pipe writing " path ", and the " rname(j) " at line " CL[j] " reads it")
			return
		}
		if (CA[k] != "|") return
	}
}' "$f" || bad=1
done
exit $bad
