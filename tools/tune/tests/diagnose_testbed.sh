#!/bin/bash
# diagnose_testbed.sh - mroce-tune diagnose on the namespace testbed,
# with one switch deliberately misconfigured or none.  The fabric is
# examples/testbed_oversub.json (100 Mbit/s leaf-spine links under
# 500 Mbit/s hosts, so leaf l0's uplinks queue) brought up from its
# derived testbed form, plus the overrides of MODE:
#   mis      (default) two of l0's ports: ECN off on its port to s1 and a
#            marking threshold 10x the derived one on its port to s2;
#            passes if l0-s1 is named "not marking", l0-s2 is named, and
#            no correctly configured link (l0-s0, l0-s3) is;
#   healthy  none; passes if nothing is named;
#   hash     l0 hashes on addresses only (HASH_POLICY_l0=0, the kernel's
#            L3 multipath hash: the UDP source port is left out); passes
#            if l0 is named for asymmetric hashing, and nothing else.
# One MetaRoCE transfer h0 -> h2 sprays over 64 entropies; libmroce's path
# counters (MROCE_DUMP_COUNTERS) and `mroce-fabric path` for each entropy
# (which spine leaf l0 hashes it to) are diagnose's input, with the
# description (--fabric: 4 uplinks per leaf).  Needs root, network
# namespaces, clang, bpftool (else SKIP).  MRF_TUNE_KEEP=DIR keeps the
# client's dump, the map and the diagnosis.  bench_diagnose_testbed.sh
# runs it N times per mode and counts.
#   usage: diagnose_testbed.sh BUILD/tools [MODE]
set -u
T=${1:?usage: diagnose_testbed.sh BUILD/tools [mis|healthy|hash]}
MODE=${2:-mis}
case $MODE in mis|healthy|hash) ;; *) echo "diagnose_testbed: MODE mis, healthy or hash"; exit 2;; esac
TUNE=$(cd "$(dirname "$0")/.." && pwd)
export MRF_PREFIX=${MRF_PREFIX:-mrftd-}
F=$T/mroce-fabric
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v clang >/dev/null || { echo "SKIP: needs clang"; exit 77; }
[ -x "$T/mroce-fabric-flow" ] || { echo "SKIP: no mroce-fabric-flow"; exit 77; }
W=$(mktemp -d)
trap '"$F" down >/dev/null 2>&1; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
FAB=$TUNE/examples/testbed_oversub.json
python3 "$TUNE/mroce-tune" emit testbed "$FAB" -o "$W/tb.conf" || fail emit
# shellcheck disable=SC1090
. "$W/tb.conf"
{
    cat "$W/tb.conf"
    case $MODE in
        mis) echo "ECN_l0_s1=0"; echo "MARK_KB_l0_s2=$((SPINE_MARK_KB * 10))";;
        hash) echo "HASH_POLICY_l0=0";;
    esac
} > "$W/mis.conf"
"$F" up --tune "$W/mis.conf" > "$W/up.log" 2>&1
rc=$?
[ $rc = 77 ] && { echo "SKIP: no network namespaces"; exit 77; }
[ $rc = 0 ] || { cat "$W/up.log"; fail "up"; }
tq_us=$(python3 "$TUNE/mroce-tune" derive "$FAB" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(int(next(s["value"] for s in d["settings"] if s["name"] == "target_qdelay") * 1e6))')
A=$("$F" addr h0) B=$("$F" addr h2)
"$F" exec h2 timeout 60 "$T/mroce-fabric-flow" server -B "$B" > "$W/srv.log" 2>&1 &
sleep 0.5
"$F" exec h0 env MROCE_DUMP_COUNTERS=1 timeout 60 "$T/mroce-fabric-flow" client "$B" -B "$A" \
    -b "${MRF_TUNE_BYTES:-24M}" --paths 64 --target-qdelay="$tq_us" > "$W/cli.log" 2>&1 || { cat "$W/cli.log"; fail "transfer"; }
wait
# entropy -> the link leaf l0 hashes it onto (data h0 -> h2, UDP dst 4794)
awk '/^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ *$/ {print $2}' "$W/cli.log" |
    sort -u | while read -r e; do echo "$e l0-$("$F" path h0 h2 "$e" 4794)"; done > "$W/map.txt"
[ -s "$W/map.txt" ] || fail "no path counters in the client's dump"
"$F" status > "$W/status.txt"
python3 "$TUNE/mroce-tune" diagnose "$W/cli.log" --map "$W/map.txt" --fabric "$FAB" \
    --target-qdelay "${tq_us}us" > "$W/diag.txt"
cat "$W/diag.txt"; [ -n "${MRF_TUNE_KEEP:-}" ] && cp "$W/cli.log" "$W/map.txt" "$W/diag.txt" "$MRF_TUNE_KEEP"/
grep -E '^l0-s[0-9] ' "$W/diag.txt" > /dev/null || fail "no per-link rows"
echo "-- testbed counters (l0's uplinks):"; grep -E '^l0-s[0-9] +l0>' "$W/status.txt"
named=$(grep -E '^[a-z0-9-]+: ' "$W/diag.txt" | grep -v '^mroce-tune')
case $MODE in
    mis)
        echo "$named" | grep -q '^l0-s1: not marking' || fail "l0-s1 (ECN off) not named"
        echo "$named" | grep -q '^l0-s2: ' || fail "l0-s2 (threshold x10) not named"
        if echo "$named" | grep -E '^l0-s[03]: '; then fail "a correctly configured link is named"; fi
        echo "PASS: diagnose on the testbed: l0-s1 (ECN off) and l0-s2 (threshold x10) named, nothing else";;
    healthy)
        [ -z "$named" ] || fail "the correctly tuned fabric: something named"
        echo "PASS: diagnose on the correctly tuned testbed: nothing named";;
    hash)
        echo "$named" | grep -q '^l0: asymmetric hashing' || fail "l0's L3-only hash not named"
        [ "$(echo "$named" | wc -l)" = 1 ] || fail "more than the hash named"
        echo "PASS: diagnose on the testbed: l0's L3-only hash named, nothing else";;
esac
