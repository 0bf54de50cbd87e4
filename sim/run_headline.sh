#!/bin/sh
# run_headline.sh - reproduce the headline comparison with one command:
# builds mroce-sim, runs every sim/scenarios/ls128_*.txt scenario for
# MetaRoCE and the RoCEv2 baseline (with and without PFC), and writes
# CSV (summary.csv, mct_*.csv, tiers_*.csv, links_*.csv) plus gnuplot
# plots (efficiency.svg/png, mct_*.svg/png) into OUTDIR (default
# sim-out/headline).  Installs gnuplot-nox with apt-get if it is missing.
#   usage: sim/run_headline.sh [OUTDIR] [SCENARIO-GLOB]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${1:-$root/sim-out/headline}
glob=${2:-ls128_*.txt}
build=$root/build-sim
mkdir -p "$build" "$out"
(cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release .. >/dev/null &&
 make -j2 mroce-sim >/dev/null)
rm -f "$out/summary.csv"
for f in "$here"/scenarios/$glob; do
    "$build/sim/mroce-sim" -o "$out" "$f"
done

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "installing gnuplot-nox" >&2
    (apt-get install -y gnuplot-nox >/dev/null 2>&1 ||
     sudo apt-get install -y gnuplot-nox >/dev/null 2>&1) || true
fi
# efficiency table: scenario, one column per transport (in the order the
# transports first appear; plain POSIX awk, Debian's default is mawk)
awk -F, 'NR > 1 { if (!($1 in s)) { s[$1] = 1; sc[++ns] = $1 }
                  if (!($2 in t)) { t[$2] = 1; tp[++nt] = $2 }
                  e[$1 "," $2] = $8 }
END {
    printf "scenario"; for (i = 1; i <= nt; i++) printf ",%s", tp[i]; printf "\n"
    for (j = 1; j <= ns; j++) { printf "%s", sc[j]
        for (i = 1; i <= nt; i++) printf ",%s", ((sc[j] "," tp[i]) in e) ? e[sc[j] "," tp[i]] : 0
        printf "\n" } }' "$out/summary.csv" > "$out/efficiency.csv"
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "gnuplot not available: CSV only in $out" >&2
    exit 0
fi
ntp=$(head -1 "$out/efficiency.csv" | awk -F, '{print NF - 1}')
for term in svg png; do
    ext=$term
    [ "$term" = png ] && t="pngcairo size 1200,600" || t="svg size 1200,600"
    gnuplot <<GP || true
set terminal $t
set output "$out/efficiency.$ext"
set datafile separator ","
set termoption noenhanced
set title "Network efficiency (ideal / measured time), 128-host leaf-spine 1:1"
set ylabel "efficiency %"
set yrange [0:105]
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top right
set xtics rotate by -30
plot for [i=2:$((ntp + 1))] "$out/efficiency.csv" using i:xtic(1) title columnheader(i)
GP
    for m in "$out"/mct_*_mroce.csv; do
        sc=$(basename "$m" .csv); sc=${sc#mct_}; sc=${sc%_mroce}
        gnuplot <<GP || true
set terminal $t
set output "$out/mct_$sc.$ext"
set datafile separator ","
set termoption noenhanced
set title "Message completion time CDF: $sc"
set xlabel "message completion time (us)"
set ylabel "fraction of messages"
set logscale x
set key bottom right
plot for [tp in "mroce roce roce_pfc"] "$out/mct_${sc}_".tp.".csv" using 2:1 with lines lw 2 title tp
GP
    done
done
echo "results in $out (summary.csv, efficiency.csv, *.svg, *.png)"
