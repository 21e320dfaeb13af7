#!/bin/sh
# SPDX-License-Identifier: MIT
# host: thp sysctl knobs cgroup abcg port9477
# test_systemd.sh — the packaged daemon under its own unit, with a real systemd
# as PID 1 (issue 37): `make deb`, an image (tests/tools/systemd.Containerfile)
# that installs the .deb with apt, a container booted with systemd
# (podman --runtime runc --systemd=always, privileged: the daemon tunes this
# machine's kernel, as it would on a GPU host), and every claim the unit
# makes, with the unit's own sandbox in force:
#   - `systemctl enable --now nodetune`: active once READY=1 came, the
#     default policy applied to the live kernel, journaled in /var/lib/nodetune;
#   - `systemd-analyze security` rates the unit 3.5 or better;
#   - the watchdog: with WatchdogSec=2s the daemon stays up 3 periods;
#   - `systemctl reload` applies a changed policy, and keeps the old one
#     when the new one is bad (one line saying so);
#   - restart on failure: SIGKILL of the daemon, systemd starts it again,
#     and the restart undoes nothing;
#   - `systemctl stop` leaves the host tuned, `nodetune revert` restores it.
# The knobs of this machine that the default policy touches are saved
# first and put back however the test ends; the container and its image are
# removed.  Skipped, naming the reason, in the ASan pass (the packages are
# built without sanitizers), when not root, and where this kernel or
# sandbox cannot boot such a container (the reason systemd or podman gave).
. "$(dirname "$0")/lib.sh"
t_plan 31
. "$(dirname "$0")/etcd_lib.sh"

if [ -n "${SANITIZED:-}" ]; then
	t_skip_host plain "the ASan pass: the packages are built without sanitizers (the first pass tests them)"; t_rest
fi
[ "$(id -u)" -eq 0 ] || { t_skip_host root "not root: a privileged container needs root"; t_rest; }
for tool in podman runc dpkg-buildpackage; do
	command -v $tool >/dev/null || { t_need "$tool" "$tool is not installed (scripts/install-deps.sh pkg)"; t_rest; }
done

# podman on this machine kind (../shared/SYSTEMD.md): its default ulimits
# need CAP_SYS_RESOURCE, and crun refuses hybrid cgroups; runc runs it
printf '[containers]\ndefault_ulimits = []\n' >"$T_TMP/containers.conf"
CONTAINERS_CONF=$T_TMP/containers.conf
export CONTAINERS_CONF
NAME=nodetune-unit-$$
IMG=localhost/nodetune-unit:$$
THP=/sys/kernel/mm/transparent_hugepage
# in the container (systemctl, journalctl, nodetune as root there)
ct() { podman exec "$NAME" "$@"; }
# ... with this shell's stdin (podman exec passes none without -i)
ct_in() { podman exec -i "$NAME" "$@"; }

# ---- this machine's knobs, as they are, put back at the end ---------------
knobs() { echo "enabled=$(sed 's/.*\[\(.*\)\].*/\1/' $THP/enabled) defrag=$(sed 's/.*\[\(.*\)\].*/\1/' $THP/defrag) numa_balancing=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null) swappiness=$(cat /proc/sys/vm/swappiness 2>/dev/null)"; }
K0=$(knobs)
restore_knobs() {
	for kv in $K0; do
		case $kv in
		enabled=*) echo "${kv#*=}" >$THP/enabled ;;
		defrag=*) echo "${kv#*=}" >$THP/defrag ;;
		numa_balancing=?*) echo "${kv#*=}" >/proc/sys/kernel/numa_balancing ;;
		swappiness=?*) echo "${kv#*=}" >/proc/sys/vm/swappiness ;;
		esac
	done 2>/dev/null
}
t_defer restore_knobs

