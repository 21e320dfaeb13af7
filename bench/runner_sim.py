#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""runner_sim.py — tests/run-integration.sh's schedule, simulated.

Replays the runner's pick rule on given script times: a free slot takes
the first script of the queue that can start (its "# host:" names free, a
script naming cpu or build only when nothing runs, and then nothing beside
it; a script never beside itself in the other pass), the queue in the
order asked.  Prints the wall time.  The times come from
tests/integration/durations.txt, or from make check's times.txt (--times).

  bench/runner_sim.py [--times BUILD/times.txt] [--jobs N] [--order alpha|longest]
                      [--pass plain|asan|both]

bench/RESULTS.md section 19.7: on the fresh clone of de63976's times it
gives 1,351 s for the plain pass two at a time in alphabetical order,
where the clone measured 1,352.
"""
import argparse, glob, os, sys

top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def host_names():
    h = {}
    for f in glob.glob(os.path.join(top, 'tests/integration/test_*.sh')):
        names = None
        for line in open(f):
            if line.startswith('# host:'):
                names = [w for w in line[7:].split() if w != 'none']
                break
        h[os.path.basename(f)] = names if names is not None else ['cpu']   # no line: alone
    return h

def load_times(path):
    t = {}
    if path:
        for line in open(path):
            f = line.split()
            if len(f) >= 3 and f[0] in ('integration', 'asan-integration'):
                t[('asan' if f[0].startswith('asan') else 'plain', f[1])] = float(f[2])
    else:
        for line in open(os.path.join(top, 'tests/integration/durations.txt')):
            if line.startswith('#') or not line.strip():
                continue
            f = line.split()
            t[('plain', f[0])] = float(f[1])
            if f[2] != '-':
                t[('asan', f[0])] = float(f[2])
    return t

def simulate(items, times, hosts, jobs, order):
    alone_of = lambda k: 'cpu' in hosts[k[1]] or 'build' in hosts[k[1]]
    q = sorted(items, key=(lambda k: (k[1], k[0])) if order == 'alpha' else (lambda k: -times[k]))
    t, running = 0.0, []
    while q or running:
        while len(running) < jobs and not any(alone_of(k) for _, k in running):
            busy = {w for _, k in running for w in hosts[k[1]]}
            names = {k[1] for _, k in running}
            pick = None
            for k in q:
                if alone_of(k):
                    if not running:
                        pick = k
                        break
                    continue
                if busy & set(hosts[k[1]]) or k[1] in names:
                    continue
                pick = k
                break
            if pick is None:
                break
            q.remove(pick)
            running.append((t + times[pick], pick))
        running.sort()
        t, _ = running.pop(0)
    return t

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--times')
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--order', choices=('alpha', 'longest'), default='longest')
    ap.add_argument('--pass', dest='which', choices=('plain', 'asan', 'both'), default='plain')
    a = ap.parse_args()
    times, hosts = load_times(a.times), host_names()
    items = [k for k in times if a.which == 'both' or k[0] == a.which]
    missing = [k[1] for k in items if k[1] not in hosts]
    if missing:
        sys.exit('runner_sim.py: no such script: %s' % ' '.join(missing))
    print('%.0f s: %d scripts (%s), %d at a time, %s first' %
          (simulate(items, times, hosts, a.jobs, a.order), len(items), a.which, a.jobs,
           'alphabetical' if a.order == 'alpha' else 'longest'))

main()
