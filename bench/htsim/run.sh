#!/bin/bash
# run.sh - UEC htsim's NSCC and mroce-sim's MetaRoCE on the same 1,024-host
# leaf-spine and the same permutation, side by side (issue 18, "A peer beats
# us on its own ground").
#
# htsim is not part of this repository: give its source tree (a checkout or
# archive of github.com/ultraethernet/uet-htsim) with --htsim-src DIR or
# HTSIM_SRC=DIR. The script builds it out of tree (cmake) in --htsim-build
# (default build-htsim/, ignored by git), then for each seed:
#   1. runs mroce-sim on sim/scenarios/perm1024.txt (its own defaults: 32
#      paths per QP, 1 MB switch buffers, ECN 100-400 KB), again with 128
#      paths per QP (htsim's -paths below), and again with htsim's switch
#      queues (120,350 B per port, ECN 24,900-99,600 B, what htsim sizes for
#      this topology: 1 BDP);
#   2. writes that run's permutation as an htsim connection matrix and runs
#      htsim_uec on it (NSCC alone, 128 paths, as htsim's own validation of
#      this topology does), and again with 32 paths (mroce-sim's default);
#   3. prints one table: flows done, FCT max/p99/p50/mean, ECN marks, drops,
#      trims, retransmissions, and mroce-sim over htsim.
# It also runs htsim once on the permutation it ships
# (perm_1024n_1024c_0u_2000000b.cm), the figure quoted from htsim's
# validation. Without an htsim source it says so, runs the mroce-sim half
# only and exits 0: CI cannot download htsim, so CI does not run this.
#
# --scale "perm:128 perm:512 a2a:128 ..." runs instead, for each case, one
# workload at one size in both simulators (issue 19, the peer's cost):
# perm:N a permutation of 2,000,000 B per host (sim/scenarios/htsim_perm.txt),
# a2a:N an all-to-all of 64 KiB per pair, every pair at once
# (sim/scenarios/htsim_a2a.txt), on an N-host 1:1 leaf-spine (128: 8 ToRs of
# 16, 16 spines; 256 and more: ToRs of 32, 32 spines), the same pairs in
# both, under GNU time; then one table: CPU s (user + sys; the host may be
# shared, so not wall), max RSS and RSS per flow, data packets and packets
# per CPU s, and the flow completion times (p50 / p99 / max) of htsim's NSCC
# and of MetaRoCE. htsim runs with -paths 32 on the permutation (mroce-sim's
# default) and -paths 8 on the all-to-all (its small QPs' path count).
#   usage: bench/htsim/run.sh [--htsim-src DIR] [--htsim-build DIR]
#          [--mroce-sim BIN] [--seeds "1 2 3"] [--out DIR] [--save FILE]
#          [--scale "CASE..."]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/bench/htsim
src=${HTSIM_SRC:-}
hbuild=$root/build-htsim
sim=
seeds=1
out=$root/sim-out/htsim
save=
scale=
jobs=${JOBS:-2}
while [ $# -gt 0 ]; do
    case $1 in
    --htsim-src) src=$2; shift 2 ;;
    --htsim-build) hbuild=$2; shift 2 ;;
    --mroce-sim) sim=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --save) save=$2; shift 2 ;;
    --scale) scale=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
mkdir -p "$out" "$hbuild"
# absolute: htsim runs in its output directory
out=$(cd "$out" && pwd)
hbuild=$(cd "$hbuild" && pwd)
if [ -n "$save" ]; then
    mkdir -p "$(dirname "$save")"
    exec > >(tee "$save") 2>&1
fi

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

# --- htsim: find its sim/ directory and build htsim_uec out of tree
htsim=
if [ -z "$src" ]; then
    echo "run.sh: SKIP htsim: no htsim source given (--htsim-src DIR or HTSIM_SRC;"
    echo "  github.com/ultraethernet/uet-htsim); running the mroce-sim half only"
else
    simdir=
    for d in "$src/htsim/sim" "$src/sim" "$src"; do
        if [ -f "$d/CMakeLists.txt" ] && [ -f "$d/datacenter/main_uec.cpp" ]; then
            simdir=$(cd "$d" && pwd)
            break
        fi
    done
    if [ -z "$simdir" ]; then
        echo "run.sh: $src holds no htsim sim/ tree (sim/datacenter/main_uec.cpp)" >&2
        exit 2
    fi
    rev=${HTSIM_REV:-$(git -C "$simdir" rev-parse HEAD 2>/dev/null || echo "unknown (not a git checkout; set HTSIM_REV)")}
    echo "== htsim source $simdir, commit $rev"
    cmake -S "$simdir" -B "$hbuild" -DCMAKE_BUILD_TYPE=Release >"$out/htsim_cmake.log" 2>&1 ||
        { tail -20 "$out/htsim_cmake.log"; exit 1; }
    cmake --build "$hbuild" -j"$jobs" --target htsim_uec >"$out/htsim_build.log" 2>&1 ||
        { tail -20 "$out/htsim_build.log"; exit 1; }
    htsim=$hbuild/datacenter/htsim_uec
    [ -x "$htsim" ] || { echo "run.sh: no $htsim after the build" >&2; exit 1; }
