#!/bin/sh
# limits_sim.sh - what bounds mroce-sim's speed, against issue 5's two goals:
# >= 5 M packet events per CPU second on one core (the 128-host headline
# all-to-all), and a 1,024-host all-to-all of 1 MiB per pair within 10
# minutes.  A measurement, never a test.  In one invocation it runs:
#   hot      two hosts, one connection, 1 s of simulated time (4 hops, the
#            same code as every run): all the state the packets touch stays
#            in the core's caches, so this is what a packet event costs
#            without cache misses;
#   h128     the headline all-to-all (sim/scenarios/ls128_alltoall.txt);
#   bigN     the 1,024-host all-to-all of bench_sim.sh (small QPs), its
#            first WINDOW of simulated time;
# each with MetaRoCE (the real engine) and with the RoCEv2 model (no engine,
# a few dozen lines of C per packet), and bench_memlat: the latency of one
# dependent load from working sets of 1 MiB to 4 GiB, this host's memory.
# Where perf works, each run's CPU time per packet event is split by
# function into the simulator (sim/src), the engine (src/engine, src/wire),
# copies (libc), kernel and other, sampling the measured phase only
# (MROCE_SIM_PERF_CTL, sim/src/run.c).  The verdict lines set the goals'
# time per packet event against these parts.
#   usage: bench/limits_sim.sh   env: BIG=1024 WINDOW=4ms OUT=DIR PERF_HZ=499
# (perf samples at 499 Hz: at 2999 the 128-host run lost ~15% of its speed)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-sim}
out=${OUT:-$root/sim-out/limits}
big=${BIG:-1024}
win=${WINDOW:-4ms}
mkdir -p "$build" "$out"
(cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release "$root" >/dev/null &&
 make -j2 mroce-sim bench_memlat >/dev/null)
sim=$build/sim/mroce-sim
sc=$root/sim/scenarios/ls128_alltoall.txt
rows=$out/rows
: >"$rows"

perf_ok=0
if command -v perf >/dev/null &&
   perf record -q -o "$out/probe.data" true >/dev/null 2>&1; then
    perf_ok=1
    # function -> part, from the objects the simulator was linked from
    nm --defined-only "$build"/sim/CMakeFiles/mroce_sim.dir/src/*.o \
        "$build"/sim/CMakeFiles/mroce-sim.dir/src/*.o |
        awk 'NF == 3 { print $3 }' | sort -u >"$out/sym.sim"
    nm --defined-only "$build"/CMakeFiles/mroce_engine.dir/src/engine/*.o \
        "$build"/CMakeFiles/mroce_wire.dir/src/wire/*.o |
        awk 'NF == 3 { print $3 }' | sort -u >"$out/sym.engine"
else
    echo "(no working perf: no split by function)"
fi
rm -f "$out/probe.data"

# run NAME TRANSPORT ARGS...: one run into $out/NAME-TRANSPORT; appends
# "NAME TP pkt_ev data_pkts cpu_s setup_s sim% engine% copies% kernel% other%"
run() {
    name=$1 tp=$2
    shift 2
    d=$out/$name-$tp
    rm -rf "$d"
    mkdir -p "$d"
    if [ $perf_ok = 1 ]; then
        mkfifo "$d/ctl"
        MROCE_SIM_PERF_CTL=$d/ctl perf record -q -F "${PERF_HZ:-499}" -D -1 \
            --control "fifo:$d/ctl" -o "$d/perf.data" -- \
            "$sim" -q -o "$d" -s name="$name" -s transports="$tp" "$@" \
            >"$d/line" 2>"$d/err"
        perf report -i "$d/perf.data" --no-children --sort sym --stdio \
            2>/dev/null |
            awk -v simf="$out/sym.sim" -v engf="$out/sym.engine" '
                BEGIN { while ((getline s < simf) > 0) part[s] = "sim"
                        while ((getline s < engf) > 0) part[s] = "engine" }
                $1 ~ /%$/ && ($2 == "[.]" || $2 == "[k]") {
                    p = $1; sub(/%/, "", p)
                    if ($2 == "[k]") k = "kernel"
                    else if ($3 in part) k = part[$3]
                    else if ($3 ~ /^_*mem(cpy|move|set)/) k = "copies"
                    else k = "other"
                    t[k] += p }
                END { printf "%.1f %.1f %.1f %.1f %.1f\n", t["sim"],
                      t["engine"], t["copies"], t["kernel"], t["other"] }
            ' >"$d/split"
    else
        "$sim" -q -o "$d" -s name="$name" -s transports="$tp" "$@" \
            >"$d/line" 2>"$d/err"
        echo "- - - - -" >"$d/split"
    fi
    setup=$(sed -n 's/.*setup \([0-9.]*\)s.*/\1/p' "$d/line")
    tail -1 "$d/summary.csv" | awk -F, -v n="$name" -v tp="$tp" \
        -v su="$setup" -v parts="$(cat "$d/split")" \
        '{ print n, tp, $28, $23, $31, su, parts }' >>"$rows"
}

hot="-s hosts=2 -s hosts_per_tor=1 -s spines=1"
small="-s qp_window=64 -s qp_npaths=8 -s qp_sq=4 -s qp_rq=4"
echo "== runs (each MetaRoCE, then the RoCEv2 model)"
for tp in mroce roce; do
    # shellcheck disable=SC2086
    run hot $tp $hot -s "workload=incast senders=1 bytes=16G" -s limit=1s "$sc"
    run h128 $tp "$sc"
    # shellcheck disable=SC2086
    run big$big $tp -s hosts="$big" -s hosts_per_tor=32 -s spines=32 $small \
        -s limit="$win" -s "workload=alltoall bytes=1M active=8" "$sc"
