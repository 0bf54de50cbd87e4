#!/usr/bin/env bash
# compare_dpdk.sh - libmroce's DPDK datapath (issue 21) against its socket
# datapath, measured in one run, interleaved, each case REPS times (medians
# reported), as ratios DPDK / socket:
#   mroce-perf write_bw at 64 KiB and 1 MiB (Gb/s) and write_lat at 64 B
#   (typical half round trip, us), over a net_memif pair (two processes,
#   shared memory, no hugepages: the datapath's default EAL arguments)
#   against the same over kernel UDP sockets on 127.0.0.1;
#   and the CPU time each side spent (perf stat task-clock, or getrusage
#   through GNU time when perf cannot count): ns per KiB moved for the
#   bandwidth cases, us per round trip for latency, client and server.
#   A polling datapath spends its whole core whatever the load, so its
#   CPU per byte falls as its throughput rises.
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
# cpu FILE CMD...: runs CMD, writing its CPU milliseconds to FILE.
if perf stat -x, -e task-clock -o /dev/null true 2>/dev/null; then
    cpu() { f=$1; shift; perf stat -x, -e task-clock -o "$f.raw" "$@"; r=$?
            awk -F, '/task-clock/ { print $1 }' "$f.raw" >"$f"; return $r; }
else
    cpu() { f=$1; shift; /usr/bin/time -f '%U %S' -o "$f.raw" "$@"; r=$?
            awk 'NF == 2 { print ($1 + $2) * 1000 }' "$f.raw" >"$f"; return $r; }
fi
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
    # shellcheck disable=SC2086
    (export $senv; cpu "$WORK/srv.cpu" timeout $((SECS + 20)) "$PERF" "$test" \
        -p $PORT $sa >"$WORK/srv" 2>&1) &
    spid=$!
    if [ "$dp" = dpdk ]; then
        # the memif socket is abstract: /proc/net/unix lists it
        for _ in $(seq 100); do
            grep -q "@$sock\$" /proc/net/unix && break
            sleep 0.05
        done
    else
        sleep 0.3
    fi
    rm -f "$WORK/cli.cpu" "$WORK/srv.cpu"
    # shellcheck disable=SC2086
    (export $cenv; cpu "$WORK/cli.cpu" timeout $((SECS + 20)) "$PERF" "$test" \
        -p $PORT $ca -s "$size" -D "$SECS" >"$WORK/cli" 2>&1)
    wait $spid 2>/dev/null
    # bw: column 4 (BW average); lat: column 5 (t_typical) of the row;
    # column 2 is the iterations done.  Then CPU: per KiB (bw) or per
    # round trip (lat), client and server.
    col=4
    case $test in *_lat) col=5 ;; esac
    awk -v s="$size" -v c=$col -v lat="${test%_bw}" \
        -v cc="$(cat "$WORK/cli.cpu" 2>/dev/null)" \
        -v sc="$(cat "$WORK/srv.cpu" 2>/dev/null)" '
        $1 == s && NF >= c { v = $c; n = $2 }
        END { if (n > 0 && lat == "write_lat") printf "%s %.2f %.2f\n", v + 0, cc * 1000 / n, sc * 1000 / n
              else if (n > 0) printf "%s %.1f %.1f\n", v + 0, cc * 1e6 / (s * n / 1024), sc * 1e6 / (s * n / 1024)
              else print v + 0, 0, 0 }' "$WORK/cli"
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
        unit="Gb/s" cunit="ns/KiB"
        case $c in *_lat*) unit="us" cunit="us/rtt" ;; esac
        for f in 3 4 5; do
            s=$(awk -v c=$c -v f=$f '$1 == c && $2 == "socket" { print $f }' "$WORK/raw" | median)
            d=$(awk -v c=$c -v f=$f '$1 == c && $2 == "dpdk" { print $f }' "$WORK/raw" | median)
            ratio=$(awk -v s="$s" -v d="$d" 'BEGIN { printf "%.2f", (s > 0 ? d / s : 0) }')
            name=$c u=$unit
            [ $f = 4 ] && name="  cpu client" u=$cunit
            [ $f = 5 ] && name="  cpu server" u=$cunit
            printf '%-20s %9s %s %9s %s %7sx\n' "$name" "$s" "$u" "$d" "$u" "$ratio"
        done
    done
    echo "# ratio = dpdk / socket (bw: higher is better; lat and cpu: lower is better)"
    echo "# every run (case datapath value cpu_client cpu_server):"
    sed 's/^/#   /' "$WORK/raw"
} | tee "$OUT"
