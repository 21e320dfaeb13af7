#!/bin/sh
# SPDX-License-Identifier: MIT
# host: thp sysctl knobs cgroup state dpkg port9477
# The Debian packages, end to end on this machine's root: `make deb` builds
# nodetune and nodetune-slurm (lintian: no tag at all, --pedantic -I), apt
# installs them (man -w nodetune, the bash completion completing a shipped
# policy's name, systemd-analyze verify of the installed unit, the unit
# disabled, /etc/nodetune/policy.conf a conffile, the plugin in Debian's
# Slurm plugin directory); starts the daemon the way the unit does (its
# ExecStart= line, on the default policy), asks `nodetune status`, stops it
# and `nodetune revert`s the host to its knobs as they were; Debian's
# python3 imports nodetune_steps from dist-packages; the Grafana dashboard
# and the Prometheus rules are in /usr/share/nodetune.  Then upgrades
# them to a second version (the first, repacked by dpkg-deb with its
# version bumped) whose policy.conf changed too: the admin's edit of policy.conf survives, the
# package's new one beside it as .dpkg-dist.  Then purge: no file of either package is left, nor
# /etc/nodetune, nor the daemon's state in /var/lib/nodetune, but for the
# journal of a host still tuned, kept and said loudly.  And the
# DaemonSet's image: deploy/k8s/Containerfile built with podman on the .deb.
#
# Leaves the host as it found it: the packages are purged however the test
# ends.  Skipped (saying why) when not root, when nodetune is already on
# this host from elsewhere, without the pkg group of install-deps.sh, and
# in the ASan pass (the packages are built without sanitizers: the first
# pass covers them).
. "$(dirname "$0")/lib.sh"
t_plan 42

if [ -n "${SANITIZED:-}" ]; then
	t_skip_host plain "the ASan pass: the packages are built without sanitizers (the first pass tests them)"; t_rest
fi
if [ "$(id -u)" -ne 0 ]; then
	t_skip_host root "not root: installing packages needs root"; t_rest
fi
for tool in dpkg-buildpackage dh lintian apt-get; do
	command -v $tool >/dev/null || { t_need "$tool" "$tool is not installed (scripts/install-deps.sh pkg)"; t_rest; }
done
if dpkg-query -W -f='${db:Status-Abbrev}' nodetune nodetune-slurm 2>/dev/null | grep -q '^.[iUFWht]'; then
	t_skip_host clean "nodetune is installed on this host already ($(dpkg-query -W nodetune nodetune-slurm 2>/dev/null | tr '\n' ' ')): not touching it"
	t_rest
fi
for p in /usr/bin/nodetune /etc/nodetune /var/lib/nodetune /usr/share/nodetune; do
	[ -e "$p" ] && { t_skip_host clean "$p exists (nodetune installed from elsewhere): not touching it"; t_rest; }
done

# the packages are purged, however the test ends, and then what the test
# made in their directories (none of them was there before)
t_defer "rm -rf /etc/nodetune /var/lib/nodetune"
t_defer "DEBIAN_FRONTEND=noninteractive dpkg --purge nodetune-slurm nodetune >/dev/null 2>&1"
export DEBIAN_FRONTEND=noninteractive
APT="apt-get -q -y --no-install-recommends -o DPkg::Lock::Timeout=300"
ARCH=$(dpkg --print-architecture)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
V1=$(dpkg-parsechangelog -S Version)
V2=$V1+test1

# ---- build: this tree, and a copy with the version bumped ----------------
deb_of_tree
rc=$?
D1=$DEBS
if [ "$rc" -ne 0 ] || [ ! -f "$D1/nodetune_${V1}_$ARCH.deb" ] || [ ! -f "$D1/nodetune-slurm_${V1}_$ARCH.deb" ]; then
	t_not_ok "make deb: exit $rc, no nodetune_${V1}_$ARCH.deb and nodetune-slurm_${V1}_$ARCH.deb"
	tail -n 15 "$ERR" "$OUT" | sed 's/^/#   /'
	t_done
fi
t_ok "make deb: nodetune_${V1}_$ARCH.deb ($(stat -c %s "$D1/nodetune_${V1}_$ARCH.deb") bytes), nodetune-slurm_${V1}_$ARCH.deb ($(stat -c %s "$D1/nodetune-slurm_${V1}_$ARCH.deb") bytes) $(if [ -n "$DEB_TOOK" ]; then echo "in $DEB_TOOK s"; else echo "made for this tree earlier ($D1)"; fi)"

