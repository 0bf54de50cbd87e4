#!/bin/sh
# vendors_check.sh - ctest sim_vendors: per-switch differences (`switch`
# lines, vendors.c) through the mroce-sim command line on a small
# all-to-all (sim/scenarios/vendors/small_mixed.txt, 64 KiB per pair):
#   - a `switch` line that restates the defaults changes nothing, the
#     scenario's own (spines shallow and stepping, leaf3 hashing by XOR)
#     change the run;
#   - `ecn=off` on the spines: no spine port marks, the leaves' still do;
#   - `buffer=128K` on the spines: no spine queue grows past 128 KiB
#     (it does without the line); `buffer=64K` on the link tier tor-host
#     (the leaves' host ports) holds those, not the leaves' uplinks;
#   - `hash=l3` on leaf0: every pair under leaf0 keeps all its entropies
#     on one spine, the other leaves' pairs spread them;
#   - a selector that matches no switch is an error.
#   usage: vendors_check.sh MROCE_SIM SCENARIO
set -eu
sim=$1
scn=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "vendors_check: FAIL: $*" >&2; exit 1; }
# The transport is mroce_hint1 (delay+ECN, hints without the share
# request): the checks need queues that build up and mark, and the
# default's share request keeps this all-to-all's spine queues short.
# the scenario without its switch lines: every queue alike
grep -v '^switch' "$scn" > "$out/s.txt"
run() { # NAME [-s KEY=VALUE ...]: one run of s.txt into $out/NAME
    n=$1
    shift
    MROCE_SIM_FLOWS="$out/$n" "$sim" -q -o "$out/$n" \
        -s "workload=alltoall bytes=64K active=8" -s name=v \
        -s transports=mroce_hint1 "$@" "$out/s.txt" \
        > "$out/$n.log" || fail "mroce-sim ($n) exited $?"
}
# tier row field: NAME TIER COLUMN (tiers CSV: 5 q_max_bytes, 9 ecn_marks)
tier() { awk -F, -v t="$2" -v c="$3" '$1 == t {print $c}' "$out/$1/tiers_v_mroce_hint1.csv"; }
run bare
run plain -s "switch=spine ecn=red ecn_kmin=115K ecn_kmax=459K ecn_pmax=0.2 buffer=1M"
cut -d, -f1-26 "$out/bare/summary.csv" > "$out/a"
cut -d, -f1-26 "$out/plain/summary.csv" > "$out/b"
cmp -s "$out/a" "$out/b" || fail "a switch line restating the defaults changed the run"
run mixed -s "switch=spine buffer=256K ecn=step ecn_kmin=29K" -s "switch=leaf3 hash=xor"
cut -d, -f1-26 "$out/mixed/summary.csv" > "$out/c"
! cmp -s "$out/a" "$out/c" || fail "the scenario's own switch lines changed nothing"
# spines with ECN off
run ecn_off -s "switch=spine ecn=off"
run buffer_128k -s "switch=spine buffer=128K"
run tier_64k -s "switch=tor-host buffer=64K"
[ "$(tier ecn_off spine-tor 9)" = 0 ] || fail "spines with ECN off marked $(tier ecn_off spine-tor 9)"
[ "$(tier ecn_off tor-spine 9)" -gt 0 ] || fail "leaves stopped marking too"
[ "$(tier bare spine-tor 9)" -gt 0 ] || fail "spines mark nothing even with ECN on"
[ "$(tier bare spine-tor 5)" -gt 131072 ] || fail "spine queues stay under 128K anyway: the check proves nothing"
[ "$(tier buffer_128k spine-tor 5)" -le 131072 ] || fail "a spine queue reached $(tier buffer_128k spine-tor 5) over a 128K buffer"
[ "$(tier bare tor-host 5)" -gt 65536 ] || fail "leaf host ports stay under 64K anyway"
[ "$(tier tier_64k tor-host 5)" -le 65536 ] || fail "a leaf host port reached $(tier tier_64k tor-host 5) over a 64K buffer"
[ "$(tier tier_64k tor-spine 5)" -gt 65536 ] || fail "tor-host's buffer also cut the leaves' uplinks"
# leaf0 with an L3-only hash
run l3 -s "switch=leaf0 hash=l3"
awk -F, 'NR > 1 { k = int($1 / 8) " " $1 " " $2; if (!((k, $6) in seen)) { seen[k, $6] = 1; n[k]++ } }
    END { for (k in n) { split(k, a, " "); if (n[k] > 1) spread[a[1]]++; else one[a[1]]++ }
          printf "%d %d %d\n", spread[0] + 0, one[1] + one[2] + one[3], spread[1] + spread[2] + spread[3] }' \
    "$out/l3.paths.csv" > "$out/l3.sum"
read -r s0 o123 s123 < "$out/l3.sum"
[ "$s0" = 0 ] || fail "$s0 pairs under leaf0 (hash=l3) spread over spines"
[ "$s123" -gt "$o123" ] || fail "pairs under the other leaves do not spread ($s123 spread, $o123 on one)"
if "$sim" -q -o "$out/bad" -s "switch=leaf9 hash=l3" "$out/s.txt" > /dev/null 2>&1; then
    fail "a selector matching no switch was accepted"
fi
if "$sim" -q -o "$out/bad" -s "switch=spine ecn=wred" "$out/s.txt" > /dev/null 2>&1; then
    fail "ecn=wred was accepted"
fi
echo "vendors_check: PASS (l3 leaf: 0 of its pairs spread; others: $s123 spread, $o123 on one spine)"
