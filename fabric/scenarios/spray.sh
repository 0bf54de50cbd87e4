#!/bin/bash
# Scenario 1 - spraying: one MetaRoCE connection between hosts under
# different leaves puts traffic on every spine (each spine carries at least
# 60% of an even share); a single-entropy, RoCE-like connection (--paths 1)
# uses one spine.
. "$(dirname "$0")/lib.sh" "${1:-}"
SPINES=4
BYTES=24M
"$F" up -S $SPINES >/dev/null || exit 1
echo "== scenario 1: spraying (h0 -> h2, 4 spines, 500 Mbit/s links)"

measure() { # LABEL ARGS...
    local l=$1; shift
    local before after
    before=$(spine_bytes 0)
    start_server h2 4794 "$l"; sleep 0.3
    run_client h0 h2 4794 "$l" -b $BYTES --verify "$@"
    wait
    after=$(spine_bytes 0)
    paste <(tr ' ' '\n' <<<"$before") <(tr ' ' '\n' <<<"$after") | awk 'NF == 2 {print $2 - $1}' >"$OUT/share-$l"
}
# 256 entropies = every source port of the device (fixed range, so the ECMP
# hash, seeded per fabric, gives the same spread each run).
measure spray --paths 256 --sport 50000 --sports 256
measure single --paths 1 --sport 50000 --sports 1

printf "\n%-8s %8s %7s %6s %6s %8s   %s\n" run goodput verify retx rto retired "per-spine share of leaf0->spine bytes (s0..s$((SPINES - 1)))"
for l in spray single; do
    r=$(result $l)
    tot=$(awk '{t += $1} END {print t}' "$OUT/share-$l")
    shares=$(awk -v t="$tot" '{printf "%5.1f%% ", t ? 100 * $1 / t : 0}' "$OUT/share-$l")
    printf "%-8s %6s M %7s %6s %6s %8s   %s\n" $l "$(field "$r" goodput_mbps)" "$(field "$r" verify)" \
        "$(field "$r" retx)" "$(field "$r" retx_rto)" "$(field "$r" paths_retired)" "$shares"
done
echo
for l in spray single; do
    [ "$(field "$(result $l)" verify)" = ok ] && ok=1 || ok=0
    check "$l: transfer complete, data verified" $ok
done
tot=$(awk '{t += $1} END {print t}' "$OUT/share-spray")
min=$(sort -n "$OUT/share-spray" | head -1)
check "spray: every spine carries >= 60% of an even share (min $(awk -v m="$min" -v t="$tot" -v s=$SPINES 'BEGIN {printf "%.0f%%", 100 * m * s / t}'))" \
    "$(awk -v m="$min" -v t="$tot" -v s=$SPINES 'BEGIN {print ((t > 0 && m * s >= 0.6 * t) ? 1 : 0)}')"
tot=$(awk '{t += $1} END {print t}' "$OUT/share-single")
max=$(sort -n "$OUT/share-single" | tail -1)
check "single path: one spine carries >= 95% ($(awk -v m="$max" -v t="$tot" 'BEGIN {printf "%.1f%%", 100 * m / t}'))" \
    "$(awk -v m="$max" -v t="$tot" 'BEGIN {print ((t > 0 && m >= 0.95 * t) ? 1 : 0)}')"
exit $FAILED
