#!/usr/bin/env bash
# compare_verbs.sh - perftest over libibverbs-on-MetaRoCE (verbs/, issue 20)
# next to mroce-perf (tools/perf) in one run, same transport, same sizes and
# iterations, two processes over loopback:
#   *_bw   64 KiB messages, BW average in Gbit/s (perftest --report_gbits);
#   *_lat  perftest's default size (2 B, atomics 8 B), t_typical (median)
#          in usec, or t_min with LAT_FIGURE=min (the best round trip:
#          on a loaded host the median measures the scheduler as much as
#          the transport).
# Each pair runs REPS times, perftest and mroce-perf alternating; prints
# the medians and the ratio perftest-over-verbs / mroce-perf (bandwidth:
# >1 is faster through verbs; latency: >1 is slower through verbs), and
# writes bench/results/compare_verbs.txt (compare_verbs_min.txt with
# LAT_FIGURE=min).
#
#   bench/compare_verbs.sh [BUILD_DIR]        (default: build)
#   env: REPS=3  BW_ITERS=5000  LAT_ITERS=2000  PORT_BASE=5400
#        LAT_FIGURE=typical (or min)
#        BASE_LIB=DIR  a second libibverbs.so.1 (another build's verbs/,
#             e.g. the branch's base) run in the same reps, in a column
#             of its own with its ratio to mroce-perf
#        TESTS="write_bw send_bw read_bw write_lat send_lat read_lat atomic_lat"
#        PERF_THREAD=1  also runs mroce-perf --progress=thread in the same
#             reps (packets placed by a progress thread, as the verbs
#             library's helper places them while perftest polls memory),
#             in a row of its own with verbs' ratio to it
# Needs perftest (Debian) and BUILD_DIR/verbs/libibverbs.so.1 and
# BUILD_DIR/tools/mroce-perf: cmake --build BUILD_DIR --target mroce_ibverbs
# mroce-perf.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$(pwd)/$BUILD ;; esac
REPS=${REPS:-3}
BW_ITERS=${BW_ITERS:-5000}
LAT_ITERS=${LAT_ITERS:-2000}
PORT=${PORT_BASE:-5400}
LAT_FIGURE=${LAT_FIGURE:-typical}
case $LAT_FIGURE in typical) LAT_COL=5 ;; min) LAT_COL=3 ;;
*) echo "LAT_FIGURE: typical or min" >&2; exit 1 ;; esac
TESTS=${TESTS:-"write_bw send_bw read_bw write_lat send_lat read_lat atomic_lat"}
LIB=$BUILD/verbs
PERF=$BUILD/tools/mroce-perf
[ -e "$LIB/libibverbs.so.1" ] || { echo "no $LIB/libibverbs.so.1" >&2; exit 1; }
BASE_LIB=${BASE_LIB:-}
PERF_THREAD=${PERF_THREAD:-0}
if [ -n "$BASE_LIB" ]; then
    case $BASE_LIB in /*) ;; *) BASE_LIB=$(pwd)/$BASE_LIB ;; esac
    [ -e "$BASE_LIB/libibverbs.so.1" ] ||
        { echo "no $BASE_LIB/libibverbs.so.1" >&2; exit 1; }
fi
[ -x "$PERF" ] || { echo "no $PERF" >&2; exit 1; }
command -v ib_write_bw >/dev/null || { echo "no perftest" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The figure of a results row: BW average (column 4), t_typical (5) or
# t_min (3).
figure() { # FILE TEST
    col=4
    case $2 in *_lat) col=$LAT_COL ;; esac
    awk -v c=$col '/^ *[0-9]+ +[0-9]+ +[0-9.]+/ {v = $c} END {print v}' "$1"
}

run_verbs() { # TEST ARGS... -> figure (the library in $VLIB, default $LIB)
    t=$1
    shift
    PORT=$((PORT + 1))
    env LD_LIBRARY_PATH="${VLIB:-$LIB}" MROCE_IBV_DEVICES=mroce0=127.0.0.1 \
        MROCE_IBV_PORT=$PORT timeout 60 ib_$t -d mroce0 -x 0 -F -p $PORT \
        "$@" >"$tmp/s" 2>&1 &
    sleep 0.3
    env LD_LIBRARY_PATH="${VLIB:-$LIB}" MROCE_IBV_DEVICES=mroce0=127.0.0.2 \
        MROCE_IBV_PORT=$PORT timeout 60 ib_$t -d mroce0 -x 0 -F -p $PORT \
        "$@" 127.0.0.1 >"$tmp/c" 2>&1
    wait
    figure "$tmp/c" "$t"
}

run_perf() { # TEST ARGS... -> figure
    t=$1
    shift
    PORT=$((PORT + 1))
    timeout 60 "$PERF" "$t" -p $PORT "$@" >"$tmp/s" 2>&1 &
    sleep 0.3
    timeout 60 "$PERF" "$t" 127.0.0.1 -p $PORT "$@" >"$tmp/c" 2>&1
    wait
    figure "$tmp/c" "$t"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {
    if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-"}'; }

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1}
    END {if (NR) print a[int((NR + 1) / 2)]; else print "-"}'; }

out=$ROOT/bench/results/compare_verbs.txt
[ "$LAT_FIGURE" = min ] && out=$ROOT/bench/results/compare_verbs_min.txt
mkdir -p "$(dirname "$out")"
{
    echo "# bench/compare_verbs.sh, $(git -C "$ROOT" rev-parse --short HEAD)," \
        "REPS=$REPS BW_ITERS=$BW_ITERS LAT_ITERS=$LAT_ITERS" \
        "LAT_FIGURE=$LAT_FIGURE, $(nproc) cores," \
        "load $(cut -d' ' -f1 /proc/loadavg)${BASE_LIB:+, base $BASE_LIB}" \
        "$([ "$PERF_THREAD" = 1 ] && echo ", PERF_THREAD=1")"
    printf '%-11s %-9s %12s %12s %8s\n' test unit perftest mroce-perf ratio
    for t in $TESTS; do
        case $t in
        *_bw) a=(-s 65536 -n "$BW_ITERS"); pa=(--report_gbits); unit=Gbit/s ;;
        *) a=(-n "$LAT_ITERS"); pa=(); unit=usec ;;
        esac
        v="" p="" b="" q=""
        for _ in $(seq "$REPS"); do
            v="$v $(run_verbs "$t" "${a[@]}" "${pa[@]}")"
            p="$p $(run_perf "$t" "${a[@]}")"
            [ -n "$BASE_LIB" ] &&
                b="$b $(VLIB=$BASE_LIB run_verbs "$t" "${a[@]}" "${pa[@]}")"
            [ "$PERF_THREAD" = 1 ] &&
                q="$q $(run_perf "$t" "${a[@]}" --progress=thread)"
        done
        mv=$(echo "$v" | median)
        mp=$(echo "$p" | median)
        r=$(ratio "$mv" "$mp")
        printf '%-11s %-9s %12s %12s %8s   (runs: verbs%s; perf%s)\n' \
            "$t" "$unit" "$mv" "$mp" "$r" "$v" "$p"
        if [ -n "$BASE_LIB" ]; then
            mb=$(echo "$b" | median)
            printf '%-11s %-9s %12s %12s %8s   (runs: base%s)\n' \
                "  base" "$unit" "$mb" "$mp" "$(ratio "$mb" "$mp")" "$b"
        fi
        if [ "$PERF_THREAD" = 1 ]; then
            mq=$(echo "$q" | median)
            printf '%-11s %-9s %12s %12s %8s   (runs: perf --progress=thread%s)\n' \
                "  thread" "$unit" "$mv" "$mq" "$(ratio "$mv" "$mq")" "$q"
        fi
    done
} | tee "$out"
