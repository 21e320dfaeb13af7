#!/bin/sh
# SPDX-License-Identifier: MIT
# host: thp sysctl
# The daemon (DESIGN.md "Daemon"): real daemons on copied sysroot trees and,
# as root, on this host.  Drift corrected within two intervals, counted
# (status, metrics, log) and its other writer named (a sysctl.d file, a
# process holding the knob open); a knob flipped by another writer becomes
# contested and is left alone; kill -9 mid-apply, restart, revert restores
# the tree byte for byte; SIGTERM keeps the tuning (--revert-on-exit undoes
# it); SIGHUP with a broken policy keeps the old one, a good one takes
# effect; one daemon per state dir; bad input changes nothing; sd_notify
# READY=1 only after the first verify, STATUS=, WATCHDOG=1; a real
# Prometheus scrapes it and promtool accepts /metrics and the textfile; a
# hostile status-socket client does not stall the loop.
#
# Every wait polls for its condition (a 2-vCPU host shared with other work,
# slower still under ASan), and every port is chosen at run time.
. "$(dirname "$0")/lib.sh"
t_plan 63

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
UNTUNED=tests/fixtures/sysroot/gpu-host-untuned
IV=1                                    # --interval of the daemons below
SLOW=$T_SLOW                            # 4 under the sanitizers (lib.sh)
SW=proc/sys/vm/swappiness DEFRAG=sys/kernel/mm/transparent_hugepage/defrag
ENABLED=sys/kernel/mm/transparent_hugepage/enabled NB=proc/sys/kernel/numa_balancing

# ---- helpers ---------------------------------------------------------------

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# (wait_until SECONDS CMD...: lib.sh, scaled by SLOW)

# is FILE VALUE: the knob file holds VALUE (a THP file: VALUE bracketed or plain)
is() { v=$(cat "$1" 2>/dev/null) && { [ "$v" = "$2" ] || case $v in *"[$2]"*) true ;; *) false ;; esac; }; }

# mkroot DIR: the untuned tree plus vm.swappiness 60
mkroot() {
	cp -r "$UNTUNED" "$1" && mkdir -p "$1/proc/sys/vm" && echo 60 >"$1/$SW"
}

# the policy most daemons below keep (four knobs the tree has)
POLICY=$T_TMP/policy.conf
printf '[thp]\nenabled = madvise\ndefrag = defer+madvise\n[sched]\nnuma_balancing = 0\n[sysctl]\nvm.swappiness = 10\n' >"$POLICY"
chmod 0600 "$POLICY"