# ---- the package and the image ------------------------------------------------
# (lib.sh's deb_of_tree: made once per tree, shared with test_deb.sh)
deb_of_tree
rc=$?
DEB=$(ls "$DEBS"/nodetune_*.deb 2>/dev/null | head -n 1)
[ "$rc" -eq 0 ] && [ -f "$DEB" ] || { t_not_ok "make deb: exit $rc"; tail -8 "$ERR" | sed 's/^/#   /'; t_done; }
mkdir "$T_TMP/ctx" && cp "$DEB" "$T_TMP/ctx/"
base=$(podman_base_image) || { HOST_CAP_CONTAINER="no: $base"; t_skip_host container "$base"; t_rest; }
t_defer "podman rmi -f $IMG >/dev/null 2>&1"
run podman build --isolation chroot --build-arg BASE="$base" -f tests/tools/systemd.Containerfile -t "$IMG" "$T_TMP/ctx"
[ "$RC" -eq 0 ] || { t_not_ok "podman build -f tests/tools/systemd.Containerfile: exit $RC"; tail -8 "$OUT" "$ERR" | sed 's/^/#   /'; t_done; }
t_ok "an image with systemd and $(basename "$DEB") installed by apt ($(podman image inspect --format '{{.Size}}' "$IMG") bytes)"

# ---- boot -------------------------------------------------------------------------
# The container's systemd makes its groups (system.slice, init.scope, the
# .mount units) in this machine's name=systemd hierarchy, whose root it
# shares on this kernel (hybrid cgroups: the named hierarchy is not
# namespaced), and leaves them when it is killed: each one it made is
# removed once the container is gone (rmdir: only an empty group goes).
sd_groups() { find /sys/fs/cgroup/systemd -mindepth 1 -type d 2>/dev/null | sort; }
sd_groups >"$T_TMP/sd-groups"
sd_groups_clean() {
	sd_groups | grep -vxF -f "$T_TMP/sd-groups" | sort -r | while read -r g; do rmdir "$g" 2>/dev/null; done
}
t_defer sd_groups_clean
t_defer "podman rm -f -t 5 $NAME >/dev/null 2>&1"
run podman --runtime runc run -d --privileged --network host --cgroupns private --name "$NAME" --systemd=always "$IMG" /sbin/init
if [ "$RC" -ne 0 ]; then
	HOST_CAP_CONTAINER="no: podman run of systemd failed"
	t_skip_host container "this kernel or sandbox cannot run a systemd container: $(tail -n 1 "$ERR")"
	t_rest
fi
booted() { case $(ct systemctl is-system-running 2>/dev/null) in running | degraded) return 0 ;; esac; return 1; }
if ! wait_until 60 booted; then
	HOST_CAP_CONTAINER="no: systemd did not boot"
	t_skip_host container "systemd did not boot in a container here: $(ct systemctl is-system-running 2>&1 | tail -n 1); $(podman logs "$NAME" 2>&1 | tail -n 1)"
	t_rest
fi
# before the container goes: the daemon stopped and the host reverted
# (the job cgroup it made lives in this machine's cgroup tree)
t_defer "podman exec $NAME sh -c 'systemctl stop nodetune; nodetune revert --state-dir /var/lib/nodetune' >/dev/null 2>&1"
t_ok "systemd is PID 1 in the container: $(ct sh -c 'cat /proc/1/comm; systemctl --version | head -n 1' | tr '\n' ' ')"

# ---- enable --now --------------------------------------------------------------
# THP defrag as the default policy does not want it, so that its apply shows
echo always >$THP/defrag
KB=$(knobs)
run ct systemctl enable --now nodetune
active() { [ "$(ct systemctl is-active nodetune 2>/dev/null)" = active ]; }
if [ "$RC" -eq 0 ] && active; then
	t_ok "systemctl enable --now nodetune: active (Type=notify: READY=1 came)"
else
	t_not_ok "systemctl enable --now nodetune: exit $RC, $(ct systemctl is-active nodetune)"
	ct journalctl -u nodetune --no-pager | tail -8 | sed 's/^/#   /'
fi
check "the default policy (gpu-train) is applied to the live kernel: THP defrag always -> defer+madvise ($(knobs))" -- \
	grep -q '\[defer+madvise\]' $THP/defrag
check "the journal is in the unit's StateDirectory, 0700" -- \
	sh -c '[ "$(podman exec "$1" stat -c %a /var/lib/nodetune)" = 700 ] && podman exec "$1" test -s /var/lib/nodetune/journal' - "$NAME"

# ---- systemd-analyze security -------------------------------------------------------
score=$(ct systemd-analyze security nodetune --no-pager 2>/dev/null | sed -n 's/.*Overall exposure level for nodetune.service: \([0-9.]*\).*/\1/p')
check "systemd-analyze security rates the unit ${score:-?} (3.5 or better)" -- \
	awk -v s="${score:-99}" 'BEGIN { exit !(s + 0 <= 3.5) }'

