#!/bin/sh
# SPDX-License-Identifier: MIT
# daemon_overhead.sh — what `nodetune daemon` costs on this host's live
# state: a policy of knobs this host has, set to the values they already
# hold (so the daemon writes nothing and, with --revert-on-exit, leaves
# nothing behind), one daemon per interval ($INTERVALS, seconds), run side
# by side for $DURATION_<interval> seconds each.  Reported per daemon: its
# CPU time (utime + stime from /proc/PID/stat, from ready to the end) as a
# share of one core, extrapolated to an hour; VmRSS and VmHWM at the end;
# the verify-cycle latency p50/p99/max from nodetune_verify_duration_seconds
# scraped once per verify (a scrape costs the daemon's HTTP thread too,
# and is counted: Prometheus would scrape it).  Goals: <= 0.5% of a core at
# 1 s, RSS < 20 MB, verify p99 < 20 ms.  Needs root.
set -eu
cd "$(dirname "$0")/.."
: "${NODETUNE:=build/nodetune}" "${INTERVALS:=1 30}" "${DURATION_1:=150}" "${DURATION_30:=360}"
TMP=$(mktemp -d /tmp/nodetune-bench-XXXXXX)
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	sleep 1
	rm -rf "$TMP"
}
trap cleanup EXIT
[ -x "$NODETUNE" ] || { echo "bench: $NODETUNE not built (run make)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (the daemon verifies the live host)" >&2; exit 2; }

# the policy: what this host holds now
bracket() { sed 's/.*\[\(.*\)\].*/\1/' "$1"; }
{
	echo "[thp]"
	echo "enabled = $(bracket /sys/kernel/mm/transparent_hugepage/enabled)"
	echo "defrag = $(bracket /sys/kernel/mm/transparent_hugepage/defrag)"
	echo "[sysctl]"
	for k in swappiness dirty_ratio dirty_background_ratio min_free_kbytes max_map_count stat_interval; do
		echo "vm.$k = $(cat /proc/sys/vm/$k)"
	done
	[ -e /proc/sys/kernel/numa_balancing ] && printf '[sched]\nnuma_balancing = %s\n' "$(cat /proc/sys/kernel/numa_balancing)"
} >"$TMP/policy.conf"
chmod 0600 "$TMP/policy.conf"
nknobs=$(grep -c ' = ' "$TMP/policy.conf")

metric() { curl -sf --max-time 2 "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# pct FILE P: the P-th percentile (nearest rank) of the numbers in FILE
pct() { sort -g "$1" | awk -v p="$2" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.999999); if (i < 1) i = 1; print v[i] }'; }

# measure INTERVAL DURATION: run, sample, write $TMP/INTERVAL.result
measure() {
	iv=$1 dur=$2 d=$TMP/d$1
	mkdir -m 0700 "$d"
	"$NODETUNE" daemon --policy "$TMP/policy.conf" --state-dir "$d/state" --interval "$iv" \
		--metrics 127.0.0.1:0 --socket "$d/sock" --revert-on-exit 2>"$d/log" &
	pid=$!
	i=0
	until grep -qs 'ready:' "$d/log"; do
		i=$((i + 1)); [ $i -lt 300 ] || { cat "$d/log" >&2; echo "bench: daemon $iv s never ready" >&2; return 3; }
		sleep 0.1
	done
	port=$(sed -n 's/.*metrics: .*(port \([0-9]*\))$/\1/p' "$d/log")
	grep -q ' -> ' "$d/log" && { echo "bench: the daemon changed the host (the policy should hold the current values)" >&2; return 3; }
	# scrape often enough to see every verify: each second at 1 s, every 5 s at 30 s
	step=$([ "$iv" -le 1 ] && echo 1 || echo 5)
	t0=$(date +%s.%N) c0=$(ticks $pid) last=$(metric "$port" nodetune_verify_total)
	v0=$last
	: >"$d/dur"
	end=$(echo "$t0 $dur" | awk '{ printf "%.3f", $1 + $2 }')
	while [ "$(echo "$(date +%s.%N) $end" | awk '{ print ($1 < $2) }')" = 1 ]; do
		sleep "$step"
		curl -sf --max-time 2 "http://127.0.0.1:$port/metrics" >"$d/m" || continue
		n=$(awk '$1 == "nodetune_verify_total" { print $2 }' "$d/m")
		if [ "$n" != "$last" ]; then
			awk '$1 == "nodetune_verify_duration_seconds" { print $2 }' "$d/m" >>"$d/dur"
			last=$n
		fi
	done
	c1=$(ticks $pid) t1=$(date +%s.%N)
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status") hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")
	drifted=$(metric "$port" nodetune_knobs_drifted)
	kill -TERM $pid
	wait $pid || { echo "bench: daemon $iv s exited $?" >&2; return 3; }
	# checks outside the timed region: it verified every interval, the
	# knobs all, nothing drifted, and it changed nothing
	verifies=$((last - v0)) wall=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')
	echo "$verifies $wall $iv" | awk '{ exit !($1 >= int($2 / $3) - 2 && $1 <= $2 / $3 + 2) }' ||
		{ echo "bench: daemon $iv s ran $verifies verifies in $wall s" >&2; return 3; }
	[ "$drifted" = 0 ] || { echo "bench: daemon $iv s saw $drifted drifted knobs" >&2; return 3; }
	grep -q "ready: $nknobs settings verified" "$d/log" || { echo "bench: daemon $iv s did not verify $nknobs settings" >&2; return 3; }
	hz=$(getconf CLK_TCK)
	echo "$iv $dur $wall $verifies $(wc -l <"$d/dur") $c0 $c1 $hz $rss $hwm $(pct "$d/dur" 50) $(pct "$d/dur" 99) $(pct "$d/dur" 100)" \
		>"$TMP/$iv.result"
}

echo "# daemon overhead on this host's live state: $nknobs knobs at their current values (nothing written), intervals: $INTERVALS"
echo "# host: $(nproc) CPUs, $(uname -r); $(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1)"
for iv in $INTERVALS; do
	eval "dur=\${DURATION_$iv:-120}"
	measure "$iv" "$dur" &
	PIDS="$PIDS $!"
done
fail=0
for p in $PIDS; do wait "$p" || fail=1; done
PIDS=""
[ $fail -eq 0 ] || exit 3
printf '%-10s %7s %8s %11s %13s %9s %9s %10s %10s %10s\n' interval_s run_s verifies cpu_s core_% rss_kB hwm_kB p50_ms p99_ms max_ms
for iv in $INTERVALS; do
	read -r iv dur wall verifies samples c0 c1 hz rss hwm p50 p99 max <"$TMP/$iv.result"
	echo "$iv $wall $verifies $c0 $c1 $hz $rss $hwm $p50 $p99 $max" | awk '{
		cpu = ($5 - $4) / $6
		printf "%-10s %7.0f %8d %11.2f %13.4f %9d %9d %10.3f %10.3f %10.3f\n", $1, $2, $3, cpu, 100 * cpu / $2, $7, $8, 1e3 * $9, 1e3 * $10, 1e3 * $11
	}'
done
echo "# core_%: CPU time / wall time, the same share for an hour (ticks of 1/$(getconf CLK_TCK) s: a short run's figure is coarse)"
