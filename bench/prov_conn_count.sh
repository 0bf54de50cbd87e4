#!/bin/sh
# prov_conn_count.sh - the provider's QPs, counted on its real path:
# runs prov/tests/test_prov_multi_ep (two domains of four endpoints in one
# process over 127.0.0.1, every endpoint of one sending to and doing RMA
# with every endpoint of the other) with MROCE_DUMP_COUNTERS=1, which
# makes libmroce print every QP as it is destroyed, and counts them by
# state: each connection appears twice (both of its ends are in this
# process), each listener once.  With FI_MROCE_SHARED_CONN=1 the QPs
# in other states are listeners replaced (in ERROR) as endpoints were
# enabled.
#
#   bench/prov_conn_count.sh [BUILD_DIR] [auto]
set -eu
b=${1:-build}
mode=${2:-}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
FI_PROVIDER_PATH="$b/prov" MROCE_DUMP_COUNTERS=1 \
    "$b/prov/test_prov_multi_ep" $mode 2>"$out" >/dev/null
conn=$(grep -c '^qp .* state RTS' "$out" || true)
lst=$(grep -c '^qp .* state LISTEN' "$out" || true)
other=$(grep '^qp ' "$out" | grep -vc 'state RTS\|state LISTEN' || true)
echo "endpoint pairs talking: 16 (2 domains x 4 endpoints)"
echo "connections (RTS QP ends / 2): $((conn / 2))"
echo "listening QPs: $lst"
echo "QPs in other states: $other"
