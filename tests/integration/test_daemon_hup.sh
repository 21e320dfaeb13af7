#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# test_daemon_hup.sh — a SIGHUP that reaches the daemon during its first
# apply (review G1): the daemon blocks its signals before it starts, so
# the SIGHUP waits in its signalfd, and the reload runs once the first
# apply and verify are done (after "ready"), with the policy file as it is
# then.  The daemon neither dies of it (SIGHUP's default action) nor
# reloads in the middle of the apply.  (A SIGHUP while a fleet gate holds
# the host: test_fleet.sh, "SIGHUP and SIGTERM while a gate holds the
# host"; the decision itself: tests/unit/daemon/test_daemon.c.)
#
# A real daemon on a copied sysroot tree, held inside its first apply as
# test_daemon.sh's kill -9 section holds it: numa_balancing (the 3rd
# setting written) is a FIFO, and the daemon's write blocks in open()
# with no reader.  Every wait polls for its condition.
. "$(dirname "$0")/lib.sh"
t_plan 4

HGX=tests/fixtures/topologies/hgx-2s8g8n-synthetic.xml
UNTUNED=tests/fixtures/sysroot/gpu-host-untuned
SW=proc/sys/vm/swappiness DEFRAG=sys/kernel/mm/transparent_hugepage/defrag
ENABLED=sys/kernel/mm/transparent_hugepage/enabled NB=proc/sys/kernel/numa_balancing

R=$T_TMP/root S=$T_TMP/d.sock P=$T_TMP/policy.conf LOG=$T_TMP/d.log
cp -r "$UNTUNED" "$R" && mkdir -p "$R/proc/sys/vm" && echo 60 >"$R/$SW" ||
	t_not_ok "the sysroot copy"
printf '[thp]\nenabled = madvise\ndefrag = defer+madvise\n[sched]\nnuma_balancing = 0\n[sysctl]\nvm.swappiness = 10\n' >"$P"
chmod 0600 "$P"

# numa_balancing a FIFO: a feeder answers each read with the original
# "1\n" (0.3 s apart, so each read sees one); the daemon's write then
# blocks in open(), THP already written, the journal holding every original
rm "$R/$NB" && mkfifo "$R/$NB"
( while :; do printf '1\n' >"$R/$NB"; sleep 0.3; done ) &
FEEDER=$!
t_defer "kill $FEEDER 2>/dev/null"
"$NODETUNE" daemon --log-format=syslog --policy "$P" --topology $HGX --sysroot "$R" --state-dir "$T_TMP/st" \
	--interval 1 --no-metrics --socket "$S" >"$T_TMP/d.out" 2>"$LOG" &
D=$!
t_defer "kill -9 $D 2>/dev/null"
wait_until 30 sh -c "[ \"\$(cat '$R/$DEFRAG')\" = defer+madvise ] && grep -q '^file.proc/sys/kernel/numa_balancing.1' '$T_TMP/st/journal'" ||
	t_not_ok "the daemon did not reach numa_balancing within 30 s: $(tail -n 3 "$LOG")"
# then until a thread of the daemon and the feeder both sleep in the
# kernel opening the FIFO: two writers with no reader (a daemon opening it
# to read would have met the feeder), where the daemon can do nothing more
# until a reader opens it
fifo_wait() { grep -qxE 'wait_for_partner|fifo_open|pipe_write' "$@" 2>/dev/null; }
both_wait() { fifo_wait /proc/$D/task/*/wchan && fifo_wait /proc/$FEEDER/wchan; }
wait_until 10 both_wait ||
	t_not_ok "the daemon and the feeder are not both asleep on the FIFO within 10 s: $(cat /proc/$D/task/*/wchan /proc/$FEEDER/wchan 2>/dev/null)"
check "the daemon is held in its first apply: THP written, swappiness not, not ready" -- sh -c \
	"[ \"\$(cat '$R/$ENABLED')\" = madvise ] && [ \"\$(cat '$R/$SW')\" = 60 ] && ! grep -q ready: '$LOG'"

# the policy changes (swappiness 20), and the SIGHUP comes while the apply is held
printf '[thp]\nenabled = madvise\ndefrag = defer+madvise\n[sched]\nnuma_balancing = 0\n[sysctl]\nvm.swappiness = 20\n' >"$P"
kill -HUP $D
# the release: a plain file takes the FIFO's name (holding the 0 the
# daemon writes, for its verify), and a reader opens the FIFO itself
# through a second link, taking the daemon's write
ln "$R/$NB" "$T_TMP/nb.fifo"
kill $FEEDER
wait $FEEDER 2>/dev/null
printf '0\n' >"$T_TMP/nb.plain" && mv "$T_TMP/nb.plain" "$R/$NB"
timeout 10 cat "$T_TMP/nb.fifo" >"$T_TMP/nb.got" || t_not_ok "the FIFO's reader: no writer came and went within 10 s"
wait_until 30 grep -q 'reloaded ' "$LOG"
rd=$(grep -n 'ready: ' "$LOG" | head -n 1 | cut -d: -f1)
rl=$(grep -n 'reloaded ' "$LOG" | head -n 1 | cut -d: -f1)
check "the SIGHUP held in the first apply: the daemon alive, ready (log line ${rd:-none}), then reloaded once (line ${rl:-none})" -- \
	sh -c 'kill -0 "$1" 2>/dev/null && [ -n "$2" ] && [ -n "$3" ] && [ "$3" -gt "$2" ] && [ "$(grep -c "reloaded " "$4")" = 1 ] &&
		! grep -q "reload refused" "$4"' - "$D" "$rd" "$rl" "$LOG"
check "the reload took the policy as it was after the SIGHUP: swappiness 20 (from 10), 1 change" -- sh -c \
	"grep -q '^<5>nodetune: daemon: reloaded $P (sha256 [0-9a-f]*): 1 changes' '$LOG' && [ \"\$(cat '$R/$SW')\" = 20 ]"
wait_until 10 sh -c "'$NODETUNE' status --socket '$S' --json >'$T_TMP/st.json' 2>/dev/null && jq -e '.reloads == 1' '$T_TMP/st.json' >/dev/null"
check "status: reloads 1, no reload failure, the new policy's sha256" -- \
	jq -e ".reloads == 1 and .reload_failures == 0 and .sha256 == \"$(sha256sum "$P" | cut -d' ' -f1)\"" "$T_TMP/st.json"
kill -TERM $D 2>/dev/null
wait_until 20 sh -c "! kill -0 $D"
t_done
