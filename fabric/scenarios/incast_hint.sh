#!/bin/bash
# Scenario 6 - incast with the receiver's rate hint: N senders (default 6,
# MRF_HINT_N) WRITE to one receiver at once over the last hop (500 Mbit/s,
# ECN above 32 KiB, drop above 512 KiB), twice in one run: with the
# default hint (rate_hint 2, CC-24..38: the receiver's servers give hints
# of its receive rate, MROCE_RX_RATE = the last hop's 500 Mbit/s) and
# without hints (MROCE_RX_RATE=0: delay+ECN alone).  Pass, with hints:
# all data intact, no drop on any link, Jain's index over the senders'
# goodputs >= 0.95 (MRF_HINT_JAIN).  Reported for both: goodputs, Jain,
# ECN marks and drops on the last hop, retransmissions.
# MRF_HINT_SHORT=1 (ctest fabric_incast_hint): the round with hints alone,
# 1 MiB per sender; it passes on data verified and no drop on any link.
# Transfers that short end within the skew of the senders' start-up, so
# their goodputs say nothing about fairness: Jain is printed, not checked.
. "$(dirname "$0")/lib.sh" "${1:-}"
N=${MRF_HINT_N:-6}
SHORT=${MRF_HINT_SHORT:-0}
if [ "$SHORT" = 1 ]; then BYTES=${MRF_HINT_BYTES:-1M}; else BYTES=${MRF_HINT_BYTES:-8M}; fi
JAIN_MIN=${MRF_HINT_JAIN:-0.95}
RX=h$N

# round MODE RX_RATE: N senders at once on a fresh fabric (fresh
# counters); sets J (Jain), D (drops), and prints one line per sender and
# the totals.
round() {
    local mode=$1 i st last leaf sum=0 sq=0
    "$F" up -H $((N + 1)) --ecn --mark-kb 32 >/dev/null || exit 1
    leaf=$("$F" status --raw | awk -v h="$RX" '$2 ~ (">" h "$") {sub(">.*", "", $2); print $2; exit}')
    export MROCE_RX_RATE=$2
    for i in $(seq 0 $((N - 1))); do start_server "$RX" $((5000 + 6 * i)) "$mode$i"; done
    unset MROCE_RX_RATE
    sleep 0.4
    for i in $(seq 0 $((N - 1))); do
        run_client "h$i" "$RX" $((5000 + 6 * i)) "$mode$i" -b "$BYTES" --verify &
    done
    wait
    st=$("$F" status --raw)
    last=$(grep " $leaf>$RX " <<<"$st")
    D=$(awk '{d += $6} END {print d + 0}' <<<"$st")
    printf "%-7s %-6s %9s %7s %6s %5s\n" mode sender "Mbit/s" verify retx rto
    for i in $(seq 0 $((N - 1))); do
        r=$(result "$mode$i")
        g=$(field "$r" goodput_mbps)
        printf "%-7s %-6s %9s %7s %6s %5s\n" "$mode" "h$i" "${g:-?}" \
            "$(field "$r" verify)" "$(field "$r" retx)" "$(field "$r" retx_rto)"
        [ "$(field "$r" verify)" = ok ] || VERIFY_BAD=1
        sum=$(awk -v a="$sum" -v b="${g:-0}" 'BEGIN {print a + b}')
        sq=$(awk -v a="$sq" -v b="${g:-0}" 'BEGIN {print a + b * b}')
    done
    awk '$6 > 0 {print "  drops on " $2 ": " $6}' <<<"$st"
    J=$(awk -v s="$sum" -v q="$sq" -v n="$N" 'BEGIN {printf "%.3f", (q > 0 ? s * s / (n * q) : 0)}')
    echo "$mode: sum $sum Mbit/s, Jain $J, drops on all links $D;" \
        "last hop $leaf->$RX: $(awk '{printf "%s drops, %s ECN marks, max queue %s KiB", $6, $7, $10}' <<<"$last")"
    echo
}

echo "== scenario 6: incast $N -> 1 ($RX), default rate hint against no hints"
VERIFY_BAD=0
round hint "${MRF_HINT_RATE:-500}"
JH=$J DH=$D VH=$VERIFY_BAD
if [ "$SHORT" != 1 ]; then
    VERIFY_BAD=0
    round nohint 0
    echo "Jain: hint $JH, no hints $J; drops: hint $DH, no hints $D"
fi
check "with hints: every transfer complete, data verified" "$([ "$VH" = 0 ] && echo 1 || echo 0)"
check "with hints: no drop on any link ($DH)" "$([ "$DH" = 0 ] && echo 1 || echo 0)"
[ "$SHORT" = 1 ] ||
    check "with hints: Jain $JH >= $JAIN_MIN" "$(awk -v j="$JH" -v m="$JAIN_MIN" 'BEGIN {print (j >= m) ? 1 : 0}')"
exit $FAILED
