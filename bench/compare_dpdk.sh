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
#   DPDK twice: with zero-copy transmit (the default, payloads attached
#   as external mbufs) and with MROCE_DPDK_ZC=0 (copied into the mbuf),
#   so the ratio zc / copy says what zero-copy buys.  And write_bw 1 MiB
#   two more ways against the default: dpdkzcrx, the receiving side as
#   the memif client in memif's zero-copy mode (frames land in its own
#   mbufs: no copy out of the ring), and dpdk8k, MTU 8192 (half the
#   packets per MiB).
# Peers in the same run, each rep: the raw UDP ceiling (bench_udp_blaster
# bw, and its busy-polling ping-pong for latency), libfabric's
# tcp;ofi_rxm (bench_fi_bw fi_write streaming and ping-pong; skipped
# without libfabric), and in-cache memcpy of 64 KiB (bench_engine).
# dpdk-testpmd (Debian's dpdk-dev, installed when missing unless
# NO_INSTALL=1) over a memif pair of its own, txonly into rxonly with
# frames of a 4 KiB MetaRoCE packet's size, as the DPDK-level ceiling.
# And the link's transmit alone (bench_dpdk_tx over net_null, one
# process): CPU ns per 4 KiB packet copied and by zero-copy, and by
# zero-copy with the IPv4 UDP checksum summed (MROCE_DPDK_UDP_CSUM=1);
# and memif alone (bench_dpdk_memif): CPU ns per frame to send, and to
# receive in copy and in zero-copy mode.
# Writes bench/results/compare_dpdk.txt.  Every process is bounded by
# `timeout`.  About REPS * 16 * (SECS + 2) seconds.
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
cmake --build "$BUILD" -j2 --target mroce-perf bench_udp_blaster bench_engine \
    bench_dpdk_tx bench_dpdk_memif >&2 || exit 1
cmake --build "$BUILD" -j2 --target bench_fi_bw >/dev/null 2>&1
BLASTER=$BUILD/bench/bench_udp_blaster
FI_BW=$BUILD/bench/bench_fi_bw
[ -x "$FI_BW" ] || FI_BW=
if ! command -v dpdk-testpmd >/dev/null && [ -z "${NO_INSTALL:-}" ]; then
    apt-get install -y --no-install-recommends dpdk-dev >/dev/null 2>&1
fi

