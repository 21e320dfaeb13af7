#!/bin/sh
# SPDX-License-Identifier: MIT
# host: state
# Every nodetune command README.md shows runs, as shown, from a fresh clone
# before `make install`: each `nodetune ...` line of a ```sh block (a `sudo`
# dropped, `\` continuations joined, a trailing `# comment` dropped) and
# each `$ nodetune ...` of a ```console block, whose output is compared with
# the lines that follow it.  The clone is `git clone` of this checkout's
# HEAD; the README's `make` there is this run's binary copied into the
# clone's build/ (building the clone again would take minutes: make check
# built this one from the same sources), its `export PATH=...` is run as
# written, and NODETUNE_POLICY_PATH is unset: a policy NAME resolves in the
# clone's policies/, found by the binary from its own place (tune/policy.h,
# policy_checkout_dir).  What writes (apply, revert) writes a copy of a
# captured tree (--sysroot, --topology, --state-dir appended).  What needs a
# job, a daemon, a store or minutes (run, daemon, status, fleet, ab) is
# listed as a skip with the test that covers it.  Also: the "no policy
# named" error names where it looked; a binary outside a checkout does not
# look in one; the README stays the front door (at most 250 lines), and no
# user-facing text cites ../shared.
. "$(dirname "$0")/lib.sh"
t_plan 57

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
TREE=$T_TMP/tree
ST=$T_TMP/state
CLONE=$T_TMP/clone
cp -r tests/fixtures/sysroot/gpu-host-untuned "$TREE"
unset NODETUNE_POLICY_PATH

# ---- a fresh clone (umask 022: root's, and not group-writable, as a root
# process wants a policy directory); where git cannot clone this tree (an
# unpacked tarball, a checkout git calls of dubious ownership for root): a
# copy of it without build/ and .git --------------------------------------
how="git clone of HEAD"
if ! (umask 022 && git clone -q "$SRCDIR" "$CLONE") 2>"$T_TMP/clone.err"; then
	how="a copy without build/ (git clone: $(head -n 1 "$T_TMP/clone.err"))"
	rm -rf "$CLONE"
	(umask 022 && mkdir "$CLONE" && tar -cf - --exclude=./build --exclude=./.git . |
		tar -C "$CLONE" --no-same-owner --no-same-permissions -xf -)
fi
check "a fresh clone of this checkout, without build/ ($how)" -- sh -c "[ -f '$CLONE/policies/gpu-train.conf' ] && [ ! -e '$CLONE/build' ]"

# a binary outside any checkout (an installed one): the default path only
mkdir -p "$T_TMP/sbin" && cp "$NODETUNE" "$T_TMP/sbin/nodetune"
run "$T_TMP/sbin/nodetune" policy list --json
check "a binary outside a checkout looks in no checkout's policies/ ($(jq -r .path "$OUT"))" -- sh -c \
	"[ $RC -eq 0 ] && jq -e --arg s '$SRCDIR/' --arg t '$T_TMP/' '.path | startswith(\"/etc/nodetune/policies:\") and (contains(\$s) or contains(\$t) | not)' '$OUT' >/dev/null"
INSTALLED=$(jq -r '[.policies[].file] | join(" ")' "$OUT")
if [ -n "$INSTALLED" ]; then
	t_skip_host clean "policies installed on this host ($INSTALLED) come before the clone's: the README's commands run with NODETUNE_POLICY_PATH=the clone's policies/"
	NODETUNE_POLICY_PATH=$CLONE/policies
	export NODETUNE_POLICY_PATH
else
	run "$T_TMP/sbin/nodetune" policy list
	check "policy list with no policy found: exit 0, and stderr says where it looked and how to add one" -- sh -c \
		"[ $RC -eq 0 ] && grep -q '^policy path: /etc/nodetune/policies:' '$OUT' && grep -q '^nodetune: policy list: .*no policies in /etc/nodetune/policies:.* (add NAME.conf to /etc/nodetune/policies, or set NODETUNE_POLICY_PATH=DIR)\$' '$ERR'"
fi

