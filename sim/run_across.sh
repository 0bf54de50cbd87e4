#!/bin/sh
# run_across.sh - scale-across (issue 19): data centres joined by
# long-haul links (sim/scenarios/across, topology "across"):
#   A  ring all-reduce spanning two DCs (32 hosts, 4 x 100G long-haul
#      links) at 1, 5 and 10 ms one way                   -> across.csv
#   B  all-to-all spanning two DCs at 5 ms                -> across.csv
#   C  fairness between RTTs: 12 flows into one host from its own DC,
#      1 ms and 5 ms away (fair_rx), and 16 flows from 1 ms and 5 ms away
#      sharing one DC's long-haul legs (fair_lh); per-class rates while
#      all flows are active and Jain's index           -> fair.csv
#   D  one 256 MiB WRITE over a 1 ms long haul, lossless and with 0.1%
#      random loss on the long-haul leg (loss_lh.txt), with the SACK
#      span negotiated (mroce) and without (mroce_sack256, 256 PSNs as
#      with a peer that does not state it, WIRE-52)  -> loss.csv
# every case with MetaRoCE (C also with rate_hint 2 and 0), the RoCEv2
# model lossy and with PFC at its default 1 ms timeout, and again with a
# timeout of 4 long-haul RTTs (roce_rto: the model's go-back-N times
# out every window across the long haul otherwise).  PFC's buffer: the
# largest ingress occupancy it held per tier against 2 x BDP of the
# long-haul leg (+ xoff)                                    -> pfc.csv
# Plots (gnuplot): completion against the long-haul delay, per-class
# rates.  OUTDIR default sim-out/across.  Several minutes on a quiet core.
#   usage: sim/run_across.sh [OUTDIR]   (MROCE_SIM_BUILD=DIR: use that
#          build; ACROSS_PARTS=AC: only those parts, default ABCD)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${1:-$root/sim-out/across}
build=${MROCE_SIM_BUILD:-$root/build-sim}
parts=${ACROSS_PARTS:-ABCD}
part() { case $parts in *$1*) return 0 ;; esac; return 1; }
mkdir -p "$build" "$out"
if [ ! -x "$build/sim/mroce-sim" ] || [ -z "${MROCE_SIM_BUILD:-}" ]; then
    (cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release "$root" >/dev/null &&
     make -j2 mroce-sim >/dev/null)
fi
sim=$build/sim/mroce-sim
sc=$here/scenarios/across
log=$out/across.log
: > "$log"
# run SCENARIO NAME [-s key=value]...: output appended to the log
run() {
    rf=$1
    rn=$2
    shift 2
    "$sim" -q -o "$out" -s name=$rn "$@" "$sc/$rf" >> "$log"
}
# ms VALUE: 1ms -> 1
ms() { echo "$1" | sed 's/ms$//'; }
# summary row of NAME/TP -> case,lh_ms,tp,complete,time_us,ideal_us,drops,retx,qp_errors,pfc_pauses
row() {
    awk -F, -v n=$1 -v tp=$2 -v c=$3 -v d=$4 -v lbl=$5 '$1 == n && $2 == tp {
        r = sprintf("%s,%s,%s,%s,%s,%s,%s,%s,%s,%s", c, d, lbl, $15, $7, $6, $16, $22, $26, $21) }
        END { if (r != "") print r }' "$out/summary.csv"
}
# collective NAME FILE CASE DELAY: the default transports and the
# RoCEv2 model with a timeout of 4 RTTs
collective() {
    n=$1; f=$2; c=$3; d=$4
    rto=$((8 * $(ms $d)))ms
    run $f $n -s lh_delay=$d
    run $f ${n}_rto -s lh_delay=$d -s transports=roce,roce_pfc -s roce_rto=$rto
    for tp in mroce roce roce_pfc; do row $n $tp $c $(ms $d) $tp >> "$out/across.csv"; done
    for tp in roce roce_pfc; do row ${n}_rto $tp $c $(ms $d) ${tp}_rto$rto >> "$out/across.csv"; done
    grep "^pfc scen=${n} \|^pfc scen=${n}_rto " "$log" | while read -r line; do
        printf '%s\n' "$line" | tr ' ' '\n' | awk -F= -v c=$c -v d=$(ms $d) '
            $1 == "scen" { s = $2 } $1 == "tp" { t = $2 }
            $1 == "spine-wan_ing_max_bytes" { a = $2 } $1 == "wan-spine_ing_max_bytes" { b = $2 }
            $1 == "host-tor_ing_max_bytes" { h = $2 }
            $1 == "lh_headroom_2bdp_bytes" { r = $2 }
            END { printf "%s,%s,%s%s,%s,%s,%s,%s\n", c, d, t, (s ~ /_rto$/ ? "_rto" : ""), r, a, b, h }'
    done >> "$out/pfc.csv"
}
[ -f "$out/across.csv" ] && part A && part B && rm -f "$out/across.csv" "$out/pfc.csv"
[ -f "$out/across.csv" ] || echo "case,lh_ms,transport,complete,time_us,ideal_us,drops,retx,qp_errors,pfc_pauses" > "$out/across.csv"
[ -f "$out/pfc.csv" ] || echo "case,lh_ms,transport,headroom_2bdp_bytes,ing_max_spine_wan,ing_max_wan_spine,ing_max_host_tor" > "$out/pfc.csv"
if part A; then
    for d in 1ms 5ms 10ms; do collective across_ring_$d ring.txt ring $d; done