# run DATAPATH TEST SIZE: one server/client session; prints the figure.
run() {
    dp=$1 test=$2 size=$3
    PORT=$((PORT + 2))
    sock=$WORK/memif-$PORT.sock
    if [ "$dp" != socket ]; then
        zc=1 srole=server crole=client
        [ "$dp" = dpdkcopy ] && zc=0
        # the receiver (mroce-perf's server) as memif's zero-copy client
        [ "$dp" = dpdkzcrx ] && srole=client,zero-copy=yes crole=server
        senv="MROCE_DATAPATH=dpdk MROCE_DPDK_ZC=$zc MROCE_DPDK_VDEV=net_memif,role=$srole,socket=$sock"
        cenv="MROCE_DATAPATH=dpdk MROCE_DPDK_ZC=$zc MROCE_DPDK_VDEV=net_memif,role=$crole,socket=$sock"
        sa="-B 10.0.0.1" ca="10.0.0.1 -B 10.0.0.2"
    else
        senv="MROCE_DATAPATH=socket" cenv="MROCE_DATAPATH=socket"
        sa="" ca="127.0.0.1"
    fi
    mtu=
    [ "$dp" = dpdk8k ] && mtu="-m 8192"
    rm -f "$WORK/cli.cpu" "$WORK/srv.cpu"
    # shellcheck disable=SC2086
    srv() { (export $senv; cpu "$WORK/srv.cpu" timeout $((SECS + 20)) \
        "$PERF" "$test" -p $PORT $sa >"$WORK/srv" 2>&1); }
    # shellcheck disable=SC2086
    cli() { (export $cenv; cpu "$WORK/cli.cpu" timeout $((SECS + 20)) \
        "$PERF" "$test" -p $PORT $ca -s "$size" -D "$SECS" $mtu \
        >"$WORK/cli" 2>&1); }
    # the memif socket is abstract: /proc/net/unix lists it
    memif_up() {
        for _ in $(seq 100); do
            grep -q "@$sock\$" /proc/net/unix && break
            sleep 0.05
        done
    }
    if [ "$dp" = dpdkzcrx ]; then
        # the memif server (mroce-perf's client) first: a memif client
        # that finds no server does not retry
        cli &
        cpid=$!
        memif_up
        srv &
        spid=$!
        wait $cpid
    else
        srv &
        spid=$!
        if [ "$dp" != socket ]; then memif_up; else sleep 0.3; fi
        cli
    fi
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
# value of key=... on a RESULT line
result_of() { sed -n 's/.*RESULT.* '"$2"'=\([^ ]*\).*/\1/p' "$1" | tail -1; }

# peers NAME: one peer measurement; prints its figure.
peer() {
    PORT=$((PORT + 2))
    case $1 in
    udp_ceiling)
        timeout 60 "$BLASTER" bw -D "$SECS" -p $PORT >"$WORK/p" 2>&1
        result_of "$WORK/p" gbps | head -1 ;;
    udp_pingpong)
        timeout 60 "$BLASTER" lat -D "$SECS" -p $PORT >"$WORK/p" 2>&1
        result_of "$WORK/p" median_us ;;
    rxm_*)
        [ -n "$FI_BW" ] || { echo 0; return; }
        case $1 in
        rxm_64k) a="-m bw -o write -s 65536 -w 64" ;;
        rxm_1m) a="-m bw -o write -s 1048576 -w 8" ;;
        *) a="-m lat -s 64" ;;
        esac
        timeout 60 "$FI_BW" -p "tcp;ofi_rxm" -P $PORT -T 15 >/dev/null 2>&1 &
        fp=$!
        sleep 0.3
        # shellcheck disable=SC2086
        timeout 60 "$FI_BW" -p "tcp;ofi_rxm" -P $PORT -T 15 -D "$SECS" $a \
            127.0.0.1 >"$WORK/p" 2>&1
        wait $fp 2>/dev/null
        if [ "$1" = rxm_lat ]; then result_of "$WORK/p" median_us
        else result_of "$WORK/p" gbps; fi ;;
    testpmd)
        # the frame of a 4 KiB data packet: 42 bytes of Ethernet, IPv4 and
        # UDP, the 28-byte base header, 4,096 bytes and the 4-byte CRC
        command -v dpdk-testpmd >/dev/null || { echo 0; return; }
        ta="--no-huge --no-shconf -m 512 --no-pci --no-telemetry"
        tb="--mbuf-size=9216 --total-num-mbufs=16384 --stats-period=1 --auto-start"
        tv="net_memif0,socket=$WORK/tp-$PORT.sock,bsize=16384"
        # shellcheck disable=SC2086
        timeout $((SECS + 8)) dpdk-testpmd $ta -l 0,1 --vdev=$tv,role=server \
            -- $tb --forward-mode=rxonly >"$WORK/p" 2>&1 &
        tp=$!
        sleep 1
        # shellcheck disable=SC2086
        timeout $((SECS + 5)) dpdk-testpmd $ta -l 0,1 --main-lcore 1 \
            --vdev=$tv,role=client -- $tb --forward-mode=txonly \
            --txpkts=4170 >/dev/null 2>&1
        wait $tp 2>/dev/null
        # the memif link takes a few seconds to come up: the median of the
        # receiver's non-zero one-second rates, Gb/s
        sed -n 's/.*Rx-bps: *\([0-9]*\).*/\1/p' "$WORK/p" | awk '$1 > 0' |
            median | awk '{ printf "%.3f\n", $1 / 1e9 }' ;;
    linktx_*)
        timeout 60 "$BUILD/bench/bench_dpdk_tx" -n 200000 -r 1 -s 4096 \
            >"$WORK/p" 2>/dev/null
        sed -n 's/^RESULT mode='"${1#linktx_}"' .*ns_per_pkt=\([0-9.]*\).*/\1/p' "$WORK/p"
        ;;
    memifrx_*|memiftx_*)
        # memif alone (bench_dpdk_memif, one process): CPU ns per 4,170-byte
        # frame to send (copied into the ring) or to receive (copied out,
        # or in place in memif's zero-copy mode)
        z=0 f=rx_ns
        case $1 in *_zc) z=1 ;; esac
        case $1 in memiftx_*) f=tx_ns ;; esac
        timeout 60 "$BUILD/bench/bench_dpdk_memif" -n 200000 -z $z \
            >"$WORK/p" 2>/dev/null
        sed -n 's/^RESULT .* '"$f"'=\([0-9.]*\).*/\1/p' "$WORK/p" ;;
    memcpy)
        # GB/s in cache, as Gb/s to compare with the rates
        timeout 60 "$BUILD/bench/bench_engine" --quick 2>/dev/null |
            sed -n 's/^memcpy 64 KiB in cache: \([0-9.]*\) GB.*/\1/p' |
            awk '{ print $1 * 8 }' ;;
    esac
}

CASES="write_bw:65536 write_bw:1048576 write_lat:64"
PEERS="udp_ceiling udp_pingpong rxm_64k rxm_1m rxm_lat memcpy testpmd linktx_copy linktx_zc linktx_zcsum memiftx_copy memifrx_copy memifrx_zc"
for r in $(seq "$REPS"); do
    for c in $CASES; do
        for dp in socket dpdk dpdkcopy; do
            v=$(run $dp "${c%%:*}" "${c##*:}")
            echo "$c $dp $v" >>"$WORK/raw"
            echo "rep $r $c $dp $v" >&2
        done
    done
    for dp in dpdkzcrx dpdk8k; do
        v=$(run $dp write_bw 1048576)
        echo "write_bw:1048576 $dp $v" >>"$WORK/raw"
        echo "rep $r write_bw:1048576 $dp $v" >&2
    done
    for p in $PEERS; do
        v=$(peer $p)
        echo "$p peer ${v:-0}" >>"$WORK/raw"
        echo "rep $r $p ${v:-0}" >&2
    done
done

