#!/bin/sh
# incast_sim.sh - incast N -> 1 in mroce-sim with and without the
# receiver's rate hint (issue 18, CC-24..29), N = 8, 64, 256 by default.
#
# Runs sim/scenarios/incast.txt once per N and transport, all in one
# invocation (mroce = the engine's default: per-path windows, rate hints
# and a share request before data with the first packet behind it,
# CC-20..38; mroce_ask = rate_hint 3, no data before the answer;
# mroce_hint1 = rate_hint 1, hints without asking, the default before
# CC-36; mroce_nohint = per-path windows only; mroce_classic = one
# window, no hints, the behaviour before CC-20..29; roce = the RoCEv2
# model with DCQCN, sim/src/roce.c) with a 1 us trace of every sender
# (MROCE_SIM_TRACE: packets sent, the receiver's hint, the rate the
# sender may send at; 10 us for roce), and prints per transport:
#   fair_p50, fair_max  time to fair share per flow, in RTTs: for each
#             sender the first time from which on, up to t_end, the rate
#             it may send at (trace column rate_mbps: the smaller of its
#             hint and cwnd / srtt; DCQCN's rate for roce) stays within
#             10% of the fair share (100 Gbit/s / N); the median and the
#             largest over the senders ("never": some sender is not
#             within 10% at t_end).  t_end is when the first sender has
#             sent everything.  RTT is the median over the senders of
#             the smallest srtt each reports (its unloaded RTT) in the
#             first MetaRoCE transport's run, the same for all of them.
#   conv_rtt  the same from the packets actually sent: the first time t
#             such that in every window [t' - W, t'] with t <= t' <= t_end
#             each sender's packets are within 10% of the window's total
#             / N; W (win_rtt) is the larger of one RTT and the time 16
#             full packets take at the fair share, so conv_rtt cannot be
#             below W.
#   drops     packets dropped in queues (summary.csv drops_queue)
#   jain      Jain's fairness over the senders' bytes sent in the steady
#             state, the middle 80% of [0, t_end]
#   ecn, retx ECN marks and retransmitted packets of the whole run
#   time_us   when the last sender's data was acknowledged
# Usage: bench/incast_sim.sh [N ...]   (BUILD=dir with sim/mroce-sim, by
# default build, configured and built if missing; OUT=dir for the
# outputs; TRANSPORTS="..." to run fewer; INIT_CWND=bytes sets every
# MetaRoCE transport's initial window, qp_init_cwnd: without a share
# request the first round trip sends N * init_cwnd, and with the default
# 64 KiB that overflows the 1 MiB buffer from N = 16 on)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
out=${OUT:-$root/sim-out/incast}
mkdir -p "$build" "$out"
if [ ! -x "$build/sim/mroce-sim" ]; then
    (cd "$build" && cmake -DCMAKE_BUILD_TYPE=Release "$root" >/dev/null &&
     make -j2 mroce-sim >/dev/null)
fi
sim=$build/sim/mroce-sim
ns=${*:-8 64 256}
tps=${TRANSPORTS:-mroce mroce_ask mroce_hint1 mroce_nohint roce}
printf '%-4s %-14s %8s %8s %8s %8s %6s %7s %7s %6s %9s\n' N transport \
    fair_p50 fair_max conv_rtt win_rtt drops jain ecn retx time_us
for n in $ns; do
    # 4 MiB per sender at N = 8, 512 KiB above: every run has at least
    # 128 packets per sender.
    bytes=4M
    [ "$n" -gt 8 ] && bytes=512K
    rttf=$out/n$n/rtt_ns
    # A run of roce alone reuses the RTT of an earlier run in OUT.
    case $tps in roce*) ;; *) rm -f "$rttf" ;; esac
    for tp in $tps; do
        d=$out/n$n
        mkdir -p "$d"
        # 1 us trace steps; 10 us for the RoCEv2 model, whose rate moves
        # on 55 us timers and whose incasts run far longer.
        step=1
        [ "$tp" = roce ] && step=10
        MROCE_SIM_TRACE="$d/trace_$tp.csv:$step" "$sim" -q -o "$d" \
            -s name=incast$n -s transports=$tp \
            ${INIT_CWND:+-s qp_init_cwnd=$INIT_CWND} \
            -s "workload=incast senders=$n bytes=$bytes" \
            "$root/sim/scenarios/incast.txt" >/dev/null
        python3 - "$d/trace_$tp.csv" "$d/summary.csv" "$n" "$tp" "$rttf" <<'EOF'
import csv, os, sys
trace, summary, n, tp, rttf = sys.argv[1:6]
n = int(n)
PKT = 4096 + 80  # a full packet on the wire, as the engine counts it
rows = {}
rates = {}
mins = {}
for r in csv.DictReader(open(trace)):
    t = float(r["t_us"])
    src = int(r["src"])
    rows.setdefault(src, []).append((t, int(r["tx_data"])))
    rates.setdefault(src, []).append((t, int(r["rate_mbps"])))
    s = int(r["srtt_ns"])
    if s and (src not in mins or s < mins[src]):
        mins[src] = s
# One RTT for every transport of this N: the first MetaRoCE transport's
# (the others' smallest samples already hold queues they built).
m = sorted(mins.values())
if os.path.exists(rttf):
    rtt_ns = int(open(rttf).read())
elif m:
    rtt_ns = m[len(m) // 2]
    open(rttf, "w").write("%d\n" % rtt_ns)
else:
    rtt_ns = 1000
rtt = rtt_ns / 1000.0  # us: the median sender's
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
# Per flow: the first trace time from which its rate stays within 10% of
# the fair share up to t_end (None: never).
fair_mbps = 100000.0 / n
tf = []
for src in srcs:
    first = None
    for t, r in rates[src]:
        if t > t_end:
            break
        if abs(r - fair_mbps) <= 0.1 * fair_mbps:
            if first is None:
                first = t
        else:
            first = None
    tf.append(first)
tf += [None] * (n - len(tf))
def rtts(v):
    return "never" if v is None else "%.1f" % (v / rtt)
ok = sorted(v for v in tf if v is not None)
fair_p50 = sorted(tf, key=lambda v: float("inf") if v is None else v)[n // 2]
fair_max = None if len(ok) < n else ok[-1]
a = t_end * 0.1
b = t_end * 0.9
x = [at(s, b) - at(s, a) for s in srcs]
x += [0] * (n - len(x))
jain = sum(x) ** 2 / (n * sum(v * v for v in x)) if sum(x) else 0.0
sm = list(csv.DictReader(open(summary)))[-1]
print("%-4d %-14s %8s %8s %8s %8.1f %6s %7.3f %7s %6s %9.1f" % (
    n, tp, rtts(fair_p50), rtts(fair_max),
    "never" if conv is None else "%.1f" % (conv / rtt), win / rtt,
    sm["drops_queue"], jain, sm["ecn_marks"], sm["retx_pkts"],
    float(sm["time_us"])))
EOF
    done
done
