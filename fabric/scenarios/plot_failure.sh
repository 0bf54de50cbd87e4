#!/bin/bash
# plot_failure.sh - per-spine utilisation over time around a link failure,
# as a picture (issue 4's "Output"): the transfers of scenario 3 (h0 -> h2,
# 64 paths, 64 MiB; `fail l1-s0` and, separately, `blackhole l0-s2` at
# 300 ms) while a sampler reads leaf0's four uplink byte counters every
# few milliseconds.  Leaf0's uplinks carry h0's data, one per spine, so the
# plot shows each spine's share: after the failure the dead spine's share
# falls to nothing as the paths hashing onto it are retired, and the others
# take it over.  (A blackholed link still transmits: the packets vanish at
# the far end, so its curve is the traffic sent into the hole.)
#
# Usage (root): fabric/scenarios/plot_failure.sh [TOOLS_DIR] [OUT_DIR]
# Writes OUT_DIR/failure_spines.png (and .svg) plus the samples
# (spines-fail.dat, spines-blackhole.dat: time_ms, then Mbit/s per spine).
# Needs gnuplot (Debian: gnuplot-nox).  Not a test: CI does not run it.
. "$(dirname "$0")/lib.sh" "${1:-}"
DEST=$(mkdir -p "${2:-.}" && cd "${2:-.}" && pwd)
command -v gnuplot >/dev/null || skip "gnuplot missing (apt-get install gnuplot-nox)"
"$F" up >/dev/null || exit 1
L0=${MRF_PREFIX}l0

# sample FILE: "t_s dev tx_bytes" lines for leaf0's spine links until
# $OUT/stop exists.
sample() {
    while [ ! -e "$OUT/stop" ]; do
        t=$(date +%s.%N)
        ip -n "$L0" -s -j link show 2>/dev/null | sed 's/},{"ifindex/}\n{"ifindex/g' |
            sed -n 's/.*"ifname":"\(s[0-9]*\)".*"tx":{"bytes":\([0-9]*\).*/\1 \2/p' |
            awk -v t="$t" '{print t, $1, $2}'
        sleep 0.004
    done >"$1"
}

# rates IN OUT T_FAIL: per-interval Mbit/s per spine, time in ms from T_FAIL
rates() {
    awk -v t0="$3" '
        { if ($1 != cur) { n++; cur = $1; tm[n] = $1 } b[n, $2] = $3; d[$2] = 1 }
        END {
            ns = 0; for (k in d) ns++
            for (i = 2; i <= n; i++) {
                dt = tm[i] - tm[i - 1]; if (dt <= 0) continue
                printf "%.2f", ((tm[i] + tm[i - 1]) / 2 - t0) * 1000
                for (s = 0; s < ns; s++)
                    printf " %.1f", (b[i, "s" s] - b[i - 1, "s" s]) * 8 / dt / 1e6
                printf "\n"
            }
        }' "$1" >"$2"
}

run() { # LABEL ACTION LINK
    local l=$1
    rm -f "$OUT/stop"
    start_server h2 4794 "$l"; sleep 0.3
    sample "$OUT/raw-$l" &
    local sp=$!
    run_client h0 h2 4794 "$l" -b 64M --verify --sport 50000 --sports 256 --paths 64 \
        --at 300 --run "date +%s.%N >$OUT/t-$l; $F $2 $3; date +%s.%N >$OUT/te-$l"
    touch "$OUT/stop"; wait
    "$F" heal "$3"
    rates "$OUT/raw-$l" "$DEST/spines-$l.dat" "$(cat "$OUT/t-$l")"
    # when the command had finished: the link is dead by then
    awk -v a="$(cat "$OUT/t-$l")" -v b="$(cat "$OUT/te-$l")" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }' >"$OUT/cmd-$l"
    echo "$l: $(result "$l" | grep -o 'goodput_mbps=[^ ]*\|verify=[^ ]*\|stall_after_ms=[^ ]*\|first_retire_ms=[^ ]*' | tr '\n' ' ')"
}
run fail fail l1-s0
run blackhole blackhole l0-s2

for term in "pngcairo size 1100,750 font ',10'" "svg size 1100,750 font 'sans,10'"; do
    ext=png; case $term in svg*) ext=svg;; esac
    gnuplot <<EOF
set terminal $term
set output "$DEST/failure_spines.$ext"
set multiplot layout 2,1 title "MetaRoCE h0 -> h2, 64 paths over 4 spines, 500 Mbit/s links: leaf0's uplink rate per spine"
set xlabel "ms after the failure command"
set ylabel "Mbit/s"
set xrange [-150:600]
set yrange [0:*]
set key top right
set grid
set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 2 lc rgb "red"
set arrow 2 from $(cat "$OUT/cmd-fail"), graph 0 to $(cat "$OUT/cmd-fail"), graph 1 nohead dt 3 lc rgb "black"
set title "link l1-s0 down (spine 0 loses its route to leaf1); dashed: command started / done"
plot for [s=0:3] "$DEST/spines-fail.dat" using 1:(column(s+2)) with lines lw 1.5 title sprintf("spine %d", s)
set arrow 2 from $(cat "$OUT/cmd-blackhole"), graph 0 to $(cat "$OUT/cmd-blackhole"), graph 1 nohead dt 3 lc rgb "black"
set title "link l0-s2 blackholed (both directions: data and ACKs); dashed: command started / done"
plot for [s=0:3] "$DEST/spines-blackhole.dat" using 1:(column(s+2)) with lines lw 1.5 title sprintf("spine %d", s)
unset multiplot
EOF
done
echo "wrote $DEST/failure_spines.png and .svg"
exit 0
