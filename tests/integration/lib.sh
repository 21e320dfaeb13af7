# lib.sh — helpers shared by the integration tests (sourced).
#
#   NODETUNE   the binary under test (set by `make integration`)
#   SRCDIR     the repository root; tests run from there
#   SHARED     ../shared/topologies when it exists
#
# Each check prints "ok N - what" or "not ok N - what" plus the evidence;
# t_done exits 1 when a check failed, 77 when everything was skipped.

set -u
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
cd "$SRCDIR" || exit 1
: "${NODETUNE:=$SRCDIR/build/nodetune}"
SHARED=../shared/topologies
T_N=0 T_FAIL=0 T_SKIP=0
T_TMP=$(mktemp -d /tmp/nodetune-it-XXXXXX)
trap 'rm -rf "$T_TMP"' EXIT

t_ok() { T_N=$((T_N + 1)); echo "ok $T_N - $*"; }
t_not_ok() { T_N=$((T_N + 1)); T_FAIL=$((T_FAIL + 1)); echo "not ok $T_N - $*"; }
t_skip() { T_N=$((T_N + 1)); T_SKIP=$((T_SKIP + 1)); echo "ok $T_N - # SKIP $*"; }

# run CMD...: sets RC, OUT (stdout file), ERR (stderr file)
run() {
	OUT=$T_TMP/out ERR=$T_TMP/err
	"$@" >"$OUT" 2>"$ERR"
	RC=$?
}

# expect_fail CODE PATTERN DESC -- CMD...: exit status CODE, exactly one line
# on stderr, matching the grep -E PATTERN, nothing on stdout.
expect_fail() {
	code=$1 pattern=$2 desc=$3
	shift 4
	run "$@"
	lines=$(wc -l <"$ERR")
	if [ "$RC" -eq "$code" ] && [ "$lines" -eq 1 ] && grep -Eq -- "$pattern" "$ERR" && [ ! -s "$OUT" ]; then
		t_ok "$desc (exit $RC: $(cat "$ERR"))"
	else
		t_not_ok "$desc: want exit $code and one stderr line matching /$pattern/"
		echo "#   got exit $RC, $lines stderr line(s):"; sed 's/^/#   /' "$ERR" | head -5
		[ -s "$OUT" ] && { echo "#   and stdout:"; head -3 "$OUT" | sed 's/^/#   /'; }
	fi
}

# check DESC -- CMD...: passes when CMD succeeds
check() {
	desc=$1
	shift 2
	if "$@" >/dev/null; then t_ok "$desc"; else t_not_ok "$desc"; fi
}

# tree_hash DIR: one hash of every file's path, mode and content
tree_hash() {
	(cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum; find . -printf '%p %m\n' | sort) | sha256sum | cut -d' ' -f1
}

t_done() {
	echo "# $T_N checks, $T_FAIL failed, $T_SKIP skipped"
	[ "$T_FAIL" -eq 0 ] || exit 1
	[ "$T_SKIP" -lt "$T_N" ] || exit 77
	exit 0
}
