#!/bin/sh
# incast_sim.sh - incast N -> 1 in mroce-sim with and without the
# receiver's rate hint (issue 18, CC-24..29), N = 8, 64, 256 by default.
#
# Runs sim/scenarios/incast.txt once per N (the three transports in the
# same run: mroce = the default, per-path windows and rate hints;
# mroce_nohint = per-path windows only; mroce_classic = one window, no
# hints, the behaviour before CC-20..29) with a 1 us trace of every
# sender's data packets, and prints per transport:
#   conv_rtt  time to converge, in RTTs: the first time t such that in
#             every window [t' - W, t'] with t <= t' <= t_end each
#             sender's rate is within 10% of the fair share (the window's
#             total rate / N); t_end is when the first sender has sent
#             everything.  RTT is the median over the senders of the
#             smallest srtt each reports (its unloaded RTT).
#             W is the rate window: the larger of one RTT and the time 16
#             full packets take at the fair share (a rate over fewer
#             packets is a packet more or less, not a rate); conv_rtt
#             therefore cannot be below W (printed as win_rtt).
#             "never" if the rates never stay within 10%.
#   drops     packets dropped in queues (summary.csv drops_queue)
#   jain      Jain's fairness over the senders' bytes sent in the steady
#             state, the middle 80% of [0, t_end]
#   ecn, retx ECN marks and retransmitted packets of the whole run
# Usage: bench/incast_sim.sh [N ...]   (OUT=dir for the outputs;
# INIT_CWND=bytes sets every transport's initial window, qp_init_cwnd:
# the first round trip, before any ACK or hint, sends N * init_cwnd, and
# with the default 64 KiB that overflows the 1 MiB buffer from N = 16 on)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-sim}
out=${OUT:-$root/sim-out/incast}
mkdir -p "$build" "$out"
if [ ! -x "$build/sim/mroce-sim" ]; then
    (cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release "$root" >/dev/null &&
     make -j2 mroce-sim >/dev/null)
fi
sim=$build/sim/mroce-sim
ns=${*:-8 64 256}
printf '%-4s %-14s %8s %8s %6s %7s %7s %6s %9s\n' N transport conv_rtt \
    win_rtt drops jain ecn retx time_us
for n in $ns; do
    # 4 MiB per sender at N = 8, 512 KiB above: every run has at least
    # 128 packets per sender.
    bytes=4M
    [ "$n" -gt 8 ] && bytes=512K
    for tp in mroce mroce_nohint mroce_classic; do
        d=$out/n$n
        mkdir -p "$d"
        MROCE_SIM_TRACE="$d/trace_$tp.csv:1" "$sim" -q -o "$d" \
            -s name=incast$n -s transports=$tp \
            ${INIT_CWND:+-s qp_init_cwnd=$INIT_CWND} \
            -s "workload=incast senders=$n bytes=$bytes" \
            "$root/sim/scenarios/incast.txt" >/dev/null
        python3 - "$d/trace_$tp.csv" "$d/summary.csv" "$n" "$tp" <<'EOF'
import csv, sys
trace, summary, n, tp = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
PKT = 4096 + 80  # a full packet on the wire, as the engine counts it
rows = {}
mins = {}
for r in csv.DictReader(open(trace)):
    t = float(r["t_us"])
    src = int(r["src"])
    rows.setdefault(src, []).append((t, int(r["tx_data"])))
    s = int(r["srtt_ns"])
    if s and (src not in mins or s < mins[src]):
        mins[src] = s
m = sorted(mins.values())
rtt = (m[len(m) // 2] if m else 1000) / 1000.0  # us: the median sender's
srcs = sorted(rows)
final = {s: rows[s][-1][1] for s in srcs}
# t_end: the first time some sender has sent all it will send
t_end = min(next(t for t, p in rows[s] if p >= final[s]) for s in srcs)
times = sorted({t for s in srcs for t, _ in rows[s]})
def at(s, t):  # packets sent by s at time t (the latest row <= t)
    v = 0
    for tt, p in rows[s]:
        if tt > t:
            break
        v = p
    return v
series = {s: {} for s in srcs}
for s in srcs:
    v = 0
    it = iter(rows[s])
    nxt = next(it, None)
    for t in times:
        while nxt is not None and nxt[0] <= t:
            v = nxt[1]
            nxt = next(it, None)
        series[s][t] = v
fair_bps = 100e9 / n
win = max(rtt, 16 * PKT * 8 / fair_bps * 1e6)
step = times[1] - times[0] if len(times) > 1 else 1.0
k = max(1, int(round(win / step)))
good = []
for idx in range(k, len(times)):
    t = times[idx]
    if t > t_end:
        break
    t0 = times[idx - k]
    d = [series[s][t] - series[s][t0] for s in srcs]
    tot = sum(d)
    ok = tot > 0 and len(d) == n and all(abs(x - tot / n) <= 0.1 * tot / n for x in d)
    good.append((t, ok))
conv = None
for t, ok in reversed(good):
    if not ok:
        break
    conv = t
a = t_end * 0.1
b = t_end * 0.9
x = [at(s, b) - at(s, a) for s in srcs]
x += [0] * (n - len(x))
jain = sum(x) ** 2 / (n * sum(v * v for v in x)) if sum(x) else 0.0
sm = list(csv.DictReader(open(summary)))[-1]
print("%-4d %-14s %8s %8.1f %6s %7.3f %7s %6s %9.1f" % (
    n, tp, "never" if conv is None else "%.1f" % (conv / rtt), win / rtt,
    sm["drops_queue"], jain, sm["ecn_marks"], sm["retx_pkts"],
    float(sm["time_us"])))
EOF
    done
done
