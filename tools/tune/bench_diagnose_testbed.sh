#!/bin/bash
# bench_diagnose_testbed.sh - how reliably mroce-tune diagnose names the
# misconfigured switch on the namespace testbed: tests/diagnose_testbed.sh
# N times in each mode (mis: l0-s1 ECN off and l0-s2 threshold x10;
# healthy: nothing misconfigured; hash: l0 hashing on addresses only),
# interleaved, and the count of runs where each thing was named.  The
# testbed's timing is the host's (milliseconds of scheduling in every
# RTT), so a loaded machine is part of what this measures.
#   usage: tools/tune/bench_diagnose_testbed.sh BUILD/tools [N] [MODES]
set -u
T=${1:?usage: bench_diagnose_testbed.sh BUILD/tools [N] [MODES]}
N=${2:-10}
MODES=${3:-mis healthy hash}
D=$(cd "$(dirname "$0")" && pwd)
K=$(mktemp -d)
trap 'rm -rf "$K"' EXIT
declare -A pass s1 s2 other
for m in $MODES; do pass[$m]=0; s1[$m]=0; s2[$m]=0; other[$m]=0; done
for ((i = 1; i <= N; i++)); do
    for m in $MODES; do
        mkdir -p "$K/$m$i"
        MRF_TUNE_KEEP="$K/$m$i" bash "$D/tests/diagnose_testbed.sh" "$T" "$m" > "$K/$m$i/out.txt" 2>&1
        rc=$?
        [ $rc = 77 ] && { echo "SKIP: $(tail -1 "$K/$m$i/out.txt")"; exit 77; }
        [ $rc = 0 ] && pass[$m]=$((pass[$m] + 1))
        f="$K/$m$i/diag.txt"
        [ -f "$f" ] || continue
        grep -q '^l0-s1: ' "$f" && s1[$m]=$((s1[$m] + 1))
        grep -q '^l0-s2: ' "$f" && s2[$m]=$((s2[$m] + 1))
        grep -qE '^(l0-s[03]|l0|fabric): ' "$f" && other[$m]=$((other[$m] + 1))
        echo "run $i $m: rc $rc; $(grep -E '^[a-z0-9-]+: ' "$f" | cut -d: -f1,2 | tr '\n' ' ')"
    done
done
echo "runs per mode: $N (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
for m in $MODES; do
    echo "$m: passed ${pass[$m]}/$N; l0-s1 named ${s1[$m]}, l0-s2 named ${s2[$m]}, l0-s0/l0-s3/l0/fabric named ${other[$m]}"
done
