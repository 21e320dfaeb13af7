#!/bin/sh
# SPDX-License-Identifier: MIT
# host: build
# deploy/: the systemd unit as `make install` writes it (systemd-analyze
# verify and security), the reasons for the protections it leaves off, the
# Kubernetes manifests (schema and the fields that matter), and what
# `make install` puts in a DESTDIR.  Files only: no daemon is started.
. "$(dirname "$0")/lib.sh"
t_plan 22

BUILD=$(cd "$(dirname "$NODETUNE")" && pwd)
MAKE_ARGS="BUILD=$BUILD${SANITIZED:+ SAN=1}"
MAX_EXPOSURE=3.5

# ---- make install into a DESTDIR ---------------------------------------
D=$T_TMP/root
# shellcheck disable=SC2086
run make --no-print-directory $MAKE_ARGS install DESTDIR="$D"
UNIT=$D/usr/local/lib/systemd/system/nodetune.service
POL=$D/etc/nodetune/policy.conf
if [ "$RC" -ne 0 ]; then
	t_not_ok "make install DESTDIR=...: exit $RC"; tail -5 "$ERR" | sed 's/^/#   /'
	t_done
fi
check "install: the unit at PREFIX/lib/systemd/system, mode 0644" -- \
	sh -c "[ \"\$(stat -c %a '$UNIT')\" = 644 ]"
exec_bin=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$UNIT")
check "install: ExecStart is the installed binary ($exec_bin), present in DESTDIR" -- \
	sh -c "[ '$exec_bin' = /usr/local/bin/nodetune ] && [ -x '$D$exec_bin' ]"
check "install: no @PLACEHOLDER@ left in the unit" -- sh -c "! grep -q '@[A-Z]*@' '$UNIT'"
check "install: /etc/nodetune/policy.conf is policies/gpu-train.conf, mode 0644" -- \
	sh -c "cmp -s policies/gpu-train.conf '$POL' && [ \"\$(stat -c %a '$POL')\" = 644 ]"
check "install: the man pages in PREFIX/share/man, the bash completion in PREFIX/share/bash-completion" -- sh -c \
	"for p in man1/nodetune-harness.1 man5/nodetune.conf.5 man8/nodetune.8 man8/nodetune-fleet.8 man8/nodetune_spank.8; do
		[ -f '$D/usr/local/share/man/'\$p ] || exit 1; done
	 grep -q '^complete -F _nodetune nodetune' '$D/usr/local/share/bash-completion/completions/nodetune'"
if [ "$(id -u)" -eq 0 ]; then
	check "install as root: the policy is root-owned" -- [ "$(stat -c %U:%G "$POL")" = root:root ]
else
	t_skip_host root "install as root: not root"
fi
echo "# edited by the admin" >>"$POL"
cp "$POL" "$T_TMP/edited.conf"
# shellcheck disable=SC2086
run make --no-print-directory $MAKE_ARGS install DESTDIR="$D"
check "a second install keeps the edited policy (exit $RC)" -- sh -c \
	"[ $RC -eq 0 ] && cmp -s '$T_TMP/edited.conf' '$POL' && grep -q 'keeping .*policy.conf' '$OUT'"
D2=$T_TMP/root-usr
# shellcheck disable=SC2086
run make --no-print-directory $MAKE_ARGS install DESTDIR="$D2" PREFIX=/usr
check "PREFIX=/usr: the unit in /usr/lib/systemd/system, ExecStart=/usr/bin/nodetune" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^ExecStart=/usr/bin/nodetune daemon ' '$D2/usr/lib/systemd/system/nodetune.service'"

# the SPANK plugin, when this build has one (never under SAN): in
# PREFIX/lib/slurm, or Debian's PluginDir for PREFIX=/usr, its default
# nodetune= the installed binary
if [ -e "$BUILD/nodetune_spank.so" ]; then
	SPANK_DEB=$D2/usr/lib/$(${CC:-cc} -print-multiarch)/slurm-wlm/nodetune_spank.so
	check "install: the plugin at PREFIX/lib/slurm/nodetune_spank.so, nodetune=/usr/local/bin/nodetune by default" -- \
		sh -c "[ -x '$D/usr/local/lib/slurm/nodetune_spank.so' ] && grep -qaF /usr/local/bin/nodetune '$D/usr/local/lib/slurm/nodetune_spank.so'"
	check "PREFIX=/usr: the plugin in Debian's PluginDir (${SPANK_DEB#"$D2"}), nodetune=/usr/bin/nodetune" -- \
		sh -c "[ -x '$SPANK_DEB' ] && grep -qaF /usr/bin/nodetune '$SPANK_DEB' && ! grep -qaF /usr/local/bin/nodetune '$SPANK_DEB'"
	# shellcheck disable=SC2086
	make --no-print-directory -s $MAKE_ARGS all >/dev/null # the build's plugin back to the default PREFIX