# ---- the watchdog: WatchdogSec=2s, three periods up -----------------------------------
ct mkdir -p /etc/systemd/system/nodetune.service.d
printf '[Service]\nWatchdogSec=2s\n' | ct_in tee /etc/systemd/system/nodetune.service.d/watchdog.conf >/dev/null
ct systemctl daemon-reload
ct systemctl restart nodetune
pid0=$(ct systemctl show -p MainPID --value nodetune)
# window: 6 s is three watchdog periods; a daemon that does not ping is
# killed (SIGABRT) after the first 2 s and restarted 5 s later
sleep 6
check "with WatchdogSec=2s the daemon is still the same process after 6 s (pid $pid0, no watchdog timeout)" -- \
	sh -c '[ "$2" != 0 ] && [ "$(podman exec "$1" systemctl show -p WatchdogUSec --value nodetune)" = 2s ] &&
		[ "$(podman exec "$1" systemctl show -p MainPID --value nodetune)" = "$2" ] &&
		! podman exec "$1" journalctl -u nodetune --no-pager | grep -q "Watchdog timeout"' - "$NAME" "$pid0"
ct rm /etc/systemd/system/nodetune.service.d/watchdog.conf
ct systemctl daemon-reload

# ---- reload: a changed policy, then a bad one -----------------------------------------------
ct sed -i 's/^defrag *=.*/defrag = defer/' /etc/nodetune/policy.conf
run ct systemctl reload nodetune
check "systemctl reload applies a changed policy (THP defrag -> defer)" -- \
	wait_until 10 grep -q '\[defer\]' $THP/defrag
printf '[thp]\ndefrag = sometimes\n' | ct_in tee -a /etc/nodetune/policy.conf >/dev/null
run ct systemctl reload nodetune
refused() { ct journalctl -u nodetune --no-pager | grep -q "reload refused: .*policy.conf"; }
check "a bad policy: reload refused, saying why in one line" -- wait_until 10 refused
check "... the old policy kept (THP defrag defer), the daemon active" -- \
	sh -c 'grep -q "\[defer\]" "$1" && [ "$2" = active ]' - $THP/defrag "$(ct systemctl is-active nodetune)"
ct sed -i '$d' /etc/nodetune/policy.conf
ct sed -i '$d' /etc/nodetune/policy.conf
ct systemctl reload nodetune

# ---- restart on failure ---------------------------------------------------------------
n0=$(ct systemctl show -p NRestarts --value nodetune)
pid0=$(ct systemctl show -p MainPID --value nodetune)
K2=$(knobs)
ct systemctl kill -s KILL nodetune
restarted() {
	p=$(ct systemctl show -p MainPID --value nodetune)
	[ "$p" != 0 ] && [ "$p" != "$pid0" ] && [ "$(ct systemctl show -p NRestarts --value nodetune)" -gt "$n0" ] && active
}
check "SIGKILL of pid $pid0: Restart=on-failure starts the daemon again" -- wait_until 20 restarted
check "the restart undid nothing ($K2)" -- sh -c '[ "$1" = "$2" ]' - "$K2" "$(knobs)"

# ---- stop leaves the host tuned; revert restores it ----------------------------------------
# a Slurm job's journal in /run/nodetune/slurm (the plugin's) outlives the stop
ct sh -c 'mkdir -p -m 700 /run/nodetune/slurm/77 && echo commit >/run/nodetune/slurm/77/journal'
ct systemctl stop nodetune
check "systemctl stop leaves the host tuned ($(knobs))" -- sh -c '[ "$1" = "$2" ]' - "$K2" "$(knobs)"
check "... and a Slurm job's journal in /run/nodetune/slurm (RuntimeDirectoryPreserve=yes)" -- \
	ct test -s /run/nodetune/slurm/77/journal
ct rm -r /run/nodetune/slurm/77
run ct nodetune revert --state-dir /var/lib/nodetune
check "nodetune revert restores the knobs as the daemon found them ($KB)" -- sh -c '[ "$1" = "$2" ] && [ "$3" -eq 0 ]' - "$KB" "$(knobs)" "$RC"