fi
if part B; then
    collective across_a2a_5ms a2a.txt a2a 5ms
fi
if part A || part B; then
    echo "== A/B: collectives spanning two DCs (completion time, ms; 'INC' = not complete within 2 s)"
    awk -F, 'NR > 1 { printf "%-5s %5s ms  %-18s %10s  drops %8s  retx %8s  qp_err %5s  pfc %6s\n", $1, $2, $3,
                      $4 == 1 ? sprintf("%.1f", $5 / 1000) : "INC", $7, $8, $9, $10 }' "$out/across.csv"
    echo "== PFC: buffer held per ingress (bytes) against the long-haul headroom 2 x BDP + xoff"
    awk -F, 'NR > 1 { printf "%-5s %5s ms  %-14s needs %11s  held: long-haul in %10s / out %10s, host %8s\n", $1, $2, $3, $4, $5, $6, $7 }' "$out/pfc.csv"
fi
if part C; then
    echo "case,transport,flows,window_us,jain,wl0_gbps,wl1_gbps,wl2_gbps,wl0_jain,wl1_jain,wl2_jain" > "$out/fair.csv"
    for f in fair_rx fair_lh; do
        run $f.txt across_$f
        run $f.txt across_${f}_rto -s transports=roce,roce_pfc -s roce_rto=40ms
    done
    grep '^fair ' "$log" | while read -r line; do
        printf '%s\n' "$line" | tr ' ' '\n' | awk -F= '
            { v[$1] = $2 }
            END { c = v["scen"]; sub(/^across_/, "", c); t = v["tp"]
                  if (c ~ /_rto$/) { sub(/_rto$/, "", c); t = t "_rto40ms" }
                  printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", c, t, v["flows"], v["window_us"], v["jain"],
                         v["wl0_gbps"], v["wl1_gbps"], v["wl2_gbps"], v["wl0_jain"], v["wl1_jain"], v["wl2_jain"] }'
    done >> "$out/fair.csv"
    echo "== C: fairness between RTTs (mean rate per class while all flows are active, Gbit/s; Jain over all flows)"
    echo "   fair_rx: 12 flows into one 100G host: wl0 local, wl1 1 ms, wl2 5 ms one way (fair 7.9 each with hints' 95%)"
    echo "   fair_lh: 16 flows over 200G of long haul: wl0 1 ms, wl1 5 ms one way (fair 12.5 each)"
    awk -F, 'NR > 1 { if ($5 == "") { printf "%-8s %-20s no window in which every flow was active\n", $1, $2; next }
                      printf "%-8s %-20s jain %6s  window %9.0f us  wl0 %8s  wl1 %8s  wl2 %8s\n", $1, $2, $5, $4, $6, $7, $8 }' "$out/fair.csv"
    for c in fair_rx fair_lh; do
        awk -F, -v c=$c 'NR == 1 { print "transport,wl0,wl1,wl2"; next } $1 == c { printf "%s,%s,%s,%s\n", $2, $6, $7, ($8 == "" ? 0 : $8) }' \
            "$out/fair.csv" > "$out/${c}_plot.csv"
    done
