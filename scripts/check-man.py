#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-man.py DUMP PAGE... [--foreign FLAG]... [--helps DIR] -- the man
pages against the option tables and VERB --help.

DUMP is `nodetune --dump-options` (VERB<TAB>LONG<TAB>SHORT<TAB>ARG lines,
from the tables agent/cli parses with), and any other command's options as
the same lines (nodetune-harness's, from its --help).  The pages are
mdoc(7).  A page CMD.N documents the options of CMD in its OPTIONS section
(nodetune.8: the global options, verb "nodetune"), nodetune.8 each verb in a subsection ".Ss VERB" of COMMANDS; a page
nodetune-GROUP.8 documents the verbs "GROUP SUB" in its subsections ".Ss
SUB".  A verb's options are its ".It Fl ..." items.

Fails (one line each, "PAGE:LINE: ..." where there is a line, exit 1) when
  - a verb of the dump has no section in any page;
  - a verb's section lacks an option of its table, or lists one its table
    does not have;
  - any page names (Fl) an option that no table has, other than the
    --foreign ones (the SPANK plugin's srun option);
  - with --helps DIR (a file DIR/VERB per verb, a space in VERB as "_",
    holding `nodetune VERB --help`): an option of a verb's section whose
    value's name differs from its --help's, or whose text (the item's
    first paragraph, whitespace folded) is not its --help line word for
    word (its default and units with it).
Silent with exit 0 otherwise; exit 2 on bad usage.
"""
import os
import re
import sys


def load_dump(path):
    """{verb: set of flags ("--long", "-s")}"""
    verbs = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 4:
                sys.exit(f"check-man: {path}:{n}: expected VERB<TAB>LONG<TAB>SHORT<TAB>ARG")
            verb, long_, short, _ = cols
            flags = verbs.setdefault(verb, set())
            flags.add("--" + long_)
            if short != "-":
                flags.add("-" + short)
    return verbs


def fl_flags(line):
    """The options a macro line names with Fl: "Fl -policy" is --policy,
    "Fl n" is -n; "Fl -" alone (the end of options) is none."""
    toks = line.lstrip(".").split()
    out = []
    for i, t in enumerate(toks[:-1]):
        if t == "Fl":
            name = toks[i + 1]
            if name in ("-", "|", ",") or name.startswith("\\"):
                continue
            out.append("-" + name.rstrip(",;."))
    return out


def scan_page(path):
    """[(verb or None, line number, flag, is_item)] for every Fl in the page."""
    base = os.path.basename(path)
    m = re.fullmatch(r"nodetune-(\w+)\.\d", base)
    prefix = m.group(1) + " " if m else ""
    found, verb, sh = [], None, ""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith(".Sh "):
                sh = line[4:].strip()
                # OPTIONS: the page's command's own (nodetune.8: the global ones)
                verb = base.rsplit(".", 1)[0] if sh == "OPTIONS" else None
                continue
            if line.startswith(".Ss ") and sh == "COMMANDS":
                verb = prefix + line[4:].strip()
                found.append((verb, n, None, False))   # the section itself
                continue
            if not line.startswith("."):
                continue
            item = line.startswith(".It ")
            for flag in fl_flags(line):
                found.append((verb, n, flag, item))
    return found


def unmdoc(line):
    """The words a text line of the page shows (escapes undone)."""
    return line.replace("\\&", "").replace("\\e", "\\")


def page_items(path):
    """{verb: {"--long": (value, text, line number)}}: each option item of a
    verb's section, its value's name (after Ar) and its first paragraph."""
    items, verb, sh, cur = {}, None, "", None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith((".Sh ", ".Ss ")):
                sh = line[4:].strip() if line.startswith(".Sh ") else sh
                verb = None
                if line.startswith(".Ss ") and sh == "COMMANDS":
                    m = re.fullmatch(r"nodetune-(\w+)\.\d", os.path.basename(path))
                    verb = (m.group(1) + " " if m else "") + line[4:].strip()
                cur = None
                continue
            if line.startswith(".It Fl ") and verb:
                toks = line.split()
                longs = [t for t in fl_flags(line) if t.startswith("--")]
                value = " ".join(toks[toks.index("Ar") + 1:]) if "Ar" in toks else ""
                cur = [value, [], n]
                if longs:
                    items.setdefault(verb, {})[longs[0]] = cur
                continue
            if line.startswith("."):
                cur = None
            elif cur is not None:
                cur[1].append(unmdoc(line))
    return {v: {o: (c[0], " ".join(" ".join(c[1]).split()), c[2]) for o, c in opts.items()}
            for v, opts in items.items()}


def help_items(path):
    """{"--long": (value, text)} from the Options: of a VERB --help."""
    out, cur, on = {}, None, False
    opt = re.compile(r"^  (?:-\w, |    )(--[a-z0-9-]+)(?: (\S+))?(?: {2,}(.*))?$")
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line == "Options:":
                on = True
                continue
            if not on:
                continue
            if not line:
                break
            m = opt.match(line)
            if m:
                cur = out[m.group(1)] = [m.group(2) or "", [m.group(3) or ""]]
            elif cur is not None:
                cur[1].append(line.strip())
    return {o: (c[0], " ".join(" ".join(c[1]).split())) for o, c in out.items()}


def check_helps(pages, helps):
    """The lines that say where a page and VERB --help disagree."""
    bad = []
    for page in pages:
        for verb, opts in sorted(page_items(page).items()):
            path = os.path.join(helps, verb.replace(" ", "_"))
            if not os.path.exists(path):
                continue
            want = help_items(path)
            for flag, (value, txt, n) in sorted(opts.items()):
                if flag not in want:
                    continue        # the names are checked above
                wvalue, wtxt = want[flag]
                if value != wvalue:
                    bad.append(f"{page}:{n}: {verb} {flag}: value '{value}', --help says '{wvalue}'")
                elif txt != wtxt:
                    bad.append(f"{page}:{n}: {verb} {flag}: '{txt}', --help says '{wtxt}'")
    return bad


def main(argv):
    foreign, args, helps = set(), [], None
    it = iter(argv)
    for a in it:
        if a == "--foreign":
            foreign.add(next(it, ""))
        elif a == "--helps":
            helps = next(it, "")
        else:
            args.append(a)
    if len(args) < 2:
        print("usage: check-man.py DUMP PAGE... [--foreign FLAG]... [--helps DIR]", file=sys.stderr)
        return 2
    tables = load_dump(args[0])
    every = set().union(*tables.values())
    bad = []
    listed = {}                                  # verb: {flag: (page, line)}
    for page in args[1:]:
        for verb, n, flag, item in scan_page(page):
            where = f"{page}:{n}"
            if flag is None:
                listed.setdefault(verb, {})
                continue
            if flag not in every and flag not in foreign:
                bad.append(f"{where}: {flag}: no verb's option table has it")
                continue
            if item and verb is not None:
                if verb not in tables:
                    bad.append(f"{where}: {flag} listed under '{verb}', which is no verb")
                elif flag not in tables[verb]:
                    bad.append(f"{where}: {flag} listed under '{verb}', whose table does not have it")
                listed.setdefault(verb, {})[flag] = where
    for verb in sorted(tables):
        if verb not in listed:
            bad.append(f"verb '{verb}' has no section in {', '.join(args[1:])}")
            continue
        for flag in sorted(tables[verb] - set(listed[verb])):
            bad.append(f"verb '{verb}': {flag} of its table is missing from its section")
    if helps:
        bad += check_helps(args[1:], helps)
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
