#!/bin/bash
# bench_verify.sh - mroce-tune --verify on the 128-host headline fabrics
# (all-to-all and ring all-reduce, 1 MiB per port) and the all-to-all on a
# deep-buffer (16 MiB) and a shallow-buffer (256 KiB) variant: each run
# sweeps the ECN thresholds x0.25..x4 around the derived point and prints
# its distance from the best found (goal: 2% in efficiency and p99 MCT).
# A benchmark, not a test: 18 runs per fabric with the default three
# seeds, about 25 minutes per fabric on one core.
#   usage: tools/tune/bench_verify.sh [MROCE_SIM] [SEEDS]   (-j from $JOBS)
set -u
D=$(cd "$(dirname "$0")" && pwd)
SIM=${1:-$D/../../build/sim/mroce-sim}
SEEDS=${2:-3}
for f in ls128 ls128_allreduce ls128_allreduce_random ls128_deep ls128_shallow; do
    python3 "$D/mroce-tune" verify "$D/examples/$f.json" --sim "$SIM" \
        --seeds "$SEEDS" -j "${JOBS:-1}"
    echo
done