done
"$build/bench/bench_memlat" >"$out/memlat"

awk -v big="$big" -v win="$win" '
    FNR == 1 { f++ }
    f == 1 { mem[$2] = $3; next }
    { k = $1 "/" $2; ev[k] = $3; dp[k] = $4; cpu[k] = $5; su[k] = $6
      ns[k] = $5 * 1e9 / $3
      for (i = 0; i < 5; i++) pc[k, i] = $(7 + i) }
    END {
        split("simulator engine copies kernel other", part, " ")
        printf "== per run: M packet events per CPU s; ns per packet event "
        printf "[simulator / engine / copies / kernel / other, from perf]\n"
        n = split("hot h128 big" big, runs, " ")
        for (r = 1; r <= n; r++) for (t = 1; t <= 2; t++) {
            k = runs[r] "/" (t == 1 ? "mroce" : "roce")
            if (!(k in ns)) continue
            printf "%-9s %-6s %6.2f M  %6.1f ns", runs[r], \
                (t == 1 ? "mroce" : "roce"), ev[k] / cpu[k] / 1e6, ns[k]
            if (pc[k, 0] != "-")
                printf "  [%.0f / %.0f / %.0f / %.0f / %.0f]", \
                    ns[k] * pc[k, 0] / 100, ns[k] * pc[k, 1] / 100, \
                    ns[k] * pc[k, 2] / 100, ns[k] * pc[k, 3] / 100, \
                    ns[k] * pc[k, 4] / 100
            printf "  %.2f pkt-ev per data packet\n", ev[k] / dp[k]
        }
        printf "== memory: ns per dependent load by working set:"
        for (m = 1; m <= 4096; m *= 4) if (m in mem)
            printf " %s MiB %s;", m, mem[m]
        printf "\n"
        printf "== goal 1: 5 M packet events per CPU s at 128 hosts = 200 ns each\n"
        h = "hot/mroce"; c = "h128/mroce"
        printf "  hot (all state in cache): %.1f ns; 128 hosts: %.1f ns, " \
            "%.1f ns over hot\n", ns[h], ns[c], ns[c] - ns[h]
        printf "  the goal leaves %.1f ns per packet event for cache misses" \
            " (%.1f loads at the 16 MiB latency, %.1f at 256 MiB);" \
            " the run spends %.1f (%.1f / %.1f)\n", 200 - ns[h], \
            (200 - ns[h]) / mem[16], (200 - ns[h]) / mem[256], \
            ns[c] - ns[h], (ns[c] - ns[h]) / mem[16], \
            (ns[c] - ns[h]) / mem[256]
        if (pc[c, 0] != "-")
            printf "  of the 128-host cost the simulator is %.1f ns (hot " \
                "%.1f), the engine %.1f (hot %.1f)\n", \
                ns[c] * pc[c, 0] / 100, ns[h] * pc[h, 0] / 100, \
                ns[c] * pc[c, 1] / 100, ns[h] * pc[h, 1] / 100
        if (pc[c, 0] != "-") {
            best = ns[c] * pc[c, 0] / 100 + ns[h] * pc[h, 1] / 100
            printf "  with the engine at its hot cost and the simulator as " \
                "measured: %.1f ns, %.2f M per s\n", best, 1e3 / best
        }
        b = "big" big "/mroce"; br = "big" big "/roce"
        if (!(b in ns)) exit
        pkts = big * (big - 1) * 256
        # The window is not the mix of the whole run: it starts with the peers
        # r+1 .. r+8, in the same leaf as the sender (2 hops).  Over the whole run
        # a pair crosses the spine (4 hops) unless both hosts share a leaf;
        # the 128-host run, complete, gives packet events per data packet
        # (ACKs included), scaled by the mean hops per pair of each shape.
        hops128 = (4 * (128 - 16) + 2 * 15) / 127
        hopsbig = (4 * (big - 32) + 2 * 31) / (big - 1)
        pe = ev[c] / dp[c] * hopsbig / hops128
        total = pkts * pe
        avail = 600 - su[b]
        need = avail * 1e9 / total
        printf "== goal 2: %d-host all-to-all of 1 MiB per pair in 600 s\n", big
        printf "  %d data packets without loss x %.2f packet events each " \
            "(128 hosts, scaled by hops per pair) = %.0f M packet " \
            "events; setup took %.1f s, so the " \
            "run must do %.2f M per s: %.1f ns each\n", pkts, pe, \
            total / 1e6, su[b], total / avail / 1e6, need
        printf "  measured in the first %s: %.1f ns (%.0f CPU s for the " \
            "whole run, %.1fx the %.0f s left)\n", win, ns[b], \
            ns[b] * total / 1e9, ns[b] * total / 1e9 / avail, avail
        if (br in ns)
            printf "  the RoCEv2 model (no engine) at this size: %.1f ns " \
                "per packet event\n", ns[br]
        if (pc[b, 0] != "-") {
            s = ns[b] * pc[b, 0] / 100; e = ns[b] * pc[b, 1] / 100
            printf "  of the measured cost the simulator is %.1f ns and " \
                "the engine %.1f; with the simulator as it is, the goal " \
                "leaves the engine %.1f ns per packet event, %.0f ns per " \
                "data packet, against %.0f hot and %.0f at this size\n", \
                s, e, need - s, (need - s) * pe, \
                ns[h] * pc[h, 1] / 100 * ev[h] / dp[h], e * pe
        }
    }' "$out/memlat" "$rows"
echo "raw: $out (rows, memlat, RUN-TRANSPORT/{line,summary.csv,perf.data,split})"
