# lib.sh - shared by the mroce-fabric scenario scripts (sourced).
# Usage in a scenario: . lib.sh "$1" (the build's tools directory).
# Exit codes: 0 pass, 1 fail, 77 skip (not root, no netns, tool missing).
set -u
export LC_ALL=C
TOOLS=$(cd "${1:-$(dirname "$0")/../../build/tools}" 2>/dev/null && pwd) || { echo "SKIP: no tools dir"; exit 77; }
F=$TOOLS/mroce-fabric
FLOW=$TOOLS/mroce-fabric-flow
# Each scenario uses its own namespace prefix, so a crashed run never
# collides with the next one (and `MRF_PREFIX=... mroce-fabric down` cleans it).
export MRF_PREFIX=${MRF_PREFIX:-mrf-$(basename "$0" .sh | cut -c1-4)-}
OUT=$(mktemp -d /tmp/mrf-scenario.XXXXXX)
FAILED=0

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
[ -x "$FLOW" ] || skip "mroce-fabric-flow not built"
command -v ip >/dev/null && command -v tc >/dev/null || skip "iproute2 missing"
ip netns add "${MRF_PREFIX}probe" 2>/dev/null || skip "cannot create network namespaces"
ip netns del "${MRF_PREFIX}probe"

# One fabric scenario at a time on this machine (they measure bandwidth).
exec 9>/run/mroce-fabric.lock
flock -w 120 9 || { echo "FAIL: could not get /run/mroce-fabric.lock"; exit 1; }

cleanup() { "$F" down >/dev/null 2>&1; [ -n "${MRF_KEEP_OUT:-}" ] && echo "outputs kept in $OUT" || rm -rf "$OUT"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

check() { # check COND_DESCRIPTION  (arithmetic already evaluated by caller: 0/1)
    if [ "$2" = 1 ]; then echo "  PASS: $1"; else echo "  FAIL: $1"; FAILED=1; fi
}

# key=value field of a result line
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1" | head -1; }

# tx bytes of every leaf->spine direction from leaf L, space separated
spine_bytes() { # LEAF
    "$F" status --raw | awk -v l="l$1" '$2 ~ "^"l">s" {printf "%s ", $5}'
}

# start_server HOST PORT LABEL -> background, output in $OUT/srv-LABEL
start_server() {
    timeout 30 "$F" exec "$1" "$FLOW" server -B "$("$F" addr "$1")" -p "$2" --timeout 15 \
        --label "$3" >"$OUT/srv-$3" 2>&1 &
}
# run_client HOST SERVER_HOST PORT LABEL ARGS... -> output in $OUT/cli-LABEL
run_client() {
    local h=$1 s=$2 p=$3 l=$4; shift 4
    timeout 25 "$F" exec "$h" "$FLOW" client "$("$F" addr "$s")" -B "$("$F" addr "$h")" \
        -p "$p" --label "$l" --timeout 15 "$@" >"$OUT/cli-$l" 2>&1
}
result() { grep "^result role=client" "$OUT/cli-$1" | head -1; }
sresult() { grep "^result role=server" "$OUT/srv-$1" | head -1; }
