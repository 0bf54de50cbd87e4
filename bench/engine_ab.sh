#!/usr/bin/env bash
# engine_ab.sh - two bench_engine binaries (say, before and after a change)
# run alternately in one session, with the median of each figure and the
# after/before ratios.
#
# Alternating A, B, A, B ... spreads a shared host's changing load over
# both sides, and bench_engine times CPU time, so other tenants' turns are
# not counted.  Per case it prints the median ns per data packet and % of
# in-cache memcpy (goodput over that run's own memcpy reference) for A and
# B, and B/A of the ns.
#
# Usage: bench/engine_ab.sh A_BINARY B_BINARY [RUNS]   (RUNS per side, 3)
# Example, the tree at a commit against the working tree:
#   git worktree add /tmp/base COMMIT   (or git archive COMMIT | tar -x -C DIR)
#   cmake -S /tmp/base -B /tmp/base/build -DCMAKE_BUILD_TYPE=Release
#   cmake --build /tmp/base/build -j2 --target bench_engine
#   bench/engine_ab.sh /tmp/base/build/bench/bench_engine build/bench/bench_engine
set -euo pipefail

a=${1:?usage: engine_ab.sh A_BINARY B_BINARY [RUNS]}
b=${2:?usage: engine_ab.sh A_BINARY B_BINARY [RUNS]}
runs=${3:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for ((i = 1; i <= runs; i++)); do
    for side in A B; do
        bin=$a
        [ "$side" = B ] && bin=$b
        "$bin" | sed "s/^/$side /" >>"$out"
    done
done

# Lines: "A direct 4KiB  0.554 Mpkt/s  1803.8 ns/data-pkt ... (  6.3% of memcpy)"
awk '
function median(s,   n, v, i, j, t) {
    n = split(s, v, " ")
    for (i = 1; i <= n; i++)
        for (j = i + 1; j <= n; j++)
            if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
/ns\/data-pkt/ {
    side = $1
    name = ""
    for (i = 2; $(i + 1) != "Mpkt/s"; i++)
        name = name (name == "" ? "" : " ") $i
    ns = $(i + 2)
    gbps = $(i + 4)
    pct = 100 * gbps / last[side]
    if (!(name in seen)) { seen[name] = 1; order[++n] = name }
    nsv[side, name] = nsv[side, name] " " ns
    pcv[side, name] = pcv[side, name] " " pct
}
/^. memcpy/ { last[$1] = $7; mc[$1] = mc[$1] " " $7 }
END {
    printf "memcpy GB/s, median: A %.2f  B %.2f\n", median(mc["A"]), median(mc["B"])
    printf "%-22s %10s %10s %7s %8s %8s\n", "case", "A ns/pkt", "B ns/pkt", "B/A", "A %mcp", "B %mcp"
    for (k = 1; k <= n; k++) {
        c = order[k]
        x = median(nsv["A", c]); y = median(nsv["B", c])
        printf "%-22s %10.1f %10.1f %7.3f %8.2f %8.2f\n", c, x, y, y / x,
               median(pcv["A", c]), median(pcv["B", c])
    }
}' "$out"
