#!/usr/bin/env bash
# compare_dpdk.sh - libmroce's DPDK datapath (issue 21) against its socket
# datapath, measured in one run, interleaved, each case REPS times (medians
# reported), as ratios DPDK / socket:
#   mroce-perf write_bw at 64 KiB and 1 MiB (Gb/s) and write_lat at 64 B
#   (typical half round trip, us), over a net_memif pair (two processes,
#   shared memory, no hugepages: the datapath's default EAL arguments)
#   against the same over kernel UDP sockets on 127.0.0.1.
# Writes bench/results/compare_dpdk.txt.  Every process is bounded by
# `timeout`.  About REPS * 6 * (SECS + 2) seconds.
#
#   bench/compare_dpdk.sh        env: REPS=3 SECS=2 BUILD=build PORT_BASE=19700
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
REPS=${REPS:-3}
SECS=${SECS:-2}
PORT=${PORT_BASE:-19700}
PERF=$BUILD/tools/mroce-perf
OUT=$ROOT/bench/results/compare_dpdk.txt
WORK=$(mktemp -d /tmp/compare_dpdk.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
[ -x "$PERF" ] || cmake --build "$BUILD" -j2 --target mroce-perf >&2

# run DATAPATH TEST SIZE: one server/client session; prints the figure.
run() {
    dp=$1 test=$2 size=$3
    PORT=$((PORT + 2))
    sock=$WORK/memif-$PORT.sock
    if [ "$dp" = dpdk ]; then
        senv="MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV=net_memif,role=server,socket=$sock"
        cenv="MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV=net_memif,role=client,socket=$sock"
        sa="-B 10.0.0.1" ca="10.0.0.1 -B 10.0.0.2"
    else
        senv="MROCE_DATAPATH=socket" cenv="MROCE_DATAPATH=socket"
        sa="" ca="127.0.0.1"
    fi
    env $senv timeout $((SECS + 20)) "$PERF" "$test" -p $PORT $sa \
        >"$WORK/srv" 2>&1 &
    spid=$!
    if [ "$dp" = dpdk ]; then
        for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
    else
        sleep 0.3
    fi
    env $cenv timeout $((SECS + 20)) "$PERF" "$test" -p $PORT $ca -s "$size" \
        -D "$SECS" >"$WORK/cli" 2>&1
    wait $spid 2>/dev/null
    # bw: column 4 (BW average); lat: column 5 (t_typical) of the row.
    col=4
    case $test in *_lat) col=5 ;; esac
    awk -v s="$size" -v c=$col '$1 == s && NF >= c { v = $c } END { print v + 0 }' "$WORK/cli"
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : 0) }'; }

CASES="write_bw:65536 write_bw:1048576 write_lat:64"
for r in $(seq "$REPS"); do
    for c in $CASES; do
        for dp in socket dpdk; do
            v=$(run $dp "${c%%:*}" "${c##*:}")
            echo "$c $dp $v" >>"$WORK/raw"
            echo "rep $r $c $dp $v" >&2
        done
    done
done

{
    echo "# bench/compare_dpdk.sh: REPS=$REPS SECS=$SECS, medians; $(nproc) cores,"
    echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-20s %12s %12s %8s\n' case socket dpdk_memif ratio
    for c in $CASES; do
        s=$(awk -v c=$c '$1 == c && $2 == "socket" { print $3 }' "$WORK/raw" | median)
        d=$(awk -v c=$c '$1 == c && $2 == "dpdk" { print $3 }' "$WORK/raw" | median)
        unit="Gb/s"
        case $c in *_lat*) unit="us" ;; esac
        ratio=$(awk -v s="$s" -v d="$d" 'BEGIN { printf "%.2f", (s > 0 ? d / s : 0) }')
        printf '%-20s %9s %s %9s %s %7sx\n' "$c" "$s" "$unit" "$d" "$unit" "$ratio"
    done
    echo "# ratio = dpdk / socket (bw: higher is better; lat: lower is better)"
    echo "# every run (case datapath value):"
    sed 's/^/#   /' "$WORK/raw"
} | tee "$OUT"
