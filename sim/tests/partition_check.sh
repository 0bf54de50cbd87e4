#!/bin/sh
# partition_check.sh - ctest sim_partition: the partition analysis
# (MROCE_SIM_PARTITION, sim/src/partition.c) on a 32-host leaf-spine
# all-to-all.  Checks that it leaves the run itself unchanged (the same
# summary line and per-link CSV as a run without it), that the lookahead
# is the fabric's propagation delay (1 us, then 3 us), that a 2-rank split
# of two ToR groups is balanced (each rank within 10% of half the events),
# and that the speed-up bound lies in (1, ranks].  Semantics only, no
# timing.
#   usage: partition_check.sh MROCE_SIM SCENARIO
set -eu
sim=$1
scen=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "partition_check: FAIL: $*" >&2; exit 1; }
small="-s hosts=32 -s transports=mroce -s name=part_check"
wl="workload=alltoall bytes=128K msg=64K active=8"
# shellcheck disable=SC2086
"$sim" -q -o "$out/plain" $small -s "$wl" "$scen" > "$out/plain.txt" ||
    fail "mroce-sim exited $?"
for r in 2 4; do
    # shellcheck disable=SC2086
    MROCE_SIM_PARTITION=$r "$sim" -q -o "$out/p$r" $small -s "$wl" "$scen" \
        > "$out/p$r.txt" || fail "mroce-sim (ranks $r) exited $?"
    grep -v '^partition ' "$out/p$r.txt" | sed 's/\[.*//' > "$out/a"
    sed 's/\[.*//' "$out/plain.txt" > "$out/b"
    cmp -s "$out/a" "$out/b" ||
        fail "ranks $r: summary differs: $(cat "$out/a") vs $(cat "$out/b")"
    for f in "$out"/plain/links_*.csv "$out"/plain/mct_*.csv; do
        cmp -s "$f" "$out/p$r/$(basename "$f")" ||
            fail "ranks $r: $(basename "$f") differs"
    done
    line=$(grep "^partition ranks=$r " "$out/p$r.txt") ||
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
MROCE_SIM_PARTITION=2 "$sim" -q -o "$out/d3" $small -s "$wl" -s delay=3us \
    "$scen" > "$out/d3.txt" || fail "mroce-sim (delay 3us) exited $?"
grep -q '^partition ranks=2 lookahead_ns=3000.000 ' "$out/d3.txt" ||
    fail "delay 3us: $(grep '^partition' "$out/d3.txt")"
MROCE_SIM_PARTITION=0 "$sim" -q -o "$out/z" $small -s "$wl" "$scen" \
    > /dev/null 2>&1 && fail "0 ranks accepted"
echo "partition_check: OK"
