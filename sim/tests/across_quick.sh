#!/bin/sh
# across_quick.sh - ctest sim_across_quick: runs sim/scenarios/across/
# quick.txt (two data centres, one 0.5 ms long-haul link) through the
# mroce-sim command line and checks the output: the ring all-reduce
# spanning both DCs completes with MetaRoCE, the RoCEv2 model and PFC;
# the per-link CSV has both long-haul legs (tier spine-wan) and each
# carried packets; the pfc line gives the long-haul headroom
# 2 x 0.5 ms x 100 Gbit/s + xoff; the fair line covers both flows of a
# local / remote pair into one host with a Jain index in (0.5, 1]; a READ
# fan-out from 12 servers completes every READ.  Semantics only, no timing.
#   usage: across_quick.sh MROCE_SIM SCENARIO_DIR
set -eu
sim=$1
dir=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "across_quick: FAIL: $*" >&2; exit 1; }
"$sim" -q -o "$out" "$dir/quick.txt" > "$out/ring.txt" ||
    fail "mroce-sim exited $?"
for tp in mroce roce roce_pfc; do
    grep -q "^across_quick  *$tp .* qperr 0  complete" "$out/ring.txt" ||
        fail "ring/$tp did not complete: $(cat "$out/ring.txt")"
done
# the long haul: one cable per DC to the WAN node, both carried the ring
n=$(grep -c ',spine-wan,' "$out/links_across_quick_mroce.csv") || true
[ "$n" = 2 ] || fail "expected 2 spine-wan links, got $n"
awk -F, '$2 == "spine-wan" && $3 + 0 == 0 { bad = 1 } END { exit bad }' \
    "$out/links_across_quick_mroce.csv" || fail "a long-haul leg carried nothing"
grep -q '^pfc scen=across_quick tp=roce_pfc .* lh_leg_us=500.0 lh_headroom_2bdp_bytes=12762144$' \
    "$out/ring.txt" || fail "pfc headroom line: $(grep '^pfc' "$out/ring.txt")"
"$sim" -q -o "$out" -s name=across_quick_fair -s transports=mroce \
    -s "workload=flows src=1 dst=0 bytes=32M msg=256K window=64" \
    -s "workload=flows src=8 dst=0 bytes=32M msg=256K window=64" \
    "$dir/quick.txt" > "$out/fair.txt" || fail "fair: mroce-sim exited $?"
line=$(grep '^fair scen=across_quick_fair tp=mroce flows=2 ' "$out/fair.txt") ||
    fail "no fair line: $(cat "$out/fair.txt")"
j=$(printf '%s\n' "$line" | sed -n 's/.* jain=\([0-9.]*\) .*/\1/p')
awk -v j="$j" 'BEGIN { exit !(j > 0.5 && j <= 1) }' || fail "jain $j"
"$sim" -q -o "$out" -s name=across_quick_read -s transports=mroce_ask,roce \
    -s "workload=read servers=12 bytes=512K" "$dir/quick.txt" > "$out/read.txt" ||
    fail "read: mroce-sim exited $?"
for tp in mroce_ask roce; do
    grep -q "^read scen=across_quick_read tp=$tp client=h0 reads=12 done=12 " \
        "$out/read.txt" || fail "read/$tp: $(cat "$out/read.txt")"
done
echo "across_quick: ring over the long haul (3 transports), pfc headroom, fairness pair (jain $j), READ fan-out"
