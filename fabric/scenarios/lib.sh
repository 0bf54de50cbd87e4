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

# MRF_DATAPATH=dpdk: the hosts' endpoints run libmroce's DPDK datapath
# over net_af_packet on their leaf link instead of kernel sockets
# (fabric/README.md).  dp_env HOST [PEER_HOST] prints the environment for
# HOST's process: the vdev on its one interface (qdisc_bypass=0, so the
# link's rate limit applies as it does to sockets) and, for a peer under
# another leaf, the leaf's MAC as that peer's static neighbour (the link
# resolves on-link addresses only).  It also takes the kernel's address
# off HOST's interface: the DPDK link answers ARP for it, and the kernel,
# which sees the same frames, would answer each with ICMP port
# unreachable.
dp_env() {
    [ "${MRF_DATAPATH:-socket}" = dpdk ] || { echo "MROCE_DATAPATH=socket"; return; }
    local ns="${MRF_PREFIX}$1" dev leaf mac env
    dev=$(ip -n "$ns" -o link show | sed -n 's/^[0-9]*: \(l[0-9]*\)@.*/\1/p' | head -1)
    ip -n "$ns" addr flush dev "$dev" scope global 2>/dev/null
    env="MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV=net_af_packet,iface=$dev,qdisc_bypass=0"
    if [ -n "${2:-}" ]; then
        mac=$(ip -n "${MRF_PREFIX}$dev" -o link show "$1" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
        env="$env MROCE_DPDK_NEIGH=$("$F" addr "$2")=$mac"
    fi
    echo "$env"
}

# Seconds a flow may take (MRF_TIMEOUT; the DPDK datapath on a loaded
# host may need more, fabric/README.md).
TMO=${MRF_TIMEOUT:-15}

# start_server HOST PORT LABEL [ARGS...] -> background, output in $OUT/srv-LABEL
start_server() {
    local h=$1 p=$2 l=$3; shift 3
    # shellcheck disable=SC2046
    timeout $((TMO + 15)) "$F" exec "$h" env $(dp_env "$h") "$FLOW" server -B "$("$F" addr "$h")" \
        -p "$p" --timeout $TMO --label "$l" "$@" >"$OUT/srv-$l" 2>&1 &
}
# run_client HOST SERVER_HOST PORT LABEL ARGS... -> output in $OUT/cli-LABEL
run_client() {
    local h=$1 s=$2 p=$3 l=$4; shift 4
    # shellcheck disable=SC2046
    timeout $((TMO + 10)) "$F" exec "$h" env $(dp_env "$h" "$s") "$FLOW" client "$("$F" addr "$s")" \
        -B "$("$F" addr "$h")" -p "$p" --label "$l" --timeout $TMO "$@" >"$OUT/cli-$l" 2>&1
}
result() { grep "^result role=client" "$OUT/cli-$1" | head -1; }
sresult() { grep "^result role=server" "$OUT/srv-$1" | head -1; }