# ---- a gated rollout under the unit ------------------------------------------------------
# A real etcd on this machine's loopback (the container shares its network,
# and the unit's IPAddressAllow=localhost lets the daemon reach it), the
# controller here with its signing key, the daemon in the container trusting
# it, and a gate whose job (tests/tools/gateprobe.c) runs as the user tester
# and says what it reached: its uid, a file in its home, a loopback TCP
# rendezvous, a writable and executable mapping, /dev, its terminal.
gate_test() {
	command -v etcd >/dev/null || { t_need etcd "etcd-server is not installed (scripts/install-deps.sh fleet): no gated rollout"; return; }
	cc -static -O2 -o "$T_TMP/gateprobe" tests/tools/gateprobe.c || { t_not_ok "cc -static tests/tools/gateprobe.c"; return; }
	EP=$(tests/tools/etcd-cluster.sh start "$T_TMP/etcd") || { t_not_ok "the etcd cluster started"; return; }
	t_defer "tests/tools/etcd-cluster.sh stop '$T_TMP/etcd'"
	mkdir -m 700 "$T_TMP/ctl" && "$NODETUNE" fleet keygen --out "$T_TMP/ctl" --name ctl >/dev/null ||
		{ t_not_ok "fleet keygen"; return; }
	podman cp "$T_TMP/gateprobe" "$NAME:/usr/local/bin/gateprobe"
	podman cp "$T_TMP/ctl/ctl.pub" "$NAME:/etc/nodetune/fleet-keys.d/ctl.pub" 2>/dev/null ||
		{ ct mkdir -p -m 755 /etc/nodetune/fleet-keys.d && podman cp "$T_TMP/ctl/ctl.pub" "$NAME:/etc/nodetune/fleet-keys.d/ctl.pub"; }
	# (the gate at alpha 0.005: its rollouts must pass, and a policy that
	# changes nothing for the probe fails a gate at ab's 0.05 one time in
	# twenty: test_fleet_gate.sh)
	ct sh -c 'chown root:root /usr/local/bin/gateprobe /etc/nodetune/fleet-keys.d/ctl.pub &&
		chmod 755 /usr/local/bin/gateprobe && chmod 644 /etc/nodetune/fleet-keys.d/ctl.pub &&
		useradd -m tester && echo seen >/home/tester/data.txt && chown tester /home/tester/data.txt &&
		mkdir -p -m 1777 /var/tmp/gate && mkdir -p -m 755 /etc/nodetune/gates.d &&
		printf "command = /usr/local/bin/gateprobe\narg = /var/tmp/gate\nuser = tester\nbudget = 120\nalpha = 0.005\n" >/etc/nodetune/gates.d/probe.conf &&
		chmod 644 /etc/nodetune/gates.d/probe.conf' || { t_not_ok "the gate set up in the container"; return; }
	printf 'NODETUNE_OPTS="--fleet %s --host c1 --interval 1 --no-metrics"\n' "$EP" | ct_in tee /etc/default/nodetune >/dev/null
	ct systemctl start nodetune
	registered() { "$NODETUNE" fleet hosts --endpoints "$EP" --json | grep -q '"alive": true'; }
	check "the daemon under its unit joins the fleet (etcd on loopback)" -- wait_until 30 registered
	printf '[main]\nsummary = test defer\n[thp]\ndefrag = defer\n' >"$T_TMP/defer.conf"
	chmod 644 "$T_TMP/defer.conf"
	run "$NODETUNE" fleet rollout --endpoints "$EP" --signing-key "$T_TMP/ctl/ctl.key" --policy "$T_TMP/defer.conf" \
		--name r-unit --waves 1/class,100% --gate probe --gate-budget 40 --gate-allow-inconclusive --wave-timeout 240 --json
	if [ "$RC" -eq 0 ]; then
		t_ok "a gated rollout under the unit: done ($(tr -d '\n' <"$OUT" | cut -c1-200))"
	else
		t_not_ok "a gated rollout under the unit: exit $RC"
		sed 's/^/#   /' "$ERR" | tail -n 3
		ct journalctl --no-pager | grep -i 'gate\|ab:\|ab\[' | tail -n 12 | sed 's/^/#   /'
	fi
	line=$(ct head -n 1 /var/tmp/gate/probe.txt 2>/dev/null)
	uid=$(ct id -u tester)
	check "the gate's job ran as tester (uid $uid), outside the daemon's sandbox: $line" -- \
		sh -c 'case $1 in "uid=$2 home=/home/tester data=ok tcp=ok wx=ok "*) ;; *) exit 1 ;; esac' - "$line" "$uid"
	check "... it sees /dev as the host does (not PrivateDevices='s handful) and has no terminal" -- \
		sh -c 'dev=${1#* dev=}; dev=${dev%% *}; [ "$dev" -gt 20 ] && case $1 in *" tty=0") ;; *) exit 1 ;; esac' - "$line"
	ct cat /var/lib/nodetune/gate-report.json >"$T_TMP/gate-report.json" || t_not_ok "the gate's report kept in /var/lib/nodetune/gate-report.json"
	exits=$(python3 -c 'import json, sys
w = json.load(open(sys.argv[1]))["watch"]
e = [w[a]["culprit"]["exits"] for a in "ab"]
print("counted" if all(x["counted"] and x["records"] > 0 for x in e) else "not: %s" % e[0]["why"])' \
		"$T_TMP/gate-report.json" 2>&1)
	# the kernel takes taskstats listeners only from its initial PID
	# namespace (kernel/taskstats.c, add_del_listener), and systemd as the
	# container's PID 1 has one of its own: there ab's sockets open (no
	# address-family filter in the gate's unit) and registering is refused
	if [ "$(readlink /proc/1/ns/pid)" = "$(ct readlink /proc/1/ns/pid)" ]; then
		check "... ab counted the exit records of both arms (taskstats over netlink: $exits)" -- \
			[ "$exits" = counted ]
	else
		# the skip only where ab said exactly that (a report missing or
		# saying anything else is a failure)
		case $exits in
		"not: taskstats: listening on CPU "*": invalid argument")
			t_ok "... ab opened its netlink sockets in the gate's unit, which the daemon's forbids ($exits)"
			t_skip_host taskstats-pidns "exit records counted under the unit: the container's systemd has a PID namespace of its own, where the kernel refuses taskstats listeners (ab said: ${exits#not: })" ;;
		*)
			t_not_ok "... ab opened its netlink sockets in the gate's unit, which the daemon's forbids: $(echo "$exits" | tail -n 1 | cut -c1-200)" ;;
		esac
	fi
	check "the daemon keeps its sandbox (PrivateDevices, the system call filter)" -- \
		sh -c '[ "$(podman exec "$1" systemctl show -p PrivateDevices --value nodetune)" = yes ]' - "$NAME"
	gate_kill_test
}

