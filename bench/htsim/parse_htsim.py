#!/usr/bin/env python3
"""parse_htsim.py - read htsim's and mroce-sim's per-flow results for
bench/htsim/run.sh and print them side by side.

Subcommands:
  cm FLOWS_CSV BYTES OUT_CM
      Write an htsim connection matrix holding the (src, dst) pairs of a
      mroce-sim run (its MROCE_SIM_FLOWS=PREFIX PREFIX.flows.csv), one flow
      of BYTES per pair, all starting at 0: the same permutation for both
      simulators.
  table --htsim LOG [--mroce LABEL=DIR]... [--title T]
      Parse htsim_uec's standard output (LOG: its "Flow ... finished at T"
      lines and the closing "New: ... Rtx: ..." line) and each mroce-sim
      output directory DIR (summary.csv plus the p.flows.csv that run.sh
      asks for), and print one table: flows finished, flow completion time
      max / p99 / p50 / mean, ECN marks, drops, trimmed packets,
      retransmissions, and each mroce-sim column over htsim's.
  summary OUTDIR SEED...
      One row per seed and path count from run.sh's OUTDIR/seedN: 32 paths
      (htsim_p32 against mroce, mroce-sim's default) and 128 (htsim against
      mroce_p128): FCT max / p99 / p50 of each, mroce-sim over htsim.
  scale [--csv FILE] CASE=MROCE_DIR=HTSIM_DIR...
      One table for run.sh --scale: per case (perm:N, a2a:N) and simulator,
      flows done, CPU s (user + sys from the directory's GNU time file:
      "user sys maxrss_kb wall"), max RSS, RSS per flow, data packets (first
      transmissions and retransmissions: htsim's New + Rtx) and
      data packets per CPU s (and mroce-sim's packet events per CPU s), and
      the flow completion times p50 / p99 / max; then htsim over mroce-sim
      for CPU s, RSS per flow and p99. An empty HTSIM_DIR leaves htsim's
      row out. --csv also writes the rows, unformatted, to FILE.
  flows LOG
      Print htsim's flow completion times, one per line (microseconds).

A flow's completion time is its finish time less its start (every flow
starts at 0 here). Percentiles are nearest-rank over the flows, the same
rule for both simulators. htsim does not report ECN marks or drops (its
switches trim a packet to its header instead of dropping it; each trim comes
back to the sender as a NACK), so those cells read "n/r" (not reported).
"""
import csv
import math
import re
import sys

FLOW_RE = re.compile(r"^Flow (\S+) flowId (\d+) \S+ \d+ (starting|finished) at ([0-9.e+-]+)")
SUMMARY_RE = re.compile(r"^New: (\d+) Rtx: (\d+) RTS: (\d+) Bounced: (\d+) ACKs: (\d+) NACKs: (\d+)")


def pct(sorted_vals, p):
    """Nearest-rank percentile of an ascending list (p in 0..100)."""
    if not sorted_vals:
        return float("nan")
    k = max(1, math.ceil(p / 100.0 * len(sorted_vals)))
    return sorted_vals[k - 1]


def parse_htsim(path):
    """Per-flow completion times (us) and the run's packet counters."""
    start, finish, summary = {}, {}, {}
    with open(path, errors="replace") as f:
        for line in f:
            m = FLOW_RE.match(line)
            if m:
                (start if m.group(3) == "starting" else finish)[m.group(2)] = float(m.group(4))
                continue
            m = SUMMARY_RE.match(line)
            if m:
                keys = ("new", "rtx", "rts", "bounced", "acks", "nacks")
                summary = dict(zip(keys, (int(x) for x in m.groups())))
    fct = sorted(t - start.get(fid, 0.0) for fid, t in finish.items())
    flows = max(len(start), len(finish))
    return {
        "flows": flows,
        "done": len(fct),
        "fct": fct,
        "ecn": None,
        "drops": None,
        "trims": summary.get("nacks"),
        "retx": summary.get("rtx"),
        "data_pkts": summary.get("new"),
    }


def parse_mroce(outdir):
    """Per-flow completion times (us) and counters of one mroce-sim run."""
    with open(outdir + "/summary.csv") as f:
        row = next(csv.DictReader(f))
    fct = []
    with open(outdir + "/p.flows.csv") as f:
        for r in csv.DictReader(f):
            # one message per flow (msg = bytes), posted at the start:
            # the flow completes when that message is received
            fct.append(float(r["mct_max_us"]))
    fct.sort()
    drops = sum(int(row[k]) for k in ("drops_queue", "drops_fail", "drops_loss", "drops_noroute"))
    return {
        "flows": int(row["msgs"]),
        "done": int(row["msgs_done"]),
        "fct": fct,
        "ecn": int(row["ecn_marks"]),
        "drops": drops,
        "trims": 0,
        "retx": int(row["retx_pkts"]),
        "data_pkts": int(row["tx_data_pkts"]),
        "time_us": float(row["time_us"]),
        "ideal_us": float(row["ideal_us"]),
    }


