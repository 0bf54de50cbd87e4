#!/bin/sh
# prov_pingpong: Debian's fi_pingpong between two processes over the mroce
# provider on 127.0.0.1 (RDM; message mode at chosen sizes, tagged mode at
# every size fi_pingpong tries, 0 B to 6 MiB, with data checks), then again
# with 1% of packets dropped by libmroce's fault injection; first, the
# size of the data packets (the MTU the provider takes from loopback).  (fi_pingpong
# spends ~0.2 s per size on its own TCP synchronisation: "-S all" runs are
# the slow part.)
# $1: directory of libmroce-fi.so; $2: sanitizer runtimes to preload, or
# empty; $3 "memif": a shorter set over libmroce's DPDK datapath, a
# net_memif pair (shared memory, no hugepages), with 4 KiB packets.  Only loopback traffic: the provider binds 127.0.0.1 (its default
# FI_MROCE_IFACE) and the client is given 127.0.0.1.
dir=$1
preload=$2
command -v fi_pingpong >/dev/null 2>&1 || { echo "fi_pingpong not installed"; exit 77; }
export FI_PROVIDER_PATH="$dir" FI_MROCE_IFACE=127.0.0.1
[ -n "$preload" ] && export LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0
port=$((20000 + $$ % 20000))
memif=
if [ "${3:-}" = memif ]; then
    memif=/tmp/mroce-pp-memif.$$.sock # an abstract socket name
    export MROCE_DATAPATH=dpdk FI_MROCE_MTU=4096 \
        MROCE_DPDK_VDEV="net_memif,role=auto,socket=$memif"
fi

# pair ENV ARGS...: one fi_pingpong server/client pair, both with the
# environment assignments ENV (words; may be empty) and fi_pingpong ARGS;
# sets crc and src to their exit codes, their output stays in
# /tmp/prov_pp_cli.$$ and /tmp/prov_pp_srv.$$.
pair() {
    penv=$1
    shift
    port=$((port + 1))
    env $penv timeout 120 fi_pingpong -p mroce -e rdm -B $port "$@" \
        > /tmp/prov_pp_srv.$$ 2>&1 &
    srv=$!
    sleep 0.5
    env $penv timeout 120 fi_pingpong -p mroce -e rdm -P $port "$@" \
        127.0.0.1 > /tmp/prov_pp_cli.$$ 2>&1
    crc=$?
    wait $srv
    src=$?
}

# pair_check NAME: the test fails (with both outputs) if either side did.
pair_check() {
    if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
        echo "$1: client $crc, server $src" >&2
        cat /tmp/prov_pp_cli.$$ >&2
        echo "-- server output:" >&2
        cat /tmp/prov_pp_srv.$$ >&2
        rm -f /tmp/prov_pp_srv.$$ /tmp/prov_pp_cli.$$
        exit 1
    fi
}

# run NAME FAULT ARGS...: one pair with MROCE_FAULT=FAULT; fails on either
# failing.
run() {
    name=$1 fault=$2
    shift 2
    t0=$(date +%s)
    pair "MROCE_FAULT=$fault" "$@"
    echo "== $name: client $crc, server $src, $(( $(date +%s) - t0 )) s"
    pair_check "$name"
    cat /tmp/prov_pp_cli.$$
    rm -f /tmp/prov_pp_srv.$$ /tmp/prov_pp_cli.$$
}

# pkt_size NAME MTU_ENV: a 1 MiB ping-pong with libmroce's counters dumped
# when the QPs close; prints the busiest QP's bytes per data packet (the
# server's).
pkt_size() {
    pair "MROCE_DUMP_COUNTERS=1 $2" -S 1048576 -I 20
    pair_check "$1"
    awk '/tx_bytes/ { for (i = 1; i < NF; i++) { if ($i == "tx_bytes") b = $(i + 1);
                                                 if ($i == "tx_data_pkts") d = $(i + 1) }
                      if (d > best) { best = d; size = int(b / d) } }
         END { print size + 0 }' /tmp/prov_pp_srv.$$
    rm -f /tmp/prov_pp_srv.$$ /tmp/prov_pp_cli.$$
}

if [ -n "$memif" ]; then
    run "memif msg, 64 B" "" -S 64 -I 1000
    run "memif msg, 1 MiB" "" -S 1048576 -I 50
    run "memif msg, 64 KiB, checked" "" -S 65536 -I 100 -c
    run "memif tagged, 1 MiB, checked" "" -m tagged -S 1048576 -I 20 -c
    run "memif msg, 1% loss, 64 B" "tx:drop=0.01" -S 64 -I 500 -c
    run "memif msg, 1% loss, 1 MiB" "tx:drop=0.01" -S 1048576 -I 20 -c
    echo "prov_pingpong memif: ok"
    exit 0
fi

# The MTU comes from the interface (mroce_domain.c): loopback's 64 KiB
# gives 16 KiB packets; FI_MROCE_MTU=4096 still gives 4 KiB ones.
auto=$(pkt_size "MTU from the interface" "") || exit 1
fixed=$(pkt_size "FI_MROCE_MTU=4096" "FI_MROCE_MTU=4096") || exit 1
echo "== 1 MiB: $auto bytes per data packet (MTU from lo), $fixed (FI_MROCE_MTU=4096)"
[ "$auto" -gt 12000 ] || { echo "expected packets of ~16 KiB on loopback"; exit 1; }
[ "$fixed" -gt 3000 ] && [ "$fixed" -lt 6000 ] ||
    { echo "expected packets of ~4 KiB with FI_MROCE_MTU=4096"; exit 1; }

run "msg, 64 B" "" -S 64 -I 1000
run "msg, 1 MiB" "" -S 1048576 -I 50
run "msg, 1 KiB, checked" "" -S 1024 -I 100 -c
run "msg, 64 KiB, checked" "" -S 65536 -I 100 -c
run "tagged, all sizes, checked" "" -m tagged -S all -I 10 -c
run "msg, 1% loss, 64 B" "tx:drop=0.01" -S 64 -I 500 -c
run "msg, 1% loss, 1 MiB" "tx:drop=0.01" -S 1048576 -I 20 -c
run "tagged, 1% loss, all sizes" "tx:drop=0.01" -m tagged -S all -I 3 -c
echo "prov_pingpong: ok"
