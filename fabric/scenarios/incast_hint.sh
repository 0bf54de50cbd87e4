#!/bin/bash
# Scenario 6 - incast with the receiver's rate hint: N senders (default 6,
# MRF_HINT_N) WRITE to one receiver at once over the last hop (500 Mbit/s,
# ECN above 32 KiB, drop above 512 KiB), in rounds with the default hint
# (rate_hint 2, CC-24..38: the receiver's server, one endpoint for all
# senders, divides its receive rate, MROCE_RX_RATE = the last hop's
# 500 Mbit/s, among them; MRF_HINT_RX=each: a server process per sender,
# as before, whose hints are the whole rate) and without
# hints (MROCE_RX_RATE=0: delay+ECN alone), MRF_HINT_REPS times each
# (default 1), alternating, each on a fresh fabric.  The senders connect
# first and start together (--start-at, as mroce-sim's incast starts
# every sender at 0).  Pass, with hints: all data intact, no drop on any
# link, the median of Jain's index over the senders' goodputs >= 0.95
# (MRF_HINT_JAIN).  Reported per round and as medians: goodputs, Jain,
# drops, ECN marks and the largest queue, the RTT (ping on the idle
# fabric, the QPs' min RTT and their srtt during the run) and the
# convergence time in RTTs (incast_conv.py: bench/incast_sim.sh's
# definition, from the receiver's per-sender arrival samples).
# MRF_HINT_PLOT=DIR draws the first round of each kind as
# DIR/incast_hint.png and .svg (gnuplot; the rates it draws are
# $OUT/rate-*.dat, kept with MRF_KEEP_OUT=1).
# MRF_HINT_SHORT=1 (ctest fabric_incast_hint): one round with hints, 1 MiB
# per sender, started as they connect; it passes on data verified, no
# drop on any link and a convergence line computed.  Transfers that short
# end within the skew of the senders' start-up, so their goodputs say
# nothing about fairness: Jain and convergence are printed, not checked.
. "$(dirname "$0")/lib.sh" "${1:-}"
N=${MRF_HINT_N:-6}
SHORT=${MRF_HINT_SHORT:-0}
REPS=${MRF_HINT_REPS:-1}
RATE=${MRF_HINT_RATE:-500}
if [ "$SHORT" = 1 ]; then BYTES=${MRF_HINT_BYTES:-1M}; else BYTES=${MRF_HINT_BYTES:-8M}; fi
JAIN_MIN=${MRF_HINT_JAIN:-0.95}
RX=h$N
CONV=$(dirname "$0")/incast_conv.py
command -v python3 >/dev/null || CONV=""
IV=1 # ms between the drivers' samples
# The receiver: one process, one device with a connection per sender
# (one endpoint, whose hints divide its rate among the senders: CC-24..29
# count the senders per endpoint), or MRF_HINT_RX=each: a process per
# sender, each an endpoint of its own that hints the whole rate to its
# one sender.
RXMODE=${MRF_HINT_RX:-one}
PSTEP=0; [ "$RXMODE" = one ] || PSTEP=6

