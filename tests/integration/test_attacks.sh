#!/bin/sh
# SPDX-License-Identifier: MIT
# host: slurm sysctl cgroup abcg ca
# test_attacks.sh — the trust model tried as an attacker would (issue 38,
# ../shared/reviews/security.md): every finding is an attack run against
# the real components (a real etcd with TLS and auth, a real slurmctld and
# slurmd, a pty, the daemon), and each check asserts the refusal and that
# the host is byte-identical.  Each attack was first run against the code
# before its fix (NODETUNE pointing at that build) and failed there.
#
# The attacks live in tests/integration/attacks/AREA.sh, one file per area,
# each sourced here in turn (they share lib.sh's tally and clean-up):
#   fleet-sign.sh   the controller signs only what it verified; rotation (H1, L11)
#   fleet-fresh.sh  freshness and identity: the counter, replays, fleet ids,
#                   a frozen store (M2)
#   store.sh        the transport to the store and secrets (M1, L4, L7, L8)
#   job.sh          a job owns nothing of its parent's (H3, M3, L9, L10)
#   slurm.sh        exclusivity from Slurm's API, epilog retries (H2, L6)
#   limits.sh       site limits everywhere a policy is applied, cgroup
#                   ownership (L1, L5)
#   display.sh      what a host writes reaches a terminal as text (L12)
# The unit's gate (L3) is tested under a real systemd: test_systemd.sh.
# A part that needs a component that is missing says so with t_need.
. "$(dirname "$0")/lib.sh"
t_plan 66

# The ASan pass: the attacks run against the plain build in the first
# pass; the parsers they reach (the signed envelope, the fleet documents,
# the limits, taskstats) are unit-tested and fuzzed under ASan.  Running
# them twice (a TLS etcd per part, a real Slurm) would cost CI minutes it
# does not have to spare.
if [ -n "${SANITIZED:-}" ]; then
	t_skip_host plain "the ASan pass: the attacks run against the plain build in the first pass (their parsers are fuzzed and unit-tested under ASan)"
	t_rest
fi

for part in "$SRCDIR"/tests/integration/attacks/*.sh; do
	[ -f "$part" ] || continue
	echo "# --- $(basename "$part")"
	. "$part"
done
t_done