med() { # med CASE DATAPATH FIELD
    awk -v c="$1" -v d="$2" -v f="$3" '$1 == c && $2 == d { print $f }' "$WORK/raw" | median
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
{
    echo "# bench/compare_dpdk.sh: REPS=$REPS SECS=$SECS, medians; $(nproc) cores,"
    echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-20s %12s %12s %12s %8s %8s\n' case socket dpdk_memif dpdk_copy \
        dpdk/sock zc/copy
    for c in $CASES; do
        unit="Gb/s" cunit="ns/KiB"
        case $c in *_lat*) unit="us" cunit="us/rtt" ;; esac
        for f in 3 4 5; do
            s=$(med $c socket $f) d=$(med $c dpdk $f) k=$(med $c dpdkcopy $f)
            name=$c u=$unit
            [ $f = 4 ] && name="  cpu client" u=$cunit
            [ $f = 5 ] && name="  cpu server" u=$cunit
            printf '%-20s %7s %-4s %7s %-4s %7s %-4s %7sx %7sx\n' "$name" \
                "$s" "$u" "$d" "$u" "$k" "$u" "$(ratio "$d" "$s")" \
                "$(ratio "$d" "$k")"
        done
    done
    echo "# ratio dpdk/sock and zc/copy (bw: higher is better; lat and cpu: lower)"
    printf '%-20s %12s %12s %12s %8s %8s\n' "write_bw 1 MiB" default \
        memif_zc_rx mtu_8192 zcrx/def 8k/def
    for f in 3 4 5; do
        d=$(med write_bw:1048576 dpdk $f) z=$(med write_bw:1048576 dpdkzcrx $f)
        e=$(med write_bw:1048576 dpdk8k $f)
        name="  dpdk memif" u="Gb/s"
        [ $f = 4 ] && name="  cpu client" u="ns/KiB"
        [ $f = 5 ] && name="  cpu server" u="ns/KiB"
        printf '%-20s %7s %-4s %7s %-4s %7s %-4s %7sx %7sx\n' "$name" \
            "$d" "$u" "$z" "$u" "$e" "$u" "$(ratio "$z" "$d")" "$(ratio "$e" "$d")"
    done
    echo "# (the receiver as memif's zero-copy client; MTU 8192; against the default)"
    echo
    printf '%-34s %10s %12s\n' "peer (same run)" median "dpdk / peer"
    bw1=$(med write_bw:1048576 dpdk 3) bw64=$(med write_bw:65536 dpdk 3)
    lat=$(med write_lat:64 dpdk 3)
    pr() { printf '%-34s %10s %11sx\n' "$1" "$2" \
        "$(awk -v a="$3" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')"; }
    pr "raw UDP ceiling, Gb/s (1 MiB)" "$(med udp_ceiling peer 3)" "$bw1"
    pr "tcp;ofi_rxm write 64 KiB, Gb/s" "$(med rxm_64k peer 3)" "$bw64"
    pr "tcp;ofi_rxm write 1 MiB, Gb/s" "$(med rxm_1m peer 3)" "$bw1"
    pr "memcpy 64 KiB in cache, Gb/s" "$(med memcpy peer 3)" "$bw1"
    pr "dpdk-testpmd memif, frames Gb/s" "$(med testpmd peer 3)" "$bw1"
    printf '%-34s %10s %11sx\n' "raw UDP ping-pong 64 B, us" \
        "$(med udp_pingpong peer 3)" "$(ratio "$lat" "$(med udp_pingpong peer 3)")"
    printf '%-34s %10s %11sx\n' "tcp;ofi_rxm ping-pong 64 B, us" \
        "$(med rxm_lat peer 3)" "$(ratio "$lat" "$(med rxm_lat peer 3)")"
    echo "# latency: dpdk's write_lat typical half round trip against the peer's median"
    lc=$(med linktx_copy peer 3) lz=$(med linktx_zc peer 3)
    printf '%-34s %10s %10s %8sx\n' "link tx, ns/pkt 4 KiB: copy, zc" \
        "$lc" "$lz" "$(ratio "$lz" "$lc")"
    ls=$(med linktx_zcsum peer 3)
    printf '%-34s %10s %10s %8sx\n' "link tx zc, UDP checksum: no, yes" \
        "$lz" "$ls" "$(ratio "$lz" "$ls")"
    echo "# (bench_dpdk_tx over net_null: the link's transmit CPU alone; zc / copy,"
    echo "#  and zero-copy without the IPv4 UDP checksum against with it)"
    mt=$(med memiftx_copy peer 3) mc=$(med memifrx_copy peer 3)
    mz=$(med memifrx_zc peer 3)
    printf '%-34s %10s\n' "memif tx, ns/frame 4170 B" "$mt"
    printf '%-34s %10s %10s %8sx\n' "memif rx, ns/frame: copy, zc" \
        "$mc" "$mz" "$(ratio "$mz" "$mc")"
    echo "# (bench_dpdk_memif, one process: memif's own cost per frame and side)"
    echo "# every run (case datapath value cpu_client cpu_server):"
    sed 's/^/#   /' "$WORK/raw"
} | tee "$OUT"
