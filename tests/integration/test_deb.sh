#!/bin/sh
# The Debian packages, end to end on this machine's root: `make deb` builds
# nodetune and nodetune-slurm (lintian: no tag at all, --pedantic -I), apt
# installs them (man -w nodetune, the bash completion completing a shipped
# policy's name, systemd-analyze verify of the installed unit, the unit
# disabled, /etc/nodetune/policy.conf a conffile, the plugin in Debian's
# Slurm plugin directory), then upgrades them to a second build whose
# version is bumped with dch and whose policy.conf changed too: the
# admin's edit of policy.conf survives, the package's new one beside it as
# .dpkg-dist.  Then purge: no file of either package is left, nor
# /etc/nodetune, nor the daemon's state in /var/lib/nodetune.  And the
# DaemonSet's image: deploy/k8s/Containerfile built with podman on the .deb.
#
# Leaves the host as it found it: the packages are purged however the test
# ends.  Skipped (saying why) when not root, when nodetune is already on
# this host from elsewhere, without the pkg group of install-deps.sh, and
# in the ASan pass (the packages are built without sanitizers: the first
# pass covers them).
. "$(dirname "$0")/lib.sh"

if [ -n "${SANITIZED:-}" ]; then
	t_skip_host "the ASan pass: the packages are built without sanitizers (the first pass tests them)"; t_done
fi
if [ "$(id -u)" -ne 0 ]; then
	t_skip_host "not root: installing packages needs root"; t_done
fi
for tool in dpkg-buildpackage dh lintian dch apt-get; do
	command -v $tool >/dev/null || { t_need "$tool" "$tool is not installed (scripts/install-deps.sh pkg)"; t_done; }
done
if dpkg-query -W -f='${db:Status-Abbrev}' nodetune nodetune-slurm 2>/dev/null | grep -q '^.[iUFWht]'; then
	t_skip_host "nodetune is installed on this host already ($(dpkg-query -W nodetune nodetune-slurm 2>/dev/null | tr '\n' ' ')): not touching it"
	t_done
fi
for p in /usr/bin/nodetune /etc/nodetune /var/lib/nodetune /usr/share/nodetune; do
	[ -e "$p" ] && { t_skip_host "$p exists (nodetune installed from elsewhere): not touching it"; t_done; }
done

# the packages are purged, however the test ends, and then what the test
# made in their directories (none of them was there before)
t_defer "rm -rf /etc/nodetune /var/lib/nodetune"
t_defer "DEBIAN_FRONTEND=noninteractive dpkg --purge nodetune-slurm nodetune >/dev/null 2>&1"
# make deb, run from here, must not see the SAN= or BUILD= of the make
# that runs this test
unset MAKEFLAGS MAKELEVEL MFLAGS
export DEBIAN_FRONTEND=noninteractive
APT="apt-get -q -y --no-install-recommends -o DPkg::Lock::Timeout=300"
ARCH=$(dpkg --print-architecture)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
V1=$(dpkg-parsechangelog -S Version)
V2=$V1+test1

# ---- build: this tree, and a copy with the version bumped ----------------
start=$(date +%s)
run make --no-print-directory -s deb BUILD="$T_TMP/b1" INSTALL_DEPS=true
took=$(($(date +%s) - start))
D1=$T_TMP/b1/deb
if [ "$RC" -ne 0 ] || [ ! -f "$D1/nodetune_${V1}_$ARCH.deb" ] || [ ! -f "$D1/nodetune-slurm_${V1}_$ARCH.deb" ]; then
	t_not_ok "make deb: exit $RC, no nodetune_${V1}_$ARCH.deb and nodetune-slurm_${V1}_$ARCH.deb"
	tail -15 "$ERR" "$OUT" | sed 's/^/#   /'
	t_done
