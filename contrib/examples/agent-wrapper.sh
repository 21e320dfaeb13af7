#!/bin/sh
# SPDX-License-Identifier: MIT
# agent-wrapper.sh CMD [ARG...] — the demo's "framework upgrade": a launcher
# that starts a helper beside the job, the way a new version's launcher may
# start a telemetry agent or a data worker.  This one busy-polls on CPU
# $AGENT_CPU (default 0), the CPU the job runs on, for as long as the job
# runs; the job itself is unchanged.  `make demo` A/B-tests the job against
# the job under this wrapper, and nodetune names the helper.
cpu=${AGENT_CPU:-0}
case $cpu in *[!0-9]* | '') echo "agent-wrapper.sh: AGENT_CPU '$cpu': expected a CPU number" >&2; exit 2 ;; esac
[ "$#" -gt 0 ] || { echo "usage: agent-wrapper.sh CMD [ARG...]" >&2; exit 2; }
taskset -c "$cpu" sh -c 'while :; do :; done' &
agent=$!
trap 'kill $agent 2>/dev/null' EXIT INT TERM
"$@"