# The commands, one file each in $T_TMP/cmd: N.sh (the command line, its
# words as the shell would split them: the README quotes what it must) and,
# for a console block, N.out (the output shown).
python3 - README.md "$T_TMP/cmd" <<'EOF'
import os, re, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
n = 0
def emit(cmd, expected=None):
    global n
    n += 1
    with open(f"{out}/{n:03d}.sh", "w") as f:
        f.write(cmd + "\n")
    if expected is not None:
        with open(f"{out}/{n:03d}.out", "w") as f:
            f.write("".join(l + "\n" for l in expected))
lines = open(src).read().split("\n")
i = 0
while i < len(lines):
    m = re.match(r"^```(\w*)$", lines[i])
    if not m:
        i += 1
        continue
    lang, i = m.group(1), i + 1
    block = []
    while not lines[i].startswith("```"):
        block.append(lines[i])
        i += 1
    i += 1
    if lang == "sh":
        joined, cur = [], ""
        for l in block:
            cur += l.rstrip("\\").rstrip() + " " if l.endswith("\\") else l
            if not l.endswith("\\"):
                joined.append(cur)
                cur = ""
        for l in joined:
            l = re.sub(r"\s{2,}#\s.*$", "", l).strip()
            for part in l.split("&&"):
                part = re.sub(r"^sudo\s+", "", part.strip())
                if part.startswith("nodetune ") or part == "make" or part.startswith("export PATH="):
                    emit(part)
                elif " nodetune exec " in part:     # under a launcher: the exec it starts
                    emit(part[part.index("nodetune exec "):])
                elif part:
                    print(f"not nodetune: {part}")
    elif lang == "console":
        cmd, exp = None, []
        for l in block + ["$ "]:
            if l.startswith("$ "):
                if cmd:
                    emit(cmd, exp)
                cmd, exp = l[2:].strip() or None, []
            else:
                exp.append(l)
EOF
check "README.md shows nodetune commands ($(ls "$T_TMP/cmd"/*.sh | wc -l))" -- sh -c "[ \$(ls '$T_TMP/cmd'/*.sh | wc -l) -ge 10 ]"