fi
t_ok "make deb: nodetune_${V1}_$ARCH.deb ($(stat -c %s "$D1/nodetune_${V1}_$ARCH.deb") bytes), nodetune-slurm_${V1}_$ARCH.deb ($(stat -c %s "$D1/nodetune-slurm_${V1}_$ARCH.deb") bytes) in $took s"

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
# this sandbox is; chroot isolation runs the RUN steps anywhere.  The base:
# $NODETUNE_BASE_IMAGE or debian:12 when podman has one, else
# localhost/debian:12, made once by scripts/podman-debian-base.sh from
# Debian's archive (kept, like a download cache).  No container registry is
# asked: the test reaches only Debian's archive.
image_test() {
	base=""
	for b in ${NODETUNE_BASE_IMAGE:-} docker.io/library/debian:12 localhost/debian:12; do
		podman image exists "$b" 2>/dev/null && { base=$b; break; }
	done
	if [ -z "$base" ]; then
		if command -v debootstrap >/dev/null && scripts/podman-debian-base.sh >"$T_TMP/base" 2>&1; then
			echo "# $(tail -1 "$T_TMP/base")"
			base=localhost/debian:12
		else
			t_skip_host "no Debian 12 base image: podman has none, and scripts/podman-debian-base.sh (debootstrap from Debian's archive) failed: $(tail -1 "$T_TMP/base" 2>/dev/null)"
			return
		fi
	fi
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

# the second version: its changelog bumped with dch, and its default
# policy changed, so that dpkg meets an admin's edit and a new conffile
mkdir -p "$T_TMP/src2"
tar -cf - --exclude=./build --exclude=./.git . | tar -C "$T_TMP/src2" -xf -
(cd "$T_TMP/src2" && DEBEMAIL="test@localhost" DEBFULLNAME="test_deb.sh" \
	dch -v "$V2" --distribution unstable "test_deb.sh: an upgrade" >/dev/null 2>&1 &&
	echo "# changed in $V2" >>policies/gpu-train.conf)
run make --no-print-directory -s -C "$T_TMP/src2" deb BUILD="$T_TMP/b2" INSTALL_DEPS=true
D2=$T_TMP/b2/deb
check "make deb of a copy with the version bumped by dch: nodetune_${V2}_$ARCH.deb (exit $RC)" -- \
	[ -f "$D2/nodetune_${V2}_$ARCH.deb" -a -f "$D2/nodetune-slurm_${V2}_$ARCH.deb" ]

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
SPANK=/usr/lib/$MULTIARCH/slurm-wlm/nodetune_spank.so
check "nodetune-slurm: $SPANK, running /usr/bin/nodetune" -- sh -c "[ -f '$SPANK' ] && grep -qaF /usr/bin/nodetune '$SPANK'"
check "nodetune-slurm depends on the Slurm its plugin was built for" -- sh -c \
	"dpkg-query -W -f='\${Depends}' nodetune-slurm | grep -q 'slurm-wlm-basic-plugins (>= [0-9]*\.[0-9]*), slurm-wlm-basic-plugins (<< '"

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
# what the daemon leaves (its journal and the fleet's last policy), made
# here by hand: no daemon runs in this test
mkdir -p /var/lib/nodetune && echo '{}' >/var/lib/nodetune/journal.json
echo "# the admin's own" >/etc/nodetune/site.conf
dpkg -L nodetune nodetune-slurm >"$T_TMP/files"
run $APT purge nodetune-slurm nodetune
check "apt-get purge of both packages (exit $RC)" -- sh -c \
	"[ $RC -eq 0 ] && ! dpkg-query -W -f='\${db:Status-Abbrev}' nodetune nodetune-slurm 2>/dev/null | grep -q '^.[^n]'"
left=""
while IFS= read -r f; do
	[ -e "$f" ] && [ ! -d "$f" ] && left="$left $f"
done <"$T_TMP/files"
for d in /usr/share/nodetune /usr/share/doc/nodetune /usr/share/doc/nodetune-slurm /var/lib/nodetune \
	/etc/nodetune/policy.conf /etc/nodetune/policy.conf.dpkg-dist /lib/systemd/system/nodetune.service; do
	[ -e "$d" ] && left="$left $d"
done
check "purge leaves no file of the packages, no state, no conffile${left:+ (left:$left)}" -- [ -z "$left" ]
check "purge keeps what the admin added in /etc/nodetune (Debian policy), and only that" -- \
	sh -c '[ "$(ls -A /etc/nodetune)" = site.conf ]'
t_done