else
	# under the sanitizers no plugin is built, by design (Makefile: PLUGIN)
	if [ -n "${SANITIZED:-}" ]; then
		t_skips 2 t_skip_host plain "install: no SPANK plugin in a sanitized build (SAN=1 builds none)"
	else
		t_skips 2 t_need slurm-dev "install: no SPANK plugin in this build (no <slurm/spank.h>: scripts/install-deps.sh slurm)"
	fi
fi

# ---- systemd-analyze verify ----------------------------------------------
# systemd is not PID 1 here, and `verify --root=` would need a whole unit
# tree and /bin/kill inside the root; instead the installed unit is checked
# with its ExecStart pointed at the binary in the DESTDIR (verify checks it
# is executable).  verify exits 0 on unknown keys and bad values too, so
# any output is a failure.
V=$T_TMP/verify/nodetune.service
mkdir -p "$T_TMP/verify"
sed "s|^ExecStart=$exec_bin|ExecStart=$D$exec_bin|" "$UNIT" >"$V"
if command -v systemd-analyze >/dev/null; then
	# its Documentation=man:... pages are looked up with man(1): the ones
	# make install put in the DESTDIR
	MANPATH=$D/usr/local/share/man systemd-analyze verify "$V" >"$T_TMP/verify.out" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && [ ! -s "$T_TMP/verify.out" ]; then
		t_ok "systemd-analyze verify of the installed unit: exit 0, no output"
	else
		t_not_ok "systemd-analyze verify of the installed unit: exit $rc"
		sed 's/^/#   /' "$T_TMP/verify.out"
	fi
	# the check can fail: a unit with an unknown key and a bad value
	sed 's/^Restart=on-failure$/&\nRestartt=always\nProtectSystem=bogus/' "$V" >"$T_TMP/verify/bad.service"
	MANPATH=$D/usr/local/share/man systemd-analyze verify "$T_TMP/verify/bad.service" >"$T_TMP/verify.bad" 2>&1
	vrc=$?
	# it ran (exit 0: an unknown key and a bad value are warnings to
	# systemd-analyze; 1 would be an error it found), and named both
	check "verify reports a misspelt key and a bad value in a spoilt copy (exit $vrc)" -- sh -c \
		"[ $vrc -le 1 ] && grep -q \"Unknown key 'Restartt'\" '$T_TMP/verify.bad' && grep -q 'bogus' '$T_TMP/verify.bad'"
	# the drop-in the unit documents for fleet mode's etcd endpoints (its
	# comment lines from "#   [Service]" on), as systemd merges it: valid
	sed -n '/^#   \[Service\]$/,/^#   IPAddressAllow=/s/^#   //p' "$V" >"$T_TMP/verify/dropin"
	cat "$V" "$T_TMP/verify/dropin" >"$T_TMP/verify/fleet.service"
	MANPATH=$D/usr/local/share/man systemd-analyze verify "$T_TMP/verify/fleet.service" >"$T_TMP/verify.fleet" 2>&1
	frc=$?
	check "the unit documents an IPAddressAllow= drop-in for etcd ($(tr '\n' ' ' <"$T_TMP/verify/dropin")), valid for verify (exit $frc)" -- \
		sh -c "[ $frc -eq 0 ] && grep -qx 'IPAddressAllow=[0-9. /]*' '$T_TMP/verify/dropin' && [ ! -s '$T_TMP/verify.fleet' ]"

	# ---- systemd-analyze security ----------------------------------------
	systemd-analyze security --offline=true --no-pager "$V" >"$T_TMP/security.out" 2>&1
	exposure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$T_TMP/security.out")
	if [ -n "$exposure" ] && awk -v e="$exposure" -v m=$MAX_EXPOSURE 'BEGIN { exit !(e <= m) }'; then
		t_ok "systemd-analyze security --offline=true: exposure $exposure <= $MAX_EXPOSURE"
	else
		t_not_ok "systemd-analyze security --offline=true: exposure '$exposure', want <= $MAX_EXPOSURE"
		grep -E '✗|Overall' "$T_TMP/security.out" | sed 's/^/#   /'
	fi
