#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# fleet_scale_report.py — the figures of bench/fleet_scale.sh from its raw
# measurements and the rollout it read back (issue 43).
#   rollback DOC REFUSER   one field: WAVE/HOSTS/DETECT_S/RESTORE_S ("-": none)
#   summary DOC HOSTS ...  the report, a TSV row appended to OUT, and the
#                          last line "fleet_scale: ..."
import base64
import json
import os
import sys


def load(path):
    """The rollout `nodetune fleet status --name N --json` printed (its
    head and pages read back whole), or one signed envelope from an older
    layout (None: none)."""
    try:
        with open(path) as f:
            env = json.load(f)
        if "rollouts" in env:
            return env["rollouts"][0]
        return json.loads(base64.b64decode(env["doc"])) if "doc" in env else env
    except (OSError, ValueError, KeyError, IndexError):
        return None


def first(events, pred):
    return next((e["t"] for e in events if pred(e["what"])), None)


def wave_times(doc):
    """Seconds from each wave sent to it passed, and the gate's share."""
    ev = doc["events"]
    out, gate = [], 0.0
    for w in range(len(doc["waves"])):
        sent = first(ev, lambda s, w=w: s.startswith("wave %d (" % w) and (" sent to " in s or " gating on " in s))
        done = first(ev, lambda s, w=w: s.startswith("wave %d (" % w) and s.endswith(" passed"))
        gated = first(ev, lambda s, w=w: s.startswith("wave %d: every canary passed" % w))
        if sent is None or done is None:
            out.append(None)
            continue
        if gated is not None:
            gate += gated - sent
        out.append(done - sent - (gated - sent if gated is not None else 0))
    return out, gate


def rollback(doc_path, refuser):
    doc = load(doc_path)
    if not doc:
        return "-"
    ev = doc["events"]
    wave = next((i for i, w in enumerate(doc["waves"]) for h in w["hosts"] if h["host"] == refuser), None)
    if wave is None:
        return "-"
    sent = first(ev, lambda s: s.startswith("wave %d (" % wave) and (" sent to " in s or " gating on " in s))
    back = first(ev, lambda s: "rolling back" in s)
    done = first(ev, lambda s: "runs its old policy again" in s)
    if None in (sent, back, done):
        return "%d/%d/-/-" % (wave, len(doc["waves"][wave]["hosts"]))
    return "%d/%d/%.2f/%.2f" % (wave, len(doc["waves"][wave]["hosts"]), back - sent, done - back)


def summary(a):
    (doc_path, hosts, rc, wall, cpu, maxrss, h0, h1, t0, t1, h2, h3, e0, e1, etcd_rss, db, docsz, bad, rss,
     reg_s, auth, daemons, load0, load_idle, load_roll, rb, docall, out) = a
    hosts, wall, cpu = int(hosts), float(wall), float(cpu)
    doc = load(doc_path)
    idle = (float(h1) - float(h0)) / hosts / ((float(t1) - float(t0)) / 60)
    during = (float(h3) - float(h2)) / hosts / (wall / 60) if wall > 0 else 0
    waves, gate = wave_times(doc) if doc else ([], 0.0)
    state = doc["state"] if doc else "none"
    verified = sum(1 for w in doc["waves"] for h in w["hosts"] if h["state"] == "verified") if doc else 0
    wv = ",".join("-" if w is None else "%.2f" % w for w in waves) or "-"
    etcd_cpu = float(e1) - float(e0)
    kind = "daemons" if daemons == "1" else "fleetsim"
    print("# %d hosts (%s), 3-member etcd on loopback%s; load %s at the start" %
          (hosts, kind, ", TLS + auth (a user per host)" if auth == "1" else "", load0))
    print("registered: every host in %s s; hosts' RSS %d MiB in all (%.0f kB a host)" %
          (reg_s, int(rss) // 1024, int(rss) / hosts))
    print("idle: %.2f requests/host/min (load %s)" % (idle, load_idle))
    print("rollout: exit %s, %s, %d of %d verified, trees not changed: %s; wall %.2f s, gate %.2f s, "
          "wall minus gate %.2f s (load %s)" % (rc, state, verified, hosts, bad, wall, gate, wall - gate, load_roll))
    print("waves (s, the gate aside): %s" % wv)
    print("rollout: %.2f requests/host/min (controller included)" % during)
    print("controller: CPU %.2f s, peak RSS %d MiB" % (cpu, int(maxrss) // 1024))
    print("etcd: CPU %.1f s during the rollout (3 members), RSS %d MiB (3 members), db %.1f MiB" %
          (etcd_cpu, int(etcd_rss) // 2**20, int(db or 0) / 2**20))
    print("rollout in the store: %s bytes in all, its largest key %s bytes (etcd's request limit: 1572864)" %
          (docall, docsz))
    print("rollback (wave/its hosts/sent to rolling back s/rolling back to restored s): %s" % rb)
    row = [hosts, kind, auth, rc, state, verified, bad, "%.2f" % wall, "%.2f" % gate, "%.2f" % (wall - gate), wv,
           "%.2f" % cpu, maxrss, "%.1f" % etcd_cpu, etcd_rss, db or 0, docsz, "%.2f" % idle, "%.2f" % during,
           rb, reg_s, rss, load0, load_idle, load_roll, docall]
    new = not os.path.exists(out)
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "a") as f:
        if new:
            f.write("hosts\tkind\tauth\trc\tstate\tverified\tunchanged\twall_s\tgate_s\twall_minus_gate_s\twaves_s\t"
                    "ctl_cpu_s\tctl_maxrss_kb\tetcd_cpu_s\tetcd_rss_b\tetcd_db_b\tdoc_b\tidle_rphm\trollout_rphm\t"
                    "rollback\tregister_s\thosts_rss_kb\tload_start\tload_idle\tload_rollout\tdoc_all_b\n")
        f.write("\t".join(str(x) for x in row) + "\n")
    print("fleet_scale: %d hosts: %s, %d verified, wall minus gate %.2f s, idle %.2f req/host/min, "
          "etcd db %.1f MiB, rollback %s" % (hosts, state, verified, wall - gate, idle, int(db or 0) / 2**20, rb))


if __name__ == "__main__":
    if sys.argv[1] == "rollback":
        print(rollback(sys.argv[2], sys.argv[3]))
    else:
        summary(sys.argv[2:])