fi
if part D; then
    # the lossless run: the scenario without its fault line
    grep -v '^fault' "$sc/loss_lh.txt" > "$out/loss_lh0.txt"
    "$sim" -q -o "$out" -s name=across_loss0 -s transports=mroce,mroce_sack256 \
        "$out/loss_lh0.txt" >> "$log"
    run loss_lh.txt across_loss1 -s transports=mroce,mroce_sack256
    echo "loss_pct,transport,complete,time_us,drops,retx" > "$out/loss.csv"
    awk -F, '$1 == "across_loss0" || $1 == "across_loss1" {
        printf "%s,%s,%s,%s,%s,%s\n", ($1 == "across_loss0" ? "0" : "0.1"), $2, $15, $7, $18, $22 }' \
        "$out/summary.csv" >> "$out/loss.csv"
    echo "== D: 256 MiB over a 1 ms long haul (completion, ms)"
    awk -F, 'NR > 1 { printf "loss %4s%%  %-14s %10s  lost %6s  retx %6s\n", $1, $2,
                      $3 == 1 ? sprintf("%.1f", $4 / 1000) : "INC", $5, $6 }' "$out/loss.csv"
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "gnuplot not available: CSV only in $out" >&2
    exit 0
fi
# the RoCEv2 model's timeout of 4 RTTs is one column, whatever the delay
awk -F, 'NR > 1 && $1 == "ring" { tp = $3; sub(/_rto[0-9]+ms$/, "_rto4rtt", tp)
                                  t[$2 "," tp] = $4 == 1 ? $5 / 1000 : "NaN"; if (!($2 in sd)) { sd[$2] = 1; ds[++n] = $2 }
                                  if (!(tp in st)) { st[tp] = 1; ts[++m] = tp } }
     END { printf "lh_ms"; for (j = 1; j <= m; j++) printf ",%s", ts[j]; print ""
           for (i = 1; i <= n; i++) { printf "%s", ds[i]; for (j = 1; j <= m; j++) printf ",%s", t[ds[i] "," ts[j]]; print "" } }' \
    "$out/across.csv" > "$out/ring_plot.csv"
for term in svg png; do
    [ "$term" = png ] && t="pngcairo size 900,540" || t="svg size 900,540"
    gnuplot <<GP || true
set terminal $t
set datafile separator ","
set termoption noenhanced
set key top left
set output "$out/ring.$term"
set title "Ring all-reduce over two DCs (32 hosts, 32 MiB): completion against the long-haul delay (gaps: not complete)"
set xlabel "long-haul delay, one way (ms)"
set ylabel "completion (ms)"
set logscale y
plot for [i=2:6] "$out/ring_plot.csv" using 1:i with linespoints lw 2 title columnheader(i)
unset logscale y
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top right
set xlabel ""
set ylabel "Gbit/s per flow"
set xtics rotate by -30
set output "$out/fair_rx.$term"
set title "12 flows into one host: local (wl0), 1 ms (wl1), 5 ms (wl2) away"
plot for [i=2:4] "$out/fair_rx_plot.csv" using i:xtic(1) title columnheader(i)
set output "$out/fair_lh.$term"
set title "16 flows over one DC's 200G of long haul: 1 ms (wl0) and 5 ms (wl1) away"
plot for [i=2:3] "$out/fair_lh_plot.csv" using i:xtic(1) title columnheader(i)
GP
done
echo "results in $out (across.csv, pfc.csv, fair.csv, loss.csv, across.log, *.svg, *.png)"
