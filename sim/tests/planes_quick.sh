#!/bin/sh
# planes_quick.sh - ctest sim_planes_quick: runs sim/scenarios/planes/quick.txt
# through the mroce-sim command line (4 planes, plane 1 down and up again
# during a ring all-reduce, then an all-to-all on the same fabric) and
# checks the output: every run completes, every plane carried bytes, the
# failure was seen (planes_fault line, packets lost), and the bins CSV has
# one column per plane.  Semantics only, no timing.
#   usage: planes_quick.sh MROCE_SIM SCENARIO_DIR
set -eu
sim=$1
dir=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "planes_quick: FAIL: $*" >&2; exit 1; }
"$sim" -q -o "$out" "$dir/quick.txt" > "$out/ring.txt" ||
    fail "mroce-sim exited $?"
"$sim" -q -o "$out" -s "workload=alltoall bytes=256K msg=64K active=8" \
    -s name=planes_quick_a2a "$dir/quick.txt" > "$out/a2a.txt" ||
    fail "mroce-sim (all-to-all) exited $?"
for r in ring a2a; do
    f=$out/$r.txt
    grep -q '^planes P=4 .* complete plane_bytes=' "$f" ||
        fail "$r: no complete planes line: $(cat "$f")"
    ! grep -q INCOMPLETE "$f" || fail "$r: incomplete"
    grep -q 'qperr 0 ' "$f" || fail "$r: QP errors"
    bytes=$(sed -n 's/^planes P=.*plane_bytes=//p' "$f")
    echo "$bytes" | awk -F, '{ for (i = 1; i <= 4; i++) if ($i + 0 <= 0) exit 1
                               exit NF == 4 ? 0 : 1 }' ||
        fail "$r: a plane carried nothing: $bytes"
    grep -q '^planes_fault plane=1 ' "$f" || fail "$r: no planes_fault line"
    grep -q ' drops 0 ' "$f" && fail "$r: the failed plane lost nothing"
done
head -1 "$out/bins_planes_quick_mroce.csv" |
    grep -q '^t_us,plane0_gbps,plane1_gbps,plane2_gbps,plane3_gbps,total_gbps' ||
    fail "bins CSV header"
echo "planes_quick: ring and all-to-all on 4 planes survived plane 1 down and up"