else
	t_need systemd-analyze "systemd-analyze not installed (scripts/install-deps.sh deploy)"
fi

# ---- every protection left off says why ---------------------------------
# Two rules.  (1) A directive that turns a protection off (=no, =false,
# ProtectProc=default, ProcSubset=all, an empty AmbientCapabilities= is not
# one) sits right under a comment line.  (2) Every item systemd-analyze
# security marks as exposed (✗) is named in a comment of the unit: its
# directive's comment block, or, for "X=~Y" items, Y (a capability, a
# system-call group, an address family, a namespace) in any comment;
# for "User=/DynamicUser=" one of the names.
python3 - "$UNIT" "$T_TMP/security.out" >"$T_TMP/comments.out" 2>&1 <<'EOF'
import re, sys
unit = open(sys.argv[1]).read().splitlines()
try:
    sec = open(sys.argv[2]).read().splitlines()
except OSError:
    sec = []
bad = []
comments = " ".join(l for l in unit if l.lstrip().startswith("#"))
explained = set()
OFF = re.compile(r"^(\w+)=(no|false|default|all)$")
for i, line in enumerate(unit):
    m = re.match(r"^(\w+)=", line)
    if not m:
        continue
    above = unit[i - 1].lstrip().startswith("#") if i else False
    if above:
        explained.add(m.group(1))
    if OFF.match(line) and not above:
        bad.append("no comment above: " + line)
items = [re.match(r"^✗ (\S+)", l.strip()).group(1) for l in sec if re.match(r"^✗ \S+", l.strip())]
for item in items:
    key, _, neg = item.partition("=")
    if neg.startswith("~"):
        rx = re.escape(neg[1:]).replace(r"\*", r"\w*").replace(r"\(", "(").replace(r"\)", ")").replace(r"\|", "|")
        if not re.search(r"(?<![\w@])" + rx + r"(?!\w)", comments):
            bad.append(f"{item}: {neg[1:]} named in no comment")
    else:
        names = [n.rstrip("=") for n in item.split("/")]
        if not any(n in explained or n + "=" in comments for n in names):
            bad.append(f"{item}: no comment says why")
print(f"{len(items)} exposed items from systemd-analyze security, each explained" if not bad else "\n".join(bad))
sys.exit(1 if bad else 0)
EOF
if [ $? -eq 0 ]; then
	t_ok "every protection left off carries a comment ($(cat "$T_TMP/comments.out"))"
else
	t_not_ok "protections left off without a reason in a comment:"
	sed 's/^/#   /' "$T_TMP/comments.out"
fi

# ---- Kubernetes manifests: schema ------------------------------------------
# kubernetes-models (npm, the versions pinned by tests/tools/k8s-validate/
# package-lock.json) validates each object against the schema generated from
# the Kubernetes OpenAPI spec; installed once under the build directory.
K8S=deploy/k8s
python3 -c '
import json, sys, yaml
docs = [d for f in sorted(sys.argv[1:]) for d in yaml.safe_load_all(open(f)) if d]
json.dump(docs, sys.stdout)' $K8S/*.yaml >"$T_TMP/k8s.json" 2>"$T_TMP/k8s.err"
if [ -s "$T_TMP/k8s.json" ]; then
	t_ok "deploy/k8s/*.yaml parse as YAML"
else
	t_not_ok "deploy/k8s/*.yaml do not parse:"; sed 's/^/#   /' "$T_TMP/k8s.err"
	t_done
fi
KV=$BUILD/k8s-validate
if ! cmp -s tests/tools/k8s-validate/package-lock.json "$KV/package-lock.json" || [ ! -d "$KV/node_modules/kubernetes-models" ]; then
	rm -rf "$KV" && mkdir -p "$KV"
	cp tests/tools/k8s-validate/package.json tests/tools/k8s-validate/package-lock.json "$KV/"
	(cd "$KV" && npm ci --no-audit --no-fund --loglevel=error) >"$T_TMP/npm.out" 2>&1
