#!/bin/sh
# perm_sim.sh - the 1,024-host permutation of issue 18 in mroce-sim
# (sim/scenarios/perm1024.txt: 32 x 32 leaf-spine, 100G, 1 us links, one
# 2,000,000-byte flow per host to a random single cycle), the default
# transport (per-path windows and the receiver's rate hint, CC-20..29) against
# mroce_nohint (per-path windows only) and mroce_classic (one window per
# connection, no hints) in the same run.
# Prints per transport the flow completion times (each flow is one
# message, so FCT = the message completion time of summary.csv): max,
# p50, p99, with the ideal; ECN marks, retransmitted packets and drops.
# Usage: bench/perm_sim.sh [SEED]   (OUT=dir for the outputs; extra
# mroce-sim arguments in SIM_ARGS, e.g. SIM_ARGS="-s qp_npaths=64"; BUILD=dir
# with sim/mroce-sim, default build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/sim-out/perm}
seed=${1:-1}
mkdir -p "$build" "$out"
if [ ! -x "$build/sim/mroce-sim" ]; then
    (cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release "$root" >/dev/null &&
     make -j2 mroce-sim >/dev/null)
fi
rm -f "$out/summary.csv"
# shellcheck disable=SC2086
"$build/sim/mroce-sim" -q -o "$out" -s seed="$seed" \
    -s transports=mroce,mroce_nohint,mroce_classic ${SIM_ARGS:-} \
    "$root/sim/scenarios/perm1024.txt" >/dev/null
python3 - "$out/summary.csv" <<'PY'
import csv, sys
print("%-14s %9s %9s %9s %9s %7s %6s %6s" % ("transport", "max_us", "p50_us",
      "p99_us", "ideal_us", "ecn", "retx", "drops"))
for r in csv.DictReader(open(sys.argv[1])):
    drops = sum(int(r[k]) for k in ("drops_queue", "drops_fail", "drops_loss",
                                    "drops_noroute"))
    print("%-14s %9.1f %9.1f %9.1f %9.1f %7s %6s %6d" % (
        r["transport"], float(r["mct_max_us"]), float(r["mct_p50_us"]),
        float(r["mct_p99_us"]), float(r["ideal_us"]), r["ecn_marks"],
        r["retx_pkts"], drops))
PY