def write_cm(flows_csv, nbytes, out):
    pairs = []
    hosts = 0
    with open(flows_csv) as f:
        for r in csv.DictReader(f):
            s, d = int(r["src"]), int(r["dst"])
            pairs.append((s, d))
            hosts = max(hosts, s + 1, d + 1)
    with open(out, "w") as f:
        f.write("Nodes %d\nConnections %d\n" % (hosts, len(pairs)))
        for i, (s, d) in enumerate(pairs, 1):
            f.write("%d->%d id %d start 0 size %d\n" % (s, d, i, nbytes))


def fmt(v, nd=1):
    if v is None:
        return "n/r"
    if isinstance(v, float):
        return "%.*f" % (nd, v)
    return str(v)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return "%.2fx" % (a / b)


def table(args):
    htsim_log, cols, title = None, [], None
    i = 0
    while i < len(args):
        if args[i] == "--htsim":
            htsim_log = args[i + 1]
        elif args[i] == "--mroce":
            label, _, d = args[i + 1].partition("=")
            cols.append((label, d))
        elif args[i] == "--title":
            title = args[i + 1]
        else:
            sys.exit("parse_htsim.py table: unknown argument " + args[i])
        i += 2
    h = parse_htsim(htsim_log) if htsim_log else None
    ms = [(label, parse_mroce(d)) for label, d in cols]

    def stats(r):
        f = r["fct"]
        return [
            ("flows done", "%d/%d" % (r["done"], r["flows"]), None),
            ("FCT max (us)", fmt(f[-1] if f else None), f[-1] if f else None),
            ("FCT p99 (us)", fmt(pct(f, 99)), pct(f, 99)),
            ("FCT p50 (us)", fmt(pct(f, 50)), pct(f, 50)),
            ("FCT mean (us)", fmt(sum(f) / len(f) if f else None), sum(f) / len(f) if f else None),
            ("ECN marks", fmt(r["ecn"]), r["ecn"]),
            ("drops", fmt(r["drops"]), r["drops"]),
            ("trimmed (NACKs)", fmt(r["trims"]), r["trims"]),
            ("retransmissions", fmt(r["retx"]), r["retx"]),
            ("data packets", fmt(r["data_pkts"]), r["data_pkts"]),
        ]

    hs = stats(h) if h else None
    header = ["", "htsim NSCC"]
    for label, _ in ms:
        header += [label, "/ htsim"]
    rows = []
    nrows = len(stats(ms[0][1])) if ms else len(hs)
    for k in range(nrows):
        name = (hs or stats(ms[0][1]))[k][0]
        row = [name, hs[k][1] if hs else "-"]
        for _, m in ms:
            s = stats(m)[k]
            timed = name.startswith("FCT")
            row += [s[1], ratio(s[2], hs[k][2]) if (hs and timed) else ""]
        rows.append(row)
    if title:
        print(title)
    w = [max(len(r[c]) for r in [header] + rows) for c in range(len(header))]
    print("| " + " | ".join(header[c].ljust(w[c]) for c in range(len(header))) + " |")
    print("|" + "|".join("-" * (w[c] + 2) for c in range(len(header))) + "|")
    for r in rows:
        print("| " + " | ".join(r[c].ljust(w[c]) for c in range(len(header))) + " |")


def summary(outdir, seeds):
    hdr = ["paths", "seed", "htsim max/p99/p50", "mroce-sim max/p99/p50", "max ratio", "p99 ratio", "p50 ratio"]
    rows = []
    variants = (("32", "mroce", "htsim_p32"), ("128", "mroce_p128", "htsim"))
    for paths, mv_dir, hv_dir, seed in [v + (s,) for v in variants for s in seeds]:
        d = "%s/seed%s" % (outdir, seed)
        m = parse_mroce(d + "/" + mv_dir)["fct"]
        try:
            h = parse_htsim(d + "/" + hv_dir + "/log.txt")["fct"]
        except OSError:
            h = []
        mv = (m[-1], pct(m, 99), pct(m, 50))
        hv = (h[-1], pct(h, 99), pct(h, 50)) if h else None
        rows.append([
            paths,
            str(seed),
            "%.1f / %.1f / %.1f" % hv if hv else "-",
            "%.1f / %.1f / %.1f" % mv,
        ] + [ratio(mv[k], hv[k]) if hv else "-" for k in range(3)])
    w = [max(len(r[c]) for r in [hdr] + rows) for c in range(len(hdr))]
    print("| " + " | ".join(hdr[c].ljust(w[c]) for c in range(len(hdr))) + " |")
    print("|" + "|".join("-" * (w[c] + 2) for c in range(len(hdr))) + "|")
    for r in rows:
        print("| " + " | ".join(r[c].ljust(w[c]) for c in range(len(hdr))) + " |")