fi
if command -v node >/dev/null && [ -d "$KV/node_modules/kubernetes-models" ]; then
	NODE_PATH=$KV/node_modules node tests/tools/k8s-validate/validate.js <"$T_TMP/k8s.json" >"$T_TMP/valid.out" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		t_ok "kubernetes-models schema check: $(tr '\n' ' ' <"$T_TMP/valid.out")"
	else
		t_not_ok "kubernetes-models schema check: exit $rc"; sed 's/^/#   /' "$T_TMP/valid.out"
	fi
	# the check can fail: a port that is not a number
	python3 -c '
import json, sys
docs = json.load(open(sys.argv[1]))
ds = [d for d in docs if d["kind"] == "DaemonSet"][0]
ds["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "9477"
json.dump([ds], sys.stdout)' "$T_TMP/k8s.json" | NODE_PATH=$KV/node_modules node tests/tools/k8s-validate/validate.js >"$T_TMP/invalid.out" 2>&1
	irc=$?
	check "the schema check refuses a DaemonSet whose containerPort is a string (exit $irc)" -- sh -c \
		"[ $irc -ne 0 ] && grep -q 'containerPort must be integer' '$T_TMP/invalid.out'"
else
	t_not_ok "kubernetes-models could not be installed with npm (scripts/install-deps.sh deploy):"
	sed 's/^/#   /' "$T_TMP/npm.out" | tail -5
fi

# ---- Kubernetes manifests: the fields that matter ----------------------------
cat >"$T_TMP/fields.py" <<'EOF'
import json, sys
docs = json.load(open(sys.argv[1]))
policy = open(sys.argv[2]).read()
by = {d["kind"]: d for d in docs}
fails = []
def want(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)

want(sorted(by) == ["ConfigMap", "DaemonSet", "Namespace", "NetworkPolicy", "ServiceAccount"], "one Namespace, ServiceAccount, ConfigMap, DaemonSet, NetworkPolicy")
want(by["DaemonSet"]["apiVersion"] == "apps/v1", "DaemonSet is apps/v1")
ns = by["Namespace"]["metadata"]["name"]
want(all(d["metadata"].get("namespace") == ns for d in docs if d["kind"] != "Namespace"), "every object in namespace " + ns)
ds = by["DaemonSet"]["spec"]
tpl = ds["template"]
sel = ds["selector"]["matchLabels"]
want(all(tpl["metadata"]["labels"].get(k) == v for k, v in sel.items()), "the selector matches the template's labels")
pod = tpl["spec"]
want(pod.get("serviceAccountName") == by["ServiceAccount"]["metadata"]["name"], "the pod runs as the ServiceAccount")
want(pod.get("hostPID") is True, "hostPID (it names host processes)")
want(pod.get("nodeSelector", {}).get("nvidia.com/gpu.present") == "true", "nodeSelector nvidia.com/gpu.present=true")
want(any(t.get("key") == "nvidia.com/gpu" and t.get("effect") == "NoSchedule" for t in pod.get("tolerations", [])), "tolerates nvidia.com/gpu:NoSchedule")
want(ds.get("updateStrategy", {}).get("type") == "RollingUpdate" and "maxUnavailable" in ds["updateStrategy"].get("rollingUpdate", {}), "RollingUpdate with maxUnavailable")
want(isinstance(pod.get("terminationGracePeriodSeconds"), int), "terminationGracePeriodSeconds set")
ann = tpl["metadata"].get("annotations", {})
c = pod["containers"][0]
ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
want(ports.get("metrics") == 9477, "containerPort 9477 named metrics")
want(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == str(ports.get("metrics")), "prometheus scrape annotations on the metrics port")
for probe in ("livenessProbe", "readinessProbe"):
    g = c.get(probe, {}).get("httpGet", {})
    want(g.get("path") == "/metrics" and g.get("port") in ports, probe + " is httpGet /metrics on a named container port")
args = c.get("args", [])
def arg(flag):
    return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else None
want(args[:1] == ["daemon"], "the container runs `nodetune daemon`")
want(arg("--metrics") is not None and arg("--metrics").endswith(":" + str(ports.get("metrics"))), "--metrics listens on the metrics port")
res = c.get("resources", {})
want("memory" in res.get("limits", {}) and "memory" in res.get("requests", {}) and "cpu" in res.get("requests", {}), "resources: requests and a memory limit")
sc = c.get("securityContext", {})
caps = sc.get("capabilities", {})
want(sc.get("privileged") is True or (caps.get("drop") == ["ALL"] and caps.get("add")), "privileged, or ALL dropped and named capabilities added")
mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
vols = {v["name"]: v for v in pod.get("volumes", [])}
want(all(m["name"] in vols for m in mounts.values()), "every volumeMount names a volume")
def host(path):
    return [p for p, m in mounts.items() if vols.get(m["name"], {}).get("hostPath", {}).get("path") == path]
root = arg("--sysroot")
want(root is not None, "--sysroot given")
if root:
    want(host("/") == [root] and mounts[root].get("readOnly") is True, "host / read-only at the --sysroot " + root)
    for p in ("/sys", "/proc"):
        want(host(p) == [root + p] and not mounts[root + p].get("readOnly"), f"host {p} read-write at {root}{p}")
for p, flag in (("/var/lib/nodetune", "--state-dir"), ("/run/nodetune", None)):
    want(host(p) == [p], f"host {p} mounted at {p}")
    if flag:
        want(arg(flag) == p, f"{flag} {p}")
want(arg("--socket") is not None and arg("--socket").startswith("/run/nodetune/"), "--socket below /run/nodetune")
cm = by["ConfigMap"]
pol_mount = [m for m in mounts.values() if vols[m["name"]].get("configMap", {}).get("name") == cm["metadata"]["name"]]
want(len(pol_mount) == 1, "the ConfigMap is mounted once")
if pol_mount:
    m, v = pol_mount[0], vols[pol_mount[0]["name"]]["configMap"]
    items = {i["key"]: i["path"] for i in v.get("items", [])}
    path = m["mountPath"] + "/" + items.get("policy.conf", "policy.conf") if "subPath" not in m else m["mountPath"]
    want(path == "/etc/nodetune/policy.conf", "ConfigMap key policy.conf mounted at /etc/nodetune/policy.conf")
    want(arg("--policy") == "/etc/nodetune/policy.conf", "--policy /etc/nodetune/policy.conf")
    want((v.get("defaultMode", 0o644) & 0o022) == 0, "the policy file is not group/other-writable (the daemon refuses it)")
want(cm["data"].get("policy.conf") == policy, "the ConfigMap's policy.conf equals policies/gpu-train.conf")
# the NetworkPolicy: the daemon's pods, ingress from the monitoring
# namespace to the metrics port only, no egress
npo = by["NetworkPolicy"]["spec"]
npsel = npo.get("podSelector", {}).get("matchLabels", {})
want(npsel and all(tpl["metadata"]["labels"].get(k) == v for k, v in npsel.items()) and not npo["podSelector"].get("matchExpressions"), "the NetworkPolicy selects the daemon's pods")
want(sorted(npo.get("policyTypes", [])) == ["Egress", "Ingress"], "the NetworkPolicy governs Ingress and Egress")
ing = npo.get("ingress", [])
want(len(ing) == 1, "one ingress rule")
if ing:
    want(ing[0].get("from") == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}], "ingress from the monitoring namespace only (no pod selector, no ipBlock)")
    want([(p.get("protocol", "TCP"), p.get("port")) for p in ing[0].get("ports", [])] in ([("TCP", ports.get("metrics"))], [("TCP", "metrics")]), "ingress to the metrics port (TCP 9477) only")