# in the clone, as a newcomer types them
cd "$CLONE" || exit 1
for f in "$T_TMP"/cmd/*.sh; do
	line=$(cat "$f")
	case $line in
	make)   # this run's binary, as the clone's build would make it
		mkdir build && cp "$NODETUNE" build/nodetune
		check "README: 'make': build/nodetune in the clone (this run's binary, copied)" -- [ -x build/nodetune ]
		continue ;;
	"export PATH="*)
		eval "$line"
		check "README: '$line': nodetune is the clone's build/nodetune ($(command -v nodetune))" -- \
			[ "$(command -v nodetune)" = "$CLONE/build/nodetune" ]
		continue ;;
	esac
	eval "set -- $line"
	shift                                   # "nodetune"
	verb=$1
	[ "$verb" = policy ] || [ "$verb" = fleet ] && verb="$1 $2"
	case $verb in
	exec)   # as a launcher starts it: local rank 0 here, the job `true`
		opts=
		shift
		while [ $# -gt 0 ] && [ "$1" != -- ]; do opts="$opts '$1'"; shift; done
		eval "set -- exec $opts --local-rank 0 -- true"
		line="$line (as local rank 0, the job: true)" ;;
	run) echo "# README: '$line': needs a job (test_policy_cli.sh, test_launchers.sh run it) (not run here)"; continue ;;
	"policy use") echo "# README: '$line': switches this host's daemon (test_policy_use.sh runs it on a tree) (not run here)"; continue ;;
	daemon | status) echo "# README: '$line': needs a running daemon (test_daemon.sh) (not run here)"; continue ;;
	fleet*) echo "# README: '$line': needs an etcd store (test_fleet.sh) (not run here)"; continue ;;
	ab | bisect) echo "# README: '$line': takes minutes and its arms' jobs (test_ab.sh, test_bisect.sh) (not run here)"; continue ;;
	apply | revert) set -- "$@" --sysroot "$TREE" --state-dir "$ST"
		[ "$verb" = apply ] && set -- "$@" --topology $HGX ;;
	esac
	run nodetune "$@"
	if [ -f "${f%.sh}.out" ]; then
		check "README: '$line': exit 0, the output shown" -- sh -c "[ $RC -eq 0 ] && diff -u '${f%.sh}.out' '$OUT' >&2"
	else
		case $verb in
		doctor | verify) ok="[ $RC -le 1 ] && [ -s '$OUT' ]" ;;  # 1: it found something on this host
		exec) ok="[ $RC -eq 0 ]" ;;                              # stdout is the job's (true: none)
		*) ok="[ $RC -eq 0 ] && [ -s '$OUT' ]" ;;
		esac
		check "README: '$line' runs (exit $RC)" -- sh -c "$ok"
	fi
done
check "after the README's apply and revert: the tree as captured, no journal" -- sh -c \
	"diff -r tests/fixtures/sysroot/gpu-host-untuned '$TREE' >/dev/null && [ ! -e '$ST/journal' ]"

# ---- the clone's policies/: last on the path, where it looked, the trust rule
unset NODETUNE_POLICY_PATH
run nodetune policy list --json
check "in the clone: the policy path ends with the clone's policies/, gpu-train found there" -- sh -c \
	"[ $RC -eq 0 ] && jq -e --arg d '$CLONE/policies' '(.path | endswith(\":\" + \$d)) and any(.policies[]; .file == \$d + \"/gpu-train.conf\")' '$OUT' >/dev/null"
expect_fail 2 "^nodetune: plan: no policy named 'nosuch' in /etc/nodetune/policies:.*:$CLONE/policies \\(add nosuch.conf to /etc/nodetune/policies, or set NODETUNE_POLICY_PATH=DIR; nodetune policy list\\)\$" \
	"a NAME no directory has: every directory looked in, and how to add one" -- nodetune plan --policy nosuch
if [ "$(id -u)" -eq 0 ]; then
	chmod g+w policies
	expect_fail 2 "refusing the directory $CLONE/policies \\(uid 0, mode 0775\\)" \
		"as root, the clone's policies/ writable by its group is refused, as any directory of the path" -- \
		nodetune plan --policy gpu-train
	chmod g-w policies
else
	t_skip_host root "the trust rule of a root process: not root"
fi
cd "$SRCDIR" || exit 1

# ---- the front door: short, and nothing that a clone lacks ----------------
"$NODETUNE" help --json >"$T_TMP/help.json" || t_not_ok "nodetune help --json failed"
check "README.md is at most 250 lines ($(wc -l <README.md))" -- [ "$(wc -l <README.md)" -le 250 ]
check "no ../shared path in README.md, docs/, deploy/README.md or any verb's help" -- sh -c \
	"! grep -n '\.\./shared' README.md docs/*.md deploy/README.md >&2 && ! '$NODETUNE' help | grep -q '\.\./shared'"
for doc in $(grep -o '](\(docs\|deploy\|agent\|bench\)/[^)]*)' README.md | sed 's/^](//; s/)$//' | sort -u); do
	check "README links to $doc, which exists" -- [ -f "$doc" ]
done
# a relative link in docs/*.md is relative to docs/
for link in $(grep -o '](\.*/*[a-zA-Z][^):#]*\(#[^)]*\)\?)' docs/*.md | grep -v '](https\?:' | sed 's/#[^)]*)$/)/; s/:](/ /; s/)$//' | sort -u | tr ' ' '|'); do
	check "${link%%|*} links to ${link#*|}, which exists" -- [ -e "docs/${link#*|}" ]
done
# the verb table names every verb (nodetune help --json), a group's second
# words after its first (`fleet keygen`, `init-auth`), a verb by its
# sub-verb (`slurm gres`), and `help`
check "README's verb table names every verb and help" -- python3 -c '
import json, re, sys
verbs = [v["verb"] for v in json.load(sys.stdin)["verbs"]] + ["help"]
text = open("README.md").read().split("## Verbs", 1)[1].split("\n\n", 2)[1]
named = set()
for row in text.splitlines()[2:]:
    group = ""
    for w in re.findall(r"`([^`]+)`", row.split("|")[1]):
        if " " in w:
            group = w.split()[0] + " "
        named.add(w if " " in w else group + w)
missing = [v for v in verbs if v not in named and not any(n.startswith(v + " ") for n in named)]
missing and print("# not in the table: %s" % ", ".join(missing), file=sys.stderr)
sys.exit(1 if missing else 0)' <"$T_TMP/help.json"
t_done
