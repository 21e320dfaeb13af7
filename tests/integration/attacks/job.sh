# SPDX-License-Identifier: MIT
# attacks/job.sh — a job owns nothing of its parent's (issue 38 item 4;
# security.md H3, M3, L9, L10).  Sourced by test_attacks.sh after lib.sh.
#
#   H3   `ab --as-user nobody` run from a terminal (a real pty, python3's
#        pty module): the job pushes a harmless line into the terminal with
#        TIOCSTI and reports its tty_nr and fd 0.  Refused: no controlling
#        tty, fd 0 /dev/null, TIOCSTI fails, nothing comes back on the
#        pty's master side; the simulated host byte-identical.
#   L10  a user whose primary group is 0: `ab --as-user` refuses it (one
#        line, exit 2, the job never runs), and so does a host's gate.
#   L9   an ab job starts `setsid sleep 1000 &`, ab is killed -9: at the
#        next ab start the sleep is killed and the stale trial group gone.
#   M3   a gated rollout from a daemon logged in to a real TLS + auth etcd:
#        the gate's job (nobody) lists its fds: 0, 1, 2 and the step fd
#        only, no `socket:[...]` of the daemon's store connections; a gate
#        whose job leaves `setsid sleep` behind and whose ab is killed -9:
#        the daemon kills the sleep and removes the group when the gate ends.

job_need() {
	if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1; then
		if [ "$(id -u)" -ne 0 ]; then job_cap=root; else job_cap=user-nobody; fi
		t_skip_host "$job_cap" "job attacks: need root and a user nobody"
		return 1
	fi
	if [ ! -f "$SHARED/g4dnmetal.xml" ]; then
		t_need ../shared "job attacks: no $SHARED topologies"
		return 1
	fi
	command -v python3 >/dev/null || { t_need python3 "job attacks: no python3"; return 1; }
}

# A directory nobody can reach (the jobs' programs, 0755) with a sticky
# 1777 out/ for what the jobs report; a simulated host for the arms.
job_setup() {
	JOB_D=$(mktemp -d /tmp/nodetune-job-XXXXXX) || return 1
	t_defer "rm -rf '$JOB_D'"
	chmod 755 "$JOB_D" && mkdir -m 1777 "$JOB_D/out" && cp -a tests/fixtures/sysroot/gpu-host-untuned "$JOB_D/root" ||
		{ t_not_ok "job attacks: set-up in $JOB_D"; return 1; }
	JOB_TOPO=$SHARED/g4dnmetal.xml
	JOB_AB="--a policy=policies/baseline.conf --b policy=policies/baseline.conf --sysroot $JOB_D/root --topology $JOB_TOPO --trials 2"
}

# ---- H3: the job and root's terminal --------------------------------------------

# the job: report tty_nr, fd 0 and the fds, try TIOCSTI on fd 0 (a line
# that is harmless even if a shell read it), write the report to $1
job_tty_prog() {
	cat >"$JOB_D/ttyjob.py" <<'EOF'
import fcntl, json, os, sys, termios
r = {"tty_nr": int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[4]),
     "fd0": os.readlink("/proc/self/fd/0"), "pid": os.getpid(), "sid": os.getsid(0)}
r["fds"] = {f: os.readlink("/proc/self/fd/" + f) for f in os.listdir("/proc/self/fd") if os.path.exists("/proc/self/fd/" + f)}
try:
    for c in "echo NT-TIOCSTI-PUSHED\n":
        fcntl.ioctl(0, termios.TIOCSTI, c.encode())
    r["tiocsti"] = "pushed"
except OSError as e:
    r["tiocsti"] = "refused: " + e.strerror
with open(os.path.join(sys.argv[1], "r.%d" % os.getpid()), "w") as f:
    f.write(json.dumps(r) + "\n")
EOF
	# the terminal: ARGV[2:] run with a new pty as its controlling tty
	# (pty.fork); everything the master side reads goes to ARGV[1]
	cat >"$JOB_D/inpty.py" <<'EOF'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
out = b""
while True:
    try:
        b = os.read(fd, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
_, st = os.waitpid(pid, 0)
open(sys.argv[1], "wb").write(out)
sys.exit(os.waitstatus_to_exitcode(st))
EOF
	chmod 755 "$JOB_D/ttyjob.py" "$JOB_D/inpty.py"
}

# job_reports DIR: every report in DIR shows no terminal, fd 0 /dev/null,
# TIOCSTI refused, no fd but 0-3; prints the first one that does not (or
# "none") and fails then
job_reports() {
	python3 - "$1" <<'EOF'
import json, os, sys
d = sys.argv[1]
rs = [json.load(open(os.path.join(d, f))) for f in sorted(os.listdir(d))]
bad = [r for r in rs if r["tty_nr"] or r["fd0"] != "/dev/null" or r["tiocsti"] == "pushed" or set(r["fds"]) - {"0", "1", "2", "3"}]
print(json.dumps(bad[0]) if bad else "none" if not rs else "%d jobs: %s" % (len(rs), json.dumps(rs[0])))
sys.exit(1 if bad or not rs else 0)
EOF
}