want(npo.get("egress", []) == [], "no egress allowed (the daemon calls nothing)")
sys.exit(1 if fails else 0)
EOF
if python3 "$T_TMP/fields.py" "$T_TMP/k8s.json" policies/gpu-train.conf >"$T_TMP/fields.out" 2>&1; then
	t_ok "k8s fields: $(grep -c '^ok' "$T_TMP/fields.out") checks (selector, probes, ports, hostPath mounts, policy ConfigMap, NetworkPolicy)"
else
	t_not_ok "k8s fields:"; grep -v '^ok' "$T_TMP/fields.out" | sed 's/^/#   /'
fi
# the checks can fail: a NetworkPolicy that lets every namespace in, and one
# that opens another port
for spoil in 'ing[0]["from"][0]["namespaceSelector"] = {}' 'ing[0]["ports"].append({"port": 22})'; do
	python3 -c '
import json, sys
docs = json.load(open(sys.argv[1]))
ing = [d for d in docs if d["kind"] == "NetworkPolicy"][0]["spec"]["ingress"]
exec(sys.argv[2])
json.dump(docs, sys.stdout)' "$T_TMP/k8s.json" "$spoil" >"$T_TMP/spoilt.json"
	python3 "$T_TMP/fields.py" "$T_TMP/spoilt.json" policies/gpu-train.conf >"$T_TMP/spoilt.out" 2>&1
	check "the field checks refuse a NetworkPolicy spoilt by $spoil: $(grep '^FAIL' "$T_TMP/spoilt.out" | tr '\n' ' ')" -- \
		sh -c "[ \$(grep -c '^FAIL' '$T_TMP/spoilt.out') -eq 1 ] && grep -q '^FAIL ingress' '$T_TMP/spoilt.out'"
