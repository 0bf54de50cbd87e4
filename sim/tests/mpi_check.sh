#!/bin/sh
# mpi_check.sh - ctest sim_mpi: mroce-sim-mpi (sim/src/dist.c) over 1, 2
# and 4 MPI ranks, oversubscribed, on a 32-host leaf-spine all-to-all
# with MetaRoCE (and over 4 with a spine cable failing: reroute), gives
# bit-identical results to mroce-sim in one process: the summary line,
# summary.csv but for its wall and CPU columns, and the per-link, per-tier
# and message-completion CSVs.  Also that the baseline is refused over
# several ranks with a message.  Semantics only, no timing.
#   usage: mpi_check.sh MROCE_SIM MROCE_SIM_MPI MPIRUN SCENARIO
set -eu
sim=$1
simmpi=$2
mpirun=${3:-mpirun}
scen=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "mpi_check: FAIL: $*" >&2; exit 1; }
# Open MPI refuses root unless told twice
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { # RANKS ARGS...
    n=$1
    shift
    timeout 120 "$mpirun" --oversubscribe --bind-to none --mca pml ob1 \
        --mca btl self,vader -n "$n" "$simmpi" "$@"
}
small="-s hosts=32 -s name=mpi_check -s transports=mroce"
wl="workload=alltoall bytes=64K msg=32K active=8"
. "$(dirname "$0")/same_run.sh"
for mode in plain fault; do
    extra=""
    [ "$mode" = fault ] && extra="fault=40us down leaf0 spine0 detect=10us"
    # shellcheck disable=SC2086
    "$sim" -q -o "$out/$mode" $small -s "$wl" ${extra:+-s "$extra"} \
        "$scen" > "$out/$mode.txt" || fail "mroce-sim exited $?"
    ranks="1 2 4"
    [ "$mode" = fault ] && ranks=4
    for r in $ranks; do
        # shellcheck disable=SC2086
        mpi "$r" -q -o "$out/$mode$r" $small -s "$wl" ${extra:+-s "$extra"} \
            "$scen" > "$out/$mode$r.txt" ||
            fail "mroce-sim-mpi ($mode, $r ranks) exited $?"
        same "$out/$mode" "$out/$mode.txt" "$out/$mode$r" "$out/$mode$r.txt" \
            "$mode, $r ranks" 4
    done
done
grep -q 'complete' "$out/plain.txt" || fail "the run did not complete"
grep -q 'drops [1-9]' "$out/fault.txt" || fail "the failure dropped nothing"
mpi 2 -q -o "$out/roce" -s hosts=32 -s transports=roce -s "$wl" "$scen" \
    > /dev/null 2> "$out/roce.err" && fail "the baseline was accepted"
grep -q 'only MetaRoCE' "$out/roce.err" ||
    fail "no message for the baseline: $(cat "$out/roce.err")"
echo "mpi_check: OK"