job_h3() {
	job_tty_prog
	mkdir -m 1777 "$JOB_D/out/h3"
	before=$(tree_hash "$JOB_D/root")
	# shellcheck disable=SC2086
	run python3 "$JOB_D/inpty.py" "$JOB_D/master" "$NODETUNE" ab --as-user nobody $JOB_AB --budget 2 \
		--trial-dir "$JOB_D/t-h3" -- /usr/bin/python3 "$JOB_D/ttyjob.py" "$JOB_D/out/h3"
	seen=$(job_reports "$JOB_D/out/h3")
	pushed=$(grep -c NT-TIOCSTI-PUSHED "$JOB_D/master" 2>/dev/null)
	if [ "$RC" -le 1 ] && [ "${pushed:-0}" -eq 0 ] && job_reports "$JOB_D/out/h3" >/dev/null &&
		[ "$(tree_hash "$JOB_D/root")" = "$before" ]; then
		t_ok "H3: ab --as-user nobody from a terminal: no controlling tty (tty_nr 0), fd 0 /dev/null, TIOCSTI refused, nothing pushed into the pty, the host byte-identical (exit $RC; $seen)"
	else
		t_not_ok "H3: the job of ab --as-user reached root's terminal: exit $RC, the pushed line read back ${pushed:-0} times on the pty's master side"
		echo "#   a job's report: $seen"
		tail -n 2 "$ERR" | sed 's/^/#   /'
	fi
}

# ---- L10: a user of group 0 ----------------------------------------------------------

job_gid0_user() {
	JOB_G0=ntgid0$$
	if ! useradd -r -M -N -g 0 -d /nonexistent -s /usr/sbin/nologin "$JOB_G0" 2>"$JOB_D/useradd.err"; then
		t_not_ok "L10: useradd -g 0 (a user of group 0 for the attack): $(head -n 1 "$JOB_D/useradd.err")"
		JOB_G0=""
		return 1
	fi
	t_defer "userdel '$JOB_G0' 2>/dev/null"
}

job_l10() {
	job_gid0_user || return 0
	mkdir -m 1777 "$JOB_D/out/l10"
	before=$(tree_hash "$JOB_D/root")
	# shellcheck disable=SC2086
	run "$NODETUNE" ab --as-user "$JOB_G0" $JOB_AB --budget 2 --trial-dir "$JOB_D/t-l10" \
		-- /bin/sh -c 'id -g >>"$1/gid"' sh "$JOB_D/out/l10"
	if [ "$RC" -eq 2 ] && [ "$(wc -l <"$ERR")" -eq 1 ] && grep -q "$JOB_G0: primary group 0" "$ERR" &&
		[ ! -e "$JOB_D/out/l10/gid" ] && [ "$(tree_hash "$JOB_D/root")" = "$before" ]; then
		t_ok "L10: ab --as-user a user of group 0 is refused, the job never ran, the host byte-identical ($(cat "$ERR"))"
	else
		t_not_ok "L10: ab --as-user $JOB_G0 (primary group 0): exit $RC, the job ran with gid '$(sort -u "$JOB_D/out/l10/gid" 2>/dev/null | tr '\n' ' ')'"
		head -n 2 "$ERR" | sed 's/^/#   /'
	fi
}

# ---- L9: what a killed ab's job left ---------------------------------------------

# job_sleeper NAME DIR: $JOB_D/NAME.sh, a job that leaves a sleep in a
# session of its own (its pid to DIR/sleep.JOBPID), then sleeps itself
job_sleeper() {
	cat >"$JOB_D/$1.sh" <<EOF
#!/bin/sh
setsid sh -c 'echo \$\$ >"\$1"; exec sleep 1000' sh "$2/sleep.\$\$" </dev/null >/dev/null 2>&1 &
exec sleep 1000
EOF
	chmod 755 "$JOB_D/$1.sh"
}

# job_gone PID: no such process (or a zombie, reaped by its new parent soon)
job_gone() { ! [ -e "/proc/$1" ] || grep -q '^[^)]*) Z' "/proc/$1/stat" 2>/dev/null; }

# job_groups PID: the trial groups of ab PID, in every hierarchy
job_groups() { find /sys/fs/cgroup -mindepth 2 -maxdepth 3 -type d -path "*/nodetune-ab/$1-*" 2>/dev/null; }

