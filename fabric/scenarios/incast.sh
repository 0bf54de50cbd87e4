#!/bin/bash
# Scenario 4 - incast: three senders (h0, h1 under leaf0; h2 under leaf1)
# WRITE to one receiver (h3) at once; the last hop l1 -> h3 (500 Mbit/s)
# is the bottleneck, with ECN marking (tc BPF virtual queue, mark above
# 32 KiB, drop above 512 KiB).  Pass: all data intact; each sender's
# goodput within 20% of a fair share (the mean of the three).  Reported:
# goodputs, ECN marks and drops on the last hop, retransmissions.
. "$(dirname "$0")/lib.sh" "${1:-}"
BYTES=${MRF_INCAST_BYTES:-12M}
"$F" up --ecn --mark-kb 32 >/dev/null || exit 1
echo "== scenario 4: incast (h0, h1, h2 -> h3; last hop l1->h3 500 Mbit/s, ECN)"
start_server h3 4794 s0; start_server h3 4800 s1; start_server h3 4806 s2; sleep 0.4
run_client h0 h3 4794 s0 -b "$BYTES" --verify &
run_client h1 h3 4800 s1 -b "$BYTES" --verify &
run_client h2 h3 4806 s2 -b "$BYTES" --verify &
wait
st=$("$F" status --raw)
last=$(grep " l1>h3 " <<<"$st")
drops=$(awk '{d += $6} END {print d}' <<<"$st")

printf "\n%-7s %9s %8s %7s %6s %5s %6s %6s\n" sender "Mbit/s" "of fair" verify retx rto probe "CE@rx"
sum=0
for s in s0 s1 s2; do sum=$(awk -v a="$sum" -v b="$(field "$(result $s)" goodput_mbps)" 'BEGIN {print a + b}'); done
fair=$(awk -v s="$sum" 'BEGIN {print s / 3}')
for s in s0 s1 s2; do
    r=$(result $s)
    printf "%-7s %9s %7.0f%% %7s %6s %5s %6s %6s\n" "h${s#s}" "$(field "$r" goodput_mbps)" \
        "$(awk -v g="$(field "$r" goodput_mbps)" -v f="$fair" 'BEGIN {print (f > 0 ? 100 * g / f : 0)}')" \
        "$(field "$r" verify)" "$(field "$r" retx)" "$(field "$r" retx_rto)" "$(field "$r" retx_probe)" \
        "$(field "$(sresult $s)" rx_ce)"
done
echo "sum of goodputs: $sum Mbit/s (bottleneck 500 Mbit/s on the wire); fair share $fair Mbit/s"
echo "last hop l1->h3: $(awk '{printf "%s pkts, %s bytes, %s drops, %s ECN marks, max queue %s KiB", $4, $5, $6, $7, $10}' <<<"$last")"
echo "drops on all links: $drops"
echo
for s in s0 s1 s2; do
    [ "$(field "$(result $s)" verify)" = ok ] && ok=1 || ok=0
    check "h${s#s}: transfer complete, data verified" $ok
done
for s in s0 s1 s2; do
    g=$(field "$(result $s)" goodput_mbps)
    check "h${s#s}: goodput ${g:-?} within 20% of the fair share ($fair)" \
        "$(awk -v g="${g:-0}" -v f="$fair" 'BEGIN {print ((f > 0 && g >= 0.8 * f && g <= 1.2 * f) ? 1 : 0)}')"
done
exit $FAILED