done

# ---- the image: deploy/k8s/Containerfile against the DaemonSet ---------------
# (test_deb.sh builds the .deb it installs, and the image where podman and a
# Debian 12 base image are here.)  Its entry point is the DaemonSet's
# command, a binary the nodetune package ships; the DaemonSet's args are the
# daemon verb and options of its table (`nodetune --dump-options`); the
# image tag is the packages' version (debian/changelog) and the binary's;
# its COPY glob takes nodetune_VERSION_ARCH.deb and no other package.
"$NODETUNE" --dump-options >"$T_TMP/dump"
VERSION=$(dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null)
python3 - "$T_TMP/k8s.json" deploy/k8s/Containerfile "$T_TMP/dump" "$VERSION" \
	"$("$NODETUNE" --version | cut -d' ' -f2)" debian/nodetune.install >"$T_TMP/image.out" 2>&1 <<'EOF'
import fnmatch, json, re, sys
docs = json.load(open(sys.argv[1]))
cf = open(sys.argv[2]).read()
dump = [l.split("\t") for l in open(sys.argv[3]).read().splitlines()]
version, binver, installed = sys.argv[4], sys.argv[5], open(sys.argv[6]).read().split()
ds = [d for d in docs if d["kind"] == "DaemonSet"][0]
c = ds["spec"]["template"]["spec"]["containers"][0]
fails = 0
def want(ok, what):
    global fails
    print(("ok " if ok else "FAIL ") + what)
    fails += not ok
entry = re.search(r'^ENTRYPOINT\s+(\[.*\])\s*$', cf, re.M)
entry = json.loads(entry.group(1)) if entry else None
want(entry == c.get("command"), f"the Containerfile's ENTRYPOINT {entry} is the DaemonSet's command {c.get('command')}")
want(bool(entry) and entry[0].lstrip("/") in installed, f"{entry and entry[0]} is a file of the nodetune package")
cmd = re.search(r'^CMD\s+(\[.*\])\s*$', cf, re.M)
cmd = json.loads(cmd.group(1)) if cmd else []
args = c.get("args", [])
want(args[:1] == ["daemon"] and cmd[:1] == ["daemon"], "the DaemonSet's args and the image's CMD run the daemon verb")
daemon = {"--" + r[1] for r in dump if r[0] == "daemon"} | {"-" + r[2] for r in dump if r[0] == "daemon" and r[2] != "-"}
for a in args[1:] + cmd[1:]:
    if a.startswith("-"):
        want(a in daemon, f"{a} is an option of the daemon's table")
tag = c["image"].rpartition(":")[2]
want(bool(version) and tag == version == binver,
     f"the image tag {tag}, debian/changelog {version} and nodetune --version {binver} agree")
copy = re.search(r'^COPY\s+(\S+)\s', cf, re.M)
glob = copy.group(1) if copy else ""
for name, match in ((f"nodetune_{version}_amd64.deb", True), (f"nodetune-slurm_{version}_amd64.deb", False),
                    (f"nodetune-dbgsym_{version}_amd64.deb", False)):
    want(fnmatch.fnmatch(name, glob) == match, f"COPY {glob} {'takes' if match else 'leaves'} {name}")
sys.exit(1 if fails else 0)
EOF
if [ $? -eq 0 ]; then
	t_ok "Containerfile: $(grep -c '^ok' "$T_TMP/image.out") checks (entry point, daemon args from the table, image tag = version, the .deb it copies)"
else
	t_not_ok "Containerfile:"; grep -v '^ok' "$T_TMP/image.out" | sed 's/^/#   /'
fi

t_done