lintian --pedantic -I "$D1/nodetune_${V1}_$ARCH.changes" >"$T_TMP/lintian" 2>&1
grep -v '^running with root privileges is not recommended!$' "$T_TMP/lintian" >"$T_TMP/lintian.tags"
if [ -s "$T_TMP/lintian.tags" ]; then
	t_not_ok "lintian --pedantic -I: tags"; sed 's/^/#   /' "$T_TMP/lintian.tags"
else
	t_ok "lintian --pedantic -I: no error, warning, info or pedantic tag (overrides: debian/*.lintian-overrides)"
fi

# ---- the DaemonSet image: deploy/k8s/Containerfile on the .deb -------------
# podman build with --isolation chroot: podman's OCI runtime (crun) cannot
# set the container's rlimits in a container without CAP_SYS_RESOURCE, as
# this sandbox is; chroot isolation runs the RUN steps anywhere.  The base
# image: lib.sh's podman_base_image.
image_test() {
	base=$(podman_base_image) || { HOST_CAP_CONTAINER="no: $base"; t_skips 4 t_skip_host container "$base"; return; }
	img=localhost/nodetune-test:$V1
	t_defer "podman rmi -f $img >/dev/null 2>&1"
	run podman build --isolation chroot --build-arg BASE="$base" -f deploy/k8s/Containerfile -t "$img" "$D1"
	if [ "$RC" -ne 0 ]; then
		t_not_ok "podman build -f deploy/k8s/Containerfile (FROM $base) $D1: exit $RC"
		tail -8 "$OUT" "$ERR" | sed 's/^/#   /'
		return
	fi
	t_ok "podman build -f deploy/k8s/Containerfile on $base with nodetune_${V1}_$ARCH.deb: $(podman image inspect --format '{{.Size}}' "$img") bytes"
	check "the image's entry point is /usr/bin/nodetune, its command the daemon" -- sh -c \
		"[ \"\$(podman image inspect --format '{{.Config.Entrypoint}} {{index .Config.Cmd 0}}' '$img')\" = '[/usr/bin/nodetune] daemon' ]"
	ctr=$(buildah from "$img" 2>/dev/null | tail -n 1)
	t_defer "buildah rm $ctr >/dev/null 2>&1"
	got=$(buildah run --isolation chroot "$ctr" -- /usr/bin/nodetune --version 2>&1)
	case $got in
	"nodetune $V1 "*) t_ok "in the image: $got" ;;
	*) t_not_ok "in the image, nodetune --version: '$got'" ;;
	esac
	check "in the image: /etc/nodetune/policy.conf plans (the package's default policy)" -- \
		buildah run --isolation chroot "$ctr" -- /usr/bin/nodetune plan --policy /etc/nodetune/policy.conf \
		--synthetic "pack:2 numa:1 core:4 pu:1"
}
if command -v podman >/dev/null && command -v buildah >/dev/null; then
	image_test
else
	t_need podman "podman or buildah is not installed (scripts/install-deps.sh pkg): the DaemonSet image is not built"
fi

