#!/usr/bin/env python3
"""incast_conv.py - convergence of one incast round of incast_hint.sh,
from the outputs of its mroce-fabric-flow servers and clients.

The receiver's server (one process with a connection per sender, or one
process per sender, all on the receiving host: one CLOCK_MONOTONIC)
prints "rx" lines: the bytes each connection has received so far.
Resampled onto one grid (STEP ms, linear between samples) they give each
sender's arrival rate at the bottleneck without clock skew.  The
definitions are bench/incast_sim.sh's, so the two are comparable:

  t_all     the time the last sender's first packet arrived (all N active;
            mroce-sim starts every sender at 0)
  t_end     the time the first sender's last bytes arrived
  RTT       the median over the senders of the smallest RTT each QP saw
            (the clients' min_rtt_us: the unloaded RTT), own_rtt_us; RTT_US
            given, rtt_us is that instead (incast_hint.sh passes the round
            with hints' own, as incast_sim.sh uses the first MetaRoCE
            transport's for all: without hints the queue never drains, so
            even the smallest samples hold it); srtt_run is the
            median of the clients' srtt samples in [t_all, t_end], the RTT
            under this run's load
  W         the larger of one RTT and the time 16 full packets take at the
            fair share (link rate / N)
  conv      the first time t such that in every window [t' - W, t'] with
            t <= t' <= t_end each sender's bytes are within 10% (conv20:
            20%) of the window's total / N; from t_all, in ms and in RTTs
            ("never": the last window is not within the bound)
  fair_p50, fair_max  per sender, the first time from which on, up to
            t_end, the rate it may send at (the clients' rate_mbps: the
            smaller of its hint and cwnd / srtt) stays within 10% of the
            fair share; median and largest over the senders, from t_all
  hint_p50, hint_max  per sender, from t_all to the first interval
            line (one per ms: the resolution) whose hint is within 10% of
            the fair share (negative: before t_all, when the last sender's
            request was answered before its first data arrived); median
            and largest, in ms, hint_max_srtt in srtt_run
  first10   the end of the first window in which every sender is within
            10% of the window's mean, from t_all (not in incast_sim.sh:
            conv needs every later window within the bound, which one
            stall of a process on a shared host breaks; cannot be below W)
  rx_gap_ms the receiver's longest gap between samples in [t_all, t_end]
            (it samples every ms: how long the host kept it off the CPU)
  ok10_pct, ok20_pct  the share of the windows ending in [t_all + W,
            t_end] in which every sender is within 10% (20%) of the mean
  jain      over the senders' bytes in the middle 80% of [t_all, t_end];
            jain_w the median and jain_wmin the smallest Jain's index of
            the non-overlapping windows of W in [t_all, t_end]

Usage: incast_conv.py DIR MODE N LINK_MBPS [DATFILE [RTT_US]]
  DIR holds srv-MODE* (the rx lines, any number of files) and
  cli-MODE0..; prints one "conv key=value ..."
  line; DATFILE gets "t_ms rate_0 .. rate_N-1" (Mbit/s over the last W,
  time from t_all) for the plot.
"""
import bisect
import glob
import statistics
import sys

PKT = 4096 + 80  # a full packet on the wire, as bench/incast_sim.sh counts it
STEP = 0.0005  # s: the grid; the servers sample every 1 ms


