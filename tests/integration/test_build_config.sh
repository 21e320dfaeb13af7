#!/bin/sh
# SPDX-License-Identifier: MIT
# host: none
# The build records what it found (issue 41, item 3).  make writes
# $(BUILD)/config.mk (MPI, CUDA and nvcc, the Slurm plugin, CC, the flags,
# SAN), rewritten only when it changes, and says in one line what it found;
# the harness and the Slurm plugin depend on that file.  So a harness built
# before libopenmpi-dev arrived is rebuilt with MPI by the next make, without
# make clean.  MPI is hidden by a pkg-config first on make's PATH that has no
# ompi-c (nothing of the system is touched).  Only the harness is built,
# without CUDA (NVCC=), in a BUILD of the test's own; in the ASan pass with
# SAN=1, as that pass builds.
. "$(dirname "$0")/lib.sh"
t_plan 7

SAN_ARG=${SANITIZED:+SAN=1}
NO_CUDA="NVCC= given"
[ -z "$SAN_ARG" ] || NO_CUDA="not under SAN"
# the make that runs this test must not pass its BUILD=, SAN= or jobserver on
unset MAKEFLAGS MAKELEVEL MFLAGS
PC=$(command -v pkg-config)
if [ -z "$PC" ] || ! pkg-config --exists ompi-c; then
	t_need libopenmpi-dev "a harness built with MPI hidden, then with it visible"
	t_rest
fi
B=$T_TMP/b
H=$B/nodetune-harness
mkdir "$T_TMP/hide"
cat >"$T_TMP/hide/pkg-config" <<PC
#!/bin/sh
# pkg-config, but ompi-c is not there (MPI hidden from this test's make)
for a in "\$@"; do [ "\$a" = ompi-c ] && exit 1; done
exec $PC "\$@"
PC
chmod 755 "$T_TMP/hide/pkg-config"
hmake() {
	# shellcheck disable=SC2086
	run env "$@" make --no-print-directory -j2 BUILD="$B" NVCC= $SAN_ARG INSTALL_DEPS=true "$H"
}

# ---- MPI hidden: a harness without it, and the record says so -------------
hmake PATH="$T_TMP/hide:$PATH"
check "make with MPI hidden: exit 0, one line 'config: MPI no (...), CUDA no ($NO_CUDA), Slurm plugin ...'" -- sh -c \
	"[ $RC -eq 0 ] && [ \$(grep -c '^config: ' '$OUT') -eq 1 ] && grep -q '^config: MPI no (pkg-config has no ompi-c: libopenmpi-dev), CUDA no ($NO_CUDA), Slurm plugin ' '$OUT'"
check "$B/config.mk: HAVE_MPI empty, HAVE_CUDA empty, CC and CFLAGS recorded" -- sh -c \
	"grep -qx 'HAVE_MPI = ' '$B/config.mk' && grep -qx 'HAVE_CUDA = ' '$B/config.mk' && grep -q '^CC = .' '$B/config.mk' && grep -q '^CFLAGS = ' '$B/config.mk'"
run "$H" --version
check "nodetune-harness --version: mpi: no (...), cuda: no (...)" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^mpi: no (' '$OUT' && grep -q '^cuda: no (' '$OUT'"

# ---- MPI visible, the same BUILD, no make clean ----------------------------
hmake PATH="$PATH"
check "make with MPI visible: 'config: MPI yes, ... (changed: ...)', the harness compiled again" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^config: MPI yes, CUDA no ($NO_CUDA), Slurm plugin .* (changed: the harness and the Slurm plugin are rebuilt)\$' '$OUT' && grep -q -- '-DHAVE_MPI .*-c harness/comm.c' '$OUT'"
check "$B/config.mk: HAVE_MPI = 1" -- grep -qx 'HAVE_MPI = 1' "$B/config.mk"
run "$H" --version
check "nodetune-harness --version: mpi: yes (MPI ..., Open MPI ...)" -- sh -c \
	"[ $RC -eq 0 ] && grep -q '^mpi: yes (MPI [0-9.]*, Open MPI ' '$OUT'"

# ---- nothing changed: the record and the harness are left alone ------------
before=$(stat -c %Y.%y "$B/config.mk" "$H" | tr '\n' ' ')
hmake PATH="$PATH"
check "make again: only the config line, config.mk and the harness untouched" -- sh -c \
	"[ $RC -eq 0 ] && [ \$(wc -l <'$OUT') -eq 1 ] && grep -q '^config: MPI yes, ' '$OUT' && ! grep -q changed '$OUT' &&
	 [ \"\$(stat -c %Y.%y '$B/config.mk' '$H' | tr '\n' ' ')\" = '$before' ]"
t_done
