#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hwloc_facts.py XML [SYSROOT]: the facts `nodetune discover --json` reports,
derived WITHOUT nodetune, for checking its golden files.

From the hwloc XML export (Python's xml module, no hwloc):
  packages, cores, pus     count of Package, Core, PU objects
  numa_nodes               os_index, cpus (cpulist of its cpuset), local_memory,
                           distances (the row of the NUMALatency distances2
                           matrix, or null without one), memory_free_bytes
                           (MemFree of SYSROOT's nodeN/meminfo, else null)
  gpus                     PCI functions of NVIDIA (10de) with a display class
                           (03xx) or AMD (1002) with class 0380, in PCI bus id
                           order (index = place in that order); vendor; name
                           (the GPUModel info of its first CUDA, NVML or RSMI
                           OS device, else the PCIDevice info, else
                           [vendor:device]); cpus and
                           numa_node from the first ancestor that is not I/O
                           (bridge, PCI device): its cpuset, and its node when
                           its nodeset holds one (null when it spans several);
                           nearest_nic: the NIC whose deepest common ancestor
                           with it is deepest, then one with an OpenFabrics
                           device, then the first in bus id order; nic_link:
                           the path to it as nvidia-smi topo -m names it
                           (common ancestor a host bridge: PHB; another
                           bridge: PIX when at most one bridge lies below it
                           on each side, else PXB; not a bridge: NODE when
                           the nearest ancestors with a nodeset have the same
                           one, else SYS)
  nics                     PCI functions with a network (osdev_type 2) or
                           OpenFabrics (3) OS device, in bus id order: name (the
                           network device's, else the OpenFabrics one's),
                           rdma_device (the OpenFabrics device or null), locality
                           as for GPUs
From SYSROOT, when given (plain file reads, in the kernel's formats):
  kernel                   thp_enabled, thp_defrag (the bracketed word),
                           numa_balancing, governor (the one word every CPU has,
                           "mixed", or null without cpufreq), isolated_cpus,
                           swap_total_bytes (SwapTotal kB * 1024), hugepages (per
                           node and size: nr and free; node null for the global
                           pools of a kernel without per-node ones),
                           cgroup_version (2 when only cgroup2 is mounted,
                           else 1), cgroup_mode (unified: cgroup2 mounted
                           on /sys/fs/cgroup; else with v1 hierarchies
                           hybrid when a cgroup2 is mounted elsewhere, else
                           legacy), nohz_full (the CPU list of
                           sys/devices/system/cpu/nohz_full, "" for the
                           kernel's "(null)", null when the file is absent)
Prints one JSON object, keys sorted.  Exit 2 on a file it cannot read.
"""
import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

IO_TYPES = {"Bridge", "PCIDev", "OSDev", "Misc"}


def bits(mask):
    """hwloc bitmap string (32-bit words, most significant first) -> set"""
    out = set()
    words = mask.split(",")
    for i, w in enumerate(reversed(words)):
        v = int(w, 16) if w else 0
        for b in range(32):
            if v >> b & 1:
                out.add(32 * i + b)
    return out


def cpulist(s):
    """sorted ints -> '0-3,8'"""
    s = sorted(s)
    out, i = [], 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        out.append(str(s[i]) if i == j else "%d-%d" % (s[i], s[j]))
        i = j + 1
    return ",".join(out)


def walk(obj, parents, visit):
    visit(obj, parents)
    for child in obj.findall("object"):
        walk(child, parents + [obj], visit)


COMPUTE_BACKENDS = ("CUDA", "NVML", "RSMI")


def info(o, name):
    for i in o.findall("info"):
        if i.get("name") == name:
            return i.get("value")
    return None


def gpu_name(o, ven, dev):
    for c in o.findall("object"):
        if c.get("type") != "OSDev":
            continue
        n = c.get("name") or ""
        if c.get("subtype") in COMPUTE_BACKENDS or any(re.match(b.lower() + r"\d", n) for b in COMPUTE_BACKENDS):
            model = info(c, "GPUModel")
            if model:
                return model
    return info(o, "PCIDevice") or "[%s:%s]" % (ven, dev)


def locality(parents):
    for p in reversed(parents):
        if p.get("type") not in IO_TYPES and p.get("cpuset"):
            nodes = bits(p.get("nodeset", "0x0"))
            return cpulist(bits(p.get("cpuset"))), (min(nodes) if len(nodes) == 1 else None)
    return None, None


def link(gp, np_):
    """nvidia-smi's name of the path between devices with these ancestor lists."""
    k = 0
    while k < min(len(gp), len(np_)) and gp[k] is np_[k]:
        k += 1
    c = gp[k - 1]
    if c.get("type") == "Bridge":
        if c.get("bridge_type", "").startswith("0-"):
            return "PHB"
        below = [sum(1 for o in p[k:] if o.get("type") == "Bridge") for p in (gp, np_)]
        return "PIX" if max(below) <= 1 else "PXB"
    nodesets = [next(o.get("nodeset") for o in reversed(p) if o.get("nodeset")) for p in (gp, np_)]
    return "NODE" if bits(nodesets[0]) == bits(nodesets[1]) else "SYS"


def pair_nics(gpus, nics):
    for g in gpus:
        best = None
        for n in nics:
            k = 0
            while k < min(len(g["_p"]), len(n["_p"])) and g["_p"][k] is n["_p"][k]:
                k += 1
            key = (k, n["rdma_device"] is not None)
            if best is None or key > best[0]:
                best = (key, n)
        g["nearest_nic"] = best[1]["name"] if best else None
        g["nic_link"] = link(g["_p"], best[1]["_p"]) if best else None


def distances(root, numa):
    for d in root.findall("distances2"):
        if d.get("name") != "NUMALatency" or d.get("indexing") != "os":
            continue
        idx = [int(x) for i in d.findall("indexes") for x in i.text.split()]
        vals = [int(x) for v in d.findall("u64values") for x in v.text.split()]
        n = len(idx)
        order = [idx.index(m["os_index"]) for m in numa]
        for i, m in zip(order, numa):
            m["distances"] = [vals[i * n + j] for j in order]


def topology(path):
    top = ET.parse(path).getroot()
    root = top.find("object")
    count = {"Package": 0, "Core": 0, "PU": 0}
    numa, gpus, nics = [], [], []

    def visit(o, parents):
        t = o.get("type")
        if t in count:
            count[t] += 1
        if t == "NUMANode":
            numa.append({"os_index": int(o.get("os_index")), "cpus": cpulist(bits(o.get("cpuset"))),
                         "memory_bytes": int(o.get("local_memory", "0")), "distances": None,
                         "memory_free_bytes": None})
        if t != "PCIDev":
            return
        m = re.match(r"([0-9a-f]{4}) \[([0-9a-f]{4}):([0-9a-f]{4})\]", o.get("pci_type", ""))
        cls, ven, dev = m.group(1), m.group(2), m.group(3)
        cpus, node = locality(parents)
        if (ven == "10de" and cls.startswith("03")) or (ven == "1002" and cls == "0380"):
            gpus.append({"pci_bus_id": o.get("pci_busid"), "vendor": "nvidia" if ven == "10de" else "amd",
                         "name": gpu_name(o, ven, dev),
                         "numa_node": node, "cpus": cpus, "_p": parents})
        osd = [(c.get("osdev_type"), c.get("name")) for c in o.findall("object") if c.get("type") == "OSDev"]
        net = [n for k, n in osd if k == "2"]
        ofed = [n for k, n in osd if k == "3"]
        if net or ofed:
            nics.append({"name": (net or ofed)[0], "pci_bus_id": o.get("pci_busid"), "numa_node": node,
                         "cpus": cpus, "rdma_device": ofed[0] if ofed else None, "_p": parents})

    walk(root, [], visit)
    gpus.sort(key=lambda g: g["pci_bus_id"])
    for i, g in enumerate(gpus):
        g["index"] = i
    nics.sort(key=lambda n: n["pci_bus_id"])
    numa.sort(key=lambda n: n["os_index"])
    distances(top, numa)
    pair_nics(gpus, nics)
    for d in gpus + nics:
        del d["_p"]
    return {"packages": count["Package"], "cores": count["Core"], "pus": count["PU"],
            "numa_nodes": numa, "gpus": gpus, "nics": nics}


def read(root, rel):
    with open(os.path.join(root, rel)) as f:
        return f.read()


def bracketed(text):
    m = re.search(r"\[([^]]+)\]", text)
    return m.group(1) if m else text.strip()


def kernel(root):
    ks = {"thp_enabled": bracketed(read(root, "sys/kernel/mm/transparent_hugepage/enabled")),
          "thp_defrag": bracketed(read(root, "sys/kernel/mm/transparent_hugepage/defrag")),
          "numa_balancing": int(read(root, "proc/sys/kernel/numa_balancing"))}
    govs = {read(root, os.path.relpath(g, root)).strip()
            for g in glob.glob(os.path.join(root, "sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))}
    ks["governor"] = None if not govs else govs.pop() if len(govs) == 1 else "mixed"
    ks["isolated_cpus"] = read(root, "sys/devices/system/cpu/isolated").strip()
    swap = re.search(r"^SwapTotal:\s+(\d+) kB", read(root, "proc/meminfo"), re.M)
    ks["swap_total_bytes"] = int(swap.group(1)) * 1024
    pages = []
    for d in glob.glob(os.path.join(root, "sys/devices/system/node/node[0-9]*/hugepages/hugepages-*kB")):
        node = int(re.search(r"node(\d+)/hugepages", d).group(1))
        size = int(re.search(r"hugepages-(\d+)kB$", d).group(1))
        pages.append({"node": node, "size_kb": size, "total": int(read(d, "nr_hugepages")),
                      "free": int(read(d, "free_hugepages"))})
    if not glob.glob(os.path.join(root, "sys/devices/system/node/node[0-9]*/hugepages")):
        # a kernel without per-node pools: the global ones, node null
        for d in glob.glob(os.path.join(root, "sys/kernel/mm/hugepages/hugepages-*kB")):
            size = int(re.search(r"hugepages-(\d+)kB$", d).group(1))
            pages.append({"node": None, "size_kb": size, "total": int(read(d, "nr_hugepages")),
                          "free": int(read(d, "free_hugepages"))})
    ks["hugepages"] = sorted(pages, key=lambda p: (p["node"] or 0, p["size_kb"]))
    mounts = [line.split()[1:3] for line in read(root, "proc/mounts").splitlines() if len(line.split()) > 2]
    types = [t for _, t in mounts]
    ks["cgroup_version"] = 2 if "cgroup2" in types and "cgroup" not in types else 1
    if ["/sys/fs/cgroup", "cgroup2"] in mounts:
        ks["cgroup_mode"] = "unified"
    elif "cgroup" in types:
        ks["cgroup_mode"] = "hybrid" if "cgroup2" in types else "legacy"
    else:
        ks["cgroup_mode"] = None
    nohz = os.path.join(root, "sys/devices/system/cpu/nohz_full")
    if not os.path.exists(nohz):
        ks["nohz_full"] = None
    else:
        text = read(root, "sys/devices/system/cpu/nohz_full").strip()
        cpus = set()
        for part in ("" if text == "(null)" else text).split(","):
            if part:
                a, _, b = part.partition("-")
                cpus.update(range(int(a), int(b or a) + 1))
        ks["nohz_full"] = cpulist(cpus)
    return ks


def node_free(root, numa):
    for m in numa:
        path = "sys/devices/system/node/node%d/meminfo" % m["os_index"]
        if os.path.exists(os.path.join(root, path)):
            kb = re.search(r"^Node \d+ MemFree:\s+(\d+) kB", read(root, path), re.M)
            m["memory_free_bytes"] = int(kb.group(1)) * 1024


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: hwloc_facts.py XML [SYSROOT]", file=sys.stderr)
        return 2
    try:
        facts = topology(sys.argv[1])
        if len(sys.argv) == 3:
            facts["kernel"] = kernel(sys.argv[2])
            node_free(sys.argv[2], facts["numa_nodes"])
    except (OSError, ET.ParseError) as e:
        print("hwloc_facts.py: %s" % e, file=sys.stderr)
        return 2
    json.dump(facts, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