# the second version: both packages of the first, unpacked by dpkg-deb,
# their version bumped to $V2 (nodetune-slurm's exact dependency on
# nodetune with it), the default policy changed (so that dpkg meets an
# admin's edit and a new conffile), its md5sums made again, and packed again.
# What dpkg sees of an upgrade is all there; a second `make deb` of a copy
# would add 50 s of building the same binaries.
D2=$T_TMP/v2
mkdir -p "$D2" "$T_TMP/unpacked"
bump() { # NAME: $D1's NAME_V1 package as NAME_V2 in $D2
	u=$T_TMP/unpacked/$1
	dpkg-deb -R "$D1/$1_${V1}_$ARCH.deb" "$u" &&
		sed -i -e "s/^Version: .*/Version: $V2/" -e "s/nodetune (= $V1)/nodetune (= $V2)/" "$u/DEBIAN/control" &&
		for f in etc/nodetune/policy.conf usr/share/nodetune/policies/gpu-train.conf; do
			[ ! -f "$u/$f" ] || echo "# changed in $V2" >>"$u/$f" || return 1
		done &&
		(cd "$u" && cut -c35- DEBIAN/md5sums | xargs -d '\n' md5sum) >"$u/md5sums.new" &&
		mv "$u/md5sums.new" "$u/DEBIAN/md5sums" &&
		dpkg-deb --root-owner-group -b "$u" "$D2/$1_${V2}_$ARCH.deb" >/dev/null
}
bump nodetune && bump nodetune-slurm
check "both packages as $V2: nodetune's version and policy.conf changed, nodetune-slurm's dependency with it ($(dpkg-deb -f "$D2/nodetune-slurm_${V2}_$ARCH.deb" Depends 2>/dev/null | grep -o 'nodetune (= [^)]*)'))" -- sh -c \
	"[ \"\$(dpkg-deb -f '$D2/nodetune_${V2}_$ARCH.deb' Version)\" = '$V2' ] &&
	 dpkg-deb -f '$D2/nodetune-slurm_${V2}_$ARCH.deb' Depends | grep -qF 'nodetune (= $V2)' &&
	 dpkg-deb --fsys-tarfile '$D2/nodetune_${V2}_$ARCH.deb' | tar -xOf - ./etc/nodetune/policy.conf | grep -q '^# changed in $V2'"

# ---- install -------------------------------------------------------------
run $APT install "$D1/nodetune_${V1}_$ARCH.deb" "$D1/nodetune-slurm_${V1}_$ARCH.deb"
if [ "$RC" -ne 0 ]; then
	t_not_ok "apt-get install ./nodetune_${V1}_$ARCH.deb ./nodetune-slurm_...: exit $RC"
	tail -10 "$OUT" "$ERR" | sed 's/^/#   /'
	t_done
fi
t_ok "apt-get install of both packages: $(dpkg-query -W nodetune nodetune-slurm | tr '\t\n' '  ')"
check "nodetune --version runs from /usr/bin" -- /usr/bin/nodetune --version
check "man -w nodetune: /usr/share/man/man8/nodetune.8.gz" -- \
	sh -c '[ "$(man -w nodetune)" = /usr/share/man/man8/nodetune.8.gz ]'
check "man -w: nodetune.conf(5), nodetune-fleet(8), nodetune_spank(8), nodetune-harness(1)" -- \
	sh -c 'man -w 5 nodetune.conf && man -w nodetune-fleet && man -w nodetune_spank && man -w nodetune-harness'
check "man nodetune.conf lists the policy keys (numa_balancing, khugepaged_defrag)" -- \
	sh -c 'MANPAGER=cat MANWIDTH=80 man 5 nodetune.conf 2>/dev/null | grep -q numa_balancing &&
	       MANPAGER=cat man 5 nodetune.conf 2>/dev/null | grep -q khugepaged_defrag'
comp=/usr/share/bash-completion/completions/nodetune
got=$(env -u NODETUNE_POLICY_PATH bash -c 'source "$1"; COMP_WORDS=(nodetune apply --policy gpu-t); COMP_CWORD=3
	_nodetune; printf "%s\n" "${COMPREPLY[@]}"' sh "$comp" 2>&1 | sort -u | tr '\n' ' ')
case $got in
*gpu-train*) t_ok "$comp completes 'nodetune apply --policy gpu-t' to the shipped policy: $got" ;;
*) t_not_ok "$comp: 'nodetune apply --policy gpu-t' gave '$got'" ;;
esac
systemd-analyze verify /lib/systemd/system/nodetune.service >"$T_TMP/verify" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$T_TMP/verify" ]; then
	t_ok "systemd-analyze verify /lib/systemd/system/nodetune.service: exit 0, no output (ExecStart=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' /lib/systemd/system/nodetune.service))"
else
	t_not_ok "systemd-analyze verify of the installed unit: exit $rc"; sed 's/^/#   /' "$T_TMP/verify"
fi
check "the unit is installed disabled (installing tunes nothing)" -- \
	sh -c '[ "$(systemctl is-enabled nodetune.service 2>/dev/null)" = disabled ]'