# kill -9 of the daemon mid-gate: the gate's unit is bound to the daemon's
# (BindsTo=), so systemd stops it (ab reverts its arm), the daemon is
# started again (Restart=on-failure) and puts back what a gate left; every
# knob is as it was before the gate.
gate_kill_test() {
	printf '[main]\nsummary = test never\n[thp]\nenabled = never\ndefrag = defer\n' >"$T_TMP/never.conf"
	chmod 644 "$T_TMP/never.conf"
	ct sh -c 'sed -i "s/^budget = .*/budget = 600/" /etc/nodetune/gates.d/probe.conf'
	kb=$(knobs)
	"$NODETUNE" fleet rollout --endpoints "$EP" --signing-key "$T_TMP/ctl/ctl.key" --policy "$T_TMP/never.conf" \
		--name r-kill --waves 1/class,100% --gate probe --gate-budget 300 --gate-allow-inconclusive \
		--wave-timeout 600 >"$T_TMP/r-kill.out" 2>&1 &
	ctl=$!
	gating() { ct systemctl list-units --no-legend 'nodetune-gate-*' | grep -q running && grep -q '\[never\]' $THP/enabled; }
	if ! wait_until 60 gating; then
		t_not_ok "the gate of r-kill runs, arm B applied (enabled never): $(knobs)"
		kill "$ctl" 2>/dev/null
		wait "$ctl"
		return
	fi
	gate=$(ct systemctl list-units --no-legend 'nodetune-gate-*' | awk '{ print $1 }')
	pid0=$(ct systemctl show -p MainPID --value nodetune)
	ct systemctl kill -s KILL nodetune
	gone() { [ -z "$(ct systemctl list-units --no-legend 'nodetune-gate-*')" ]; }
	check "kill -9 of the daemon mid-gate: systemd stops the gate's unit ($gate) with it" -- wait_until 30 gone
	back() { p=$(ct systemctl show -p MainPID --value nodetune); [ "$p" != 0 ] && [ "$p" != "$pid0" ] && active; }
	check "... the daemon is started again" -- wait_until 30 back
	same_knobs() { [ "$(knobs)" = "$1" ]; }
	check "... and every knob is as before the gate ($kb)" -- wait_until 30 same_knobs "$kb"
	"$NODETUNE" fleet abort --endpoints "$EP" --signing-key "$T_TMP/ctl/ctl.key" --name r-kill >/dev/null 2>&1
	wait "$ctl"
}
gate_test

