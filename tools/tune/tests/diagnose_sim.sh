#!/bin/bash
# diagnose_sim.sh - mroce-tune diagnose on mroce-sim's per-path counters
# (MROCE_SIM_FLOWS) of the small CI fabric (examples/small32.json, derived
# settings, all-to-all), three ways: as derived (nothing named); one link,
# leaf0-spine1, running at 25G with the thresholds derived for 100G (the
# link must be named); every switch with ECN off, Kmin above the buffer
# (the fabric must be named as not marking); leaf0 hashing on addresses
# only (mroce-sim `switch = leaf0 hash=l3`: leaf0 must be named for
# asymmetric hashing, and only it).  A fifth run, 2% loss on
# leaf2-spine3, is printed but not asserted: it is inside the spurious
# loss of a healthy all-to-all (tools/tune/README.md, diagnose).
#   usage: diagnose_sim.sh MROCE_SIM
set -u
SIM=${1:?usage: diagnose_sim.sh MROCE_SIM}
D=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
FAB=$D/examples/small32.json
python3 - "$D" "$FAB" > "$W/base.txt" <<'PY' || fail "scenario"
import sys
sys.path.insert(0, sys.argv[1])
from mroce_tune import fabric, verify
print(verify.scenario(fabric.load(sys.argv[2]), 1.0)[0], end="")
PY
# The transport is the engine's default (`mroce` in the scenario).
run() { # NAME [scenario lines...]
    local n=$1; shift
    { cat "$W/base.txt"; printf '%s\n' "$@"; } > "$W/$n.txt"
    MROCE_SIM_FLOWS=$W/$n "$SIM" -q -o "$W/out_$n" "$W/$n.txt" > /dev/null || fail "mroce-sim $n"
    echo "== $n"
    python3 "$D/mroce-tune" diagnose "$W/$n.paths.csv" --fabric "$FAB" \
        --target-qdelay 4500ns > "$W/$n.diag"
    echo "rc $?" >> "$W/$n.diag"
    cat "$W/$n.diag"
}
run healthy
run slowlink "fault = 0ms rate leaf0 spine1 25G"
# (each port tier has its own profile, 2:1 core: the switch lines too)
run ecnoff "ecn_kmin = 64M" "ecn_kmax = 64M" \
    "switch = tor-host ecn_kmin=64M ecn_kmax=64M" \
    "switch = tor-spine ecn_kmin=64M ecn_kmax=64M" \
    "switch = spine-tor ecn_kmin=64M ecn_kmax=64M"
run hashl3 "switch = leaf0 hash=l3"
run lossy "fault = 0ms loss leaf2 spine3 0.02"
grep -q "^no link looks mis-tuned" "$W/healthy.diag" || fail "healthy fabric: something named"
grep -qE "^(leaf0>spine1|spine1>leaf0): " "$W/slowlink.diag" || fail "slow link not named"
n=$(grep -cE "^(leaf|spine)[0-9]+>(leaf|spine)[0-9]+: " "$W/slowlink.diag")
o=$(grep -E "^(leaf|spine)[0-9]+>(leaf|spine)[0-9]+: " "$W/slowlink.diag" | grep -cvE "^(leaf0>spine1|spine1>leaf0): ")
[ "$o" = 0 ] || fail "slow link: $o other link(s) named"
grep -q "^fabric: not marking" "$W/ecnoff.diag" || fail "ECN off everywhere not named"
grep -q "^leaf0: asymmetric hashing" "$W/hashl3.diag" || fail "leaf0's L3-only hash not named"
h=$(grep -cE "^[a-z0-9>]+: " "$W/hashl3.diag")
[ "$h" = 1 ] || fail "L3-only hash on leaf0: $h findings, want 1"
echo "PASS: diagnose in mroce-sim (slow link named by $n finding(s), fabric-wide ECN off named, leaf0's L3-only hash named)"
