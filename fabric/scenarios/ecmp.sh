#!/bin/bash
# Scenario 2 - ECMP collisions: two flows between host pairs under
# different leaves (h0 -> h2, h1 -> h3).  Fabric: 2 spines, spine links at
# half the host rate (2:1 oversubscription), so the leaf0 -> leaf1
# bisection is 2 x 250 Mbit/s.  Three runs of the pair:
#   single  - RoCE-like single 5-tuples chosen (mroce-fabric path) to hash
#             onto the same spine: they share one 250 Mbit/s link;
#   spray   - each flow sprayed over 256 entropies, so both use both spines;
#   apart   - reference: single 5-tuples chosen to hash onto different
#             spines, i.e. what this host delivers across the bisection
#             with no collision and no spraying.
# Both flows of a run connect first and then start together (--start-at);
# the aggregate is both flows' payload over their common span (first
# start to last end), so staggered starts cannot inflate it.
# The sprayed pair runs MRF_ECMP_SPRAY_RUNS times (default 3) and its
# median counts, so one run disturbed by the shared host (a busy poller
# elsewhere took the CPU: "apart" drops too) does not decide the result.
# Pass: data verified; colliding single path <= 60% of the bisection;
# spray >= 1.1 x the colliding single path; spray >= MRF_ECMP_MIN_PCT %
# of the bisection (default 90, the issue's goal; empty: reported only).
# On the 2-core test VM sprayed runs reach 93% at load ~2 and a median of
# 91% over 15 runs at load 2.5-8 with PATH-16's recycled entropies, but
# 61-78% in runs where a busy host also pulls "apart" (94% median) down;
# 78-90% (median 83%) before PATH-16, 65-82% before PATH-3; see
# fabric/README.md, "Known limits".
# Experiments: MRF_ECMP_ARGS adds mroce-fabric-flow options to every flow
# (e.g. "--interval 5": goodput, cwnd and srtt every 5 ms),
# MRF_ECMP_SPRAY_ARGS to the sprayed pair only (e.g. "--path-burst 1");
# with MRF_KEEP_OUT=1 the outputs and `status` after each pair are kept.
. "$(dirname "$0")/lib.sh" "${1:-}"
BYTES=${MRF_ECMP_BYTES:-32M}
MIN_PCT=${MRF_ECMP_MIN_PCT-90}
SPRAY_RUNS=${MRF_ECMP_SPRAY_RUNS:-3}
ALL_ARGS=${MRF_ECMP_ARGS:-}
SPRAY_ARGS="$ALL_ARGS ${MRF_ECMP_SPRAY_ARGS:-}"
"$F" up -S 2 --oversub 2 --ecn >/dev/null || exit 1
bis_mbps=500
echo "== scenario 2: ECMP collisions (h0->h2 + h1->h3, 2 spines x 250 Mbit/s, bisection $bis_mbps Mbit/s)"

# Source ports: h0's port 50000 picks spine X; find a port for h1 -> h3
# that leaf0 also hashes onto X (collision) and one it hashes elsewhere.
SA=50000
sx=$("$F" path h0 h2 $SA 4794)
SB="" SC=""
for p in $(seq 51000 51063); do
    s=$("$F" path h1 h3 "$p" 4794)
    if [ "$s" = "$sx" ]; then [ -n "$SB" ] || SB=$p; else [ -n "$SC" ] || SC=$p; fi
done
[ -n "$SB" ] && [ -n "$SC" ] || { echo "FAIL: no colliding / non-colliding source port found"; exit 1; }
echo "single-path flows: h0:$SA -> h2 and h1:$SB -> h3 both hash onto spine $sx (reference: h1:$SC elsewhere)"

pair() { # MODE ARGS_A ARGS_B
    local m=$1 before after t0
    before=$(spine_bytes 0)
    start_server h2 4794 "$m-a"; start_server h3 4794 "$m-b"; sleep 0.3
    # common start: time enough for both clients to connect and register
    t0=$(awk -v t="$(date +%s.%N)" 'BEGIN {printf "%.3f", t + 1.5}')
    run_client h0 h2 4794 "$m-a" -b "$BYTES" --verify --start-at "$t0" $2 &
    run_client h1 h3 4794 "$m-b" -b "$BYTES" --verify --start-at "$t0" $3 &
    wait
    after=$(spine_bytes 0)
    "$F" status --raw >"$OUT/status-$m" # cumulative per-link counters (kept with MRF_KEEP_OUT)
    paste <(tr ' ' '\n' <<<"$before") <(tr ' ' '\n' <<<"$after") | awk 'NF == 2 {print $2 - $1}' >"$OUT/share-$m"
}
pair single "--paths 1 --sport $SA --sports 1 $ALL_ARGS" "--paths 1 --sport $SB --sports 1 $ALL_ARGS"
SPRAYS=""
for i in $(seq 1 "$SPRAY_RUNS"); do
    m=spray; [ "$i" -eq 1 ] || m=spray$i
    SPRAYS="$SPRAYS $m"
    pair $m "--paths 256 --sport 50000 --sports 256 $SPRAY_ARGS" "--paths 256 --sport 51000 --sports 256 $SPRAY_ARGS"
