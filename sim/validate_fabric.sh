#!/bin/bash
# validate_fabric.sh [BUILD_DIR] - the simulator against the namespace testbed.
#
# Runs the same scenarios on mroce-fabric's default shape (4 hosts, 2
# leaves, 4 spines, 500 Mbit/s tbf links; fabric/scenarios/spray.sh and
# failure.sh) and in mroce-sim (sim/scenarios/fabric_*.txt, the same shape
# and engine attributes), MRF_VAL_RUNS times each (default 5; the simulator
# with seeds 1..RUNS, which changes its ECMP hash salt), and prints one
# table: metric, testbed and simulator medians [min-max], the bound, PASS
# or FAIL on the medians.  The bounds and why they are what they are:
# sim/README.md, Validation.  Needs root and network namespaces for the
# testbed (exit 77 otherwise, like the fabric tests); MRF_KEEP_OUT=1 keeps
# the raw outputs.  MRF_VAL_STRICT=1 also fails on the timing rows (stall,
# first retirement), which this shared host cannot always resolve.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) || { echo "SKIP: no build dir"; exit 77; }
SIM=$BUILD/sim/mroce-sim
RUNS=${MRF_VAL_RUNS:-5}
export MRF_PREFIX=${MRF_PREFIX:-mrf-val-}
[ -x "$SIM" ] || { echo "SKIP: mroce-sim not built"; exit 77; }
. "$ROOT/fabric/scenarios/lib.sh" "$BUILD/tools"
SPINES=4
RATE=500
AT=300
"$F" up -S $SPINES >/dev/null || exit 1
echo "== validation: mroce-sim vs the namespace testbed ($RUNS runs each, load $(cut -d' ' -f1-3 /proc/loadavg))"

# one "metric value" line per measure into $OUT/tb-RUN or $OUT/sim-RUN
# shares FILE_OF_BYTES -> "min_pct_of_even max_pct_of_even spines_over_5pct"
shares() {
    awk -v s=$SPINES '{b[NR] = $1; t += $1}
        END {mn = -1; mx = 0; n = 0
             for (i = 1; i <= NR; i++) {
                 if (mn < 0 || b[i] < mn) mn = b[i]
                 if (b[i] > mx) mx = b[i]
                 if (t > 0 && b[i] > 0.05 * t) n++ }
             if (t > 0) printf "%.1f %.1f %d\n", 100 * mn * s / t, 100 * mx * s / t, n
             else print "nan nan 0"}' "$1"
}
flow_metrics() { # PREFIX RESULT_LINE [CMD_END]: failure metrics of one flow
    local p=$1 r=$2
    echo "${p}_goodput_pct $(awk -v g="$(field "$r" goodput_mbps)" -v R=$RATE 'BEGIN {printf "%.1f", 100 * g / R}')"
    local srtt; srtt=$(field "$r" srtt_at_action_us)
    [ -n "$srtt" ] || srtt=$(field "$r" srtt_at_fault_us)
    echo "${p}_srtt_us $srtt"
    echo "${p}_stall_ms $(field "$r" stall_after_ms)"
    echo "${p}_stall_rtts $(awk -v m="$(field "$r" stall_after_ms)" -v s="$srtt" 'BEGIN {if (s > 0 && m != "") printf "%.1f", 1000 * m / s}')"
    echo "${p}_first_retire_ms $(field "$r" first_retire_ms)"
    echo "${p}_first_retire_rtts $(field "$r" first_retire_rtts)"
    echo "${p}_last_retire_ms $(field "$r" last_retire_ms)"
    echo "${p}_retired $(field "$r" retired_after)"
    [ -n "${3:-}" ] && echo "${p}_first_retire_after_cmd_ms $(field "$r" first_retire_after_cmd_ms)"
    [ -n "${3:-}" ] && echo "${p}_cmd_ms $(field "$r" action_took_ms)"
    return 0
}

# The failures as failure.sh makes them, but with the tool's own commands
# (cmd_fail: both ends down; cmd_blackhole: an nftables ingress drop on both
# ends) run directly: `mroce-fabric fail` spends 20-50 ms in bash before
# them, which blurs when the link died; here the action takes a few ms, and
# the driver reports retirement times from its start and from its end.
bh_rule() { # DEV
    printf 'table netdev mrf_bh_%s {\n chain in {\n  type filter hook ingress device "%s" priority -500; policy accept;\n  counter drop\n }\n}\n' "$1" "$1"
}
bh_rule s2 >"$OUT/bh-l0.nft" # in leaf l0, its device towards s2
bh_rule l0 >"$OUT/bh-s2.nft"
ACT_fail="ip -n ${MRF_PREFIX}l1 link set s0 down && ip -n ${MRF_PREFIX}s0 link set l1 down"
ACT_blackhole="ip netns exec ${MRF_PREFIX}l0 nft -f $OUT/bh-l0.nft && ip netns exec ${MRF_PREFIX}s2 nft -f $OUT/bh-s2.nft"

