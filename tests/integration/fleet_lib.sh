# SPDX-License-Identifier: MIT
# fleet_lib.sh — what the test_fleet*.sh scripts share: a real 3-member etcd
# (tests/tools/etcd-cluster.sh: its own ports, picked by the kernel, and its
# own directory under the script's T_TMP) and real daemons on simulated
# hosts, each `nodetune daemon --fleet --host hN` on its own copy of the
# gpu-host-untuned tree with a real topology from ../shared/topologies (two
# hardware classes: g4dnmetal, nvidiaDGX2).  Sourced after lib.sh and
# t_plan; each script that sources it has a cluster, hosts and a T_TMP of
# its own, so the scripts share nothing and run beside each other (the
# runner's "# host:" locks name what each one touches besides).
#
# Sourcing it: skips the whole plan (t_need, t_rest) without etcd or the
# topologies; starts the cluster (EP, ETCDCTL, CL), stopped by t_defer with
# every host; makes the controller's signing key (SIGN) and another
# (evil), the hosts' trusted keys (keys.d), the gates directory (GATES,
# gate_file), a copy of the harness a gate's job may run
# ($T_TMP/gatebin/nodetune-harness), the test policies (policy) and the
# site limits.  Then:
#   host_start N TOPO [LIMITS]   start host hN's daemon
#   host_kill N [SIG]            stop it
#   fleet_hosts_up               h1..h4 on TOPO_A, h5..h8 on TOPO_B, waited
#                                for (wait_alive 8); a script whose own
#                                checks start after that fails (t_not_ok,
#                                t_done) when they do not all register
#   alive_count, wait_alive N [S], applied N NAME, all_trees,
#   desired_of N, fleet_snap, status_error N, status_is N PREFIX

ETCD=${ETCD:-/usr/bin/etcd}
if [ ! -x "$ETCD" ]; then
	t_need etcd "etcd not installed ($ETCD): apt-get install etcd-server"
	t_rest
fi
TOPO_A=$SHARED/g4dnmetal.xml
TOPO_B=$SHARED/nvidiaDGX2.xml
if [ ! -f "$TOPO_A" ] || [ ! -f "$TOPO_B" ]; then
	t_need ../shared "no $SHARED topologies"
	t_rest
fi
CL=$T_TMP/etcd
EP=$(tests/tools/etcd-cluster.sh start "$CL") || { t_not_ok "the etcd cluster started"; t_done; }
# everything this test starts is stopped before t_done looks for leftovers
fleet_cleanup() {
	for p in "$T_TMP"/h*/pid; do
		[ -f "$p" ] || continue
		kill -CONT "$(cat "$p")" 2>/dev/null
		kill "$(cat "$p")" 2>/dev/null
	done
	for p in "$T_TMP"/h*/pid; do [ -f "$p" ] && wait "$(cat "$p")" 2>/dev/null; done
	tests/tools/etcd-cluster.sh stop "$CL"
}
t_defer fleet_cleanup
THP=sys/kernel/mm/transparent_hugepage
ETCDCTL="env ETCDCTL_API=3 etcdctl --endpoints $EP"

# ---- the signing keys: the controller's, trusted by every host; another -------

mkdir -m 700 "$T_TMP/ctl" "$T_TMP/evil" && mkdir -m 755 "$T_TMP/keys.d"
"$NODETUNE" fleet keygen --out "$T_TMP/ctl" --name ctl >/dev/null &&
	"$NODETUNE" fleet keygen --out "$T_TMP/evil" --name evil >/dev/null &&
	cp "$T_TMP/ctl/ctl.pub" "$T_TMP/keys.d/" || { t_not_ok "fleet keygen"; t_done; }
SIGN="--signing-key $T_TMP/ctl/ctl.key"

# ---- the hosts' named gates ---------------------------------------------------

# The gates a rollout may name (root's directory, as gates_lookup checks it
# as root).  Their jobs run as nobody, who must reach the job, the harness
# and the simulated trees: T_TMP becomes traversable (0711), the programs go
# to a 0755 directory of their own, and the jobs write what they saw to a
# sticky 1777 one.
GATES=$T_TMP/gates.d
mkdir -m 755 "$GATES" "$T_TMP/gatebin" && mkdir "$T_TMP/gateout" && chmod 1777 "$T_TMP/gateout" && chmod 711 "$T_TMP" ||
	{ t_not_ok "the gates directory"; t_done; }
