#!/bin/sh
# run_planes.sh - the multiplane experiments (sim/scenarios/planes): builds
# mroce-sim, runs every scenario and prints four tables; CSV and, when
# gnuplot is there, SVG/PNG plots go to OUTDIR (default sim-out/planes):
#   A  throughput against plane count P = 1, 2, 4, 8 (ring all-reduce and
#      all-to-all, 32 hosts) and the 8-vs-4 ratio     -> scale.csv, scale.*
#   B  a whole plane failing mid-collective (P = 2, 4, 8): completion, the
#      throughput before / after and late in the run, recovery time in
#      RTTs                                            -> bins_*.csv, fail_*.*
#   C  4,005 concurrent connections: goodput, Jain, engine bytes per QP
#   D  64 hosts, MetaRoCE against the RoCEv2 model under 0%, 1%, 10% random
#      loss: goodput and the share kept of its own 0% run -> loss.csv,
#      loss_table.csv, loss.*
# A and B run each case with plane_select entropy (the default: plane =
# entropy % P), engine (the engine names each packet's plane from its
# own plane state: *_engine.txt) and spray (the NIC balances packets over
# its up ports), B also with 256 entropies per QP instead of 128.  A few
# minutes.
#   usage: sim/run_planes.sh [OUTDIR]   (MROCE_SIM_BUILD=DIR: use that build;
#          MROCE_PLANES_PARTS=AB: run only those parts, default ABCD)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${1:-$root/sim-out/planes}
build=${MROCE_SIM_BUILD:-$root/build-sim}
sc=$here/scenarios/planes
parts=${MROCE_PLANES_PARTS:-ABCD}
# part X: true if X is to run
part() { case $parts in *$1*) return 0 ;; esac; return 1; }
mkdir -p "$build" "$out"
if [ ! -x "$build/sim/mroce-sim" ] || [ -z "${MROCE_SIM_BUILD:-}" ]; then
    (cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release "$root" >/dev/null &&
     make -j2 mroce-sim >/dev/null)
fi
sim=$build/sim/mroce-sim
log=$out/planes.log
: > "$log"
# run SCENARIO [-s key=value]...: the planes lines go to the log
run() {
    f=$1
    shift
    "$sim" -q -o "$out" "$@" "$sc/$f" | tee -a "$log"
}
# field KEY LINE: the value of key=value in LINE
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }

if part A; then
echo "== A: throughput against plane count (32 hosts, 4 leaves x 8 spines per plane, 100G ports)"
echo "P,ring_gbps,ring_frac,ring_engine_gbps,ring_spray_gbps,a2a_gbps,a2a_frac,a2a_engine_gbps,a2a_spray_gbps,complete" > "$out/scale.csv"
for p in 1 2 4 8; do
    row=$p
    ok=1
    for w in ring a2a; do
        for sel in entropy engine spray; do
            f=scale_$w.txt
            [ $sel = engine ] && f=scale_${w}_engine.txt
            line=$(run $f -s planes=$p -s plane_select=$sel \
                   -s name=planes_scale_${w}_p${p}_$sel | grep '^planes P=')
            printf '%s' "$line" | grep -q INCOMPLETE && ok=0
            if [ $sel = entropy ]; then
                row="$row,$(field goodput_gbps "$line"),$(field frac "$line")"
            else
                row="$row,$(field goodput_gbps "$line")"
            fi
        done
    done
    echo "$row,$ok" >> "$out/scale.csv"
done
awk -F, 'NR == 1 { printf "%-3s %10s %8s %12s %12s %10s %8s %12s %12s\n", "P", "ring Gb/s", "of host", "ring engine", "ring spray", "a2a Gb/s", "of host", "a2a engine", "a2a spray"; next }
         { printf "%-3s %10.0f %7.1f%% %12.0f %12.0f %10.0f %7.1f%% %12.0f %12.0f%s\n", $1, $2, 100 * $3, $4, $5, $6, 100 * $7, $8, $9,
                  $10 ? "" : "  INCOMPLETE"
           r[$1] = $2; re[$1] = $4; rs[$1] = $5; a[$1] = $6; ae[$1] = $8; as[$1] = $9 }
     END { printf "8 vs 4 planes (goal >= 1.9x): ring %.2fx, all-to-all %.2fx; engine: ring %.2fx, all-to-all %.2fx; spray: ring %.2fx, all-to-all %.2fx\n",
                  r[8] / r[4], a[8] / a[4], re[8] / re[4], ae[8] / ae[4], rs[8] / rs[4], as[8] / as[4] }' "$out/scale.csv"
echo "(plane = entropy % P, the default; engine: the engine's plane, 255 entropies; spray: the NIC puts each packet on its least-loaded port)"
fi