check "/etc/nodetune/policy.conf is a conffile, the shipped gpu-train.conf" -- sh -c \
	"dpkg-query -W -f='\${Conffiles}' nodetune | grep -q '^ /etc/nodetune/policy.conf ' &&
	 cmp -s /etc/nodetune/policy.conf /usr/share/nodetune/policies/gpu-train.conf"
check "the installed policy plans (root trusts it: root-owned, 0644)" -- \
	/usr/bin/nodetune plan --policy /etc/nodetune/policy.conf --synthetic "pack:2 numa:1 core:4 pu:1"
# the step-report client `ab` and `observe` read (F16): Debian's python3
# imports it from the package, run from outside the source tree in a clean
# environment (no PYTHONPATH, no PYTHONDONTWRITEBYTECODE: root's first
# import writes the module's .pyc, which the purge below must remove)
PYMOD=/usr/lib/python3/dist-packages/nodetune_steps.py
got=$(cd / && env -i PATH=/usr/bin:/bin /usr/bin/python3 -c 'import nodetune_steps; print(nodetune_steps.__file__)' 2>&1)
if [ "$got" = "$PYMOD" ]; then
	t_ok "/usr/bin/python3 (in /, a clean environment) imports nodetune_steps from $got"
else
	t_not_ok "/usr/bin/python3 (in /, a clean environment): import nodetune_steps gave '$(echo "$got" | tail -n 1)', not $PYMOD"
fi
check "the import as root wrote the module's bytecode, which the purge must remove" -- \
	sh -c 'ls /usr/lib/python3/dist-packages/__pycache__/nodetune_steps.cpython-*.pyc'
check "the Grafana dashboard and the Prometheus rules in /usr/share/nodetune (JSON with panels; rules, by promtool when there)" -- sh -c \
	'jq -e ".panels | length > 0" /usr/share/nodetune/grafana/nodetune.json &&
	 test -s /usr/share/nodetune/prometheus/nodetune-rules.yml &&
	 { ! command -v promtool || promtool check rules /usr/share/nodetune/prometheus/nodetune-rules.yml; }'
SPANK=/usr/lib/$MULTIARCH/slurm-wlm/nodetune_spank.so
check "nodetune-slurm: $SPANK, running /usr/bin/nodetune" -- sh -c "[ -f '$SPANK' ] && grep -qaF /usr/bin/nodetune '$SPANK'"
check "nodetune-slurm depends on the Slurm its plugin was built for" -- sh -c \
	"dpkg-query -W -f='\${Depends}' nodetune-slurm | grep -q 'slurm-wlm-basic-plugins (>= [0-9]*\.[0-9]*), slurm-wlm-basic-plugins (<< '"

