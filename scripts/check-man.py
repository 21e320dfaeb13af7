#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-man.py DUMP PAGE... [--foreign FLAG]... -- the man pages against
the option tables.

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
    --foreign ones (the SPANK plugin's srun option).
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


def main(argv):
    foreign, args = set(), []
    it = iter(argv)
    for a in it:
        if a == "--foreign":
            foreign.add(next(it, ""))
        else:
            args.append(a)
    if len(args) < 2:
        print("usage: check-man.py DUMP PAGE... [--foreign FLAG]...", file=sys.stderr)
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
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
