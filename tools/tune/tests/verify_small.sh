#!/bin/bash
# verify_small.sh - mroce-tune --verify end to end on the small CI fabric
# (tools/tune/examples/small32.json, 32 hosts): five grid points run in
# mroce-sim, the table holds each with its thresholds (x0.25..x4 of the
# derived ones), the derived row is marked and the verdict printed.  The
# goal itself is the benchmark's (bench_verify.sh), not asserted here; one
# seed keeps it short (the table, not the figures, is checked).
#   usage: verify_small.sh MROCE_SIM
set -u
SIM=${1:?usage: verify_small.sh MROCE_SIM}
D=$(cd "$(dirname "$0")/.." && pwd)
out=$(python3 "$D/mroce-tune" --verify "$D/examples/small32.json" --sim "$SIM" --seeds 1)
rc=$?
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc = 0 ] || [ $rc = 1 ] || fail "exit status $rc"
rows=$(echo "$out" | grep -cE '^ +[0-9.]+ +[0-9]+Ki +[0-9]+Ki +[0-9]+ +[0-9.]+ +[0-9.]+')
[ "$rows" = 5 ] || fail "$rows grid rows, want 5"
kmin1=$(echo "$out" | awk '$1 == "1" {print $2+0}')
kmin4=$(echo "$out" | awk '$1 == "4" {print $2+0}')
[ -n "$kmin1" ] && [ "$kmin4" -ge $((kmin1 * 4 - 1)) ] || fail "x4 row has Kmin $kmin4, derived $kmin1"
echo "$out" | grep -q '<- derived' || fail "no derived row"
echo "$out" | grep -qE 'goal 2%: (MET|MISSED)$' || fail "no verdict"
eff=$(echo "$out" | awk '/<- derived/ {print $5}')
awk -v e="$eff" 'BEGIN { exit !(e > 50 && e <= 100) }' || fail "derived efficiency $eff"
echo "PASS: verify sweep on small32 (rc $rc)"