done
pair apart "--paths 1 --sport $SA --sports 1 $ALL_ARGS" "--paths 1 --sport $SC --sports 1 $ALL_ARGS"

printf "\n%-7s %9s %9s %10s %8s %7s %6s %5s %7s   %s\n" mode "A Mbit/s" "B Mbit/s" "aggregate" "of bis." verify retx rto retired "spine share (s0 s1)"
for m in single $SPRAYS apart; do
    ra=$(result $m-a) rb=$(result $m-b)
    agg=$(awk -v a="$(field "$ra" bytes)" -v b="$(field "$rb" bytes)" \
              -v sa="$(field "$ra" start)" -v sb="$(field "$rb" start)" \
              -v ea="$(field "$ra" end)" -v eb="$(field "$rb" end)" \
        'BEGIN {s = sa < sb ? sa : sb; e = ea > eb ? ea : eb
                if (sa > 0 && sb > 0 && e > s) printf "%.1f", (a + b) * 8 / (e - s) / 1e6; else print 0}')
    echo "$agg" >"$OUT/agg-$m"
    tot=$(awk '{t += $1} END {print t}' "$OUT/share-$m")
    v=ok; [ "$(field "$ra" verify)" = ok ] && [ "$(field "$rb" verify)" = ok ] || v=FAIL
    printf "%-7s %9s %9s %10s %7.0f%% %7s %6s %5s %7s   %s\n" $m "$(field "$ra" goodput_mbps)" "$(field "$rb" goodput_mbps)" "$agg" \
        "$(awk -v a="$agg" -v b=$bis_mbps 'BEGIN {print 100 * a / b}')" $v \
        "$(( $(field "$ra" retx)0/10 + $(field "$rb" retx)0/10 ))" \
        "$(( $(field "$ra" retx_rto)0/10 + $(field "$rb" retx_rto)0/10 ))" \
        "$(( $(field "$ra" paths_retired)0/10 + $(field "$rb" paths_retired)0/10 ))" \
        "$(awk -v t="$tot" '{printf "%5.1f%% ", t ? 100 * $1 / t : 0}' "$OUT/share-$m")"
done
echo "(aggregate = both flows' payload / their common span; the goodput ceiling with"
echo " 4096-byte payloads in ~4200-byte frames is ~97.5% of the bisection)"
echo
for m in single $SPRAYS apart; do
    ok=0; [ "$(field "$(result $m-a)" verify)" = ok ] && [ "$(field "$(result $m-b)" verify)" = ok ] && ok=1
    check "$m: both transfers complete, data verified" $ok
done
# the sprayed figure: the median of the sprayed runs' aggregates
for m in $SPRAYS; do cat "$OUT/agg-$m"; done | sort -n |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}' >"$OUT/agg-sprays"
pct() { awk -v a="$(cat "$OUT/agg-$1")" -v b=$bis_mbps 'BEGIN {printf "%.0f", 100 * a / b}'; }
echo "spray runs:$(for m in $SPRAYS; do printf ' %s%%' "$(pct $m)"; done) (median $(pct sprays)%)"
echo "spray: $(pct sprays)% of bisection; colliding single path: $(pct single)%; reference (apart): $(pct apart)%"
check "single path (colliding): aggregate far below bisection (<= 60%: $(pct single)%)" \
    "$(awk -v a="$(cat "$OUT/agg-single")" -v b=$bis_mbps 'BEGIN {print (a <= 0.6 * b ? 1 : 0)}')"
awk -v a="$(cat "$OUT/agg-sprays")" -v b=$bis_mbps 'BEGIN {
    printf "goal: sprayed aggregate >= 90%% of bisection: %s\n", (a >= 0.9 * b) ? "met" : "MISSED" }'
check "spray: aggregate >= 1.1 x the colliding single path ($(cat "$OUT/agg-sprays") vs $(cat "$OUT/agg-single") Mbit/s)" \
    "$(awk -v a="$(cat "$OUT/agg-sprays")" -v s="$(cat "$OUT/agg-single")" 'BEGIN {print (a >= 1.1 * s ? 1 : 0)}')"
if [ -n "$MIN_PCT" ]; then
    check "spray: aggregate >= ${MIN_PCT}% of bisection ($(cat "$OUT/agg-sprays") Mbit/s, $(pct sprays)%)" \
        "$(awk -v a="$(cat "$OUT/agg-sprays")" -v b=$bis_mbps -v p="$MIN_PCT" 'BEGIN {print (100 * a >= p * b ? 1 : 0)}')"
fi
exit $FAILED
