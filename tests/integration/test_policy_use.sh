#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# nodetune policy recommend and policy use (F11 of the first-hour review).
# recommend: on captured trees (the HGX topology and the untuned GPU host's
# /sys and /proc), with a Slurm or kubelet file added to a copy.  use: a
# real daemon on a copied tree keeps DIR/etc/nodetune/policy.conf; `policy
# use NAME --sysroot DIR` checks NAME, writes the file, and the daemon's
# status names the new policy after the reload; a bad NAME writes nothing.
. "$(dirname "$0")/lib.sh"
t_plan 17

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
UNTUNED=tests/fixtures/sysroot/gpu-host-untuned

# ---- recommend -------------------------------------------------------------
run "$NODETUNE" policy recommend --topology $HGX --sysroot $UNTUNED
check "recommend on the untuned 8-GPU tree, no Slurm, no kubelet: gpu-train, one line per fact and why" -- sh -c \
	"[ $RC -eq 0 ] && grep -qx 'recommend: gpu-train' '$OUT' && grep -q '^  GPUs:    the topology: 8 GPUs' '$OUT' &&
	 grep -q '^  Slurm:   none (no $UNTUNED/etc/slurm/slurm.conf)' '$OUT' && grep -q '^  kubelet: none' '$OUT' && grep -q '^why: a GPU node that one job owns' '$OUT'"
RS=$T_TMP/slurm-tree
cp -r $UNTUNED "$RS" && mkdir -p "$RS/etc/slurm" "$RS/proc/sys/kernel" && echo gpu03 >"$RS/proc/sys/kernel/hostname" &&
	printf 'NodeName=gpu[01-08] Gres=gpu:8\nPartitionName=batch Nodes=gpu[01-08] Default=YES OverSubscribe=FORCE:4\n' >"$RS/etc/slurm/slurm.conf"
