#!/bin/bash
# testbed_tune.sh - mroce-tune's testbed form read by `mroce-fabric up
# --tune`, end to end in network namespaces: the derived thresholds are the
# ones each link's ECN program is compiled with, per-node and per-port
# overrides (a switch with ECN off, a port with a threshold 10x too high)
# reach only their ends, and a bad key is refused.  Needs root and network
# namespaces (else SKIP, 77).  usage: testbed_tune.sh BUILD/tools
set -u
T=${1:?usage: testbed_tune.sh BUILD/tools}
TUNE=$(cd "$(dirname "$0")/.." && pwd)
export MRF_PREFIX=${MRF_PREFIX:-mrftt-}
F=$T/mroce-fabric
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v clang >/dev/null || { echo "SKIP: needs clang"; exit 77; }
W=$(mktemp -d)
trap '"$F" down >/dev/null 2>&1; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 "$TUNE/mroce-tune" emit testbed "$TUNE/examples/testbed.json" -o "$W/tb.conf" || fail "emit"
# shellcheck disable=SC1090
. "$W/tb.conf"
{ cat "$W/tb.conf"; echo "ECN_s1=0"; echo "MARK_KB_l1_s2=$((MARK_KB * 10))"; } > "$W/mis.conf"
"$F" up --tune "$W/mis.conf" >"$W/up.log" 2>&1
rc=$?
[ $rc = 77 ] && { echo "SKIP: no network namespaces"; exit 77; }
[ $rc = 0 ] || { cat "$W/up.log"; fail "up --tune"; }
obj() { tc -n "${MRF_PREFIX}$1" filter show dev "$2" egress | sed -n 's/.* \(ecn_[0-9_]*\.o\).*/\1/p'; }
bps=500000000
want="ecn_${bps}_${MARK_KB}_${KMAX_KB}_${PMAX_PCT}_${LIMIT_KB}.o"
for end in "h0 l0" "l0 h0" "l0 s0" "s0 l0" "l1 s1" "s3 l1"; do
    # shellcheck disable=SC2086
    got=$(obj $end)
    [ "$got" = "$want" ] || fail "$end: program '$got', want '$want'"
done
for d in l0 l1; do
    [ -z "$(obj s1 $d)" ] || fail "s1/$d marks, but ECN_s1=0"
done
got=$(obj l1 s2)
m10=$((MARK_KB * 10)) kx10=$KMAX_KB
[ "$kx10" -ge "$m10" ] || kx10=$m10   # a Kmax below Kmin: step marking
want10="ecn_${bps}_${m10}_${kx10}_${PMAX_PCT}_${LIMIT_KB}.o"
[ "$got" = "$want10" ] || fail "l1/s2: '$got', want '$want10'"
[ "$(obj l1 s3)" = "$want" ] || fail "l1/s3 took l1/s2's override"
grep -q "^ECN_s1=0$" "/run/mroce-fabric/${MRF_PREFIX%-}/config" || fail "override not in state"
"$F" status --raw | grep -q "^l0-s1 s1>l0 up .* -$" || fail "status: s1 should show no marking program"
echo "BOGUS=1" > "$W/bad.conf"
"$F" up --tune "$W/bad.conf" >"$W/bad.log" 2>&1 && fail "bad key accepted"
grep -q "unknown key 'BOGUS'" "$W/bad.log" || fail "bad key: $(cat "$W/bad.log")"
echo "PASS: testbed form read by mroce-fabric up --tune (thresholds, overrides, bad key)"