# ---- the fleet quick start of docs/fleet.md, its lines as they are -------------------
# The blocks fenced ```sh quickstart-controller, quickstart-host and
# quickstart-rollout, extracted (tests/tools/doc_blocks.py --tagged), run
# with sh -e: the controller's in a second container of the same image (its
# own /etc/nodetune), the host's in the systemd one, against a TLS etcd
# on loopback that the quick start's init-auth puts auth on.  Substituted,
# and nothing else: the endpoints https://10.0.0.5:2379 by this etcd's
# three https://127.0.0.1:PORT URLs, and IPAddressAllow=10.0.0.5 by
# IPAddressAllow=127.0.0.1.  The test does what the text asks of the
# reader: it copies etcd-ca.pem to both, ctl.pub and the host's password
# file from the controller to the host (scp in the text), and puts a
# stand-in for the benchmark at /usr/local/bin/bench.  The host is reset
# first (the section above left it in another store's fleet): the daemon
# stopped and reverted, its fleet state and /etc/default/nodetune removed.
quickstart_test() {
	etcd_have || return
	qs=$T_TMP/qs
	mkdir -p "$qs/certs" && etcd_ca "$qs/certs" ca && etcd_server_cert "$qs/certs" ca ||
		{ t_not_ok "quick start: openssl made the etcd certificates"; return; }
	QEP=$(ETCD_TLS=$qs/certs tests/tools/etcd-cluster.sh start "$qs/etcd") ||
		{ t_not_ok "quick start: the TLS etcd started"; return; }
	t_defer "tests/tools/etcd-cluster.sh stop '$qs/etcd'"
	for tag in quickstart-controller quickstart-host quickstart-rollout; do
		python3 tests/tools/doc_blocks.py --tagged $tag docs/fleet.md |
			sed -e "s|https://10\.0\.0\.5:2379|$QEP|g" -e 's|^IPAddressAllow=10\.0\.0\.5$|IPAddressAllow=127.0.0.1|' \
			>"$qs/$tag.sh" || { t_not_ok "docs/fleet.md has a block fenced \`\`\`sh $tag"; return; }
	done
	check "the quick start's blocks, extracted from docs/fleet.md ($(cat "$qs"/*.sh | wc -l) lines), name only the substituted addresses" -- \
		sh -c '! grep -q "10\.0\.0\.5" "$1"/*.sh && grep -q "^endpoints = https://127" "$1/quickstart-host.sh"' - "$qs"
	CTL=$NAME-ctl
	t_defer "podman rm -f -t 0 $CTL >/dev/null 2>&1"
	run podman --runtime runc run -d --network host --name "$CTL" "$IMG" sleep infinity
	[ "$RC" -eq 0 ] || { t_not_ok "quick start: the controller's container: $(tail -n 1 "$ERR")"; return; }
	ct sh -c 'systemctl stop nodetune; nodetune revert --state-dir /var/lib/nodetune; rm -f /var/lib/nodetune/fleet-* /etc/default/nodetune' >/dev/null 2>&1
	# a job cgroup the daemons above left (empty: rmdir removes nothing
	# else); on a cgroup v1 hybrid host a daemon started again refuses its
	# own as "exists already and is not ours" (seen 2026-11-28, not this
	# section's to fix)
	ct sh -c 'find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d -name "nodetune-job*" -exec rmdir {} +' >/dev/null 2>&1
	podman cp "$qs/certs/ca.pem" "$CTL:/root/etcd-ca.pem" && podman cp "$qs/certs/ca.pem" "$NAME:/root/etcd-ca.pem" ||
		{ t_not_ok "quick start: etcd-ca.pem copied"; return; }
	run podman exec -i -w /root "$CTL" sh -e <"$qs/quickstart-controller.sh"
	check "quick start, the controller's block (keygen, fleet.conf, init-auth): exit $RC" -- [ "$RC" -eq 0 ]
	[ "$RC" -eq 0 ] || { sed 's/^/#   /' "$ERR" | tail -n 5; return; }
	podman cp "$CTL:/etc/nodetune/keys/ctl.pub" "$qs/ctl.pub" && podman cp "$qs/ctl.pub" "$NAME:/root/ctl.pub" &&
		podman cp "$CTL:/root/etcd-passwords/nodetune-host-gpu17" "$qs/pw" && podman cp "$qs/pw" "$NAME:/root/nodetune-host-gpu17" &&
		printf '#!/bin/sh\ni=0\nwhile [ $i -lt 100000 ]; do i=$((i + 1)); done\n' >"$qs/bench" &&
		podman cp "$qs/bench" "$NAME:/usr/local/bin/bench" && ct chmod 755 /usr/local/bin/bench && ct chown root:root /usr/local/bin/bench ||
		{ t_not_ok "quick start: ctl.pub, the host's password file and the bench stand-in copied to the host"; return; }
	run podman exec -i -w /root "$NAME" sh -e <"$qs/quickstart-host.sh"
	check "quick start, the host's block (the key, fleet.conf, the unit's drop-in, a gate, restart): exit $RC" -- [ "$RC" -eq 0 ]
	[ "$RC" -eq 0 ] || { sed 's/^/#   /' "$ERR" | tail -n 5; return; }
	qs_joined() { podman exec "$CTL" nodetune fleet hosts --json 2>/dev/null | grep -A1 '"host": "gpu17"' | grep -q '"alive": true'; }
	check "... the daemon under its unit joins as gpu17 (--host, the store from fleet.conf, TLS and its own login)" -- \
		wait_until 30 qs_joined
	run podman exec -i -w /root "$CTL" sh -e <"$qs/quickstart-rollout.sh"
	if [ "$RC" -eq 0 ]; then
		t_ok "quick start, the rollout's block: exit 0 ($(grep -m 1 -i 'first' "$OUT" | tr -s ' ' | cut -c1-120))"
	else
		t_not_ok "quick start, the rollout's block: exit $RC"
		tail -n 5 "$OUT" "$ERR" | sed 's/^/#   /'
		ct journalctl -u nodetune --no-pager | tail -n 8 | sed 's/^/#   /'
	fi
	podman exec "$CTL" nodetune fleet status --name first --json >"$qs/rollout.json" 2>&1
	podman exec "$CTL" nodetune fleet hosts --json >"$qs/hosts.json" 2>&1
	ct sha256sum /var/lib/nodetune/fleet-policy.conf >"$qs/host.sha" 2>&1
	# the rollout's document: done; what gpu17 reports to the store, and
	# the store's policy it keeps in its state dir, are that policy (its
	# `nodetune status` names the unit's --policy file, not the fleet's)
	qs_state=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["rollouts"][0]
h = [x for x in json.load(open(sys.argv[2]))["hosts"] if x["host"] == "gpu17"][0]["status"]
kept = open(sys.argv[3]).read().split()[0]
print(r["state"], h["state"], "reported" if h["sha256"] == r["sha256"] else "reported-other",
      "kept" if kept == r["sha256"] else "kept-other", r["policy"])' "$qs/rollout.json" "$qs/hosts.json" "$qs/host.sha" 2>&1)
	check "... the rollout ends done, and gpu17 runs its policy (rollout, host state, sha256 reported and kept: $qs_state)" -- \
		sh -c 'case $1 in "done "*" reported kept "*) ;; *) exit 1 ;; esac' - "$qs_state"
}
quickstart_test

echo "# covered: the .deb under its own unit with systemd as PID 1: enable --now, security $score, watchdog, reload (good and bad), restart on failure, stop keeps tuning, revert, a gated rollout as the gate's user, the fleet quick start of docs/fleet.md"
t_done
