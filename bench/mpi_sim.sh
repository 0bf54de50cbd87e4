#!/bin/sh
# mpi_sim.sh - mroce-sim-mpi against mroce-sim on one scenario: the
# single process is the peer, measured in the same invocation, then one
# run per rank count.  Per run: wall s (whole run, setup included), CPU s
# and max RSS per process (GNU time around each rank), and the summary
# line (rank 0's; identical across runs but for the bracket).  The ranks
# bind to no core, talk over shared memory (btl vader), and the machine
# may be shared: say so with the figures.  Speed-up = wall of one
# process / wall of R ranks; CPU s summed over the ranks.  Each rank count
# runs once per wait mode of WAITS (MROCE_SIM_MPI_WAIT, sim/src/mpi_comm.c:
# "sleep", the default, polls then sleeps; "spin" only polls).  The last
# lines per run: the CPU-time bound on the speed-up (CPU s of one process
# over the busiest rank's: the wall speed-up if every rank had a core of
# its own and waiting were free) and the memory per rank.
# `goal` runs issue 19's two speed goals in one go (<= 13 min on a quiet
# 2-core host): the 128-host all-to-all with 1 process and 2 ranks, then
# the 1,024-host all-to-all (1 MiB per pair) with 2 ranks to completion
# (no single process; stopped after LIMIT_S, default 660 s, if it has
# not finished: its run line then says rc=124 and has no proc lines),
# results under OUT/goal128 and OUT/goal1024.
#   usage: bench/mpi_sim.sh [SCENARIO] [RANKS...]
#          bench/mpi_sim.sh goal
#          (default sim/scenarios/ls128_alltoall.txt, ranks 2;
#           OUT=DIR for the output, default sim-out/mpi;
#           SETS="-s k=v ..." extra mroce-sim options;
#           WAITS="sleep spin" the wait modes, default sleep;
#           SINGLE=0 to skip the single process;
#           LIMIT_S=N to stop each multi-rank run after N s (timeout);
#           MPI_OPTS="..." instead of --oversubscribe, e.g. "" to let
#           Open MPI busy-poll when there are as many cores as ranks)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
out=${OUT:-$root/sim-out/mpi}
if [ "${1:-}" = goal ]; then
    OUT=$out/goal128 SINGLE=1 LIMIT_S='' "$0" \
        "$root/sim/scenarios/ls128_alltoall.txt" 2
    OUT=$out/goal1024 SINGLE=0 LIMIT_S=${LIMIT_S:-660} "$0" \
        "$root/sim/scenarios/a2a1024.txt" 2
    cat "$out/goal128/mpi_sim.txt" "$out/goal1024/mpi_sim.txt" \
        > "$out/mpi_sim.txt"
    exit 0
fi
limit=${LIMIT_S:-}
sc=${1:-$root/sim/scenarios/ls128_alltoall.txt}
[ $# -gt 0 ] && shift
ranks=${*:-2}
sets=${SETS:-}
waits=${WAITS:-sleep}
single=${SINGLE:-1}
mpi_opts=${MPI_OPTS---oversubscribe}
mkdir -p "$build" "$out"
(cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release .. >/dev/null &&
 cmake --build . -j2 --target mroce-sim mroce-sim-mpi >/dev/null)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
res=$out/mpi_sim.txt
: > "$res"
now() { date +%s.%N; }
if [ "$single" = 1 ]; then
    rm -rf "$out/r0"
    t0=$(now)
    # shellcheck disable=SC2086
    /usr/bin/time -f "proc ranks=0 rank=0 maxrss_kb=%M cpu_s=%U sys_s=%S wall_s=%e" \
        "$root/build/sim/mroce-sim" -q -o "$out/r0" -s transports=mroce $sets \
        "$sc" >> "$res" 2>&1
    t1=$(now)
    echo "run ranks=0 wall_s=$(echo "$t1 - $t0" | bc)" >> "$res"
fi
for r in $ranks; do
    for w in $waits; do
        rm -rf "$out/r$r$w"
        t0=$(now)
        rc=0
        # the rank number expands in each rank's shell, not here
        # shellcheck disable=SC2086,SC2016
        MROCE_SIM_MPI_WAIT=$w ${limit:+timeout -s INT "$limit"} \
            mpirun $mpi_opts --bind-to none --mca pml ob1 \
            --mca btl self,vader -x MROCE_SIM_MPI_WAIT -n "$r" \
            sh -c '/usr/bin/time -f "proc ranks='"$r-$w"' rank=$OMPI_COMM_WORLD_RANK maxrss_kb=%M cpu_s=%U sys_s=%S wall_s=%e" "$@"' \
            sh "$root/build/sim/mroce-sim-mpi" -q -o "$out/r$r$w" \
            -s transports=mroce $sets "$sc" >> "$res" 2>&1 || rc=$?
        t1=$(now)
        echo "run ranks=$r-$w wall_s=$(echo "$t1 - $t0" | bc) mpi_opts=$mpi_opts rc=$rc" >> "$res"
        if [ "$single" = 1 ]; then
            for a in "$out"/r0/*.csv; do
                f=$(basename "$a")
                if [ "$f" = summary.csv ]; then
                    # wall and CPU columns differ by nature
                    cut -d, -f1-28,33- "$a" > "$out/a.csv"
                    cut -d, -f1-28,33- "$out/r$r$w/$f" > "$out/b.csv"
                else
                    cp "$a" "$out/a.csv"
                    cp "$out/r$r$w/$f" "$out/b.csv" 2>/dev/null || : > "$out/b.csv"
                fi
                cmp -s "$out/a.csv" "$out/b.csv" &&
                    echo "same ranks=$r-$w $f" >> "$res" ||
                    echo "DIFFERS ranks=$r-$w $f" >> "$res"
            done
        fi
    done
done
# the CPU-time bound and memory per rank of each run
awk '$1 == "proc" {
        split($2, a, "="); k = a[2]
        split($4, m, "="); split($5, u, "="); split($6, y, "=")
        c = u[2] + y[2]
        if (!(k in mx) || c > mx[k]) mx[k] = c
        sum[k] += c
        if (!(k in mm) || m[2] > mm[k]) mm[k] = m[2]
        if (!(k in seen)) { order[++n] = k; seen[k] = 1 }
    }
    END {
        for (i = 1; i <= n; i++) {
            k = order[i]
            printf "bound ranks=%s cpu_s_sum=%.1f cpu_s_max_rank=%.1f max_rss_mb=%.0f", \
                k, sum[k], mx[k], mm[k] / 1024
            if ("0" in mx && k != "0")
                printf " cpu_bound_speedup=%.2f", mx["0"] / mx[k]
            printf "\n"
        }
    }' "$res" > "$out/bound.txt"
cat "$out/bound.txt" >> "$res"
cat "$res"