# round MODE RX_RATE [RTT_US]: N senders at once on a fresh fabric (fresh
# counters); prints one line per sender and the totals, and appends one
# "round" line of key=value figures to $OUT/rounds.
round() {
    local mode=$1 i r g st last leaf sum=0 sq=0 t0 ping="" pm c="" start=()
    "$F" up -H $((N + 1)) --ecn --mark-kb 32 >/dev/null || exit 1
    leaf=$("$F" status --raw | awk -v h="$RX" '$2 ~ (">" h "$") {sub(">.*", "", $2); print $2; exit}')
    [ "$SHORT" = 1 ] ||
        ping=$("$F" exec h0 ping -q -c 5 -i 0.2 "$("$F" addr "$RX")" 2>/dev/null |
            sed -n 's|.* = \([0-9.]*\)/\([0-9.]*\)/.*|\1/\2|p')
    export MROCE_RX_RATE=$2
    if [ "$RXMODE" = one ]; then
        start_server "$RX" 5000 "$mode" --conns "$N" --interval $IV
    else
        for i in $(seq 0 $((N - 1))); do start_server "$RX" $((5000 + 6 * i)) "$mode$i" --interval $IV; done
    fi
    unset MROCE_RX_RATE
    sleep 0.4
    if [ "$SHORT" != 1 ]; then
        t0=$(awk -v t="$(date +%s.%N)" -v d="${MRF_HINT_START:-2}" 'BEGIN {printf "%.3f", t + d}')
        start=(--start-at "$t0")
    fi
    for i in $(seq 0 $((N - 1))); do
        run_client "h$i" "$RX" $((5000 + PSTEP * i)) "$mode$i" -b "$BYTES" --verify --interval $IV "${start[@]}" &
    done
    wait
    st=$("$F" status --raw)
    last=$(grep " $leaf>$RX " <<<"$st")
    D=$(awk '{d += $6} END {print d + 0}' <<<"$st")
    printf "%-9s %-6s %9s %7s %6s %5s %8s %8s\n" round sender "Mbit/s" verify retx rto min_rtt srtt
    for i in $(seq 0 $((N - 1))); do
        r=$(result "$mode$i")
        g=$(field "$r" goodput_mbps)
        printf "%-9s %-6s %9s %7s %6s %5s %8s %8s\n" "$mode" "h$i" "${g:-?}" \
            "$(field "$r" verify)" "$(field "$r" retx)" "$(field "$r" retx_rto)" \
            "$(field "$r" min_rtt_us)" "$(field "$r" srtt_us)"
        [ "$(field "$r" verify)" = ok ] || VERIFY_BAD=1
        sum=$(awk -v a="$sum" -v b="${g:-0}" 'BEGIN {print a + b}')
        sq=$(awk -v a="$sq" -v b="${g:-0}" 'BEGIN {print a + b * b}')
    done
    awk '$6 > 0 {print "  drops on " $2 ": " $6}' <<<"$st"
    J=$(awk -v s="$sum" -v q="$sq" -v n="$N" 'BEGIN {printf "%.3f", (q > 0 ? s * s / (n * q) : 0)}')
    echo "$mode: sum $sum Mbit/s, Jain $J, drops on all links $D;" \
        "last hop $leaf->$RX: $(awk '{printf "%s drops, %s ECN marks, max queue %s KiB", $6, $7, $10}' <<<"$last");" \
        "largest queue of any link $(awk '$10 > m {m = $10} END {print m + 0}' <<<"$st") KiB"
    [ -n "$ping" ] && echo "$mode: ping on the idle fabric h0 -> $RX min/avg ${ping} ms"
    if [ -n "$CONV" ]; then
        c=$(python3 "$CONV" "$OUT" "$mode" "$N" "$RATE" "$OUT/rate-$mode.dat" "${3:-0}" 2>&1 | tail -1)
        echo "$c"
    fi
    case $c in "conv mode="*) ;; *) CONV_BAD=1 ;; esac
    pm=${ping%%/*}
    echo "round kind=${mode%%[0-9]*_} load=$(cut -d' ' -f1 /proc/loadavg) sum=$sum jain_goodput=$J drops=$D" \
        "ce_last=$(awk '{print $7}' <<<"$last") maxq_last_kib=$(awk '{print $10}' <<<"$last")" \
        "ping_ms=${pm:--} ${c#conv }" >>"$OUT/rounds"
    echo
}

# median KIND KEY: the median over the rounds of KIND ("never" counts as
# larger than any number)
median() {
    awk -v k="kind=$1" -v f="$2" '$2 == k {for (i = 3; i <= NF; i++) if (index($i, f "=") == 1) print substr($i, length(f) + 2)}' "$OUT/rounds" |
        awk '{v[NR] = ($1 == "never") ? 1e300 : $1}
             END {if (!NR) {print "?"; exit}
                  for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++) if (v[j] < v[i]) {x = v[i]; v[i] = v[j]; v[j] = x}
                  m = v[int((NR + 1) / 2)]; print (m == 1e300 ? "never" : m)}'
}

echo "== scenario 6: incast $N -> 1 ($RX, receiver: $RXMODE), default rate hint against no hints, $REPS round(s) each"
VERIFY_BAD=0 CONV_BAD=0 DH=0 VH=0
: >"$OUT/rounds"
for rep in $(seq 1 "$REPS"); do
    VERIFY_BAD=0
    round "hint${rep}_" "$RATE"
    DH=$((DH + D)) VH=$((VH + VERIFY_BAD))
    [ "$SHORT" = 1 ] && break
    # RTTs in the round with hints' own unit (its QPs' median min RTT),
    # as bench/incast_sim.sh measures every transport in one
    round "nohint${rep}_" 0 "$(sed -n "s/^round kind=hint .* rtt_us=\([^ ]*\) .*/\1/p" "$OUT/rounds" | tail -1)"
done
KEYS="load jain_goodput drops maxq_last_kib ping_ms rtt_us own_rtt_us srtt_run_us win_rtt conv_ms conv_rtt conv_srtt conv20_rtt conv20_srtt fair_p50_rtt fair_max_rtt hint_p50_ms hint_max_ms hint_max_srtt first10_ms first10_rtt first10_srtt rx_gap_ms ok10_pct ok20_pct jain jain_w jain_wmin"
echo "medians over the rounds (conv: bench/incast_sim.sh's definition, incast_conv.py):"
printf "%-8s" kind; for k in $KEYS; do printf " %s" "$k"; done; echo
for kind in hint nohint; do
    grep -q "^round kind=$kind " "$OUT/rounds" || continue
    printf "%-8s" $kind; for k in $KEYS; do printf " %s" "$(median $kind $k)"; done; echo
done
JH=$(median hint jain_goodput)

if [ -n "${MRF_HINT_PLOT:-}" ] && command -v gnuplot >/dev/null && [ -s "$OUT/rate-hint1_.dat" ]; then
    DEST=$(mkdir -p "$MRF_HINT_PLOT" && cd "$MRF_HINT_PLOT" && pwd)
    w=$(median hint win_ms)
    for term in "pngcairo size 1100,750 font ',10'" "svg size 1100,750 font 'sans,10'"; do
        ext=png; case $term in svg*) ext=svg;; esac
        gnuplot <<GP
