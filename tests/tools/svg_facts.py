#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""svg_facts.py SVG: what a `nodetune discover --svg` picture shows, read with
Python's XML parser (which refuses a document that is not well-formed), for
comparing with tests/tools/hwloc_facts.py's derivation from the topology.

Prints one JSON object, keys sorted:
  gpus, nics, numa, packages   the <g> elements of each class
  pus                          the <rect class="pu..."> squares
  pairs                        each pairing's <title> ("GPU 0 - ibp26s0 (PIX)"), sorted
  external                     attributes that name something outside the
                               document (href, src, url(...)) and <script>s
Exit 2 on a file it cannot read or parse.
"""
import json
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def main():
    if len(sys.argv) != 2:
        print("usage: svg_facts.py SVG", file=sys.stderr)
        return 2
    try:
        root = ET.parse(sys.argv[1]).getroot()
    except (OSError, ET.ParseError) as e:
        print("svg_facts.py: %s" % e, file=sys.stderr)
        return 2
    facts = {k: 0 for k in ("gpus", "nics", "numa", "packages", "pus")}
    pairs, external = [], []
    for el in root.iter():
        tag, cls = el.tag.replace(NS, ""), el.get("class", "")
        if tag == "g" and cls in ("gpu", "nic", "package"):
            facts[cls + "s"] += 1
        elif tag == "g" and cls == "numa":
            facts["numa"] += 1
        elif tag == "rect" and cls.split()[:1] == ["pu"]:
            facts["pus"] += 1
        elif tag == "path" and cls == "pair":
            pairs.append(el.findtext(NS + "title"))
        if tag == "script" or any("href" in a or "url(" in v or a == "src" for a, v in el.attrib.items()):
            external.append(tag)
    facts["pairs"] = sorted(pairs)
    facts["external"] = external
    json.dump(facts, sys.stdout, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