fi

# --- mroce-sim
if [ -z "$sim" ]; then
    mkdir -p "$root/build-sim"
    (cd "$root/build-sim" && cmake -DCMAKE_BUILD_TYPE=Release .. >/dev/null &&
     make -j"$jobs" mroce-sim >/dev/null)
    sim=$root/build-sim/sim/mroce-sim
fi
sim=$(cd "$(dirname "$sim")" && pwd)/$(basename "$sim")
echo "== mroce-sim $sim, repository commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
sc=$root/sim/scenarios/perm1024.txt
bytes=2000000

# htsim's 1,024-host leaf-spine (its topologies/leaf_spine_1024.topo): two
# tiers, 32 ToRs of 32 hosts, 32 spines, 100G, 1 us links, no switch latency
topo=$out/leaf_spine_1024.topo
cat >"$topo" <<'EOF'
Nodes 1024
Tiers 2
Podsize 1024

Tier 0
Downlink_speed_Gbps 100
Radix_Down 32
Radix_Up 32
Downlink_Latency_ns 1000
Switch_Latency_ns 0

Tier 1
Downlink_speed_Gbps 100
Radix_Down 32
Downlink_Latency_ns 1000
Switch_Latency_ns 0
EOF
hargs="-topo $topo -sender_cc_only -paths 128 -end 1000"
hargs32="-topo $topo -sender_cc_only -paths 32 -end 1000"

run_htsim() { # CM LOG [ARGS]: htsim_uec in LOG's directory (it writes logout.dat there)
    local dir a=${3:-$hargs}
    dir=$(dirname "$2")
    # shellcheck disable=SC2086  # $a is htsim's argument list
    (cd "$dir" && "$htsim" -tm "$1" $a >"$2" 2>&1) ||
        { echo "run.sh: htsim_uec failed, see $2" >&2; tail -5 "$2" >&2; exit 1; }
}

leafspine_topo() { # N T S FILE: htsim's two-tier leaf-spine, N hosts, ToRs of T, S spines
    cat >"$4" <<EOF
Nodes $1
Tiers 2
Podsize $1

Tier 0
Downlink_speed_Gbps 100
Radix_Down $2
Radix_Up $3
Downlink_Latency_ns 1000
Switch_Latency_ns 0

Tier 1
Downlink_speed_Gbps 100
Radix_Down $(($1 / $2))
Downlink_Latency_ns 1000
Switch_Latency_ns 0
EOF
}

timed() { # TIMEFILE CMD...: CMD under GNU time (user s, sys s, max RSS KiB, wall s)
    local tf=$1
    shift
    /usr/bin/time -o "$tf" -f "%U %S %M %e" "$@"
}