def read_time(d):
    """(CPU s, max RSS in MB, wall s) from run.sh's GNU time file."""
    with open(d + "/time") as f:
        line = f.read().split("\n")
    # GNU time writes "Command exited with non-zero status" first on failure
    v = [x for x in line if x and x[0].isdigit()][-1].split()
    return float(v[0]) + float(v[1]), int(v[2]) / 1024.0, float(v[3])


def scale(args):
    csv_out = None
    if args and args[0] == "--csv":
        csv_out, args = args[1], args[2:]
    crows = []
    hdr = ["case", "simulator", "flows done", "CPU s", "max RSS MB", "KB per flow",
           "data pkts", "pkts per CPU s", "pkt events per CPU s",
           "FCT p50 us", "FCT p99 us", "FCT max us"]
    rows, ratios = [], []
    for a in args:
        case, mdir, hdir = a.split("=", 2)
        got = {}
        for name, d in (("mroce-sim MetaRoCE", mdir), ("htsim NSCC", hdir)):
            if not d:
                continue
            cpu, rss, _ = read_time(d)
            if name.startswith("mroce"):
                r = parse_mroce(d)
                with open(d + "/summary.csv") as f:
                    pev = int(next(csv.DictReader(f))["pkt_events"])
            else:
                r = parse_htsim(d + "/log.txt")
                # first transmissions and retransmissions, as mroce-sim counts
                if r["data_pkts"] is not None and r["retx"] is not None:
                    r["data_pkts"] += r["retx"]
                pev = None
            f = r["fct"]
            got[name] = (cpu, rss * 1024 / max(r["flows"], 1), pct(f, 99))
            crows.append([case, name.split()[0], r["flows"], r["done"], "%.2f" % cpu, "%.1f" % rss,
                          "%.2f" % (rss * 1024 / max(r["flows"], 1)), r["data_pkts"] or 0,
                          "%.0f" % (r["data_pkts"] / cpu) if r["data_pkts"] and cpu else "",
                          "%.0f" % (pev / cpu) if pev and cpu else "",
                          "%.3f" % pct(f, 50) if f else "", "%.3f" % pct(f, 99) if f else "",
                          "%.3f" % f[-1] if f else ""])
            rows.append([
                case, name, "%d/%d" % (r["done"], r["flows"]), "%.1f" % cpu, "%.0f" % rss,
                "%.1f" % (rss * 1024 / max(r["flows"], 1)),
                fmt(r["data_pkts"]),
                "%.0fk" % (r["data_pkts"] / cpu / 1e3) if r["data_pkts"] and cpu else "-",
                "%.0fk" % (pev / cpu / 1e3) if pev and cpu else "n/r",
                fmt(pct(f, 50)), fmt(pct(f, 99)), fmt(f[-1] if f else None),
            ])
        if len(got) == 2:
            m, h = got["mroce-sim MetaRoCE"], got["htsim NSCC"]
            ratios.append([case, ratio(h[0], m[0]), ratio(h[1], m[1]), ratio(h[2], m[2])])
    if csv_out:
        with open(csv_out, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(["case", "simulator", "flows", "flows_done", "cpu_s", "max_rss_mb",
                         "kb_per_flow", "data_pkts", "pkts_per_cpu_s", "pkt_events_per_cpu_s",
                         "fct_p50_us", "fct_p99_us", "fct_max_us"])
            wr.writerows(crows)
    w = [max(len(r[c]) for r in [hdr] + rows) for c in range(len(hdr))]
    print("| " + " | ".join(hdr[c].ljust(w[c]) for c in range(len(hdr))) + " |")
    print("|" + "|".join("-" * (w[c] + 2) for c in range(len(hdr))) + "|")
    for r in rows:
        print("| " + " | ".join(r[c].ljust(w[c]) for c in range(len(hdr))) + " |")
    if ratios:
        print()
        hdr = ["case", "CPU s htsim / mroce-sim", "KB per flow htsim / mroce-sim",
               "FCT p99 htsim / mroce-sim"]
        w = [max(len(r[c]) for r in [hdr] + ratios) for c in range(len(hdr))]
        print("| " + " | ".join(hdr[c].ljust(w[c]) for c in range(len(hdr))) + " |")
        print("|" + "|".join("-" * (w[c] + 2) for c in range(len(hdr))) + "|")
        for r in ratios:
            print("| " + " | ".join(r[c].ljust(w[c]) for c in range(len(hdr))) + " |")


def main(argv):
    if len(argv) >= 2 and argv[1] == "cm" and len(argv) == 5:
        write_cm(argv[2], int(argv[3]), argv[4])
    elif len(argv) >= 2 and argv[1] == "table":
        table(argv[2:])
    elif len(argv) >= 4 and argv[1] == "summary":
        summary(argv[2], argv[3:])
    elif len(argv) >= 3 and argv[1] == "scale":
        scale(argv[2:])
    elif len(argv) == 3 and argv[1] == "flows":
        for t in parse_htsim(argv[2])["fct"]:
            print("%.3f" % t)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
