#!/bin/sh
# bench_fi_conn.sh - the table of bench/README.md "Provider connections
# per peer pair": bench_fi_conn at E = 16, 32, 48, 64 endpoints a side for
# mroce with shared connections (FI_MROCE_SHARED_CONN=1, the default),
# mroce with FI_MROCE_SHARED_CONN=0 (a device per endpoint, a QP per
# endpoint pair)
# and udp;ofi_rxd, one after the other in one run, each RESULT line kept.
#
#   bench/bench_fi_conn.sh [BUILD_DIR] [E ...] > bench/results/bench_fi_conn.txt
set -u
b=${1:-build}
[ $# -gt 0 ] && shift
es=${*:-16 32 48 64}
bin="$b/bench/bench_fi_conn"
export FI_PROVIDER_PATH="$b/prov"
echo "bench_fi_conn: RSS growth of one process holding two domains (the peer" \
    "pair) of E endpoints, every pair having talked; $(date -u '+%Y-%m-%d %H:%M') UTC," \
    "load $(cut -d' ' -f1 /proc/loadavg)"
for e in $es; do
    FI_MROCE_SHARED_CONN=1 "$bin" "$e" mroce 2>&1 | grep -a 'RESULT\|first error'
    FI_MROCE_SHARED_CONN=0 "$bin" "$e" mroce 2>&1 | grep -a 'RESULT\|first error'
    "$bin" "$e" 'udp;ofi_rxd' 2>&1 | grep -a 'RESULT\|first error'
done