set terminal $term noenhanced
set output "$DEST/incast_hint.$ext"
set multiplot layout 2,1 title "MetaRoCE incast $N -> 1, last hop $RATE Mbit/s: each sender's arrival rate at the receiver (over the last $w ms)"
set xlabel "ms after all $N senders are active"
set ylabel "Mbit/s"
set yrange [0:*]
set key top right
set grid
set arrow 1 from graph 0, first $RATE / $N to graph 1, first $RATE / $N nohead dt 2 lc rgb "black"
set title "default rate hint (MROCE_RX_RATE=$RATE); dashed: fair share"
plot for [s=0:$((N - 1))] "$OUT/rate-hint1_.dat" using 1:(column(s+2)) with lines lw 1.2 title sprintf("h%d", s)
set title "no hints (MROCE_RX_RATE=0: delay+ECN alone)"
plot for [s=0:$((N - 1))] "$OUT/rate-nohint1_.dat" using 1:(column(s+2)) with lines lw 1.2 title sprintf("h%d", s)
unset multiplot
GP
    done
    echo "wrote $DEST/incast_hint.png and .svg"
fi

check "with hints: every transfer complete, data verified" "$([ "$VH" = 0 ] && echo 1 || echo 0)"
check "with hints: no drop on any link ($DH)" "$([ "$DH" = 0 ] && echo 1 || echo 0)"
check "convergence measured in every round" "$([ "$CONV_BAD" = 0 ] && echo 1 || echo 0)"
[ "$SHORT" = 1 ] ||
    check "with hints: median Jain $JH >= $JAIN_MIN" "$(awk -v j="$JH" -v m="$JAIN_MIN" 'BEGIN {print (j >= m) ? 1 : 0}')"
exit $FAILED