run "$NODETUNE" policy recommend --topology $HGX --sysroot "$RS" --json
check "recommend on a Slurm node whose partition oversubscribes: gpu-shared, the partition counted (--json)" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.policy == \"gpu-shared\" and .facts[1].value == \"shared\" and
	 (.facts[1].source | test(\"gpu03: 1 partition, 1 letting jobs share\")) and (.why | test(\"Slurm may put other jobs\"))' '$OUT' >/dev/null"
RK=$T_TMP/kube-tree
cp -r $UNTUNED "$RK" && mkdir -p "$RK/var/lib/kubelet" &&
	printf '{"policyName":"static","defaultCpuSet":"0,24,48,72","checksum":2918375563}\n' >"$RK/var/lib/kubelet/cpu_manager_state"
run "$NODETUNE" policy recommend --topology $HGX --sysroot "$RK"
check "recommend with the kubelet's static CPU manager: baseline, said why" -- sh -c \
	"[ $RC -eq 0 ] && grep -qx 'recommend: baseline' '$OUT' && grep -q 'cpu_manager_state: CPU manager policy static' '$OUT' && grep -q '^why: the kubelet.s static CPU manager' '$OUT'"
run "$NODETUNE" policy recommend
check "recommend on this host: exit 0, a policy, three facts, a reason ($(head -1 "$OUT"))" -- sh -c \
	"[ $RC -eq 0 ] && grep -Eq '^recommend: (baseline|gpu-train|gpu-shared)$' '$OUT' && [ \$(grep -c '^  [A-Za-z]*: ' '$OUT') -eq 3 ] && grep -q '^why: ' '$OUT'"

# ---- use -------------------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
	t_skip_host root "policy use: needs root (the daemon's policy file and socket are root's)"
	t_rest
fi
PP=$T_TMP/pp R=$T_TMP/root S=$T_TMP/d.sock
mkdir -m 755 "$PP" && cp policies/*.conf "$PP/" && chmod 644 "$PP"/*.conf
printf '[main]\nsummary = broken\n[thp]\nenabled = sometimes\n' >"$PP/broken.conf" && chmod 644 "$PP/broken.conf"
NODETUNE_POLICY_PATH=$PP
export NODETUNE_POLICY_PATH
cp -r $UNTUNED "$R" && mkdir -p -m 755 "$R/etc/nodetune"
PC=$R/etc/nodetune/policy.conf
USE="--sysroot $R --topology $HGX --socket $S"

run "$NODETUNE" policy use gpu-train $USE
check "use with no daemon: the file written, said that it takes effect when one starts" -- sh -c \
	"[ $RC -eq 0 ] && grep -qx 'include = gpu-train' '$PC' && grep -q '^no daemon answers on $S' '$OUT' && [ \$(stat -c %a '$PC') = 644 ]"
"$NODETUNE" daemon --log-format=syslog --policy "$PC" --topology $HGX --sysroot "$R" --state-dir "$T_TMP/st" \
	--interval 1 --no-metrics --socket "$S" >"$T_TMP/d.out" 2>"$T_TMP/d.log" &
DPID=$!
t_defer "kill -9 $DPID 2>/dev/null"
wait_until 30 grep -q '^<5>nodetune: daemon: ready: ' "$T_TMP/d.log"
run "$NODETUNE" status --socket "$S" --json
check "the daemon runs the file: its status names gpu-train (include)" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.policy == \"$PC\" and .include == \"gpu-train\" and .reloads == 0' '$OUT' >/dev/null"

run "$NODETUNE" policy use gpu-shared $USE
check "policy use gpu-shared: exit 0, the daemon reloaded ($(tail -1 "$OUT"))" -- sh -c \
	"[ $RC -eq 0 ] && grep -qx 'the daemon on $S reloaded: it runs gpu-shared' '$OUT'"
run "$NODETUNE" status --socket "$S" --json
check "the daemon's status names the new policy: include gpu-shared, one reload, none refused" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.include == \"gpu-shared\" and .reloads == 1 and .reload_failures == 0' '$OUT' >/dev/null"
run "$NODETUNE" policy list --socket "$S"
check "policy list marks gpu-shared active (the daemon's word)" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^\* gpu-shared .*(active)\$' '$OUT' && [ \$(grep -c '^\*' '$OUT') -eq 1 ]"

h0=$(sha256sum "$PC")
expect_fail 2 "no policy named 'nope' in $PP" "use of a NAME the path does not have: nothing written" -- \
	"$NODETUNE" policy use nope $USE
expect_fail 2 "broken.conf:4: .*enabled" "use of a policy that does not parse: nothing written" -- \
	"$NODETUNE" policy use broken $USE
expect_fail 2 "is not a policy NAME" "use of a file path: a NAME only" -- "$NODETUNE" policy use "$PP/gpu-train.conf" $USE
chmod 666 "$PP/gpu-train.conf"
expect_fail 2 "gpu-train.conf.*writable" "use of a policy others may write: refused (the trust rule)" -- \
	"$NODETUNE" policy use gpu-train $USE
chmod 644 "$PP/gpu-train.conf"
printf '[thp]\nenabled = never\n' >"$T_TMP/limits.conf" && chmod 644 "$T_TMP/limits.conf"
expect_fail 2 "\[thp\] enabled" "use of a policy beyond the site limits (--limits): refused" -- \
	"$NODETUNE" policy use gpu-train $USE --limits "$T_TMP/limits.conf"
run "$NODETUNE" status --socket "$S" --json
check "after the refusals: the file as it was, no temporary left, the daemon not signalled (still 1 reload, gpu-shared)" -- sh -c \
	"[ '$(sha256sum "$PC")' = '$h0' ] && [ \$(ls '$R/etc/nodetune' | wc -l) -eq 1 ] &&
	 jq -e '.include == \"gpu-shared\" and .reloads == 1 and .reload_failures == 0' '$OUT' >/dev/null"
# an attack: a user's process answering the status protocol on the socket
# named (--socket is the admin's to give, but its owner is whoever bound
# it): `use` must not send root's SIGHUP to it, nor to anything but a root
# nodetune daemon
EV=$(mktemp -d /tmp/nt-use-evil-XXXXXX) && chmod 1777 "$EV"
t_defer "rm -rf '$EV'"
setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '
import os, signal, socket, sys
d = sys.argv[1]
signal.signal(signal.SIGHUP, lambda *a: open(d + "/hup", "w").close())
s = socket.socket(socket.AF_UNIX); s.bind(d + "/s.sock"); s.listen(4)
open(d + "/ready", "w").close()
while True:
    c, _ = s.accept()
    try:
        c.recv(64); c.sendall(b"{\"reloads\": 0, \"reload_failures\": 0}\n")
    except OSError:
        pass
    c.close()
' "$EV" &
EPID=$!
t_defer "kill -9 $EPID 2>/dev/null"
wait_until 10 test -e "$EV/ready"
h1=$(sha256sum "$PC")
run "$NODETUNE" policy use gpu-train --sysroot "$R" --topology $HGX --socket "$EV/s.sock"
check "a socket bound by another user (nobody) answering as a daemon: not signalled, refused, exit 3 ($(tail -1 "$ERR"))" -- sh -c \
	"[ $RC -eq 3 ] && grep -q 'is not a nodetune daemon of root.s: not signalled' '$ERR' && [ ! -e '$EV/hup' ] &&
	 kill -0 $EPID && [ '$(sha256sum "$PC")' = '$h1' ]"
kill -9 $EPID 2>/dev/null
kill -TERM $DPID
wait_until 20 sh -c "! kill -0 $DPID"
check "the daemon stopped" -- sh -c "! kill -0 $DPID 2>/dev/null"
t_done
