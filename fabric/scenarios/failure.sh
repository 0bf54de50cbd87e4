#!/bin/bash
# Scenario 3 - link failure: mid-transfer, (a) a spine's link to the
# destination leaf goes down (l1-s0: leaf0 keeps hashing onto spine s0,
# which now has no route), (b) separately, a source-leaf uplink is
# blackholed (l0-s2: up, routes unchanged, every packet silently dropped,
# both directions, so data and ACKs die).  The transfer must complete with
# intact data; reported: the stall (longest gap between completions after
# the failure), when the dead paths were retired (ms and RTTs after the
# failure took effect, from the QP's paths_retired counter), how many, and
# whether any path still hashes onto the dead spine at the end.
. "$(dirname "$0")/lib.sh" "${1:-}"
BYTES=64M
AT=300
"$F" up >/dev/null || exit 1
echo "== scenario 3: link failure mid-transfer (h0 -> h2, 4 spines, 500 Mbit/s, 64 paths)"

# dead_paths LABEL SPINE: active path slots whose entropy still hashes onto SPINE
dead_paths() {
    local n=0 e
    for e in $(grep "^path " "$OUT/cli-$1" | sed -n 's/.* entropy=\([0-9]*\) active=1.*/\1/p'); do
        [ "$("$F" path h0 h2 "$e" 4794)" = "$2" ] && n=$((n + 1))
    done
    echo $n
}

scenario() { # LABEL ACTION LINK DEAD_SPINE
    local l=$1 act=$2 link=$3 spine=$4
    start_server h2 4794 "$l"; sleep 0.3
    run_client h0 h2 4794 "$l" -b $BYTES --verify --sport 50000 --sports 256 --paths 64 \
        --at $AT --run "$F $act $link"
    wait
    "$F" heal "$link"
    echo "$(dead_paths "$l" "$spine")" >"$OUT/dead-$l"
}
scenario fail fail l1-s0 s0
scenario blackhole blackhole l0-s2 s2

printf "\n%-10s %8s %7s %9s %8s %11s %10s %12s %8s %10s %6s %5s %5s %9s\n" run goodput verify stall_ms cmd_ms "first_ret" "first_RTTs" "RTTs_cmd_end" retired "last_RTTs" retx rto probe "dead_left"
for l in fail blackhole; do
    r=$(result $l)
    printf "%-10s %6s M %7s %9s %8s %8s ms %10s %12s %8s %10s %6s %5s %5s %9s\n" $l "$(field "$r" goodput_mbps)" \
        "$(field "$r" verify)" "$(field "$r" stall_after_ms)" "$(field "$r" action_took_ms)" "$(field "$r" first_retire_ms)" \
        "$(field "$r" first_retire_rtts)" "$(field "$r" first_retire_after_cmd_rtts)" \
        "$(field "$r" retired_after)" "$(field "$r" last_retire_rtts)" \
        "$(field "$r" retx)" "$(field "$r" retx_rto)" "$(field "$r" retx_probe)" "$(cat "$OUT/dead-$l")"
done
echo "(stall: longest gap between WRITE completions after the failure; first_ret: first path"
echo " retirement after the failure command was started; RTTs: that time in units of the QP's"
echo " smoothed RTT just before the failure, from the command's start (first_RTTs, last_RTTs)"
echo " or its end (RTTs_cmd_end; the link dies in between, the command takes cmd_ms);"
echo " dead_left: active paths still hashing onto the dead spine when the transfer ended)"
echo
for l in fail blackhole; do
    r=$(result $l)
    [ "$(field "$r" verify)" = ok ] && ok=1 || ok=0
    check "$l: transfer completed, data verified" $ok
    [ -n "$(field "$r" first_retire_ms)" ] && [ "$(field "$r" retired_after)" -ge 1 ] && ok=1 || ok=0
    check "$l: dead paths retired ($(field "$r" retired_after) retirements after the failure)" $ok
done
exit $FAILED
