#!/bin/sh
# run_storage.sh - storage / KV-cache incast (issue 19): a READ fan-out
# (one client READs from 100 and from 1,000 servers at once; the answers
# incast on the client) and a WRITE incast (100 and 1,000 clients write to
# one server), each with the receiver's rate hints off, on and asked for
# before data (rate_hint 0 / 1 / 2: mroce_nohint, mroce, mroce_ask) and
# with the RoCEv2 model (roce: DCQCN, lossy; roce_pfc: lossless).
# Scenarios: sim/scenarios/storage/{read,write}.txt (1,024 hosts, 1:1
# leaf-spine, 100G, 1 MiB buffers).  100 servers / clients move 1 MiB
# each, 1,000 move 256 KiB each.  Prints one table; CSV (storage.csv) and,
# when gnuplot is there, SVG/PNG plots of the p99 completion time and the
# client's queue peak go to OUTDIR (default sim-out/storage).  A few
# minutes on a quiet core.
#   usage: sim/run_storage.sh [OUTDIR]   (MROCE_SIM_BUILD=DIR: use that
#          build; STORAGE_CASES="read100 write100": run only those)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${1:-$root/sim-out/storage}
build=${MROCE_SIM_BUILD:-$root/build-sim}
cases=${STORAGE_CASES:-read100 read1000 write100 write1000}
mkdir -p "$build" "$out"
if [ ! -x "$build/sim/mroce-sim" ] || [ -z "${MROCE_SIM_BUILD:-}" ]; then
    (cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release "$root" >/dev/null &&
     make -j2 mroce-sim >/dev/null)
fi
sim=$build/sim/mroce-sim
sc=$here/scenarios/storage
log=$out/storage.log
: > "$log"
csv=$out/storage.csv
echo "case,n,transport,rate_hint,complete,time_us,mct_p50_us,mct_p99_us,mct_max_us,client_q_max_bytes,client_drops,drops,retx,qp_errors" > "$csv"
for c in $cases; do
    case $c in
    read*) n=${c#read}; f=read.txt; wl="read servers=$n" ;;
    write*) n=${c#write}; f=write.txt; wl="incast senders=$n" ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
    esac
    [ "$n" -ge 1000 ] && b=256K || b=1M
    name=storage_$c
    "$sim" -q -o "$out" -s name=$name -s "workload=$wl bytes=$b" \
        "$sc/$f" >> "$log"
    for tp in mroce_nohint mroce mroce_ask roce roce_pfc; do
        case $tp in
        mroce_nohint) rh=0 ;; mroce) rh=1 ;; mroce_ask) rh=2 ;; *) rh=- ;;
        esac
        # the client's (host 0's) downlink: its ToR's port towards it
        q=$(sed -n "s/^rxq scen=$name tp=$tp host=h0 q_max_bytes=\([0-9]*\) drops=\([0-9]*\)$/\1,\2/p" \
            "$log" | tail -1)
        awk -F, -v c=$c -v n=$n -v tp=$tp -v rh=$rh -v q="$q" -v name=$name \
            '$1 == name && $2 == tp {
                 printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", c, n, tp, rh,
                        $15, $7, $9, $10, $12, q, $16, $22, $26 }' \
            "$out/summary.csv" | tail -1 >> "$csv"
    done
done
awk -F, 'NR == 1 { printf "%-10s %-13s %4s %8s %10s %10s %10s %10s %9s %9s %8s\n", "case", "transport", "hint", "complete", "time_us", "mct_p50", "mct_p99", "q_peak_KB", "cl_drops", "retx", "qp_err"; next }
         { printf "%-10s %-13s %4s %8s %10.1f %10.1f %10.1f %10.0f %9s %9s %8s\n", $1, $3, $4, $5 ? "yes" : "NO", $6, $7, $8, $10 / 1024, $11, $13, $14 }' "$csv"
echo "(hint: the receiver's rate_hint 0/1/2; mct: READ = request post to answer arrival, WRITE = post to"
echo " receive; q_peak: the client's ToR port towards it, 1 MiB buffer, unbounded under PFC; cl_drops there)"
# one row per case: p99 and queue peak per transport (the plots)
for col in 8 10; do
    # a run that did not complete is plotted at the run's limit (2 s)
    awk -F, -v col=$col 'NR > 1 { v[$1 "," $3] = ($5 == 1 || col != 8) ? $col : $6
                                  if (!($1 in seen)) { seen[$1] = 1; cs[++n] = $1 } }
         END { print "case,no hints (0),hints (1),ask (2),RoCEv2,RoCEv2+PFC"
               for (i = 1; i <= n; i++) { c = cs[i]
                   printf "%s,%s,%s,%s,%s,%s\n", c, v[c ",mroce_nohint"], v[c ",mroce"],
                          v[c ",mroce_ask"], v[c ",roce"], v[c ",roce_pfc"] } }' \
        "$csv" > "$out/storage_col$col.csv"
done
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "gnuplot not available: CSV only in $out" >&2
    exit 0
fi
for term in svg png; do
    [ "$term" = png ] && t="pngcairo size 900,540" || t="svg size 900,540"
    gnuplot <<GP || true
set terminal $t
set datafile separator ","
set termoption noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top left
set output "$out/storage_mct.$term"
set title "Storage incast, 1,024 hosts: p99 completion time (at 2 s: not complete)"
set ylabel "p99 MCT (us)"
set logscale y
plot for [i=2:6] "$out/storage_col8.csv" using i:xtic(1) title columnheader(i)
unset logscale y
set output "$out/storage_queue.$term"
set title "Storage incast: queue peak at the client's ToR port (1 MiB buffer; PFC unbounded)"
set ylabel "bytes"
set logscale y
plot for [i=2:6] "$out/storage_col10.csv" using i:xtic(1) title columnheader(i)
GP
done
echo "results in $out (storage.csv, storage_col*.csv, storage.log, storage_*.svg/png)"