testbed_run() { # RUN
    local run=$1 o=$OUT/tb-$1 l before after r act
    : >"$o"
    for l in spray single; do
        [ $l = spray ] && set -- --paths 256 --sport 50000 --sports 256 || set -- --paths 1 --sport 50000 --sports 1
        before=$(spine_bytes 0)
        start_server h2 4794 "$l"; sleep 0.3
        run_client h0 h2 4794 "$l" -b 24M --verify "$@"
        wait
        after=$(spine_bytes 0)
        paste <(tr ' ' '\n' <<<"$before") <(tr ' ' '\n' <<<"$after") | awk 'NF == 2 {print $2 - $1}' >"$OUT/share-$l"
        r=$(result $l)
        [ "$(field "$r" verify)" = ok ] || { echo "testbed $l: transfer failed: $r"; FAILED=1; }
        read -r mn mx n < <(shares "$OUT/share-$l")
        echo "${l}_goodput_pct $(awk -v g="$(field "$r" goodput_mbps)" -v R=$RATE 'BEGIN {printf "%.1f", 100 * g / R}')" >>"$o"
        echo "${l}_min_share $mn" >>"$o"
        echo "${l}_max_share $mx" >>"$o"
        echo "${l}_spines $n" >>"$o"
        echo "${l}_max_stall_ms $(field "$r" max_stall_ms)" >>"$o"
        cp "$OUT/cli-$l" "$OUT/cli-$l-$run"
    done
    for l in fail blackhole; do
        [ $l = fail ] && act=$ACT_fail link=l1-s0 || act=$ACT_blackhole link=l0-s2
        start_server h2 4794 "$l"; sleep 0.3
        run_client h0 h2 4794 "$l" -b 64M --verify --sport 50000 --sports 256 --paths 64 \
            --at $AT --run "$act"
        wait
        "$F" heal "$link"
        r=$(result $l)
        [ "$(field "$r" verify)" = ok ] || { echo "testbed $l: transfer failed: $r"; FAILED=1; }
        flow_metrics $l "$r" cmd >>"$o"
        cp "$OUT/cli-$l" "$OUT/cli-$l-$run"
    done
}

sim_run() { # RUN
    local o=$OUT/sim-$1 l r
    : >"$o"
    for l in spray single fail blackhole; do
        "$SIM" -q -o "$OUT/simout" -s seed="$1" "$ROOT/sim/scenarios/fabric_$l.txt" >"$OUT/simraw-$l-$1" 2>&1
        r=$(grep "^report " "$OUT/simraw-$l-$1")
        [ -n "$r" ] && grep -q " complete " "$OUT/simraw-$l-$1" || { echo "sim $l: run failed"; FAILED=1; }
        if [ $l = spray ] || [ $l = single ]; then
            field "$r" uplink_bytes | tr ',' '\n' >"$OUT/simshare-$l"
            read -r mn mx n < <(shares "$OUT/simshare-$l")
            echo "${l}_goodput_pct $(awk -v g="$(field "$r" goodput_mbps)" -v R=$RATE 'BEGIN {printf "%.1f", 100 * g / R}')"
            echo "${l}_min_share $mn"
            echo "${l}_max_share $mx"
            echo "${l}_spines $n"
            echo "${l}_max_stall_ms $(field "$r" max_stall_ms)"
        else
            flow_metrics $l "$r"
        fi >>"$o"
    done
}

for i in $(seq 1 "$RUNS"); do
    testbed_run "$i"
    sim_run "$i"
done

