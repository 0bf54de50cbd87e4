#!/bin/sh
# test_dpdk_memif.sh - the DPDK datapath end to end: two mroce-perf
# processes over a net_memif pair (shared memory, no kernel in the path,
# no hugepages) run write_bw under loss and reordering, read_bw and
# send_lat with --verify, each byte checked at the receiver; write_bw
# again with the receiver dropping and reordering, so the sender sends
# and retransmits from registered memory by zero-copy (external mbufs):
# its link must have sent payloads in place, waited for none and held
# none at close, and its QP sprayed over most of its 64 paths; over IPv4
# the link sends no UDP checksum (WIRE-13) unless MROCE_DPDK_UDP_CSUM=1,
# which the zero-copy session sets, summing it over the chains, each one
# checked at the receiver; a receiver in memif's zero-copy mode verifies
# every byte under loss; then a device whose DPDK port cannot
# start must fail to open with the cause named, while the socket datapath in
# the same environment still works.  Usage: test_dpdk_memif.sh MROCE_PERF
set -u
PERF=$1
DIR=$(mktemp -d /tmp/mroce-dpdk.XXXXXX)
trap 'kill $SRV 2>/dev/null; rm -rf "$DIR"' EXIT
SRV=
fail=0
port=$((20000 + $$ % 2000 * 10))

