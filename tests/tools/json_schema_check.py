# SPDX-License-Identifier: MIT
"""json_schema_check.py: nodetune's --json documents against docs/schema.

  json_schema_check.py DIR NAME FILE      FILE (one JSON document) against
                                          DIR/NAME.schema.json
  json_schema_check.py --lines DIR NAME FILE
                                          each line of FILE (JSON lines,
                                          observe's) against it; at least one
  json_schema_check.py --schemas DIR      every DIR/*.schema.json is a valid
                                          draft 2020-12 schema whose $id names
                                          its file and whose "schema" key is
                                          required, the constant nodetune.NAME/1

Exit 0 when all is valid; 1 with one line per error on stdout ("FILE: at
/hosts/0/alive: 'yes' is not of type 'boolean'"); 2 for bad usage.  Uses
Debian's python3-jsonschema (run it with /usr/bin/python3).
"""
import json
import os
import sys

import jsonschema

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def where(err):
    return "/" + "/".join(str(p) for p in err.absolute_path)


def load_schema(d, name):
    with open(os.path.join(d, name + ".schema.json"), encoding="utf-8") as f:
        return json.load(f)


def check_schemas(d):
    bad = []
    names = sorted(f[:-len(".schema.json")] for f in os.listdir(d) if f.endswith(".schema.json"))
    if not names:
        bad.append("%s: no *.schema.json" % d)
    for name in names:
        try:
            s = load_schema(d, name)
            jsonschema.Draft202012Validator.check_schema(s)
        except (ValueError, jsonschema.SchemaError) as e:
            bad.append("%s.schema.json: %s" % (name, str(e).splitlines()[0]))
            continue
        if s.get("$schema") != DRAFT:
            bad.append("%s.schema.json: $schema is not draft 2020-12" % name)
        if not str(s.get("$id", "")).endswith("/" + name + ".schema.json"):
            bad.append("%s.schema.json: $id %r does not name the file" % (name, s.get("$id")))
        if s.get("properties", {}).get("schema") != {"const": "nodetune.%s/1" % name} or \
                "schema" not in s.get("required", []):
            bad.append("%s.schema.json: \"schema\" is not a required constant nodetune.%s/1" % (name, name))
    return bad


def check_docs(d, name, path, lines):
    try:
        validator = jsonschema.Draft202012Validator(load_schema(d, name))
    except (OSError, ValueError) as e:
        return ["%s: no schema %s: %s" % (path, name, e)]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        docs = [json.loads(l) for l in text.splitlines() if l.strip()] if lines else [json.loads(text)]
    except ValueError as e:
        return ["%s: not JSON: %s" % (path, e)]
    if not docs:
        return ["%s: no document" % path]
    bad = []
    for i, doc in enumerate(docs):
        at = "%s%s" % (path, ":%d" % (i + 1) if lines else "")
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            bad.append("%s: at %s: %s" % (at, where(e), e.message))
    return bad


def main(argv):
    lines = "--lines" in argv
    args = [a for a in argv if a != "--lines"]
    if len(args) == 2 and args[0] == "--schemas":
        bad = check_schemas(args[1])
    elif len(args) == 3 and not args[0].startswith("-"):
        bad = check_docs(args[0], args[1], args[2], lines)
    else:
        sys.stderr.write(__doc__)
        return 2
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
