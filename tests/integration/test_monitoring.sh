#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# What Prometheus and Grafana are given (deploy/prometheus, deploy/grafana):
# `promtool check rules` on the alert rules; `promtool test rules` on their
# tests, where every alert fires on a faulty host and stays silent on a
# healthy one (each alert has both); each rule has for:, a severity and a
# summary and description; and every metric name the dashboard and the rules
# use (tests/tools/promql-names.py, with the labels of their selectors) is
# one a real daemon exports: scraped from a daemon in fleet mode on a
# sysroot tree (a real etcd; a setting drifted by hand and contested at its
# first drift, --flap 1/600, so the per-setting series exist) and, as root,
# from one on this host with the baseline policy (which changes nothing), for
# the observer's counters, which a sysroot tree does not have.
. "$(dirname "$0")/lib.sh"
t_plan 7

RULES=deploy/prometheus/nodetune-rules.yml
RTEST=deploy/prometheus/nodetune-rules.test.yml
DASH=deploy/grafana/nodetune.json
HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
PY=/usr/bin/python3

if ! "$PY" -c 'import yaml' 2>/dev/null; then
	t_need python3-yaml "python3-yaml is not installed (scripts/install-deps.sh deploy): the rules cannot be read"
	t_rest
fi

if ! command -v promtool >/dev/null; then
	t_need promtool "promtool is not installed (scripts/install-deps.sh daemon)"
else
	run promtool check rules "$RULES"
	check "promtool check rules $RULES: $(grep -o '[0-9]* rules found' "$OUT")" -- [ "$RC" -eq 0 ]
	run promtool test rules "$RTEST"
	if [ "$RC" -eq 0 ]; then
		t_ok "promtool test rules $RTEST: SUCCESS"
	else
		t_not_ok "promtool test rules $RTEST: exit $RC"; cat "$OUT" "$ERR" | head -30 | sed 's/^/#   /'
	fi
fi

# every alert: for:, severity, summary, description; a firing and a silent
# case in the tests
run "$PY" - "$RULES" "$RTEST" <<'EOF_PY'
import sys, yaml
rules = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"] if "alert" in r]
tests = [t for g in yaml.safe_load(open(sys.argv[2]))["tests"] for t in g.get("alert_rule_test", [])]
bad = []
for r in rules:
    a = r["alert"]
    if "for" not in r or r.get("labels", {}).get("severity") not in ("critical", "warning", "info") or \
       not {"summary", "description"} <= set(r.get("annotations", {})):
        bad.append(a + ": for, severity, summary or description missing")
    cases = [t for t in tests if t["alertname"] == a]
    if not any(t.get("exp_alerts") for t in cases) or not any(not t.get("exp_alerts") for t in cases):
        bad.append(a + ": not tested both firing and silent")
print(len(rules), "alerts")
for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad or not rules else 0)
EOF_PY
if [ "$RC" -eq 0 ]; then
	t_ok "$RULES: $(cat "$OUT"), each with for:, severity, summary and description, each tested firing and silent"
else
	t_not_ok "$RULES: exit $RC"; sed 's/^/#   /' "$ERR" | head -10
fi
check "$DASH: Grafana 10's schema version, a Prometheus datasource variable every panel uses" -- \
	jq -e '.schemaVersion >= 36 and
	       ([.templating.list[] | select(.type == "datasource" and .query == "prometheus" and .name == "datasource")] | length == 1) and
	       ([.panels[] | select(.type != "row") | .datasource.uid] | unique == ["${datasource}"]) and
	       ([.panels[] | select(.type != "row") | .targets[].datasource.uid] | unique == ["${datasource}"])' "$DASH"

# ---- the names against a real daemon's /metrics -------------------------
# (the daemon binds port 0 and logs the port it got: nothing is fixed, 9477 is never used)
"$PY" tests/tools/promql-names.py "$DASH" "$RULES" >"$T_TMP/used" 2>"$T_TMP/used.err" ||
	t_not_ok "promql-names.py: no name read from $DASH and $RULES ($(head -1 "$T_TMP/used.err"))"
# start NAME ARGS...: a daemon in the background, its log in $T_TMP/NAME.log
start() {
	name=$1
	shift
	"$NODETUNE" daemon --log-format=syslog --interval 1 --metrics 127.0.0.1:0 --socket "$T_TMP/$name.sock" \
		--state-dir "$T_TMP/$name.st" "$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.log" &
	t_defer "stop_pid $!"
}
# stop_pid PID: SIGTERM, and wait until it is gone or a zombie (the deferred
# clean-up runs in a subshell, which cannot wait for it); SIGKILL after 20 s
stop_pid() {
	kill "$1" 2>/dev/null
	wait_until 20 sh -c "[ ! -e /proc/$1 ] || [ \"\$(cut -d' ' -f3 /proc/$1/stat 2>/dev/null)\" = Z ]" || kill -9 "$1" 2>/dev/null
}
port() { sed -n 's/^<5>nodetune: daemon: metrics: .*(port \([0-9]*\))$/\1/p' "$T_TMP/$1.log"; }
ready() { grep -q '^<5>nodetune: daemon: ready: ' "$T_TMP/$1.log"; }
# scrape NAME: its /metrics into $T_TMP/NAME.prom
scrape() { curl -sf --max-time 5 "http://127.0.0.1:$(port "$1")/metrics" >"$T_TMP/$1.prom"; }
: >"$T_TMP/exempt"