if part B; then
echo
echo "== B: one plane of P = 2, 4, 8 fails mid-collective (plane 1 at P = 2, else plane 2; 2 us bins; RTT = mean srtt at the failure)"
printf '%-2s %-5s %-11s %-9s %9s %9s %9s %10s %12s %8s %9s %9s %9s\n' P work select complete before dip after after/bef recover_us srtts late late/up payload
for p in 2 4 8; do
for w in ring a2a; do
    for sel in entropy entropy/256 engine spray; do
        # entropy/256: plane_select entropy with 256 entropies per QP
        np=${sel#*/}
        [ "$np" = "$sel" ] && np=128
        f=fail_$w.txt
        [ $sel = engine ] && f=fail_${w}_engine.txt
        name=planes_fail_${w}_$(echo "$sel" | tr / _)$([ $p = 4 ] || echo _p$p)
        # P = 2 has no plane 2: plane 1 fails, at the scenario's time
        flt=
        [ $p = 2 ] && flt="fault=$(sed -n 's/^fault = \([^ ]*\) plane_down .*/\1/p' "$sc/$f") plane_down 1"
        res=$(run $f -s planes=$p -s plane_select=${sel%/*} -s qp_npaths=$np \
              -s name=$name ${flt:+-s "$flt"})
        line=$(printf '%s\n' "$res" | grep '^planes_fault')
        done_=$(printf '%s\n' "$res" | grep -q INCOMPLETE && echo no || echo yes)
        pre=$(field pre_gbps "$line")
        frac=$(field pre_frac "$line")
        # late: the mean of the bins from 200 us after the failure to 200 us
        # before the end, as a share of all P ports ("of the link": every
        # byte a host receives on the wire, headers, ACKs and retransmissions
        # included; preamble and gap not) and of the P - 1 ports up
        late=$(awk -F, -v a="$(field t_us "$line")" 'NR > 1 { t[NR] = $1; f[NR] = $NF; n = NR }
            END { for (i = 2; i <= n; i++) if (t[i] >= a + 200 && t[i] <= t[n] - 200) { s += f[i]; c++ }
                  printf "%.3f", c ? s / c : 0 }' "$out/bins_${name}_mroce.csv")
        # payload: the messages' bytes over every byte the hosts sent
        pay=$(printf '%s\n' "$res" | awk '/ eff / { for (i = 1; i <= NF; i++) if ($i == "time") t = $(i + 1) }
            /^planes P=/ { for (i = 1; i <= NF; i++) { split($i, kv, "=")
                               if (kv[1] == "goodput_gbps") g = kv[2]
                               if (kv[1] == "plane_bytes") { n = split(kv[2], b, ","); for (j = 1; j <= n; j++) w += b[j] } } }
            END { printf "%.3f", w ? g * t * 1e3 / 8 / w : 0 }')
        printf '%-2s %-5s %-11s %-9s %8.1f%% %8.1f%% %8.1f%% %9.3f %12s %8s %9.3f %9.3f %9.3f\n' $p $w $sel $done_ \
            "$(echo "$frac * 100" | bc -l)" \
            "$(echo "$(field dip_gbps "$line") / $pre * $frac * 100" | bc -l)" \
            "$(echo "$(field post_gbps "$line") / $pre * $frac * 100" | bc -l)" \
            "$(field post_over_pre "$line")" "$(field recover_us "$line")" \
            "$(field recover_srtts "$line")" "$late" \
            "$(echo "$late * $p / ($p - 1)" | bc -l)" "$pay"
    done
done
done
echo "(entropy: plane = entropy % P with 128 entropies per QP, entropy/256 with 256;"
echo " engine: the engine's plane (its plane state), 128 entropies;"
echo " before / dip / after: throughput into the hosts as a share of their bandwidth;"
echo " goal: after/before = (P-1)/P (0.5, 0.75, 0.875); recover: from the failure until it holds 90% of that;"
echo " late: 200 us after the failure to 200 us before the end, of all P ports; late/up: of the P - 1 ports up;"
echo " payload: message bytes / wire bytes sent, the header-free share: late x payload is the late goodput)"
fi

if part C; then
echo
echo "== C: 4,005 concurrent connections (90 hosts all-to-all, every peer at once, 4 planes)"
line=$(run conn4k.txt | grep '^planes P=')
echo "flows $(field flows "$line")  QPs $(field qps "$line")  goodput $(field goodput_gbps "$line") Gb/s ($(echo "$(field frac "$line") * 100" | bc -l | cut -c1-5)% of the hosts)  Jain $(field jain "$line")  engine $(field bytes_per_qp "$line") B/QP  $(printf '%s' "$line" | grep -o 'INCOMPLETE\|complete')"
fi

if part D; then
echo
echo "== D: 64 hosts, one plane, random loss on every host uplink (end-to-end loss)"
echo "work,transport,loss,gbps,complete" > "$out/loss.csv"
for w in ring a2a; do
    for loss in 0 0.01 0.1; do
        if [ "$loss" = 0 ]; then
            res=$(run loss_$w.txt -s name=planes_loss_${w}_0)
        else
            res=$(run loss_$w.txt -s name=planes_loss_${w}_$loss -s "fault=0 host_loss $loss")
        fi
        printf '%s\n' "$res" | grep '^planes P=' | while read -r line; do
            c=$(printf '%s' "$line" | grep -q INCOMPLETE && echo 0 || echo 1)
            echo "$w,$(field tp "$line"),$loss,$(field goodput_gbps "$line"),$c" >> "$out/loss.csv"
        done
    done
done
awk -F, 'NR > 1 { k = $1 "," $2; g[k "," $3] = $4; c[k "," $3] = $5
                  if (!(k in seen)) { seen[k] = 1; ks[++n] = k } }
     END { printf "%-5s %-6s %10s %10s %7s %10s %7s\n", "work", "tp", "0% Gb/s", "1% Gb/s", "kept", "10% Gb/s", "kept"
           for (i = 1; i <= n; i++) { k = ks[i]; b = g[k ",0"]
               split(k, f, ",")
               printf "%-5s %-6s %10.0f %10.0f %6.1f%% %10.0f %6.1f%%%s\n", f[1], f[2], b,
                      g[k ",0.01"], b ? 100 * g[k ",0.01"] / b : 0,
                      g[k ",0.1"], b ? 100 * g[k ",0.1"] / b : 0,
                      (c[k ",0.01"] && c[k ",0.1"]) ? "" : "  (a run hit its limit: goodput of what arrived)" } }' "$out/loss.csv"
echo "(Meta reports ~86% kept at 1% loss and useful bandwidth at 10%)"
# one row per collective and transport: goodput at 0%, 1%, 10% (the plot)
awk -F, 'NR > 1 { k = $1 " " $2; g[k "," $3] = $4
                  if (!(k in seen)) { seen[k] = 1; ks[++n] = k } }
     END { print "case,loss 0%,loss 1%,loss 10%"
           for (i = 1; i <= n; i++)
               printf "%s,%s,%s,%s\n", ks[i], g[ks[i] ",0"], g[ks[i] ",0.01"], g[ks[i] ",0.1"] }' \
    "$out/loss.csv" > "$out/loss_table.csv"
fi

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
set key top left
set output "$out/scale.$term"
set title "Aggregate goodput against plane count, 32 hosts, 100G per port"
set xlabel "planes"
set ylabel "goodput (Gb/s)"
set xtics (1, 2, 4, 8)
set xrange [0.9:9]
set logscale x 2
plot "$out/scale.csv" using 1:2 with linespoints lw 2 title "ring all-reduce", \
     "" using 1:4 with linespoints lw 2 dt 4 title "ring, engine", \
     "" using 1:5 with linespoints lw 2 dt 3 title "ring, spray", \
     "" using 1:6 with linespoints lw 2 title "all-to-all", \
     "" using 1:8 with linespoints lw 2 dt 4 title "all-to-all, engine", \
     "" using 1:9 with linespoints lw 2 dt 3 title "all-to-all, spray", \
     "" using 1:(\$1 * 32 * 100) with lines dt 2 title "host bandwidth"
unset logscale x
set xtics auto
set autoscale x
set key outside right
set output "$out/fail_ring.$term"
set title "Plane 2 of 4 fails at 1 ms: ring all-reduce, throughput into the hosts"
set xlabel "time (us)"
set ylabel "Gb/s"
plot for [i=2:6] "$out/bins_planes_fail_ring_entropy_mroce.csv" using 1:i with lines title columnheader(i)
set output "$out/fail_a2a.$term"
set title "Plane 2 of 4 fails at 500 us: all-to-all, throughput into the hosts"
plot for [i=2:6] "$out/bins_planes_fail_a2a_entropy_mroce.csv" using 1:i with lines title columnheader(i)
set output "$out/loss.$term"
set title "64 hosts, one plane: goodput under random loss (MetaRoCE and the RoCEv2 model)"
set xlabel ""
set ylabel "goodput (Gb/s)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top right
plot for [i=2:4] "$out/loss_table.csv" using i:xtic(1) title columnheader(i)
GP
done
echo "results in $out (scale.csv, loss.csv, bins_*.csv, planes.log, *.svg, *.png)"