# start NAME ARGS...: `nodetune daemon ARGS` in the background, stderr to
# $T_TMP/NAME.log; DPID is its pid (killed at the end, whatever happens)
start() {
	name=$1
	shift
	"$NODETUNE" daemon --log-format=syslog "$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.log" &
	DPID=$!
	t_defer "kill -9 $DPID 2>/dev/null"
}
# ready NAME: the daemon said it is ready
ready() { grep -q '^<5>nodetune: daemon: ready: ' "$T_TMP/$1.log"; }
# stop_daemon PID: SIGTERM and wait (up to 20 s, then SIGKILL); DRC: its status
stop_daemon() {
	kill -TERM "$1" 2>/dev/null
	wait_until 20 sh -c "! kill -0 $1" || kill -9 "$1" 2>/dev/null
	wait "$1"
	DRC=$?
}
# port NAME: the /metrics port the daemon bound (it logs it)
port() { sed -n 's/^<5>nodetune: daemon: metrics: .*(port \([0-9]*\))$/\1/p' "$T_TMP/$1.log"; }
# metric PORT SAMPLE: the value of one sample (name{labels}) on /metrics
metric() { curl -sf --max-time 5 "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
# metric_is PORT SAMPLE VALUE
metric_is() { [ "$(metric "$1" "$2")" = "$3" ]; }
# drift PORT FILE FOUND WANT: FOUND written to FILE (a drift by hand), then
# waited for the daemon to put WANT back.  EL: the seconds it took; NV: the
# verifies the daemon ran meanwhile (nodetune_verify_total on PORT).
# "Within two intervals" is counted in the daemon's verifies, not in
# seconds: a loaded host delays its timer, not the order of its verifies.
# The verify under way at the write may miss it and the next corrects it:
# 2; the count is read within a 0.1 s poll and one curl of the correction,
# so a third counts only if that read takes a whole interval (1 s, about
# 10x the read).  Measured: 1 verify in each of 20 drifts, at most 1.0 s
# plain; at most 2 verifies and 1.21 s under ASan at load 25-30
# (bench/timing_margins.sh, drift_verifies and drift_s; RESULTS.md §14),
# so the bound of 2 (the "two intervals" every description says) is 1
# verify above the plain p99; under the sanitizers (SANITIZED: T_SLOW 4)
# it is 3, one above the ASan p99.  The deadline (20 s, x SLOW: 66x the
# ASan p99) only bounds a daemon that never corrects.
drift() {
	v0=$(metric "$1" nodetune_verify_total) t0=$(now)
	echo "$3" >"$2"
	wait_until 20 is "$2" "$4"
	EL=$(since "$t0")
	v1=$(metric "$1" nodetune_verify_total)
	# (awk: /metrics writes a value in the fewest digits, 150 as 1.5e+02)
	NV=$(awk -v a="$v0" -v b="$v1" 'BEGIN { print (a == "" || b == "") ? 999 : b - a }')
}
# corrected FILE WANT: FILE holds WANT again, the daemon within two verifies
# of the drift (drift, just before)
NV_MAX=2
[ "$T_SLOW" -eq 1 ] || NV_MAX=3
corrected() { is "$1" "$2" && [ "$NV" -le "$NV_MAX" ]; }
# status_json SOCK: nodetune status --json into $T_TMP/status.json
status_json() { "$NODETUNE" status --socket "$1" --json >"$T_TMP/status.json" 2>"$T_TMP/status.err"; }
# status_is SOCK JQ: status answers and the jq expression holds
status_is() { status_json "$1" && jq -e "$2" "$T_TMP/status.json" >/dev/null; }

# ---- drift: corrected, counted, the other writer named ---------------------
R1=$T_TMP/root1 S1=$T_TMP/d1.sock
mkroot "$R1"
h1=$(tree_hash "$R1")
mkdir "$T_TMP/textfile"
start d1 --policy "$POLICY" --topology $HGX --sysroot "$R1" --state-dir "$T_TMP/st1" --interval $IV \
	--metrics 127.0.0.1:0 --socket "$S1" --textfile-dir "$T_TMP/textfile"
D1=$DPID
wait_until 30 ready d1
P1=$(port d1)
check "daemon on a tree: ready, /metrics port logged ($P1), the policy applied (THP, numa_balancing, swappiness)" -- \
	sh -c "[ -n '$P1' ] && grep -q 'ready: 4 settings verified every 1 s' '$T_TMP/d1.log' &&
	       [ \"\$(cat '$R1/$DEFRAG')\" = defer+madvise ] && [ \"\$(cat '$R1/$ENABLED')\" = madvise ] &&
	       [ \"\$(cat '$R1/$NB')\" = 0 ] && [ \"\$(cat '$R1/$SW')\" = 10 ]"
run "$NODETUNE" policy active --socket "$S1" --state-dir "$T_TMP/st1" --json
check "policy active with a daemon: the daemon's policy (over its socket), its journal in the state dir" -- sh -c \
	"[ $RC -eq 0 ] && jq -e '.active == \"$POLICY\" and .daemon.policy == \"$POLICY\" and .journals[0].state_dir == \"$T_TMP/st1\"' '$OUT' >/dev/null"

# another writer: a sysctl.d file that sets the key
mkdir -p "$R1/etc/sysctl.d"
printf '# another tuner\nvm.swappiness = 33\n' >"$R1/etc/sysctl.d/99-other.conf"
drift "$P1" "$R1/$SW" 33 10
check "a drift by hand (swappiness 10 -> 33) is corrected within two intervals ($NV verifies, $EL s)" -- \
	corrected "$R1/$SW" 10
check "the drift is logged as 'drift: /PATH: want X, found Y' naming the sysctl.d file and its line" -- \
	grep -qxF '<5>nodetune: daemon: drift: /proc/sys/vm/swappiness: want 10, found 33; other writers: /etc/sysctl.d/99-other.conf:2 sets vm.swappiness = 33' "$T_TMP/d1.log"
check "the correction is logged as 'corrected: /PATH: 33 -> 10'" -- \
	grep -qxF '<5>nodetune: daemon: corrected: /proc/sys/vm/swappiness: 33 -> 10' "$T_TMP/d1.log"
wait_until 5 status_is "$S1" '.drift["/proc/sys/vm/swappiness"] == 1'
check "status --json counts it: drift 1, corrections 1, the writer in recent[]" -- status_is "$S1" \
	'.drift["/proc/sys/vm/swappiness"] == 1 and .corrections == 1 and (.recent[-1].writers | test("99-other.conf:2"))'
wait_until 5 metric_is "$P1" 'nodetune_drift_total{path="/proc/sys/vm/swappiness"}' 1
check "/metrics counts it: nodetune_drift_total{path=\"/proc/sys/vm/swappiness\"} 1, contested 0" -- sh -c \
	"[ \"\$(curl -sf http://127.0.0.1:$P1/metrics | grep '^nodetune_drift_total{path=\"/proc/sys/vm/swappiness\"} 1$')\" ] &&
	 curl -sf http://127.0.0.1:$P1/metrics | grep -qx 'nodetune_knob_contested{path=\"/proc/sys/vm/swappiness\"} 0'"
rm -r "$R1/etc"

# another writer: a process holding the knob open for writing (the scan
# reads the tree's proc/: pid 4242 with an fd link to the knob)
mkdir -p "$R1/proc/4242/fd"
echo other-tuner >"$R1/proc/4242/comm"
ln -s /proc/sys/vm/swappiness "$R1/proc/4242/fd/3"
drift "$P1" "$R1/$SW" 44 10
check "a second drift is corrected within two intervals too ($NV verifies, $EL s)" -- corrected "$R1/$SW" 10
check "the process holding the knob open is named: pid 4242 (other-tuner)" -- \
	grep -qxF '<5>nodetune: daemon: drift: /proc/sys/vm/swappiness: want 10, found 44; other writers: pid 4242 (other-tuner) has /proc/sys/vm/swappiness open for writing' "$T_TMP/d1.log"
wait_until 5 metric_is "$P1" 'nodetune_drift_total{path="/proc/sys/vm/swappiness"}' 2
check "the counters say 2 drifts (metrics and status)" -- sh -c \
	"[ \"\$(curl -sf http://127.0.0.1:$P1/metrics | awk '\$1 == \"nodetune_drift_total{path=\\\"/proc/sys/vm/swappiness\\\"}\" { print \$2 }')\" = 2 ] &&
	 '$NODETUNE' status --socket '$S1' --json | jq -e '.drift[\"/proc/sys/vm/swappiness\"] == 2' >/dev/null"
rm -r "$R1/proc/4242"
# status_text_ok: the text form, once a verify after the correction ran
status_text_ok() {
	run "$NODETUNE" status --socket "$S1"
	[ $RC -eq 0 ] && grep -q "^policy: *$POLICY (sha256 [0-9a-f]\{12\})\$" "$OUT" &&
		grep -q '^last verify: .* 4 settings, 0 drifted$' "$OUT" &&
		grep -qx 'drift: */proc/sys/vm/swappiness: 2 times' "$OUT" &&
		grep -qx 'recent drift: /proc/sys/vm/swappiness: want 10, found 44; pid 4242 (other-tuner) has /proc/sys/vm/swappiness open for writing' "$OUT"
}
wait_until 5 status_text_ok
check "status (text) answers: the policy, the last verify (0 drifted), drift counts, the recent drift and its writer" -- \
	status_text_ok

# promtool on /metrics and on the textfile
if command -v promtool >/dev/null; then
	curl -sf "http://127.0.0.1:$P1/metrics" >"$T_TMP/metrics.txt" || t_not_ok "GET /metrics: curl exit $?"
	run promtool check metrics <"$T_TMP/metrics.txt"
	check "promtool check metrics: /metrics is clean" -- sh -c "[ $RC -eq 0 ] && [ ! -s '$OUT' ] && [ ! -s '$ERR' ]"
	run promtool check metrics <"$T_TMP/textfile/nodetune.prom"
	check "promtool check metrics: the textfile (--textfile-dir) is clean, mode 0644, no temp file left" -- sh -c \
		"[ $RC -eq 0 ] && [ ! -s '$OUT' ] && [ ! -s '$ERR' ] && [ \"\$(stat -c %a '$T_TMP/textfile/nodetune.prom')\" = 644 ] &&
		 [ \"\$(ls -A '$T_TMP/textfile')\" = nodetune.prom ]"
else
	t_need promtool "promtool: not installed (scripts/install-deps.sh daemon)"
fi

# ---- a real Prometheus scrapes the daemon --------------------------------
# prom_up: Prometheus answers and has scraped the daemon's job with up == 1
prom_q() { curl -sf --max-time 5 -G "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1"; }
# prom_val QUERY: the value of the query's first result ("" for none;
# jq -e is not used on what curl may leave empty: jq 1.6 passes no input)
prom_val() { prom_q "$1" | jq -r '.data.result[0].value[1] // empty'; }
prom_up() { [ "$(prom_val 'up{job="nodetune"}')" = 1 ]; }
PROM=$(command -v prometheus || echo /usr/bin/prometheus)
if [ -x "$PROM" ]; then
	cat >"$T_TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: nodetune
    static_configs:
      - targets: ['127.0.0.1:$P1']
EOF
	for try in 1 2 3; do        # a port free a moment ago may be taken since
		PP=$(free_port)
		"$PROM" --config.file="$T_TMP/prometheus.yml" --storage.tsdb.path="$T_TMP/tsdb" \
			--web.listen-address="127.0.0.1:$PP" >"$T_TMP/prometheus.log" 2>&1 &
		PROM_PID=$!
		t_defer "kill -9 $PROM_PID 2>/dev/null"
		wait_until 60 prom_up && break
		kill -9 $PROM_PID 2>/dev/null
		wait $PROM_PID 2>/dev/null
	done
	check "Prometheus (127.0.0.1:$PP) scrapes the daemon: up{job=\"nodetune\"} == 1" -- prom_up
	for s in nodetune_build_info nodetune_policy_info nodetune_verify_last_timestamp_seconds \
		nodetune_verify_duration_seconds nodetune_drift_total nodetune_knob_contested \
		nodetune_reload_failures_total nodetune_doctor_finding; do
		[ -n "$(prom_val "count($s{job=\"nodetune\"})")" ] || echo $s
	done >"$T_TMP/prom-missing"
	check "Prometheus has build_info, policy_info, verify_last_timestamp_seconds, verify_duration_seconds, drift_total, knob_contested, reload_failures_total, doctor_finding (missing: $(echo $(cat "$T_TMP/prom-missing")))" -- \
		[ ! -s "$T_TMP/prom-missing" ]
	check "Prometheus sees the drift count: nodetune_drift_total{path=\"/proc/sys/vm/swappiness\"} == 2" -- \
		[ "$(prom_val 'nodetune_drift_total{path="/proc/sys/vm/swappiness"}')" = 2 ]
	kill -TERM $PROM_PID
	wait_until 30 sh -c "! kill -0 $PROM_PID" || kill -9 $PROM_PID
	wait $PROM_PID
	check "Prometheus stopped (SIGTERM: exit 0)" -- [ $? -eq 0 ]
else
	t_need prometheus "Prometheus: /usr/bin/prometheus not installed (scripts/install-deps.sh daemon)"
fi

# ---- SIGTERM keeps the tuning; revert restores the tree ------------------
stop_daemon $D1
check "SIGTERM: exit 0, every value still applied, the socket removed, the journal kept" -- sh -c \
	"[ $DRC -eq 0 ] && [ \"\$(cat '$R1/$DEFRAG')\" = defer+madvise ] && [ \"\$(cat '$R1/$SW')\" = 10 ] &&
	 [ \"\$(cat '$R1/$NB')\" = 0 ] && [ ! -e '$S1' ] && [ -s '$T_TMP/st1/journal' ] &&
	 grep -qF 'Terminated: stopping; the host stays as it is (undo: nodetune revert --state-dir $T_TMP/st1)' '$T_TMP/d1.log'"
run "$NODETUNE" revert --sysroot "$R1" --state-dir "$T_TMP/st1"
check "nodetune revert after the daemon: the tree byte for byte as before" -- sh -c \
	"[ $RC -eq 0 ] && [ '$h1' = '$(tree_hash "$R1")' ]"

# ---- a writer that keeps flipping a knob: contested, then left alone ------
R2=$T_TMP/root2 S2=$T_TMP/d2.sock
mkroot "$R2"
start d2 --policy "$POLICY" --topology $HGX --sysroot "$R2" --state-dir "$T_TMP/st2" --interval $IV \
	--metrics 127.0.0.1:0 --socket "$S2"
D2=$DPID
wait_until 30 ready d2
P2=$(port d2)
# the other writer: 33 every half interval
( while :; do echo 33 >"$R2/$SW"; sleep 0.5; done ) &
FLIPPER=$!
t_defer "kill $FLIPPER 2>/dev/null"
wait_until 30 grep -q 'is contested' "$T_TMP/d2.log"
check "a knob flipped every half interval becomes contested after 3 drifts (the default --flap 3/600), said as a warning" -- \
	grep -qx '<4>nodetune: daemon: warning: /proc/sys/vm/swappiness is contested: it drifted 3 times, 3 within the flap window; no longer corrected (stop the other writer, or change the policy and reload)' "$T_TMP/d2.log"
n0=$(grep -c 'corrected: /proc/sys/vm/swappiness' "$T_TMP/d2.log")
v0=$(metric "$P2" nodetune_verify_total)
# (3 verifies at 1 s intervals: 3 s; the deadline, 20 s, is 6x that, and
# the check below reads how many there were)
wait_until 20 sh -c "[ \$(curl -sf http://127.0.0.1:$P2/metrics | awk '\$1 == \"nodetune_verify_total\" { print \$2 }') -ge $((v0 + 3)) ]"
v1=$(metric "$P2" nodetune_verify_total)
check "then left alone: said once, no correction in 3 more verifies ($v0 -> $v1), the value stays the writer's (33)" -- sh -c \
	"[ -n '$v0' ] && [ '${v1:-0}' -ge $((v0 + 3)) ] && [ \$(grep -c 'is contested' '$T_TMP/d2.log') -eq 1 ] && [ \$(grep -c 'corrected: /proc/sys/vm/swappiness' '$T_TMP/d2.log') -eq $n0 ] &&
	 [ \"\$(cat '$R2/$SW')\" = 33 ] && [ \$(grep -c 'drift: /proc/sys/vm/swappiness' '$T_TMP/d2.log') -eq 3 ]"
check "contested is exported: nodetune_knob_contested 1, status .contested" -- sh -c \
	"curl -sf http://127.0.0.1:$P2/metrics | grep -qx 'nodetune_knob_contested{path=\"/proc/sys/vm/swappiness\"} 1' &&
	 '$NODETUNE' status --socket '$S2' --json | jq -e '.contested == [\"/proc/sys/vm/swappiness\"]' >/dev/null"
kill $FLIPPER
wait $FLIPPER 2>/dev/null
drift "$P2" "$R2/$DEFRAG" always defer+madvise
check "the other knobs are still corrected ($NV verifies, $EL s)" -- corrected "$R2/$DEFRAG" defer+madvise
stop_daemon $D2
check "SIGTERM: exit 0" -- [ "$DRC" -eq 0 ]

# ---- kill -9 in the middle of the first apply, restart --------------------
# numa_balancing (the 3rd setting written) is a FIFO: a feeder answers each
# read with the original "1\n" (0.3 s apart, so each read sees one), and
# the daemon's write blocks in open() with no reader: THP already written,
# the journal already holding every original.  Killed there.
R3=$T_TMP/root3
mkroot "$R3"
h3=$(tree_hash "$R3")
rm "$R3/$NB" && mkfifo "$R3/$NB"
( while :; do printf '1\n' >"$R3/$NB"; sleep 0.3; done ) &
FEEDER=$!
t_defer "kill $FEEDER 2>/dev/null"
start d3 --policy "$POLICY" --topology $HGX --sysroot "$R3" --state-dir "$T_TMP/st3" --interval $IV --no-metrics \
	--socket "$T_TMP/d3.sock"
D3=$DPID
wait_until 30 sh -c "[ \"\$(cat '$R3/$DEFRAG')\" = defer+madvise ] && grep -q '^file.proc/sys/kernel/numa_balancing.1' '$T_TMP/st3/journal'" ||
	t_not_ok "the daemon did not reach numa_balancing within 30 s"
# then until a thread of the daemon sleeps in the kernel opening the FIFO
# (no reader: the feeder is a writer too), where it can do nothing more:
# the check below holds by construction, with no window to outlast the
# rest of the apply and the ready (a daemon's start to ready took up to
# 0.14 s plain and 1.14 s under ASan at load 12-15, bench/RESULTS.md §14,
# window_ready_s: a 0.5 s window was 3.6x and 0.4x)
wait_until 10 sh -c "grep -qxE 'wait_for_partner|fifo_open|pipe_write' /proc/$D3/task/*/wchan" ||
	t_not_ok "the daemon is not asleep on the FIFO within 10 s: $(cat /proc/$D3/task/*/wchan 2>/dev/null)"
check "the daemon is held mid-apply: THP written, numa_balancing not, journal has the originals, not ready" -- sh -c \
	"[ \"\$(cat '$R3/$ENABLED')\" = madvise ] && [ \$(grep -c '^file' '$T_TMP/st3/journal') -eq 4 ] && ! grep -q ready: '$T_TMP/d3.log'"
kill -9 $D3
wait $D3 2>/dev/null
kill $FEEDER
wait $FEEDER 2>/dev/null
rm "$R3/$NB" && cp "$UNTUNED/$NB" "$R3/$NB"
start d3b --policy "$POLICY" --topology $HGX --sysroot "$R3" --state-dir "$T_TMP/st3" --interval $IV --no-metrics \
	--socket "$T_TMP/d3.sock"
D3=$DPID
wait_until 30 ready d3b
check "restarted: says the apply that died did not complete, converges (numa_balancing 1 -> 0), ready" -- sh -c \
	"grep -q 'did not complete: its originals are kept' '$T_TMP/d3b.log' && grep -qx '<5>nodetune: daemon: /proc/sys/kernel/numa_balancing: 1 -> 0' '$T_TMP/d3b.log' &&
	 [ \"\$(cat '$R3/$NB')\" = 0 ] && [ \"\$(cat '$R3/$SW')\" = 10 ] && grep -q ready: '$T_TMP/d3b.log'"
stop_daemon $D3
check "the journal is consistent: the four originals as they were before the first apply, committed" -- sh -c \
	"grep -qx 'file	proc/sys/kernel/numa_balancing	1	1%0A' '$T_TMP/st3/journal' &&
	 grep -qx 'file	proc/sys/vm/swappiness	60	60%0A' '$T_TMP/st3/journal' &&
	 grep -q '^file	sys/kernel/mm/transparent_hugepage/defrag	always	' '$T_TMP/st3/journal' &&
	 [ \$(grep -c '^file' '$T_TMP/st3/journal') -eq 4 ] && [ \"\$(tail -1 '$T_TMP/st3/journal')\" = commit ]"
run "$NODETUNE" revert --sysroot "$R3" --state-dir "$T_TMP/st3"
check "nodetune revert after kill -9 + restart: the tree byte for byte as before" -- sh -c \
	"[ $RC -eq 0 ] && [ '$h3' = '$(tree_hash "$R3")' ]"

# ---- SIGHUP: a broken policy is refused, a good one takes effect ----------
R4=$T_TMP/root4 S4=$T_TMP/d4.sock P4=$T_TMP/reload.conf
mkroot "$R4"
h4=$(tree_hash "$R4")
cp "$POLICY" "$P4"
start d4 --policy "$P4" --topology $HGX --sysroot "$R4" --state-dir "$T_TMP/st4" --interval $IV \
	--metrics 127.0.0.1:0 --socket "$S4" --revert-on-exit
D4=$DPID
wait_until 30 ready d4
P4P=$(port d4)
printf '[thp]\nenabled = madvise\ndefrag = defer+madvise\n[afinity]\nmode = numa\n' >"$P4"
kill -HUP $D4
wait_until 10 grep -q 'reload refused' "$T_TMP/d4.log"
check "SIGHUP with a broken policy: refused, the log names file:line, the old policy kept" -- sh -c \
	"grep -q '^<3>nodetune: daemon: reload refused: $P4:4: unknown section \[afinity\]' '$T_TMP/d4.log' &&
	 [ \"\$(cat '$R4/$SW')\" = 10 ] && [ \"\$(cat '$R4/$NB')\" = 0 ]"
wait_until 5 metric_is "$P4P" nodetune_reload_failures_total 1
check "the failed reload is counted: status reload_failures 1, nodetune_reload_failures_total 1" -- sh -c \
	"'$NODETUNE' status --socket '$S4' --json | jq -e '.reload_failures == 1 and .reloads == 0' >/dev/null &&
	 curl -sf http://127.0.0.1:$P4P/metrics | grep -qx 'nodetune_reload_failures_total 1'"
drift "$P4P" "$R4/$SW" 33 10
check "the old policy is still kept after the refused reload (a drift corrected, $NV verifies, $EL s)" -- corrected "$R4/$SW" 10
# the new policy: defrag madvise, swappiness no longer governed
printf '[thp]\nenabled = madvise\ndefrag = madvise\n[sched]\nnuma_balancing = 0\n' >"$P4"
kill -HUP $D4
wait_until 10 grep -q 'reloaded ' "$T_TMP/d4.log"
check "SIGHUP with a good policy: it takes effect (defrag madvise), swappiness, no longer governed, restored to 60" -- sh -c \
	"grep -q '^<5>nodetune: daemon: reloaded $P4 (sha256 [0-9a-f]*): 2 changes' '$T_TMP/d4.log' &&
	 [ \"\$(cat '$R4/$DEFRAG')\" = madvise ] && [ \"\$(cat '$R4/$SW')\" = 60 ] && [ \"\$(cat '$R4/$NB')\" = 0 ]"
wait_until 5 status_is "$S4" '.reloads == 1'
check "status: reloads 1, reload_failures 1, the new sha256" -- \
	status_is "$S4" ".reloads == 1 and .reload_failures == 1 and .sha256 == \"$(sha256sum "$P4" | cut -d' ' -f1)\""

# ---- one daemon per state dir ----------------------------------------------
expect_fail 2 "^<3>nodetune: daemon: $T_TMP/st4 is held by another nodetune .*: one daemon per state dir" \
	"a second daemon on the same state dir exits 2" -- \
	timeout 30 "$NODETUNE" daemon --log-format=syslog --policy "$POLICY" --topology $HGX --sysroot "$R4" --state-dir "$T_TMP/st4" \
	--interval $IV --no-metrics --socket "$T_TMP/other.sock"
check "the first daemon still runs, its socket answers" -- status_is "$S4" '.reloads == 1'

# ---- --revert-on-exit ------------------------------------------------------
stop_daemon $D4
check "SIGTERM with --revert-on-exit: exit 0, the tree byte for byte as before, the journal gone" -- sh -c \
	"[ $DRC -eq 0 ] && [ '$h4' = '$(tree_hash "$R4")' ] && [ ! -e '$T_TMP/st4/journal' ]"

# ---- bad input: exit 2, one line, nothing changed --------------------------
R5=$T_TMP/root5
mkroot "$R5"
h5=$(tree_hash "$R5")
bad() {
	desc=$1 pat=$2
	shift 3
	expect_fail 2 "$pat" "$desc" -- timeout 30 "$NODETUNE" daemon --topology $HGX --sysroot "$R5" \
		--state-dir "$T_TMP/st5" --interval $IV --socket "$T_TMP/d5.sock" "$@"
}
bad "a missing policy" "nope.conf: no such file or directory" -- --policy "$T_TMP/nope.conf" --no-metrics
bad "a bad --flap" "--flap" -- --policy "$POLICY" --flap 3/x --no-metrics
bad "--flap 0/600" "--flap" -- --policy "$POLICY" --flap 0/600 --no-metrics
bad "a bad --metrics address" "--metrics" -- --policy "$POLICY" --metrics 127.0.0.1:99999
bad "a --metrics host name" "--metrics" -- --policy "$POLICY" --metrics localhost:9477
bad "--metrics with --no-metrics" "--metrics and --no-metrics are mutually exclusive" -- \
	--policy "$POLICY" --metrics 127.0.0.1:0 --no-metrics
bad "--no-metrics with --metrics" "--metrics and --no-metrics are mutually exclusive" -- \
	--policy "$POLICY" --no-metrics --metrics 127.0.0.1:0
expect_fail 2 "^<3>nodetune: daemon: --interval '0'" "a bad --interval (0)" -- timeout 30 "$NODETUNE" daemon --log-format=syslog \
	--policy "$POLICY" --topology $HGX --sysroot "$R5" --state-dir "$T_TMP/st5" --socket "$T_TMP/d5.sock" \
	--no-metrics --interval 0
# ---- syslog's <N> only under journald (or --log-format=syslog) -------------
# stderr to a file, as a terminal or a container runtime: plain lines; the
# same file named by JOURNAL_STREAM (dev:inode, as systemd sets it): <N>
bad_interval() {
	timeout 30 "$NODETUNE" daemon --policy "$POLICY" --topology $HGX --sysroot "$R5" --state-dir "$T_TMP/st5" \
		--socket "$T_TMP/d5.sock" --no-metrics --interval 0 "$@" 2>"$T_TMP/plain.log"
}
# each run is refused (exit 2: --interval 0) with one line, whose prefix is checked
bad_interval; brc=$?
check "no journald: the daemon's lines carry no <N> prefix (exit $brc)" -- sh -c \
	"[ $brc -eq 2 ] && grep -q \"^nodetune: daemon: --interval '0'\" '$T_TMP/plain.log'"
JOURNAL_STREAM=$(stat -c '%d:%i' "$T_TMP/plain.log") bad_interval; brc=$?
check "JOURNAL_STREAM naming stderr: <3> prefix (exit $brc)" -- sh -c \
	"[ $brc -eq 2 ] && grep -q \"^<3>nodetune: daemon: --interval '0'\" '$T_TMP/plain.log'"
JOURNAL_STREAM=1:1 bad_interval; brc=$?
check "JOURNAL_STREAM inherited but naming another file: no prefix (exit $brc)" -- sh -c \
	"[ $brc -eq 2 ] && grep -q '^nodetune: daemon: --interval' '$T_TMP/plain.log'"
bad_interval --log-format=text; brc=$?
check "--log-format=text: plain (exit $brc)" -- sh -c "[ $brc -eq 2 ] && grep -q '^nodetune: daemon: --interval' '$T_TMP/plain.log'"
expect_fail 2 "--log-format 'json': expected text or syslog" "a bad --log-format" -- "$NODETUNE" --log-format=json discover

check "none of those changed the tree, left a journal or a socket" -- sh -c \
	"[ '$h5' = '$(tree_hash "$R5")' ] && [ ! -e '$T_TMP/st5/journal' ] && [ ! -e '$T_TMP/d5.sock' ]"

# ---- sd_notify: READY=1 after the first verify, STATUS=, WATCHDOG=1 --------
cat >"$T_TMP/notify.py" <<'EOF'
# notify.py SOCKET LOG FILE...: what systemd would hear; on READY=1 the
# FILEs' contents are logged too (the tree as it is when READY=1 arrives)
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
log = open(sys.argv[2], "a", buffering=1)
while True:
    lines = s.recv(65536).decode(errors="replace").split("\n")
    for l in lines:
        if l:
            log.write("msg %.3f %s\n" % (time.time(), l))
    if "READY=1" in lines:
        for p in sys.argv[3:]:
            log.write("tree %s %s\n" % (p, open(p).read().strip()))
EOF
R6=$T_TMP/root6 NS=$T_TMP/notify.sock NL=$T_TMP/notify.log
mkroot "$R6"
python3 "$T_TMP/notify.py" "$NS" "$NL" "$R6/$DEFRAG" "$R6/$SW" "$R6/$NB" &
NPID=$!
t_defer "kill $NPID 2>/dev/null"
wait_until 10 test -S "$NS"
NOTIFY_SOCKET=$NS WATCHDOG_USEC=2000000 start d6 --policy "$POLICY" --topology $HGX --sysroot "$R6" \
	--state-dir "$T_TMP/st6" --interval $IV --no-metrics --socket "$T_TMP/d6.sock"
D6=$DPID
wait_until 30 grep -q 'READY=1' "$NL"
check "READY=1 arrives once the tree holds the policy's values (defrag, swappiness, numa_balancing)" -- sh -c \
	"grep -qx 'tree $R6/$DEFRAG defer+madvise' '$NL' && grep -qx 'tree $R6/$SW 10' '$NL' && grep -qx 'tree $R6/$NB 0' '$NL'"
check "READY=1 comes after the first verify's STATUS= line ('4 settings, 0 drifted at the last verify')" -- sh -c \
	"sed -n '/READY=1/q; p' '$NL' | grep -q 'STATUS=$POLICY: 4 settings, 0 drifted at the last verify, 0 corrected in all'"
wait_until 15 sh -c "[ \$(grep -c ' WATCHDOG=1$' '$NL') -ge 3 ]"
check "WATCHDOG=1 pings (WATCHDOG_USEC=2 s: $(grep -c ' WATCHDOG=1$' "$NL") so far) and STATUS= lines each verify" -- sh -c \
	"[ \$(grep -c ' WATCHDOG=1$' '$NL') -ge 3 ] && [ \$(grep -c ' STATUS=' '$NL') -ge 2 ]"
stop_daemon $D6
check "SIGTERM: STOPPING=1, exit 0" -- sh -c "[ $DRC -eq 0 ] && grep -q ' STOPPING=1$' '$NL'"
kill $NPID
wait $NPID 2>/dev/null

# ---- a hostile status-socket client does not stall the loop ---------------
cat >"$T_TMP/hostile.py" <<'EOF'
# hostile.py SOCKET SECONDS STARTED: rounds of garbage, a 1 MB line, 3
# clients that ask and never read, 20 that connect and never send, each
# round held 1 s (the daemon drops a client after its 2 s deadline and
# serves 16 at once, so one round could not last), for SECONDS.  STARTED
# holds the rounds done so far.  A connect that fails or takes 5 s (the
# daemon's socket stalled) is an error: said on stderr, exit 1.  A send
# the daemon cut short is not: with its 16 slots still held by the last
# round's clients it answers "busy" and closes, and a send after that
# close fails (EPIPE or ECONNRESET: a red make check on 2026-12-07, the
# traceback of the round's first send)
import os, socket, sys, time
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(sys.argv[1])
    except OSError as e:
        sys.exit("hostile.py: connect %s: %s" % (sys.argv[1], e))
    return s
def send(s, b):
    try:
        s.sendall(b)
    except (BrokenPipeError, ConnectionResetError):
        pass
end = time.monotonic() + float(sys.argv[2])
rounds = 0
while time.monotonic() < end:
    held = []
    s = conn(); send(s, b"\x00\xff\xfe garbage \x1b[31m\r\n\n"); held.append(s)
    s = conn(); s.settimeout(1)
    try:
        s.sendall(b"x" * (1 << 20))   # the daemon closes it after 4096 bytes
    except OSError:
        pass
    held.append(s)
    for _ in range(3):
        s = conn(); send(s, b"status\n"); held.append(s)
    for _ in range(20):
        held.append(conn())
    rounds += 1
    with open(sys.argv[3] + ".tmp", "w") as f:
        f.write("%d\n" % rounds)
    os.rename(sys.argv[3] + ".tmp", sys.argv[3])
    time.sleep(1)
    for s in held:
        s.close()
EOF
R7=$T_TMP/root7 S7=$T_TMP/d7.sock
mkroot "$R7"
start d7 --policy "$POLICY" --topology $HGX --sysroot "$R7" --state-dir "$T_TMP/st7" --interval $IV \
	--metrics 127.0.0.1:0 --socket "$S7"
D7=$DPID
wait_until 30 ready d7
P7=$(port d7)
python3 "$T_TMP/hostile.py" "$S7" $((60 * SLOW)) "$T_TMP/hostile.started" 2>"$T_TMP/hostile.err" &
HPID=$!
t_defer "kill $HPID 2>/dev/null"
wait_until 20 test -e "$T_TMP/hostile.started"
r0=$(cat "$T_TMP/hostile.started" 2>/dev/null)
drift "$P7" "$R7/$DEFRAG" always defer+madvise
check "with garbage, a 1 MB line and clients that never read on the socket, a drift is corrected within two intervals ($NV verifies, $EL s)" -- \
	corrected "$R7/$DEFRAG" defer+madvise
# (timing: 3 verifies at 1 s intervals from the drift take 3 s; waited for
# up to 33 s more (x SLOW): 3x the p99 from the drift of 11.1 s plain
# (load 35-82) and 3.07 s under ASan (load 82-38) (bench/RESULTS.md §14,
# hostile_verify3_s: upper bounds under that load; 9 s was 0.8x); a loop
# stalled by the clients would not verify at all while they last, 60 s x
# SLOW, longer than the wait)
wait_until 33 sh -c "[ \$(curl -sf http://127.0.0.1:$P7/metrics | awk '\$1 == \"nodetune_verify_total\" { print \$2 }') -ge $((v0 + 3)) ]"
v1=$(metric "$P7" nodetune_verify_total)
check "verifies keep coming on time (nodetune_verify_total $v0 -> $v1 in $(since "$t0") s)" -- sh -c \
	"[ -n '$v0' ] && [ '${v1:-0}' -ge $((v0 + 3)) ]"
# the socket's thread answers: the status, or (its 16 client slots held by
# the hostile clients, each for up to its 2 s deadline) its "busy" line; a
# stalled thread would answer neither
answers() { status_is "$S7" '.last_verify.ok' || grep -q 'busy' "$T_TMP/status.err"; }
wait_until 10 answers
check "nodetune status still answers, with the status or 'busy' (within the clients' deadline): $(head -c 200 "$T_TMP/status.err")" -- answers
r1=$(cat "$T_TMP/hostile.started" 2>/dev/null)
check "the hostile clients kept at it all along (rounds $r0 -> $r1), every connect answered: $(tail -n 1 "$T_TMP/hostile.err" | head -c 200)" -- \
	sh -c "kill -0 $HPID && [ '${r1:-0}' -gt '${r0:-0}' ] && [ ! -s '$T_TMP/hostile.err' ]"
kill $HPID
wait $HPID 2>/dev/null
stop_daemon $D7
check "SIGTERM after all that: exit 0" -- [ "$DRC" -eq 0 ]

# ---- live on this host (root): applied, a drift corrected, SIGTERM, revert --
LSW=/proc/sys/vm/swappiness LDF=/sys/kernel/mm/transparent_hugepage/defrag
if [ "$(id -u)" -ne 0 ] || [ ! -w $LSW ] || [ ! -w $LDF ]; then
	t_skips 4 t_skip_host root "live daemon: needs root and writable vm.swappiness and THP defrag"
else
	sw0=$(cat $LSW) df0=$(sed 's/.*\[\(.*\)\].*/\1/' $LDF)
	# put them back whatever happens (the revert below is what is tested)
	t_defer "echo $sw0 >$LSW; echo $df0 >$LDF"
	sw1=10 df1=defer+madvise
	[ "$sw0" != $sw1 ] || sw1=20
	[ "$df0" != $df1 ] || df1=madvise
	LP=$T_TMP/live.conf LS=$T_TMP/live.sock
	printf '[thp]\ndefrag = %s\n[sysctl]\nvm.swappiness = %s\n' $df1 $sw1 >"$LP"
	start live --policy "$LP" --state-dir "$T_TMP/live-state" --interval $IV --metrics 127.0.0.1:0 --socket "$LS"
	DL=$DPID
	wait_until 30 ready live
	PL=$(port live)
	check "live: ready, swappiness $sw0 -> $sw1 and THP defrag $df0 -> $df1 applied" -- sh -c \
		"grep -q 'ready: 2 settings' '$T_TMP/live.log' && [ \"\$(cat $LSW)\" = $sw1 ] && grep -qF '[$df1]' $LDF"
	drift "$PL" $LSW $sw0 $sw1
	check "live: a hand drift (swappiness back to $sw0) is corrected within two intervals ($NV verifies, $EL s), logged" -- sh -c \
		"[ \"\$(cat $LSW)\" = $sw1 ] && [ $NV -le $NV_MAX ] && grep -q 'drift: /proc/sys/vm/swappiness: want $sw1, found $sw0' '$T_TMP/live.log'"
	stop_daemon $DL
	check "live: SIGTERM, exit 0, the values still applied" -- sh -c \
		"[ $DRC -eq 0 ] && [ \"\$(cat $LSW)\" = $sw1 ] && grep -qF '[$df1]' $LDF"
	run "$NODETUNE" revert --state-dir "$T_TMP/live-state"
	check "live: nodetune revert --state-dir restores swappiness $sw0 and THP defrag $df0" -- sh -c \
		"[ $RC -eq 0 ] && [ \"\$(cat $LSW)\" = $sw0 ] && grep -qF '[$df0]' $LDF"
fi

t_done