# ---- the daemon from the package, as the README and docs/packaging.md start
# it (`systemctl enable --now nodetune`).  systemd is not PID 1 here, so the
# test does what systemd would do with the installed unit: the ExecStart=
# line read from /lib/systemd/system/nodetune.service (not a copy), its
# $NODETUNE_OPTS from EnvironmentFile= (absent: none), a clean environment,
# UMask=, the Runtime/State directories with the unit's modes, NOTIFY_SOCKET
# (Type=notify: started once READY=1 arrives), SIGTERM to stop and the
# RuntimeDirectory= removed after.  Then `nodetune revert`, as the README
# says, must put every knob back: the snapshot below reads them without
# nodetune.
UNIT=/lib/systemd/system/nodetune.service
# unit_key KEY: the value of KEY= in the installed unit (the last one)
unit_key() { sed -n "s/^$1=//p" "$UNIT" | tail -n 1; }
# host_knobs: every kernel setting a policy may write, the nodetune cgroups.
# Fails when a file that is there cannot be read, or when fewer than the
# five files every Linux host here has (THP enabled and defrag, swappiness,
# overcommit_memory, default_smp_affinity) were read: a comparison of two
# snapshots is then of nothing
host_knobs() {
	hk_n=0
	for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag \
		/sys/kernel/mm/transparent_hugepage/khugepaged/defrag /proc/sys/kernel/numa_balancing \
		/proc/sys/kernel/sched_autogroup_enabled /proc/sys/vm/* /proc/irq/default_smp_affinity \
		/proc/irq/*/smp_affinity_list /sys/devices/system/node/node*/hugepages/hugepages-*/nr_hugepages \
		/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do
		case $f in */drop_caches | */compact_memory | */stat_refresh) continue ;; esac
		[ -f "$f" ] || continue
		v=$(cat "$f") || return 1
		printf '%s: %s\n' "$f" "$v"
		case $f in */transparent_hugepage/enabled | */transparent_hugepage/defrag | */vm/swappiness | \
			*/vm/overcommit_memory | */default_smp_affinity) hk_n=$((hk_n + 1)) ;; esac
	done
	[ "$hk_n" -eq 5 ] || return 1
	find /sys/fs/cgroup -maxdepth 3 -type d -name 'nodetune*' | sort
}
# port_busy PORT: something listens on 127.0.0.1:PORT
port_busy() { ss -Hltn "sport = :$1" | grep -q .; }
daemon_test() {
	exec_start=$(unit_key ExecStart)
	case $exec_start in
	/*\"* | /*\'* | /*\\*) t_not_ok "$UNIT: ExecStart=$exec_start quotes or escapes, which this test does not parse"; return ;;
	/*) ;;
	*) t_not_ok "$UNIT: ExecStart=$exec_start is not an absolute path without a prefix"; return ;;
	esac
	cond=$(unit_key ConditionPathExists)
	check "the unit's ConditionPathExists=$cond holds after the install" -- test -e "$cond"
	if port_busy 9477; then
		t_skips 9 t_skip_host port9477 "127.0.0.1:9477 (the daemon's default /metrics) is taken on this host: $(ss -Hltnp 'sport = :9477' | head -1)"
		return
	fi
	host_knobs >"$T_TMP/knobs.before" || t_not_ok "the knobs could not be read before the daemon"
	opts=""
	envfile=$(unit_key EnvironmentFile)
	envfile=${envfile#-}
	[ -f "$envfile" ] && opts=$(sh -c '. "$1"; printf "%s" "${NODETUNE_OPTS:-}"' - "$envfile")
	set -f
	# shellcheck disable=SC2086 # split as systemd splits an unquoted line
	set -- $exec_start
	set +f
	argv=""
	for w in "$@"; do
		case $w in
		'$NODETUNE_OPTS' | '${NODETUNE_OPTS}') argv="$argv $opts" ;;
		'$'*) t_not_ok "ExecStart= names $w, which the test does not set"; return ;;
		*) argv="$argv $w" ;;
		esac
	done
	argv=${argv# }
	rtdir=/run/$(unit_key RuntimeDirectory) stdir=/var/lib/$(unit_key StateDirectory)
	install -d -m "$(unit_key RuntimeDirectoryMode)" "$rtdir"
	install -d -m "$(unit_key StateDirectoryMode)" "$stdir"
	t_defer "rm -rf $rtdir"
	NS=$T_TMP/notify.sock NL=$T_TMP/notify.log
	cat >"$T_TMP/notify.py" <<'EOF'
# notify.py SOCKET LOG: what systemd would hear on NOTIFY_SOCKET
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
log = open(sys.argv[2], "a", buffering=1)
while True:
    for l in s.recv(65536).decode(errors="replace").split("\n"):
        if l:
            log.write(l + "\n")
EOF
	python3 "$T_TMP/notify.py" "$NS" "$NL" &
	npid=$!
	t_defer "kill $npid 2>/dev/null"
	wait_until 10 test -S "$NS" || { t_not_ok "notify.py did not bind $NS"; return; }
	# the revert runs (after the kill below) however the test ends
	t_defer "/usr/bin/nodetune revert --state-dir $stdir >/dev/null 2>&1"
	# shellcheck disable=SC2086 # the unit's words, as split above
	(set -f; umask "$(unit_key UMask)" && exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
		NODETUNE_TEST_RUN="$NODETUNE_TEST_RUN" NOTIFY_SOCKET="$NS" \
		RUNTIME_DIRECTORY="$rtdir" STATE_DIRECTORY="$stdir" CONFIGURATION_DIRECTORY=/etc/nodetune \
		$argv) </dev/null >"$T_TMP/daemon.out" 2>"$T_TMP/daemon.log" &
	dpid=$!
	t_defer "kill -9 $dpid 2>/dev/null"
	if wait_until 60 grep -qx 'READY=1' "$NL"; then
		t_ok "the unit's ExecStart ($argv): READY=1 on NOTIFY_SOCKET, as systemctl start waits for"
	else
		t_not_ok "the unit's ExecStart ($argv): no READY=1 within 60 s"
		sed 's/^/#   /' "$T_TMP/daemon.log" | tail -8
	fi
	sha=$(sha256sum /etc/nodetune/policy.conf | cut -d' ' -f1)
	run /usr/bin/nodetune status --json
	check "nodetune status --json (the default socket) answers with the default policy /etc/nodetune/policy.conf, its sha256, 0 drifted (exit $RC)" -- \
		sh -c '[ "$1" -eq 0 ] && jq -e --arg sha "$2" ".policy == \"/etc/nodetune/policy.conf\" and .sha256 == \$sha and .last_verify.drifted == 0" "$3"' \
		- "$RC" "$sha" "$OUT"
	run /usr/bin/nodetune status
	check "nodetune status (text) names the policy (exit $RC)" -- \
		sh -c '[ "$1" -eq 0 ] && grep -q "/etc/nodetune/policy.conf" "$2"' - "$RC" "$OUT"
	run /usr/bin/nodetune policy active
	check "nodetune policy active: the daemon's policy (exit $RC)" -- \
		sh -c '[ "$1" -eq 0 ] && grep -q "/etc/nodetune/policy.conf" "$2"' - "$RC" "$OUT"
	check "the daemon serves /metrics on 127.0.0.1:9477 (the unit's default)" -- \
		sh -c 'curl -sf --max-time 5 http://127.0.0.1:9477/metrics | grep -q "^nodetune_verify_total "'
	host_knobs >"$T_TMP/knobs.tuned" || t_not_ok "the knobs could not be read with the daemon running"
	echo "# the daemon changed:$(diff "$T_TMP/knobs.before" "$T_TMP/knobs.tuned" | sed -n 's/^> / /p' | tr '\n' ';')"
	kill -TERM "$dpid"
	wait_until 30 sh -c "! kill -0 $dpid" || kill -9 "$dpid"
	wait "$dpid"
	drc=$?
	rm -rf "$rtdir"         # systemd removes RuntimeDirectory= when the unit stops
	check "SIGTERM (systemctl stop): exit $drc (0), STOPPING=1, 127.0.0.1:9477 closed" -- \
		sh -c '[ "$1" -eq 0 ] && grep -qx STOPPING=1 "$2" && ! ss -Hltn "sport = :9477" | grep -q .' - "$drc" "$NL"
	host_knobs >"$T_TMP/knobs.stopped" || t_not_ok "the knobs could not be read after the daemon stopped"
	check "stopping leaves the host tuned (the knobs as the daemon set them, its journal in $stdir)" -- sh -c \
		'cmp -s "$1" "$2" && ! cmp -s "$1" "$3" && test -s "$4/journal"' - \
		"$T_TMP/knobs.tuned" "$T_TMP/knobs.stopped" "$T_TMP/knobs.before" "$stdir"
	run /usr/bin/nodetune revert
	host_knobs >"$T_TMP/knobs.after" || t_not_ok "the knobs could not be read after the revert"
	if [ "$RC" -eq 0 ] && cmp -s "$T_TMP/knobs.before" "$T_TMP/knobs.after"; then
		t_ok "nodetune revert (no option, as the README says) finds $stdir/journal: every knob as before the daemon ($(wc -l <"$T_TMP/knobs.before") lines)"
	else
		t_not_ok "nodetune revert: exit $RC, the knobs differ from before the daemon"
		diff "$T_TMP/knobs.before" "$T_TMP/knobs.after" | head -10 | sed 's/^/#   /'
		sed 's/^/#   /' "$ERR" | head -5
	fi
	check "after revert: no journal in $stdir" -- test ! -e "$stdir/journal"
	# a revert that failed above is undone here, before the purge below
	# removes the journal (the deferred one would come too late)
	if [ -e "$stdir/journal" ] && ! /usr/bin/nodetune revert --state-dir "$stdir" >/dev/null 2>&1; then
		t_not_ok "nodetune revert --state-dir $stdir failed too: the host may keep the daemon's settings"
	fi
	kill "$npid" 2>/dev/null
	wait "$npid" 2>/dev/null
}
daemon_test

# ---- upgrade, with the admin's edit --------------------------------------
echo "# edited by the admin" >>/etc/nodetune/policy.conf
cp /etc/nodetune/policy.conf "$T_TMP/edited.conf"
run $APT -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
	install "$D2/nodetune_${V2}_$ARCH.deb" "$D2/nodetune-slurm_${V2}_$ARCH.deb"
check "apt-get install of $V2 over $V1: an upgrade (exit $RC)" -- \
	sh -c "[ $RC -eq 0 ] && [ \"\$(dpkg-query -W -f='\${Version}' nodetune)\" = '$V2' ]"
check "the admin's edit of /etc/nodetune/policy.conf survives the upgrade" -- \
	cmp -s "$T_TMP/edited.conf" /etc/nodetune/policy.conf
check "the package's new policy.conf is beside it as policy.conf.dpkg-dist" -- \
	sh -c "grep -q '^# changed in $V2' /etc/nodetune/policy.conf.dpkg-dist"

# ---- purge ---------------------------------------------------------------
# a host left tuned (the daemon stopped, nobody reverted): the package's
# nodetune applies gpu-train to a copy of a captured tree with its journal
# in /var/lib/nodetune (this host's knobs untouched); beside it, other
# state of the daemon's.  Purge keeps the journal and says so; the rest goes
cp -r tests/fixtures/sysroot/gpu-host-untuned "$T_TMP/tree"
run /usr/bin/nodetune apply --policy gpu-train --sysroot "$T_TMP/tree" \
	--topology tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml --state-dir /var/lib/nodetune
check "a host left tuned: the journal of its originals in /var/lib/nodetune (apply exit $RC)" -- \
	sh -c '[ "$1" -eq 0 ] && grep -q "^file	" /var/lib/nodetune/journal' - "$RC"
cp /var/lib/nodetune/journal "$T_TMP/journal.tuned"
echo '{}' >/var/lib/nodetune/journal.json
echo "# the admin's own" >/etc/nodetune/site.conf
dpkg -L nodetune nodetune-slurm >"$T_TMP/files"
run $APT purge nodetune-slurm nodetune
check "apt-get purge of both packages (exit $RC)" -- sh -c \
	"[ $RC -eq 0 ] && ! dpkg-query -W -f='\${db:Status-Abbrev}' nodetune nodetune-slurm 2>/dev/null | grep -q '^.[^n]'"
check "purge keeps the journal of a host still tuned, as it was, and nothing else of the state" -- sh -c \
	'cmp -s "$1" /var/lib/nodetune/journal && [ "$(ls -A /var/lib/nodetune)" = journal ]' - "$T_TMP/journal.tuned"
check "purge says the host is still tuned, where the journal is and how to restore" -- sh -c \
	'cat "$1" "$2" | grep -q "^nodetune: WARNING: this host is still tuned: /var/lib/nodetune/journal (kept) holds the original values of [1-9][0-9]* settings" &&
	 cat "$1" "$2" | grep -q "install nodetune again and run .nodetune revert --state-dir /var/lib/nodetune., then remove /var/lib/nodetune"' \
	- "$OUT" "$ERR"
run "$NODETUNE" revert --state-dir /var/lib/nodetune
check "the kept journal restores the tree, as the warning says (revert exit $RC)" -- sh -c \
	'[ "$1" -eq 0 ] && diff -r tests/fixtures/sysroot/gpu-host-untuned "$2" >&2' - "$RC" "$T_TMP/tree"
rm -rf /var/lib/nodetune
left=""
while IFS= read -r f; do
	[ -e "$f" ] && [ ! -d "$f" ] && left="$left $f"
done <"$T_TMP/files"
for d in /usr/share/nodetune /usr/share/doc/nodetune /usr/share/doc/nodetune-slurm \
	/etc/nodetune/policy.conf /etc/nodetune/policy.conf.dpkg-dist /lib/systemd/system/nodetune.service \
	/usr/lib/python3/dist-packages/__pycache__/nodetune_steps.*; do
	[ -e "$d" ] && left="$left $d"
done
check "purge leaves no file of the packages, no conffile${left:+ (left:$left)}" -- [ -z "$left" ]
check "purge keeps what the admin added in /etc/nodetune (Debian policy), and only that" -- \
	sh -c '[ "$(ls -A /etc/nodetune)" = site.conf ]'
t_done