# job_sleep_cleanup SLEEP-PID AB-PID: kill a sleep left behind (as root),
# remove the dead ab's groups and their nodetune-ab parents when empty
job_sleep_cleanup() {
	[ -n "$1" ] && kill -9 "$1" 2>/dev/null && wait_until 5 job_gone "$1"
	for g in $(job_groups "$2"); do rmdir "$g" "${g%/*}" 2>/dev/null; done
}

job_l9() {
	mkdir -m 1777 "$JOB_D/out/l9"
	job_sleeper l9 "$JOB_D/out/l9"
	cp -a tests/fixtures/sysroot/gpu-host-untuned "$JOB_D/root-l9"
	"$NODETUNE" ab --as-user nobody --a policy=policies/baseline.conf --b policy=policies/baseline.conf \
		--sysroot "$JOB_D/root-l9" --topology "$JOB_TOPO" --trials 2 --budget 60 --trial-dir "$JOB_D/t-l9" \
		-- "$JOB_D/l9.sh" >"$JOB_D/l9.out" 2>&1 &
	abpid=$!
	if ! wait_until 30 sh -c 'cat "$1"/sleep.* | grep -q .' - "$JOB_D/out/l9"; then
		kill -9 "$abpid" 2>/dev/null
		wait "$abpid" 2>/dev/null
		t_not_ok "L9: the job never started its sleep"; tail -n 3 "$JOB_D/l9.out" | sed 's/^/#   /'
		return 0
	fi
	sleeper=$(cat "$JOB_D"/out/l9/sleep.* | head -n 1)
	t_defer "job_sleep_cleanup '$sleeper' '$abpid'"
	kill -9 "$abpid"
	wait "$abpid" 2>/dev/null
	left=$(job_groups "$abpid" | tr '\n' ' ')
	# the next ab start sweeps what the dead one left
	run "$NODETUNE" ab --a policy=policies/baseline.conf --b policy=policies/baseline.conf --sysroot "$JOB_D/root-l9" \
		--topology "$JOB_TOPO" --trials 2 --budget 1 --trial-dir "$JOB_D/t-l9b" -- /bin/true
	if [ "$RC" -le 1 ] && wait_until 5 job_gone "$sleeper" && [ -z "$(job_groups "$abpid")" ]; then
		t_ok "L9: ab killed -9 left its job's setsid sleep (pid $sleeper) in $left; the next ab start killed it and removed the group"
	else
		t_not_ok "L9: after ab was killed -9 and ab ran again (exit $RC), the job's sleep (pid $sleeper, $(cat "/proc/$sleeper/status" 2>/dev/null | sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/uid \1/p')) still runs in: $(job_groups "$abpid" | tr '\n' ' ')"
	fi
}

# ---- M3 (and L9, L10 through the daemon): the gate's job -------------------------

# job_gate NAME USER CMD ARG...: a gate file in $JOB_GATES
job_gate() {
	g=$JOB_GATES/$1.conf u=$2
	shift 2
	printf 'command = %s\nuser = %s\nbudget = 60\n' "$1" "$u" >"$g"
	shift
	for a in "$@"; do printf 'arg = %s\n' "$a" >>"$g"; done
	chmod 644 "$g"
}

# job_fleet: a TLS + auth etcd, h1's daemon logged in with its own user,
# trusting the controller's key, with the gates of $JOB_GATES
job_fleet() {
	etcd_have || return 1
	etcd_tls_auth_start "$JOB_D/etcd" h1 || return 1
	mkdir -m 700 "$JOB_D/sk" && mkdir -m 755 "$JOB_D/keys.d" "$JOB_D/gates.d" "$JOB_D/h1" &&
		"$NODETUNE" fleet keygen --out "$JOB_D/sk" --name ctl >/dev/null && cp "$JOB_D/sk/ctl.pub" "$JOB_D/keys.d/" ||
		{ t_not_ok "M3: keys and gates"; return 1; }
	JOB_GATES=$JOB_D/gates.d
	JOB_CTL="--endpoints $EP --cacert $ETCD_CA --user nodetune-controller --password-file $ETCD_PW/nodetune-controller"
	cp -a tests/fixtures/sysroot/gpu-host-untuned "$JOB_D/h1/root"
	"$NODETUNE" daemon --sysroot "$JOB_D/h1/root" --topology "$JOB_TOPO" --policy policies/baseline.conf \
		--fleet "$EP" --host h1 --cacert "$ETCD_CA" --user nodetune-host-h1 --password-file "$ETCD_PW/nodetune-host-h1" \
		--fleet-keys "$JOB_D/keys.d" --gates-dir "$JOB_GATES" --no-metrics --socket "$JOB_D/h1/sock" \
		--state-dir "$JOB_D/h1/state" --interval 1 >>"$JOB_D/h1/log" 2>&1 &
	JOB_DAEMON=$!
	t_defer "kill $JOB_DAEMON 2>/dev/null; wait $JOB_DAEMON 2>/dev/null"
	# shellcheck disable=SC2086
	if ! wait_until 30 sh -c '"$1" fleet hosts $2 --json | grep -q "\"state\": \"verified\""' - "$NODETUNE" "$JOB_CTL"; then
		t_not_ok "M3: h1 registered over TLS"; tail -n 3 "$JOB_D/h1/log" | sed 's/^/#   /'
		return 1
	fi
	printf '[main]\nsummary = job attacks\n[thp]\ndefrag = madvise\n' >"$JOB_D/defrag.conf"
	chmod 644 "$JOB_D/defrag.conf"
}

