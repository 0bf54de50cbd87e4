#!/bin/sh
# partition_sim.sh - what a parallel, window-synchronised mroce-sim could
# gain on a scenario: for each rank count R the fabric is partitioned
# (sim/src/partition.c), the run executes the partitions in turn in one
# process, and every event is charged to the rank that runs it (the
# results are those of the plain run).  Reported per R: lookahead, cut
# links, windows (barriers), events per window, arrivals that cross ranks,
# the busiest and idlest rank's events and the speed-up bound
# (events / critical path of the windows).  The run without a partition
# is the peer measured in the same invocation: CPU s, wall s and max RSS
# of each run show what the partitioned execution costs.  The bound is an
# upper limit for an MPI run, with free barriers; bench/mpi_sim.sh
# measures mroce-sim-mpi itself.
#   usage: bench/partition_sim.sh [SCENARIO] [RANKS...]
#          (default sim/scenarios/ls128_alltoall.txt, ranks 2 4 8;
#           OUT=DIR for the output, default sim-out/partition)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
out=${OUT:-$root/sim-out/partition}
sc=${1:-$root/sim/scenarios/ls128_alltoall.txt}
[ $# -gt 0 ] && shift
ranks=${*:-2 4 8}
mkdir -p "$build" "$out"
(cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release .. >/dev/null &&
 cmake --build . -j2 --target mroce-sim >/dev/null)
sim=$build/sim/mroce-sim
res=$out/partition_sim.txt
: > "$res"
run() { # R (0: no partition)
    if [ "$1" = 0 ]; then
        /usr/bin/time -f "time ranks=0 maxrss_kb=%M cpu_s=%U wall_s=%e" \
            "$sim" -q -o "$out/r0" -s transports=mroce "$sc" >> "$res" 2>&1
    else
        MROCE_SIM_PARTITION=$1 /usr/bin/time \
            -f "time ranks=$1 maxrss_kb=%M cpu_s=%U wall_s=%e" \
            "$sim" -q -o "$out/r$1" -s transports=mroce "$sc" >> "$res" 2>&1
    fi
}
run 0
for r in $ranks; do run "$r"; done
cat "$res"
