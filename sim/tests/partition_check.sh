#!/bin/sh
# partition_check.sh - ctest sim_partition: partitioned runs
# (MROCE_SIM_PARTITION=R, sim/src/partition.c: R event queues run a
# window of the smallest link delay at a time, one after the other) on a
# 32-host leaf-spine all-to-all, for MetaRoCE and both baselines (PFC
# pauses cross partitions), and once with a link failure and reroute.
# Checks that 1, 2 and 4 partitions give bit-identical results: the
# summary line, summary.csv (but for its wall and CPU columns) and every
# per-link, per-tier and message-completion CSV, the same as a run
# without partitions.  Also that the lookahead is the fabric's
# propagation delay (1 us, then 3 us), that a 2-rank split of the ToR
# groups is balanced (each rank within 10% of half the events), and that
# the speed-up bound lies in (1, ranks].  Semantics only, no timing.
#   usage: partition_check.sh MROCE_SIM SCENARIO
set -eu
sim=$1
scen=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "partition_check: FAIL: $*" >&2; exit 1; }
small="-s hosts=32 -s name=part_check"
wl="workload=alltoall bytes=128K msg=64K active=8"
. "$(dirname "$0")/same_run.sh"
for mode in plain fault; do
    extra=""
    [ "$mode" = fault ] &&
        extra="fault=60us down leaf0 spine0 detect=20us"
    # shellcheck disable=SC2086
    "$sim" -q -o "$out/$mode" $small -s "$wl" ${extra:+-s "$extra"} \
        "$scen" > "$out/$mode.txt" || fail "mroce-sim exited $?"
    for r in 1 2 4; do
        # shellcheck disable=SC2086
        MROCE_SIM_PARTITION=$r "$sim" -q -o "$out/$mode$r" $small -s "$wl" \
            ${extra:+-s "$extra"} "$scen" > "$out/$mode$r.txt" ||
            fail "mroce-sim ($mode, ranks $r) exited $?"
        same "$out/$mode" "$out/$mode.txt" "$out/$mode$r" "$out/$mode$r.txt" \
            "$mode, ranks $r" 7
    done
done
grep -q 'drops [1-9]' "$out/fault.txt" || fail "the failure dropped nothing"
for r in 2 4; do
    line=$(grep "^partition ranks=$r " "$out/plain$r.txt") ||
        fail "ranks $r: no partition line"
    echo "$line" | grep -q ' lookahead_ns=1000.000 ' ||
        fail "ranks $r: lookahead is not 1 us: $line"
    echo "$line" | awk -v r="$r" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (v["speedup_bound"] <= 1 || v["speedup_bound"] > r + 0) exit 1
        if (v["cross_arrivals"] <= 0 || v["windows"] <= 0) exit 1
        if (r == 2 && (v["rank_events_max"] > 0.55 * v["events"] ||
                       v["rank_events_min"] < 0.45 * v["events"])) exit 1
    }' || fail "ranks $r: out of range: $line"
done
# shellcheck disable=SC2086
MROCE_SIM_PARTITION=2 "$sim" -q -o "$out/d3" $small -s transports=mroce \
    -s "$wl" -s delay=3us "$scen" > "$out/d3.txt" || fail "mroce-sim (delay 3us) exited $?"
grep -q '^partition ranks=2 lookahead_ns=3000.000 ' "$out/d3.txt" ||
    fail "delay 3us: $(grep '^partition' "$out/d3.txt")"
# shellcheck disable=SC2086
MROCE_SIM_PARTITION=0 "$sim" -q -o "$out/z" $small -s transports=mroce \
    -s "$wl" "$scen" \
    > /dev/null 2>&1 && fail "0 ranks accepted"
echo "partition_check: OK"