# job_rollout NAME GATE: a gated rollout to h1, its JSON in $OUT
job_rollout() {
	# shellcheck disable=SC2086
	run "$NODETUNE" fleet rollout $JOB_CTL --signing-key "$JOB_D/sk/ctl.key" --policy "$JOB_D/defrag.conf" \
		--name "$1" --waves 100% --gate "$2" --gate-budget 30 --gate-allow-inconclusive --wave-timeout 120 --json
}

job_m3() {
	mkdir -m 1777 "$JOB_D/out/m3"
	# the job of H3: its fds (0-3 only), no terminal, fd 0 /dev/null
	job_gate fds nobody /usr/bin/python3 "$JOB_D/ttyjob.py" "$JOB_D/out/m3"
	job_rollout r-job-fds fds
	seen=$(job_reports "$JOB_D/out/m3")
	if job_reports "$JOB_D/out/m3" >/dev/null && ! grep -q 'socket:' "$JOB_D"/out/m3/r.*; then
		t_ok "M3: every run of the gate's job (nobody) under a daemon logged in to a TLS etcd held fds 0-3 only, no socket (rollout exit $RC; $seen)"
	else
		t_not_ok "M3: the gate's job holds fds of the daemon's (rollout exit $RC): $seen"
		tail -n 3 "$JOB_D/h1/log" | sed 's/^/#   /'
	fi
}

# L10 through a gate file: refused by the host, its reason in the rollout
job_l10_gate() {
	[ -n "$JOB_G0" ] || return 0
	job_gate g0 "$JOB_G0" /bin/true
	before=$(tree_hash "$JOB_D/h1/root")
	job_rollout r-job-g0 g0
	reason=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("reason") or "")' "$OUT" 2>&1)
	check "L10: a gate whose user has primary group 0 is refused by the host, which stays byte-identical (exit $RC: $reason)" -- \
		sh -c '[ "$1" -eq 1 ] && echo "$2" | grep -q "gate refused: .*g0.conf: user .*primary group 0" && [ "$3" = "$4" ]' \
		- "$RC" "$reason" "$before" "$(tree_hash "$JOB_D/h1/root")"
}

# L9 through the daemon: the gate's ab killed -9 mid-gate; when the daemon
# sees the gate end, the sleep its job left is killed and the group gone
job_l9_gate() {
	mkdir -m 1777 "$JOB_D/out/l9g"
	job_sleeper l9g "$JOB_D/out/l9g"
	job_gate hold nobody "$JOB_D/l9g.sh"
	job_rollout r-job-hold hold >/dev/null &
	rpid=$!
	if ! wait_until 60 sh -c 'cat "$1"/sleep.* | grep -q .' - "$JOB_D/out/l9g"; then
		wait "$rpid"
		t_not_ok "L9 (gate): the gate's job never started its sleep"; tail -n 3 "$JOB_D/h1/log" | sed 's/^/#   /'
		return 0
	fi
	sleeper=$(cat "$JOB_D"/out/l9g/sleep.* | head -n 1)
	abpid=$(pgrep -P "$JOB_DAEMON" | head -n 1)     # the gate's ab (comm "exe": /proc/self/exe)
	t_defer "job_sleep_cleanup '$sleeper' '$abpid'"
	kill -9 "$abpid"
	wait "$rpid"
	if wait_until 15 job_gone "$sleeper" && wait_until 5 sh -c '[ -z "$(find /sys/fs/cgroup -mindepth 2 -maxdepth 3 -type d -path "*/nodetune-ab/$1-*")" ]' - "$abpid"; then
		t_ok "L9: a gate's ab killed -9: the daemon killed the sleep its job left (pid $sleeper) and removed the group when the gate ended"
	else
		t_not_ok "L9 (gate): the gate's ab (pid $abpid) killed -9: its job's sleep (pid $sleeper) still runs in $(job_groups "$abpid" | tr '\n' ' ')"
	fi
}

if job_need && job_setup; then
	job_h3
	job_l10
	job_l9
	. "$SRCDIR/tests/integration/etcd_lib.sh"
	if job_fleet; then
		job_m3
		job_l10_gate
		job_l9_gate
	fi
fi