# stats SIDE METRIC -> "median min max" over the runs (nan if absent)
stats() {
    cat "$OUT"/"$1"-* 2>/dev/null | awk -v m="$2" '$1 == m && $2 != "" {print $2}' | sort -g |
        awk '{v[NR] = $1} END {if (!NR) {print "nan nan nan"; exit}
             med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
             printf "%g %g %g\n", med, v[1], v[NR]}'
}
# row METRIC KIND A B DESCRIPTION
#   KIND abs: |sim - testbed| <= A;  ratio: sim/testbed in [1/A, A] or
#   |sim - testbed| <= B (whichever is looser);  eq: equal;
#   stall: ratio A unless the testbed's noise (metric B) hides the stall;
#   ge: sim >= testbed - A (one-sided);  window: sim in [median of metric B
#   - A, testbed median + A] (B: the testbed's lower-bound metric; A grows
#   to the host's no-failure completion gap when that is longer)
printf "\n%-28s %-24s %-24s %-30s %s\n" metric "testbed med [min-max]" "sim med [min-max]" bound result
row() {
    local m=$1 kind=$2 a=$3 b=$4 desc=$5 ok nm rt pred
    read -r tm tn tx < <(stats tb "$m")
    read -r sm sn sx < <(stats sim "$m")
    case $kind in
    abs) ok=$(awk -v t="$tm" -v s="$sm" -v a="$a" 'BEGIN {d = s - t; if (d < 0) d = -d; print (d <= a) ? 1 : 0}') ;;
    ratio) ok=$(awk -v t="$tm" -v s="$sm" -v a="$a" -v b="$b" 'BEGIN {d = s - t; if (d < 0) d = -d
               print ((t > 0 && s / t <= a && s / t >= 1 / a) || d <= b) ? 1 : 0}') ;;
    eq) ok=$(awk -v t="$tm" -v s="$sm" 'BEGIN {print (t == s) ? 1 : 0}') ;;
    ge) ok=$(awk -v t="$tm" -v s="$sm" -v a="$a" 'BEGIN {print (s >= t - a) ? 1 : 0}') ;;
    window) # margin: A ms (the driver's loop granularity) or, if longer, the
            # host's completion gaps without a failure (spray_max_stall_ms):
            # the driver timestamps the action's end and the retirements
            # only when it is scheduled
            read -r lm _ _ < <(stats tb "$b")
            read -r nm _ _ < <(stats tb spray_max_stall_ms)
            a=$(awk -v a="$a" -v n="$nm" 'BEGIN {print (n != "nan" && n > a) ? n : a}')
            desc="$desc (+-$a ms)"
            ok=$(awk -v lo="$lm" -v hi="$tm" -v s="$sm" -v a="$a" 'BEGIN {print (lo != "nan" && s >= lo - a && s <= hi + a) ? 1 : 0}') ;;
    stall) # ratio A, but only if the testbed can resolve the stall: the
           # simulator's stall in RTTs times the testbed's srtt (ms) must
           # exceed the testbed's longest completion gap without a failure
           # (metric B, same invocation); else the host's own scheduling
           # gaps are as long as what is measured and the row is "noise"
        read -r nm _ _ < <(stats tb "$b")
        read -r rt _ _ < <(stats tb "${m%_stall_rtts}_srtt_us")
        pred=$(awk -v s="$sm" -v r="$rt" 'BEGIN {printf "%.2f", s * r / 1000}')
        if awk -v n="$nm" -v p="$pred" 'BEGIN {exit !(n == "nan" || n >= p)}'; then
            ok=3 desc="$desc; noise $nm >= $pred ms"
        else
            ok=$(awk -v t="$tm" -v s="$sm" -v a="$a" 'BEGIN {print (t > 0 && s / t <= a && s / t >= 1 / a) ? 1 : 0}')
        fi ;;
    info) ok=2 ;;
    esac
    { [ "$tm" = nan ] || [ "$sm" = nan ]; } && [ "$kind" != info ] && ok=0
    # The timing rows depend on when a loaded 2-core host schedules the
    # testbed's processes (about one invocation in ten missed a bound by a
    # few percent here): they gate only with MRF_VAL_STRICT=1; otherwise a
    # miss is printed and counted but does not fail the test.
    case $kind in stall|window)
        [ "$ok" = 0 ] && [ -z "${MRF_VAL_STRICT:-}" ] && ok=4 ;;
    esac
    printf "%-28s %-24s %-24s %-30s %s\n" "$m" "$tm [$tn-$tx]" "$sm [$sn-$sx]" "$desc" \
        "$(case $ok in 1) echo PASS;; 2) echo info;; 3) echo UNRESOLVED;; 4) echo "FAIL (timing, not gated)";; *) echo FAIL;; esac)"
    [ "$ok" = 0 ] && FAILED=1
    [ "$ok" = 3 ] && UNRESOLVED=$((UNRESOLVED + 1))
    [ "$ok" = 4 ] && UNGATED=$((UNGATED + 1))
    return 0
}
UNRESOLVED=0 UNGATED=0
row spray_min_share abs 20 0 "|d| <= 20 pts of even"
row spray_max_share abs 20 0 "|d| <= 20 pts of even"
row single_spines eq 0 0 "equal"
row spray_goodput_pct ge 2 0 "sim >= tb - 2 pts"
row single_goodput_pct ge 2 0 "sim >= tb - 2 pts"
row spray_max_stall_ms info 0 0 "(no failure: host noise)"
for l in fail blackhole; do
    row ${l}_srtt_us info 0 0 ""
    row ${l}_stall_ms info 0 0 "(see stall_rtts)"
    row ${l}_stall_rtts stall 2 spray_max_stall_ms "x2 (in each side's srtt)"
    row ${l}_first_retire_ms window 2 ${l}_first_retire_after_cmd_ms "in tb [cmd end, cmd start]"
    row ${l}_first_retire_after_cmd_ms info 0 0 "(tb: from the cmd's end)"
    row ${l}_cmd_ms info 0 0 "(tb: the action's duration)"
    row ${l}_first_retire_rtts info 0 0 ""
    row ${l}_retired abs 10 0 "|d| <= 10"
    row ${l}_goodput_pct ge 2 0 "sim >= tb - 2 pts"
done
echo
[ $UNRESOLVED = 0 ] || echo "$UNRESOLVED row(s) UNRESOLVED: this host's completion gaps without a failure are as long as the stall to be measured (not validated in this run)"
[ $UNGATED = 0 ] || echo "$UNGATED timing row(s) outside their bound, not gated (MRF_VAL_STRICT=1 gates them)"
[ $FAILED = 0 ] && echo "validation: PASS" || echo "validation: FAIL"
exit $FAILED