gate_file() { # NAME JOB [LINE...]: a gate running JOB (no arguments) as nobody, and the LINEs
	gf=$GATES/$1.conf
	printf 'command = %s\nuser = nobody\nbudget = 120\n' "$2" >"$gf"
	shift 2
	[ $# -eq 0 ] || printf '%s\n' "$@" >>"$gf"
	chmod 644 "$gf"
}

# ---- the simulated hosts ----------------------------------------------------

policy() { # NAME SECTION KEY VALUE: a policy file
	printf '[main]\nsummary = test %s\n[%s]\n%s = %s\n' "$1" "$2" "$3" "$4" >"$T_TMP/$1.conf"
	chmod 644 "$T_TMP/$1.conf"
}
policy thp thp enabled madvise
policy defrag thp defrag madvise
policy nobal sched numa_balancing 0
policy hk affinity housekeeping 40-47
policy slow sched numa_balancing 0
policy neutral thp defrag madvise

# every host's site limits (limits.h): a policy beyond them is refused there
printf '# test site limits\n[sysctl]\nvm.min_free_kbytes = 1048576\n' >"$T_TMP/limits.conf"
chmod 644 "$T_TMP/limits.conf"

# host_start N TOPO [LIMITS]: start host hN's daemon (its tree made at its first
# start, TOPO read then), under the site limits LIMITS
host_start() {
	d=$T_TMP/h$1
	if [ ! -d "$d/root" ]; then
		mkdir -p "$d" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$d/root"
		echo "$2" >"$d/topo"
	fi
	"$NODETUNE" daemon --sysroot "$d/root" --topology "$(cat "$d/topo")" --policy policies/baseline.conf \
		--fleet "$EP" --host "h$1" --fleet-keys "$T_TMP/keys.d" --gates-dir "$GATES" --no-metrics --textfile-dir "$d" \
		--socket "$d/sock" --state-dir "$d/state" --limits "${3:-$T_TMP/limits.conf}" \
		--interval 1 >>"$d/log" 2>&1 &
	echo $! >"$d/pid"
}
host_kill() { kill "-${2:-TERM}" "$(cat "$T_TMP/h$1/pid")" 2>/dev/null; wait "$(cat "$T_TMP/h$1/pid")" 2>/dev/null; }

# alive_count: hosts whose lease lives
alive_count() { "$NODETUNE" fleet hosts --endpoints "$EP" --json | python3 -c '
import json, sys; print(sum(1 for h in json.load(sys.stdin)["hosts"] if h["alive"]))'; }
# (margin: the 20 s default is 172x the p99 of one host's
# registration, 0.116 s, and 10x the 1.99 s under ASan at load 38-59,
# host_register_s in timing_margins.sh; eight start here at once)
wait_alive() { # N [SECONDS]
	i=0
	while [ "$(alive_count 2>/dev/null)" != "$1" ] && [ $i -lt $((${2:-20} * 4)) ]; do sleep 0.25; i=$((i + 1)); done
	[ "$(alive_count 2>/dev/null)" = "$1" ]
}
# applied N NAME: how many times host N's daemon applied policy NAME
applied() { grep -c "fleet: applied $2.conf" "$T_TMP/h$1/log"; }
all_trees() { for n in 1 2 3 4 5 6 7 8; do tree_hash "$T_TMP/h$n/root"; done | sha256sum; }

# the hosts: h1..h4 of class A, h5..h8 of class B, every one registered
# (the scripts other than test_fleet.sh, whose first checks these are)
fleet_hosts_up() {
	for n in 1 2 3 4; do host_start $n "$TOPO_A"; done
	for n in 5 6 7 8; do host_start $n "$TOPO_B"; done
	wait_alive 8 && return 0
	t_not_ok "8 hosts registered (before this script's first check)"
	"$NODETUNE" fleet hosts --endpoints "$EP" | sed 's/^/#   /'
	t_done
}

# a gate's job may run the real harness (a short DLRM run): a copy in a
# directory nobody, the gates' user, reaches
: "${HARNESS:=$SRCDIR/build/nodetune-harness}"
cp "$HARNESS" "$T_TMP/gatebin/nodetune-harness" && chmod 755 "$T_TMP/gatebin/nodetune-harness" ||
	{ t_not_ok "the harness copied for the gates' jobs"; t_done; }

# host N's desired document (inside its signed envelope: a restore signs it again with a new seq)
# (fails when etcdctl fails or the key is empty: nothing read is not "as before")
desired_of() {
	dv=$($ETCDCTL get "/nodetune/hosts/h$1/desired" --print-value-only) && [ -n "$dv" ] || return 1
	printf '%s\n' "$dv" | python3 -c '
import base64, json, sys
v = sys.stdin.read()
try: print(base64.b64decode(json.loads(v)["doc"]).decode())
except Exception: print(v)' | sha256sum
}
# every host's tree and desired key, 8 lines; fails when one cannot be read
fleet_snap() {
	for n in 1 2 3 4 5 6 7 8; do
		[ -d "$T_TMP/h$n/root" ] && ds=$(desired_of $n) || return 1
		echo "h$n $(tree_hash "$T_TMP/h$n/root") $ds"
	done
}

# host N's status error
status_error() { $ETCDCTL get "/nodetune/hosts/h$1/status" --print-value-only |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["state"], d["error"])'; }
# status_is N PREFIX: host N's status says PREFIX (state, then error)
status_is() { case $(status_error "$1" 2>/dev/null) in "$2"*) return 0 ;; esac; return 1; }
