# SPDX-License-Identifier: MIT
"""promql-names.py FILE... -- the nodetune metric names, and the label names
of their selectors, that a Grafana dashboard (JSON) or Prometheus rules file
(YAML) uses, one "NAME LABEL,LABEL" line per selector (LABEL "-" when none).

Every string in the document is read (queries, legends, template variables,
annotations), so a name in a description counts too.  In a selector
NAME{a="x", b=~"y"} the labels are a and b; job and instance (the scrape's
target labels, the dashboard's $job and $instance) are left out.  Exit 1 when
no name at all is found (a parser that read nothing must not pass).
"""
import json
import re
import sys

import yaml

NAME = re.compile(r"\bnodetune_[a-zA-Z0-9_:]*[a-zA-Z0-9_]")
SELECTOR = re.compile(r"\b(nodetune_[a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
TARGET = {"job", "instance"}


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def uses(text):
    out = set()
    for name, body in SELECTOR.findall(text):
        labels = sorted(set(LABEL.findall(body)) - TARGET)
        out.add((name, ",".join(labels) or "-"))
    for name in NAME.findall(text):
        out.add((name, "-"))
    return out


def main(paths):
    found = set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f) if path.endswith(".json") else yaml.safe_load(f)
        for s in strings(doc):
            found |= uses(s)
    for name, labels in sorted(found):
        print(name, labels)
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