# the fleet daemon on a tree: swappiness drifted by hand, contested at once
R=$T_TMP/root
cp -r tests/fixtures/sysroot/gpu-host-untuned "$R" && mkdir -p "$R/proc/sys/vm" && echo 60 >"$R/proc/sys/vm/swappiness"
printf '[sysctl]\nvm.swappiness = 10\n' >"$T_TMP/p.conf" && chmod 600 "$T_TMP/p.conf"
fleet=""
if [ -x "${ETCD:-/usr/bin/etcd}" ] && command -v etcdctl >/dev/null; then
	EP=$(tests/tools/etcd-cluster.sh start "$T_TMP/etcd") || t_not_ok "the etcd cluster started"
	t_defer "tests/tools/etcd-cluster.sh stop '$T_TMP/etcd'"
	mkdir -m 700 "$T_TMP/ctl" && mkdir -m 755 "$T_TMP/keys.d" &&
		"$NODETUNE" fleet keygen --out "$T_TMP/ctl" --name ctl >/dev/null && cp "$T_TMP/ctl/ctl.pub" "$T_TMP/keys.d/" ||
		t_not_ok "fleet keygen"
	fleet="--endpoints $EP --host h1 --fleet-keys $T_TMP/keys.d"
else
	t_need etcd "etcd or etcdctl is not installed (scripts/install-deps.sh fleet): the fleet's metrics are not checked"
	grep '^nodetune_fleet_' "$T_TMP/used" >>"$T_TMP/exempt"
fi
# shellcheck disable=SC2086 # $fleet: options, split
start tree --policy "$T_TMP/p.conf" --topology "$HGX" --sysroot "$R" --flap 1/600 $fleet
if wait_until 30 ready tree; then
	echo 30 >"$R/proc/sys/vm/swappiness"
	wait_until 20 sh -c "curl -sf --max-time 5 http://127.0.0.1:$(port tree)/metrics | grep -q '^nodetune_knob_contested{path=\"/proc/sys/vm/swappiness\"} 1'" ||
		t_not_ok "the tree's daemon: swappiness not contested within 20 s"
	scrape tree || t_not_ok "the tree's daemon: GET /metrics failed"
else
	t_not_ok "the tree's daemon did not start: $(tail -n 1 "$T_TMP/tree.log")"
fi

# the observer's counters: a daemon on this host, with the baseline policy
OBS='^nodetune_(vmstat_|tlb_|pressure_|device_interrupts|memory_cgroups)'
if [ "$(id -u)" -ne 0 ]; then
	t_skips 2 t_skip_host root "not root: the observer's counters (vmstat, TLB, PSI) are not checked"
	grep -E "$OBS" "$T_TMP/used" >>"$T_TMP/exempt"
else
	start host --policy policies/baseline.conf
	if wait_until 30 ready host && wait_until 20 sh -c "curl -sf --max-time 5 http://127.0.0.1:$(port host)/metrics | grep -q '^nodetune_vmstat_'"; then
		scrape host || t_not_ok "the host's daemon: GET /metrics failed"
	else
		t_not_ok "the host's daemon: no vmstat counters within 20 s: $(tail -n 1 "$T_TMP/host.log")"
	fi
	if ! grep -q '^nodetune_tlb_shootdowns_total ' "$T_TMP/host.prom" 2>/dev/null; then
		t_skip_host tlb "this host cannot count TLB shootdowns (tlb.h): nodetune_tlb_shootdowns_total not checked"
		echo "nodetune_tlb_shootdowns_total -" >>"$T_TMP/exempt"
	else
		t_ok "the host's daemon exports nodetune_tlb_shootdowns_total"
	fi
	if ! grep -q '^nodetune_pressure_' "$T_TMP/host.prom" 2>/dev/null; then
		t_skip_host psi "no PSI on this host: nodetune_pressure_stalled_seconds_total not checked"
		echo "nodetune_pressure_stalled_seconds_total -" >>"$T_TMP/exempt"
	else
		t_ok "the host's daemon exports nodetune_pressure_*"
	fi
fi

# NAME LABELS: the family NAME is declared (# TYPE) in a scrape, and a
# sample of it carries each of LABELS
cat "$T_TMP"/*.prom >"$T_TMP/all.prom" 2>/dev/null
missing=""
n=0
while read -r name labels; do
	n=$((n + 1))
	grep -qxF "$name $labels" "$T_TMP/exempt" && continue
	if ! grep -q "^# TYPE $name " "$T_TMP/all.prom"; then
		missing="$missing $name"
		continue
	fi
	[ "$labels" = - ] && continue
	for l in $(echo "$labels" | tr ',' ' '); do
		grep -q "^$name{\(.*,\)\?$l=" "$T_TMP/all.prom" || missing="$missing $name{$l}"
	done
done <"$T_TMP/used"
if [ "$n" -gt 0 ] && [ -z "$missing" ]; then
	t_ok "the $n names (and selector labels) $DASH and $RULES use are all on a real daemon's /metrics ($(grep -c '^# TYPE' "$T_TMP/all.prom") families scraped; $(wc -l <"$T_TMP/exempt") not checkable here)"
else
	t_not_ok "used by $DASH or $RULES, and no daemon exports it:${missing:- (no name read)}"
fi
t_done
