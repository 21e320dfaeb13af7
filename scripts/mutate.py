#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""mutate.py -- the mutation score of the modules where a wrong answer is a
security or correctness hole (`make mutation`).

Each module of tests/mutation/modules.conf names its source files (whole, or
FILE:FUNC,FUNC for some functions of it), the unit-test binaries and the
integration scripts that cover it, and a count of mutants.  A mutant is one
edit of one line:

  cmp   a comparison inverted or moved by one (< <=, > >=, == !=)
  logic && and || swapped
  const an integer constant off by one (N -> N+1)
  del   a statement that is a call on one line deleted
  ret   a `return EXPR;` forced to `return 0;` (or 0 to 1)

The candidates are every such site outside comments, strings and
preprocessor lines, in a stable order; the seed (--seed, default 1) picks
`mutants` of them per module.  Each mutant is built in a copy of the tree
(BUILD/mutation/src, its own build directory) and judged:

  killed     a unit binary or an integration script failed
  timeout    one ran past its limit (counted as killed, shown apart)
  survived   everything passed: its diff is written out
  stillborn  it did not compile (not counted)
  equivalent named in tests/mutation/equivalent.txt with a reason (not
             counted)

Output: a table per module (markdown), and each survivor's diff in
OUT/MODULE.survivors.  Usage:

  mutate.py [--seed N] [--only MODULE[,MODULE]] [--no-integration]
            [--max N] [--ids FILE] [--list] [--jobs N] [--reuse BUILD]
            --build DIR --out DIR

--ids runs only the chosen mutants a file names (a survivors file will
do): a re-judging of the survivors after new checks.
"""
import argparse, hashlib, os, random, re, shutil, signal, subprocess, sys, time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def read_conf(path):
    """modules.conf: [NAME] sections of `key = value` lines, # comments."""
    mods, cur = [], None
    for n, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"\[([a-z0-9_-]+)\]", line)
        if m:
            cur = {"name": m.group(1), "src": [], "unit": [], "integration": [],
                   "mutants": 40, "line": n}
            mods.append(cur)
            continue
        m = re.fullmatch(r"([a-z]+)\s*=\s*(.*)", line)
        if not m or cur is None or m.group(1) not in cur:
            sys.exit(f"{path}:{n}: expected [module] or src/unit/integration/mutants = ...")
        k, v = m.group(1), m.group(2)
        cur[k] = int(v) if k == "mutants" else cur[k] + v.split()
    return mods


