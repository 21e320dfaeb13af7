#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""opts-mdoc.py HELP.json PAGE [KEYS.json] -- a man page source (man/*.[158], mdoc(7))
with the parts that come from the option tables filled in, on stdout.

HELP.json is `nodetune help --json`: every verb's option table as
agent/cli/opts.c holds it (the same tables VERB --help prints).  In PAGE,
a line

    .\\" @SYNOPSIS VERB@   becomes the verb's synopsis: nodetune VERB, its
                          required options, then the others of its table
                          in .Op, then what it takes after them
                          (-- COMMAND [ARGS ...], a WORD);
    .\\" @OPTIONS VERB@    becomes its options as a tag list: per option its
                          letter, name and value, then the help line of
                          VERB --help word for word (with its alias and
                          "(required)" as --help says them), then the
                          option's longer text for the page if it has one;
                          -h, --help last.  VERB "nodetune": the global
                          options;

    .\\" @SECTIONS GROUP@  becomes, for each verb "GROUP SUB" of the JSON that
                          has no ".Ss GROUP SUB" in PAGE, a section of its
                          own: its synopsis, its --help paragraph and its
                          options (a verb added to a table is documented
                          until someone writes its prose);
    .\\" @LIMITS@          becomes the keys limits.conf may bound, one item
                          per key of KEYS.json (`nodetune keys --json`)
                          with a "limit": ceiling, floor or allowed;

and "@VERSION@" anywhere becomes the version.  VERB is a verb of the JSON
("plan", "fleet rollout"), or a sub-verb its usage names ("slurm gres").
Nothing else of PAGE changes.  Exit 1, naming the line, on a marker whose
verb the JSON lacks; 2 on bad usage.
"""
import json
import re
import sys

MARK = re.compile(r'^\.\\" @(SYNOPSIS|OPTIONS|SECTIONS) ([a-z][a-z -]*)@$')


def text(s):
    """s as mdoc text lines: one sentence a line (mdoc(7) says so),
    backslashes escaped, none starting with a control character."""
    out = []
    for line in re.split(r"(?<=[.?!]) +", s.replace("\\", "\\e")):
        out.append("\\&" + line if line[:1] in (".", "'") else line)
    return "\n".join(out)


def find_verb(doc, name):
    """The JSON verb called name, or the sub-verb verb whose usage names it."""
    for v in doc["verbs"]:
        if v["verb"] == name:
            return v
        if v["takes"] == "sub-verb" and name.startswith(v["verb"] + " ") and \
                ("nodetune " + name + " ") in v["usage"] + " ":
            return v
    return None


def flag(o, long_only=False):
    """Fl -name Ar VALUE (Fl n , Fl -name ... in the tag list)."""
    s = "Fl -" + o["name"]
    if o.get("letter") and not long_only:
        s = "Fl " + o["letter"] + " , " + s
    if o.get("value"):
        s += " Ar " + o["value"]
    return s


def synopsis(v, name):
    out = [".Nm nodetune", ".Cm " + name]
    if v["takes"] == "word":
        # the word's name: what the usage puts after the verb
        words = v["usage"].split()
        w = next((t for t in words[len(name.split()) + 1:] if t[0] not in "[-"), "WORD")
        out.append(".Ar " + w)
    # the required options first, then the others, each in table order
    opts = [o for o in v["options"] if not o["global"]]
    for o in sorted(opts, key=lambda o: o["need"] != "required"):
        out.append(("." if o["need"] == "required" else ".Op ") + flag(o, long_only=True))
    if v["takes"] == "command":
        out += [".Fl -", ".Ar COMMAND", ".Op Ar ARGS ..."]
    elif v["takes"] == "optional command":
        out.append(".Op Fl - Ar COMMAND Op Ar ARGS ...")
    return out


def item(o):
    help_ = o["help"]
    if o.get("alias"):
        help_ += " (also --" + o["alias"] + ")"
    if o["need"] == "required":
        help_ += " (required)"
    out = [".It " + flag(o), text(help_)]
    if o.get("man"):
        out += [".Pp", text(o["man"])]
    return out


def options(doc, v, name):
    if name == "nodetune":
        opts = [o for o in doc["verbs"][0]["options"] if o["global"]]
    else:
        opts = [o for o in v["options"] if not o["global"]]
    out = [".Bl -tag -width Ds"]
    for o in opts:
        out += item(o)
    return out + [".It Fl h , Fl -help", "this help", ".El"]


LIMIT_TEXT = {
    "ceiling": "a ceiling: the policy sets at most the limit",
    "floor": "a floor: the policy sets at least the limit",
    "allowed": "a comma-separated set of the values allowed",
}


def limits(keys):
    """The limitable keys of `nodetune keys --json` as a tag list."""
    if isinstance(keys, dict):     # a document around the list
        keys = next(v for v in keys.values() if isinstance(v, list))
    out = [".Bl -tag -width Ds"]
    for k in keys:
        if k.get("limit"):
            out += [".It Li [" + k["section"] + "] " + k["key"],
                    text(LIMIT_TEXT[k["limit"]] + "; " + k["help"] + ".")]
    return out + [".El"]


def sections(doc, group, page_lines):
    """A section for each verb of group the page has no .Ss for."""
    have = {l[4:].strip() for l in page_lines if l.startswith(".Ss ")}
    # a page of the group's own (nodetune-fleet.8) names its sections SUB
    verbs = [v for v in doc["verbs"] if v["verb"].startswith(group + " ")]
    short = any(v["verb"][len(group) + 1:] in have for v in verbs)
    out = []
    for v in verbs:
        title = v["verb"][len(group) + 1:] if short else v["verb"]
        if title not in have:
            out += [".Ss " + title] + synopsis(v, v["verb"]) + [".Pp"]
            out += [text(" ".join(v["help"].split()))] + options(doc, v, v["verb"])
    return out


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: opts-mdoc.py HELP.json PAGE [KEYS.json]", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        doc = json.load(f)
    keys = None
    if len(argv) == 3:
        with open(argv[2], encoding="utf-8") as f:
            keys = json.load(f)
    out = []
    with open(argv[1], encoding="utf-8") as f:
        lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for n, line in enumerate(lines, 1):
            if line == '.\\" @LIMITS@' and keys is not None:
                out += limits(keys)
                continue
            m = MARK.match(line)
            if not m:
                out.append(line.replace("@VERSION@", doc["version"]))
                continue
            what, name = m.groups()
            if what == "SECTIONS":
                out += sections(doc, name, lines)
                continue
            v = None if name == "nodetune" else find_verb(doc, name)
            if v is None and (what == "SYNOPSIS" or name != "nodetune"):
                print(f"opts-mdoc: {argv[1]}:{n}: no verb '{name}' in {argv[0]}", file=sys.stderr)
                return 1
            out += synopsis(v, name) if what == "SYNOPSIS" else options(doc, v, name)
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