# One server/client session; $1 names it, the rest are mroce-perf's test
# and options.  The client's and server's output must show verified data.
session() {
    name=$1
    shift
    sock=$DIR/memif-$port.sock
    # shellcheck disable=SC2086
    MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV="net_memif,role=server,socket=$sock" \
        timeout 30 "$PERF" "$@" -p $port -B 10.0.0.1 $SRV_OPTS \
        >"$DIR/srv.log" 2>&1 &
    SRV=$!
    i=0
    # the memif socket is abstract: listed in /proc/net/unix, not a file
    while ! grep -q "@$sock\$" /proc/net/unix && [ $i -lt 100 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV="net_memif,role=client,socket=$sock" \
        MROCE_DPDK_UDP_CSUM=$CLI_CSUM timeout 30 "$PERF" "$@" -p $port 10.0.0.1 -B 10.0.0.2 --verify \
        >"$DIR/cli.log" 2>&1
    rc=$?
    wait $SRV
    src=$?
    SRV=
    checked=$(sed -n 's/.*verify *: \([0-9]*\) bytes checked here, 0 mismatches here, 0 at the peer.*/\1/p' \
        "$DIR/cli.log" "$DIR/srv.log" | sort -n | tail -1)
    if [ $rc -ne 0 ] || [ $src -ne 0 ] || [ -z "$checked" ] ||
        [ "$checked" -eq 0 ]; then
        echo "FAIL $name: client rc $rc, server rc $src, checked '$checked'"
        tail -n 5 "$DIR/cli.log" "$DIR/srv.log"
        fail=1
    else
        echo "ok   $name: $checked bytes verified over memif"
    fi
    port=$((port + 2))
}

SRV_OPTS=
CLI_CSUM=
export MROCE_DUMP_COUNTERS=1
session write_bw_loss write_bw -n 100 -s 65536 --fault tx:drop=0.01,reorder=0.01
unset MROCE_DUMP_COUNTERS
# IPv4 without the offload: no UDP checksum sent (WIRE-13), and the
# receiver took frames without one.
zero=$(sed -n 's/.*rx_csum_zero \([0-9]*\);.*/\1/p' "$DIR/srv.log")
if ! grep -q 'udp checksum sent: none' "$DIR/cli.log" || [ -z "$zero" ] ||
    [ "$zero" -eq 0 ]; then
    echo "FAIL no UDP checksum: server rx_csum_zero '$zero'"
    grep 'libmroce dpdk' "$DIR/cli.log" "$DIR/srv.log"
    fail=1
else
    echo "ok   no UDP checksum: $zero frames taken without one"
fi
session read_bw read_bw -n 50 -s 16384
session send_lat send_lat -n 100 -s 64
SRV_OPTS="--fault rx:drop=0.02,reorder=0.01"
export MROCE_DUMP_COUNTERS=1
CLI_CSUM=1
session write_bw_zc write_bw -n 100 -s 65536
CLI_CSUM=
unset MROCE_DUMP_COUNTERS
SRV_OPTS=
# the client's link: "zc 1 tx N copied C waits W held H"
zc=$(sed -n 's/.*zc 1 tx \([0-9]*\) copied [0-9]* waits \([0-9]*\) held \([0-9]*\)$/\1 \2 \3/p' \
    "$DIR/cli.log")
retx=$(sed -n 's/.*retx_pkts *\([0-9]*\).*/\1/p' "$DIR/cli.log" | head -1)
# Multi-path spray over the DPDK frames: the QP's packets left on most
# of its 64 path entropies (source ports written into the frames).
paths=$(sed -n 's/.*paths used: \([0-9]*\) of 64.*/\1/p' "$DIR/cli.log" | head -1)
set -- $zc
if [ $# -ne 3 ] || [ "$1" -eq 0 ] || [ "$2" -ne 0 ] || [ "$3" -ne 0 ] ||
    [ -z "$retx" ] || [ "$retx" -eq 0 ]; then
    echo "FAIL zero-copy: link '$zc' (tx waits held), retx '$retx'"
    grep 'libmroce dpdk' "$DIR/cli.log"
    fail=1
else
    echo "ok   zero-copy: $1 payloads sent in place, $retx retransmitted, 0 held"
fi
# That client summed its UDP checksums over the chains (MROCE_DPDK_UDP_CSUM=1):
# the server checked every one and dropped none.
if ! grep -q 'udp checksum sent: software' "$DIR/cli.log" ||
    ! grep -q 'udp_csum 0 .*rx_csum_zero 0;' "$DIR/srv.log"; then
    echo "FAIL UDP checksum summed over zero-copy chains"
    grep 'libmroce dpdk' "$DIR/cli.log" "$DIR/srv.log"
    fail=1
else
    echo "ok   UDP checksum summed over zero-copy chains, all checked good"
fi
# memif's zero-copy mode at the receiver: the mroce-perf server is the
# memif client with zero-copy=yes, so frames arrive in its own mbufs
# (no copy out of the ring), and the mroce-perf client the memif server.
sock=$DIR/memif-zc-$port.sock
MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV="net_memif,role=server,socket=$sock" \
    timeout 30 "$PERF" write_bw -p $port 10.0.0.2 -B 10.0.0.1 -n 100 \
    -s 65536 --verify >"$DIR/cli.log" 2>&1 &
SRV=$!
i=0
while ! grep -q "@$sock\$" /proc/net/unix && [ $i -lt 100 ]; do
    sleep 0.05
    i=$((i + 1))
done
MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV="net_memif,role=client,socket=$sock,zero-copy=yes" \
    timeout 30 "$PERF" write_bw -p $port -B 10.0.0.2 \
    --fault rx:drop=0.02,reorder=0.01 >"$DIR/srv.log" 2>&1
src=$?
wait $SRV
rc=$?
SRV=
port=$((port + 2))
if [ $rc -ne 0 ] || [ $src -ne 0 ] ||
    ! grep -q 'verify *: 6553600 bytes checked here, 0 mismatches' "$DIR/srv.log"; then
    echo "FAIL memif zero-copy receiver: client rc $rc, server rc $src"
    tail -n 5 "$DIR/cli.log" "$DIR/srv.log"
    fail=1
else
    echo "ok   memif zero-copy receiver: 6553600 bytes verified"
fi
if [ -z "$paths" ] || [ "$paths" -lt 32 ]; then
    echo "FAIL spray: paths used '$paths' of 64"
    fail=1
else
    echo "ok   spray: $paths of 64 paths used"
fi

# DPDK cannot start (a device that does not exist, then EAL refusing its
# arguments): the open fails, names the cause, and is quick.
MROCE_DATAPATH=dpdk MROCE_DPDK_VDEV="net_nosuchpmd0" \
    timeout 20 "$PERF" write_bw -p $port 127.0.0.1 -n 10 >"$DIR/bad.log" 2>&1
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] ||
    ! grep -q "DPDK datapath cannot start: cannot create DPDK device" "$DIR/bad.log"; then
    echo "FAIL bad vdev: rc $rc"
    cat "$DIR/bad.log"
    fail=1
else
    echo "ok   bad vdev: $(grep 'cannot start' "$DIR/bad.log")"
fi
# EAL itself cannot initialise (an lcore this machine lacks).
MROCE_DATAPATH=dpdk MROCE_DPDK_ARGS="--no-huge --no-shconf -m 64 --no-pci -l 127" \
    timeout 20 "$PERF" write_bw -p $port 127.0.0.1 -n 10 >"$DIR/bad.log" 2>&1
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] ||
    ! grep -q "DPDK datapath cannot start: rte_eal_init failed" "$DIR/bad.log"; then
    echo "FAIL EAL init: rc $rc"
    cat "$DIR/bad.log"
    fail=1
else
    echo "ok   EAL init: $(grep 'cannot start' "$DIR/bad.log")"
fi
MROCE_DATAPATH=bogus timeout 20 "$PERF" write_bw -p $port 127.0.0.1 -n 10 \
    >"$DIR/bad.log" 2>&1 && fail=1
grep -q 'unknown MROCE_DATAPATH="bogus"' "$DIR/bad.log" || {
    echo "FAIL MROCE_DATAPATH=bogus not named"
    fail=1
}

# The socket datapath, explicitly, alongside: unaffected.
port=$((port + 2))
MROCE_DATAPATH=socket timeout 30 "$PERF" write_bw -p $port >/dev/null 2>&1 &
SRV=$!
sleep 0.3
MROCE_DATAPATH=socket timeout 30 "$PERF" write_bw -p $port 127.0.0.1 -n 200 \
    --verify >"$DIR/sock.log" 2>&1 || {
    echo "FAIL socket datapath"
    tail -n 5 "$DIR/sock.log"
    fail=1
}
wait $SRV || fail=1
SRV=
[ $fail -eq 0 ] && echo "test_dpdk_memif: all passed"
exit $fail