def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def main():
    d, mode, n, link = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    dat = sys.argv[5] if len(sys.argv) > 5 else None
    rx, minrtt, srtts, rates, hints = [], [], [], [], []
    per = {}  # the server's connections by label (one server or N)
    for fn in sorted(glob.glob("%s/srv-%s*" % (d, mode))):
        for line in open(fn):
            if line.startswith("rx "):
                f = fields(line)
                per.setdefault(f["label"], []).append((float(f["t"]), int(f["bytes"])))
    rx = [p for p in per.values() if len(p) >= 2]
    if len(rx) != n:
        print("conv error=samples connections=%d of %d" % (len(rx), n))
        return 1
    for i in range(n):
        sm, rt, hs = [], [], []
        for line in open("%s/cli-%s%d" % (d, mode, i)):
            f = fields(line)
            if line.startswith("interval "):
                sm.append((float(f["tm"]), float(f["srtt_us"])))
                rt.append((float(f["tm"]), float(f["rate_mbps"])))
                hs.append((float(f["tm"]), float(f["hint_mbps"])))
            elif line.startswith("result role=client") and "min_rtt_us" in f:
                minrtt.append(float(f["min_rtt_us"]))
        srtts.append(sm)
        rates.append(rt)
        hints.append(hs)
    # The closing DONE adds a few bytes after the last WRITE: a sender's
    # last data is its last sample's value less that, rounded to where the
    # samples stop growing by more than a packet.
    # Active: its first full packet has arrived (before that the server
    # sees only the ACK of its own region message).
    def active(p):
        return next((t for t, b in p if b >= PKT), p[-1][0])

    def finished(p):
        last = p[-1][1]
        return next(t for t, b in p if b >= last - PKT)

    t_all = max(active(p) for p in rx)
    t_end = min(finished(p) for p in rx)
    own_us = statistics.median(minrtt) if minrtt else 0.0
    rtt_us = float(sys.argv[6]) if len(sys.argv) > 6 and float(sys.argv[6]) > 0 else own_us
    run = [s for sm in srtts for t, s in sm if t_all <= t <= t_end and s > 0]
    srtt_run = statistics.median(run) if run else 0.0
    fair_mbps = link / n
    win = max(rtt_us * 1e-6, 16 * PKT * 8 / (fair_mbps * 1e6))

    def at(p, t):  # bytes received by time t, linear between samples
        ts = [x for x, _ in p]
        k = bisect.bisect_right(ts, t)
        if k == 0:
            return 0.0
        if k == len(p):
            return float(p[-1][1])
        (t0, b0), (t1, b1) = p[k - 1], p[k]
        return b0 + (b1 - b0) * (t - t0) / (t1 - t0) if t1 > t0 else float(b1)

    grid = []
    t = t_all + win
    while t <= t_end + 1e-9:
        grid.append(t)
        t += STEP
    byt = {t: [at(p, t) for p in rx] for t in grid + [t - win for t in grid]}

    def within(t, tol):
        dl = [b - a for a, b in zip(byt[t - win], byt[t])]
        tot = sum(dl)
        return tot > 0 and all(abs(x - tot / n) <= tol * tot / n for x in dl)

    def conv(tol):
        c = None
        for t in reversed(grid):
            if not within(t, tol):
                break
            c = t
        return None if c is None else c - t_all

    def first_in(tol):  # the end of the first window within the bound
        c = next((t for t in grid if within(t, tol)), None)
        return None if c is None else c - t_all

    def share(tol):  # percent of the windows within the bound
        return 100.0 * sum(within(t, tol) for t in grid) / len(grid) if grid else 0.0

    def jain(x):
        s = sum(x)
        return s * s / (n * sum(v * v for v in x)) if s else 0.0

    a, b = t_all + 0.1 * (t_end - t_all), t_all + 0.9 * (t_end - t_all)
    j = jain([at(p, b) - at(p, a) for p in rx])
    jw = []
    t = t_all + win
    while t <= t_end:
        jw.append(jain([at(p, t) - at(p, t - win) for p in rx]))
        t += win
    # time to fair share per sender, from its allowed rate
    tf = []
    for rt in rates:
        first = None
        for t, r in rt:
            if t > t_end:
                break
            if abs(r - fair_mbps) <= 0.1 * fair_mbps:
                first = t if first is None else first
            else:
                first = None
        tf.append(None if first is None else max(0.0, first - t_all))
    # first hint at the fair share (within 10%), from the sender's start
    th = []
    for hs in hints:
        t = next((t for t, h in hs if abs(h - fair_mbps) <= 0.1 * fair_mbps), None)
        th.append(None if t is None else t - t_all)
    hd = sorted(v for v in th if v is not None)
    hint_p50 = sorted(th, key=lambda v: float("inf") if v is None else v)[n // 2]
    hint_max = hd[-1] if len(hd) == n else None
    done = sorted(v for v in tf if v is not None)
    p50 = sorted(tf, key=lambda v: float("inf") if v is None else v)[n // 2]
    fmax = done[-1] if len(done) == n else None

    def ms(v):
        return "never" if v is None else "%.1f" % (v * 1e3)

    def rtts(v, r):
        return "never" if v is None else ("%.1f" % (v / (r * 1e-6)) if r > 0 else "?")

    c10, c20, f10 = conv(0.10), conv(0.20), first_in(0.10)
    # The receiver's longest gap between samples in [t_all, t_end]: how
    # long the host kept the receiving process off the CPU.
    gap = 0.0
    for p in rx:
        ts = [t for t, _ in p if t_all <= t <= t_end]
        gap = max([gap] + [b - a for a, b in zip(ts, ts[1:])])
    print(
        "conv mode=%s n=%d rtt_us=%.1f own_rtt_us=%.1f srtt_run_us=%.1f win_ms=%.2f win_rtt=%.1f "
        "span_ms=%.1f skew_ms=%.1f conv_ms=%s conv_rtt=%s conv_srtt=%s "
        "conv20_ms=%s conv20_rtt=%s conv20_srtt=%s fair_p50_rtt=%s fair_max_rtt=%s "
        "hint_p50_ms=%s hint_max_ms=%s hint_max_srtt=%s "
        "first10_ms=%s first10_rtt=%s first10_srtt=%s rx_gap_ms=%.1f "
        "ok10_pct=%.0f ok20_pct=%.0f jain=%.3f jain_w=%.3f jain_wmin=%.3f"
        % (
            mode, n, rtt_us, own_us, srtt_run, win * 1e3, win / (rtt_us * 1e-6) if rtt_us else 0,
            (t_end - t_all) * 1e3,
            (t_all - min(active(p) for p in rx)) * 1e3,
            ms(c10), rtts(c10, rtt_us), rtts(c10, srtt_run),
            ms(c20), rtts(c20, rtt_us), rtts(c20, srtt_run),
            rtts(p50, rtt_us), rtts(fmax, rtt_us),
            ms(hint_p50), ms(hint_max), rtts(hint_max, srtt_run),
            ms(f10), rtts(f10, rtt_us), rtts(f10, srtt_run), gap * 1e3,
            share(0.10), share(0.20),
            j, statistics.median(jw) if jw else 0.0, min(jw) if jw else 0.0,
        )
    )
    if dat:
        with open(dat, "w") as f:
            t = min(active(p) for p in rx)
            while t <= max(p[-1][0] for p in rx):
                f.write("%.2f %s\n" % ((t - t_all) * 1e3, " ".join(
                    "%.1f" % ((at(p, t) - at(p, t - win)) * 8 / win / 1e6) for p in rx)))
                t += STEP
    return 0


if __name__ == "__main__":
    sys.exit(main())
