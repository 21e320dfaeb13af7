#!/bin/sh
# SPDX-License-Identifier: MIT
# docs-ab.sh BUILD_DIR — the sample A/B report in docs/ (`make docs-ab`):
# docs/examples/ab-report.html from a real `nodetune ab` run on this
# machine, and docs/img/ab-report.png, its screenshot by headless Chromium
# (no network).  The workload is `make demo`'s "framework upgrade": the
# harness on CPU 0 (arm A) against the same harness under
# contrib/examples/agent-wrapper.sh, which also starts a busy helper on that
# CPU (arm B): a regression, and the helper named as its cause.  Needs root
# (the trial cgroups) and chromium (scripts/install-deps.sh browser).  Never
# edit the outputs by hand: run this again.
set -eu
build=$1
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "docs-ab.sh: needs root (ab's trial cgroups)" >&2; exit 2; }
command -v chromium >/dev/null || { echo "docs-ab.sh: chromium is not installed (scripts/install-deps.sh browser)" >&2; exit 2; }
rel=$(realpath --relative-to=. "$build")
job="taskset -c 0 $rel/nodetune-harness --comm none --rows 1000 --batch 512 --steps 15 --warmup 2 --blas-threads 1 --quiet"
html=docs/examples/ab-report.html png=docs/img/ab-report.png
mkdir -p docs/examples docs/img
echo "nodetune ab --a cmd='$job' --b cmd='contrib/examples/agent-wrapper.sh $job' --trials 4 --budget 60 --report $html"
rc=0
"$build/nodetune" ab --a "cmd=$job" --b "cmd=contrib/examples/agent-wrapper.sh $job" --trials 4 --budget 60 \
	--report "$html" || rc=$?
# 0 no regression, 1 a regression: both are a report; anything else is not
[ "$rc" -le 1 ] || { echo "docs-ab.sh: nodetune ab: exit $rc" >&2; exit 1; }
net=""
unshare -n true 2>/dev/null && net="unshare -n"
$net chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,2600 \
	--screenshot="$png" "file://$PWD/$html" >/dev/null 2>&1
[ -s "$png" ] || { echo "docs-ab.sh: chromium wrote no $png" >&2; exit 1; }
echo "wrote $html and $png"
