#!/bin/sh
# mpi_sim.sh - mroce-sim-mpi against mroce-sim on one scenario: the
# single process is the peer, measured in the same invocation, then one
# run per rank count.  Per run: wall s (whole run, setup included), CPU s
# and max RSS per process (GNU time around each rank), and the summary
# line (rank 0's; identical across runs but for the bracket).  The ranks
# bind to no core, talk over shared memory (btl vader), and the machine
# may be shared: say so with the figures.  Speed-up = wall of one
# process / wall of R ranks; CPU s summed over the ranks.
#   usage: bench/mpi_sim.sh [SCENARIO] [RANKS...]
#          (default sim/scenarios/ls128_alltoall.txt, ranks 2;
#           OUT=DIR for the output, default sim-out/mpi;
#           SETS="-s k=v ..." extra mroce-sim options;
#           MPI_OPTS="..." instead of --oversubscribe, e.g. "" to let
#           Open MPI busy-poll when there are as many cores as ranks)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
out=${OUT:-$root/sim-out/mpi}
sc=${1:-$root/sim/scenarios/ls128_alltoall.txt}
[ $# -gt 0 ] && shift
ranks=${*:-2}
sets=${SETS:-}
mpi_opts=${MPI_OPTS---oversubscribe}
mkdir -p "$build" "$out"
(cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release .. >/dev/null &&
 cmake --build . -j2 --target mroce-sim mroce-sim-mpi >/dev/null)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
res=$out/mpi_sim.txt
: > "$res"
now() { date +%s.%N; }
t0=$(now)
# shellcheck disable=SC2086
/usr/bin/time -f "proc ranks=0 rank=0 maxrss_kb=%M cpu_s=%U sys_s=%S wall_s=%e" \
    "$root/build/sim/mroce-sim" -q -o "$out/r0" -s transports=mroce $sets \
    "$sc" >> "$res" 2>&1
t1=$(now)
echo "run ranks=0 wall_s=$(echo "$t1 - $t0" | bc)" >> "$res"
for r in $ranks; do
    t0=$(now)
    # the rank number expands in each rank's shell, not here
    # shellcheck disable=SC2086,SC2016
    mpirun $mpi_opts --bind-to none --mca pml ob1 --mca btl self,vader \
        -n "$r" sh -c '/usr/bin/time -f "proc ranks='"$r"' rank=$OMPI_COMM_WORLD_RANK maxrss_kb=%M cpu_s=%U sys_s=%S wall_s=%e" "$@"' \
        sh "$root/build/sim/mroce-sim-mpi" -q -o "$out/r$r" \
        -s transports=mroce $sets "$sc" >> "$res" 2>&1
    t1=$(now)
    echo "run ranks=$r wall_s=$(echo "$t1 - $t0" | bc) mpi_opts=$mpi_opts" >> "$res"
done
cat "$res"