if [ -n "$scale" ]; then
    rows=()
    for c in $scale; do
        kind=${c%%:*} n=${c#*:}
        t=32 sp=32
        [ "$n" -le 128 ] && t=16 sp=16
        d=$out/scale/$c
        rm -rf "$d" && mkdir -p "$d/mroce" "$d/htsim"
        if [ "$kind" = perm ]; then
            msc=$root/sim/scenarios/htsim_perm.txt
            wl="permutation bytes=$bytes msg=$bytes"
            fbytes=$bytes paths=32 endus=$((2000 + n))
        elif [ "$kind" = a2a ]; then
            msc=$root/sim/scenarios/htsim_a2a.txt
            wl="alltoall bytes=65536 msg=65536 active=$((n - 1))"
            fbytes=65536 paths=8 endus=$((50 * n))
        else
            echo "run.sh: unknown --scale case $c (perm:N or a2a:N)" >&2
            exit 2
        fi
        echo "== $c: mroce-sim $(basename "$msc") hosts=$n hosts_per_tor=$t spines=$sp"
        MROCE_SIM_FLOWS=$d/mroce/p timed "$d/mroce/time" "$sim" -q -o "$d/mroce" \
            -s hosts="$n" -s hosts_per_tor="$t" -s spines="$sp" -s "workload=$wl" \
            "$msc" >"$d/mroce/log.txt" 2>&1 ||
            { echo "run.sh: mroce-sim failed on $c, see $d/mroce/log.txt" >&2; exit 1; }
        hl=
        if [ -n "$htsim" ]; then
            python3 "$here/parse_htsim.py" cm "$d/mroce/p.flows.csv" "$fbytes" "$d/htsim/flows.cm"
            leafspine_topo "$n" "$t" "$sp" "$d/htsim/ls.topo"
            ha="-topo $d/htsim/ls.topo -sender_cc_only -paths $paths -end $endus"
            echo "== $c: $htsim -tm flows.cm $ha"
            # shellcheck disable=SC2086  # $ha is htsim's argument list
            (cd "$d/htsim" && timed "$d/htsim/time" "$htsim" -tm "$d/htsim/flows.cm" $ha \
                >"$d/htsim/log.txt" 2>&1) ||
                { echo "run.sh: htsim_uec failed on $c, see $d/htsim/log.txt" >&2; exit 1; }
            rm -f "$d/htsim/logout.dat"
            hl=$d/htsim
        fi
        rows+=("$c=$d/mroce=$hl")
    done
    echo
    python3 "$here/parse_htsim.py" scale --csv "$out/scale/scale.csv" "${rows[@]}"
    echo "== rows in $out/scale/scale.csv"
    if command -v gnuplot >/dev/null 2>&1; then
        # one bar pair per case: htsim's and mroce-sim's data packets per CPU s
        awk -F, 'NR > 1 { v[$1 "," $2] = $9; if (!($1 in s)) { s[$1] = 1; c[++n] = $1 } }
                 END { print "case,htsim,mroce-sim"
                       for (i = 1; i <= n; i++) print c[i] "," v[c[i] ",htsim"] "," v[c[i] ",mroce-sim"] }' \
            "$out/scale/scale.csv" >"$out/scale/rate_plot.csv"
        gnuplot <<GP || true
set terminal svg size 900,500
set datafile separator ","
set termoption noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set output "$out/scale/rate.svg"
set title "Data packets per CPU second, htsim NSCC and mroce-sim MetaRoCE"
set ylabel "packets per CPU s"
plot for [i=2:3] "$out/scale/rate_plot.csv" using i:xtic(1) title columnheader(i)
GP
        echo "== plot $out/scale/rate.svg"
    else
        echo "gnuplot not available: CSV only in $out/scale"
    fi
    exit 0
fi

for seed in $seeds; do
    d=$out/seed$seed
    rm -rf "$d" && mkdir -p "$d/mroce" "$d/mroce_p128" "$d/mroce_hq" "$d/htsim" "$d/htsim_p32"
    MROCE_SIM_FLOWS=$d/mroce/p "$sim" -q -o "$d/mroce" -s seed="$seed" "$sc" >"$d/mroce/log.txt" 2>&1
    MROCE_SIM_FLOWS=$d/mroce_p128/p "$sim" -q -o "$d/mroce_p128" -s seed="$seed" \
        -s qp_npaths=128 "$sc" >"$d/mroce_p128/log.txt" 2>&1
    MROCE_SIM_FLOWS=$d/mroce_hq/p "$sim" -q -o "$d/mroce_hq" -s seed="$seed" \
        -s buffer=120350 -s ecn_kmin=24900 -s ecn_kmax=99600 "$sc" >"$d/mroce_hq/log.txt" 2>&1
    targs=()
    if [ -n "$htsim" ]; then
        python3 "$here/parse_htsim.py" cm "$d/mroce/p.flows.csv" "$bytes" "$d/htsim/perm.cm"
        echo "== seed $seed: $htsim -tm $d/htsim/perm.cm $hargs"
        run_htsim "$d/htsim/perm.cm" "$d/htsim/log.txt"
        echo "== seed $seed: $htsim -tm $d/htsim/perm.cm $hargs32"
        run_htsim "$d/htsim/perm.cm" "$d/htsim_p32/log.txt" "$hargs32"
        targs=(--htsim "$d/htsim/log.txt")
    fi
    echo
    python3 "$here/parse_htsim.py" table "${targs[@]}" \
        --mroce "mroce-sim=$d/mroce" --mroce "mroce-sim 128 paths=$d/mroce_p128" \
        --mroce "mroce-sim, htsim's queues=$d/mroce_hq" \
        --title "seed $seed: permutation of 1,024 flows of 2,000,000 B, 1,024-host leaf-spine 32x32, 100G, 1 us links; ideal 160.0 us"
    echo
done

echo "== all seeds (FCT in us), the same path count in both simulators"
# shellcheck disable=SC2086  # one argument per seed
python3 "$here/parse_htsim.py" summary "$out" $seeds
echo

if [ -n "$htsim" ]; then
    cm=$simdir/datacenter/connection_matrices/perm_1024n_1024c_0u_2000000b.cm
    if [ -f "$cm" ]; then
        mkdir -p "$out/htsim_own"
        echo "== htsim on the permutation it ships: $htsim -tm $cm $hargs"
        run_htsim "$cm" "$out/htsim_own/log.txt"
        echo
        python3 "$here/parse_htsim.py" table --htsim "$out/htsim_own/log.txt" \
            --title "htsim on its own perm_1024n_1024c_0u_2000000b.cm (no mroce-sim run on this matrix)"
    fi
fi
