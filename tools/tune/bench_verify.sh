#!/bin/bash
# bench_verify.sh - mroce-tune --verify on the 128-host headline fabrics
# (all-to-all and ring all-reduce, 1 MiB per port), the all-to-all on a
# deep-buffer (16 MiB) and a shallow-buffer (256 KiB) variant, and on a
# mixed-vendor fabric (leaves and spines differing in buffer, marking and
# hash): each run sweeps the ECN thresholds x0.25..x4 around the derived
# point and prints its distance from the best found, averaged over SEEDS
# seeds with the paired 95% interval (goal: 2% in efficiency and p99 MCT).
# A benchmark, not a test: 18 runs per fabric with three seeds (their CPU
# time: bench/LOG.md, mroce-tune sections).
#   usage: tools/tune/bench_verify.sh [MROCE_SIM] [SEEDS] [FABRIC...]
#   (-j from $JOBS; $SCALES the grid, default x0.25..x4, e.g. SCALES=0.25,4
#   for the extreme points alone; NODEF=1 skips the simulator-defaults run;
#   fabrics are names in examples/, default all five headline ones and
#   mixed_vendor)
set -u
D=$(cd "$(dirname "$0")" && pwd)
SIM=${1:-$D/../../build/sim/mroce-sim}
SEEDS=${2:-3}
shift 2 2>/dev/null || shift $#
FABS=${*:-ls128 ls128_allreduce ls128_allreduce_random ls128_deep ls128_shallow mixed_vendor}
for f in $FABS; do
    python3 "$D/mroce-tune" verify "$D/examples/$f.json" --sim "$SIM" \
        --seeds "$SEEDS" -j "${JOBS:-1}" --scales "${SCALES:-0.25,0.5,1,2,4}" \
        ${NODEF:+--no-defaults}
    echo
done