def mask(text):
    """The text with comments, strings and char literals blanked (same
    length, newlines kept), so operators are found only in code."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            i += 1
            continue
        for k in range(i, min(j, n)):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def func_lines(lines, names):
    """The line numbers (0-based) of the bodies of the named functions
    (house style: the definition at column 0, its { and } at column 0)."""
    keep = set()
    for name in names:
        found = False
        for i, l in enumerate(lines):
            if re.match(r"[a-z].*\b%s\(" % re.escape(name), l) and not l.rstrip().endswith(";"):
                j = i
                while j < len(lines) and lines[j] != "{":
                    j += 1
                k = j
                while k < len(lines) and lines[k] != "}":
                    k += 1
                keep.update(range(i, k + 1))
                found = True
                break
        if not found:
            sys.exit(f"mutate: no function {name}() found")
    return keep


CMP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}


def candidates(path, funcs):
    """Every mutant of one file: (line0, col, old, new, kind)."""
    text = open(os.path.join(TOP, path)).read()
    lines, mlines = text.split("\n"), mask(text).split("\n")
    only = func_lines(lines, funcs) if funcs else None
    out = []
    for i, m in enumerate(mlines):
        if (only is not None and i not in only) or m.lstrip().startswith("#"):
            continue
        for mt in re.finditer(r"(?<![<>=!&|+\-*/%^-])(<=|>=|==|!=|<|>)(?![<>=])", m):
            op = mt.group(1)
            if op in "<>" and (m[mt.start() - 1:mt.start()] == "-" or m[mt.end():mt.end() + 1] in "<>"):
                continue
            out.append((i, mt.start(), op, CMP[op], "cmp"))
        for mt in re.finditer(r"&&|\|\|", m):
            out.append((i, mt.start(), mt.group(0), "||" if mt.group(0) == "&&" else "&&", "logic"))
        for mt in re.finditer(r"(?<![\w.\[])(\d+)(?![\w.])", m):
            if "[" in m[:mt.start()] and "]" in m[mt.end():] and re.search(r"\w\s*\[[^]]*$", m[:mt.start()]) \
               and re.match(r"\s*\w+\s+\w+\s*\[", m):
                continue        # an array size in a declaration
            if re.search(r"\breturn\s+-?$", m[:mt.start()]) and re.match(r"\s*;", m[mt.end():]):
                continue        # `return N;`: the ret mutant covers it
            v = int(mt.group(1))
            out.append((i, mt.start(), mt.group(1), str(v + 1), "const"))
        s = m.strip()
        if re.fullmatch(r"(?:[A-Za-z_][\w.>-]*)\s*\(.*\);", s) and s.count("(") == s.count(")") \
           and not re.match(r"(return|if|while|for|switch|sizeof)\b", s):
            out.append((i, m.index(s[0]), lines[i].strip(), ";", "del"))
        mt = re.search(r"\breturn\s", m)
        semi = m.find(";", mt.end()) if mt else -1
        if semi > 0 and lines[i][mt.end():semi].strip():
            # the expression from the source line, up to the `;` the mask
            # found (a `;` or an escaped quote in a string is not an end)
            old = lines[i][mt.start():semi + 1]
            e = old[len("return"):-1].strip()
            new = "1" if e in ("0", "false", "NULL") else "0"
            out.append((i, mt.start(), old, f"return {new};", "ret"))
    return out


def apply(src, cand):
    line0, col, old, new, kind = cand
    lines = src.split("\n")
    l = lines[line0]
    if kind == "del":
        lines[line0] = l.replace(old, "; /* mutant: deleted */", 1)
    else:
        lines[line0] = l[:col] + l[col:].replace(old, new, 1)
    return "\n".join(lines)


def mutant_id(path, cand):
    line0, col, old, new, kind = cand
    return f"{path}:{line0 + 1}:{col + 1}:{kind}:{old.strip()[:40]}->{new}"


def sh(cmd, cwd, timeout):
    """cmd's status and output; on a timeout its whole process group is
    killed (a mutant's test blocked on a lock outlived its shell)."""
    p = subprocess.Popen(cmd, cwd=cwd, shell=True, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, "timeout"


def judge(mod, work, build, args):
    """Build the mutant's binaries and run its tests: the verdict."""
    units = " ".join(f"{build}/tests/{u}" for u in mod["unit"])
    # the integration scripts run the programs (all); the unit binaries alone need only themselves
    rc, out = sh(f"make -s -j{args.jobs} INSTALL_DEPS=true BUILD={build} {'' if args.no_integration else 'all'} {units}",
                 work, 600)
    if rc != 0:
        return "stillborn", out[-400:]
    for u in mod["unit"]:
        rc, out = sh(f"{build}/tests/{u}", work, args.unit_timeout)
        if rc is None:
            return "timeout", u
        if rc != 0:
            return "killed", u
    if not args.no_integration:
        for t in mod["integration"]:
            rc, out = sh(f"make -s INSTALL_DEPS=true BUILD={build} integration TESTS={t}", work,
                         args.integration_timeout)
            if rc is None:
                return "timeout", t
            if rc != 0:
                return "killed", t
    return "survived", ""


def diff_of(path, before, after):
    a = before.split("\n")
    b = after.split("\n")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"--- a/{path}\n+++ b/{path}\n@@ line {i + 1} @@\n-{x}\n+{y}\n"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-integration", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--unit-timeout", type=int, default=120)
    ap.add_argument("--integration-timeout", type=int, default=900)
    ap.add_argument("--max", type=int, default=0, help="at most N mutants a module (a smoke run)")
    ap.add_argument("--list", action="store_true", help="print the chosen mutants, run nothing")
    ap.add_argument("--ids", help="a file naming mutant ids (lines `ID` or `# ID`, as a survivors file): "
                    "run only those of the chosen")
    ap.add_argument("--reuse", help="a build directory of this tree to start from (copied)")
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    mods = read_conf(os.path.join(TOP, "tests/mutation/modules.conf"))
    equiv = {}
    epath = os.path.join(TOP, "tests/mutation/equivalent.txt")
    if os.path.exists(epath):
        for line in open(epath):
            if line.strip() and not line.startswith("#"):
                mid, _, why = line.rstrip("\n").partition("  ")
                equiv[mid.strip()] = why.strip()
    if args.only:
        want = set(args.only.split(","))
        mods = [m for m in mods if m["name"] in want]
    work = os.path.abspath(os.path.join(args.build, "mutation", "src"))
    build = os.path.join(work, "build")
    os.makedirs(args.out, exist_ok=True)
    if not args.list:
        if os.path.exists(work):
            shutil.rmtree(work)
        shutil.copytree(TOP, work, symlinks=True,
                        ignore=shutil.ignore_patterns("build", ".git"))
        if args.reuse:          # a built tree of the same sources: objects newer than the copy
            shutil.copytree(args.reuse, build, symlinks=True,
                            ignore=shutil.ignore_patterns("mutation", "deb", "k8s-validate", "asan", "fuzz"))
            sh(f"find {build} -exec touch {{}} +", work, 600)
        units = " ".join(f"{build}/tests/{u}" for m in mods for u in m["unit"])
        rc, out = sh(f"make -s -j{args.jobs} INSTALL_DEPS=true BUILD={build} {'' if args.no_integration else 'all'} {units}",
                     work, 1800)
        if rc != 0:
            sys.exit("mutate: the unmutated tree does not build:\n" + out[-2000:])
    rows = []
    for mod in mods:
        cands = []
        for spec in mod["src"]:
            path, _, funcs = spec.partition(":")
            cands += [(path, c) for c in candidates(path, funcs.split(",") if funcs else [])]
        rnd = random.Random(f"{args.seed}:{mod['name']}")
        want = min(mod["mutants"], args.max) if args.max else mod["mutants"]
        chosen = sorted(rnd.sample(cands, min(want, len(cands))),
                        key=lambda pc: (pc[0], pc[1][0], pc[1][1]))
        if args.ids:
            keep = {l.lstrip("#").strip() for l in open(args.ids)}
            chosen = [pc for pc in chosen if mutant_id(*pc) in keep]
        tally = {"killed": 0, "timeout": 0, "survived": 0, "stillborn": 0, "equivalent": 0}
        surv = []
        t0 = time.time()
        for path, c in chosen:
            mid = mutant_id(path, c)
            if args.list:
                print(mod["name"], mid)
                continue
            if mid in equiv:
                tally["equivalent"] += 1
                print(f"{mod['name']}: equivalent {mid}: {equiv[mid]}", flush=True)
                continue
            f = os.path.join(work, path)
            before = open(f).read()
            after = apply(before, c)
            open(f, "w").write(after)
            try:
                verdict, why = judge(mod, work, build, args)
            finally:
                open(f, "w").write(before)
                os.utime(f, None)
            tally[verdict] += 1
            print(f"{mod['name']}: {verdict} {mid} {why if verdict != 'stillborn' else ''}".rstrip(),
                  flush=True)
            if verdict == "survived":
                surv.append(f"# {mid}\n{diff_of(path, before, after)}")
        if args.list:
            continue
        counted = tally["killed"] + tally["timeout"] + tally["survived"]
        score = 100.0 * (tally["killed"] + tally["timeout"]) / counted if counted else 0.0
        rows.append((mod["name"], len(chosen), tally, score, time.time() - t0))
        with open(os.path.join(args.out, f"{mod['name']}.survivors"), "w") as fh:
            fh.write("".join(surv) if surv else "# none\n")
    if args.list:
        return 0
    table = ["| module | mutants | killed | timed out | survived | stillborn | equivalent | score | time |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, n, t, score, secs in rows:
        table.append(f"| {name} | {n} | {t['killed']} | {t['timeout']} | {t['survived']} | "
                     f"{t['stillborn']} | {t['equivalent']} | {score:.0f}% | {secs:.0f} s |")
    text = "\n".join(table) + "\n"
    open(os.path.join(args.out, "score.md"), "w").write(text)
    print(text)
    return 0 if all(score >= 90 for _, _, _, score, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
