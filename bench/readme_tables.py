#!/usr/bin/env python3
"""readme_tables.py - prints the figure tables the READMEs quote, in
Markdown, from the latest results on file; it measures nothing itself.

  bench/readme_tables.py loopback [RESULTS_DIR]
      README.md's table: mroce-perf and the libfabric provider against
      their peers over loopback, from compare_loopback.json and
      compare_fi.json (written by bench/compare_loopback.sh and
      bench/compare_fi.sh; default RESULTS_DIR bench/results).
  bench/readme_tables.py engine [RESULTS_DIR]
      bench/README.md's table: the sans-IO engine alone, from
      bench_engine.json (written by build/bench/bench_engine).
  bench/readme_tables.py sim SUMMARY_CSV
      sim/README.md's table: the 128-host headline scenarios, from the
      summary.csv that sim/run_headline.sh (or mroce-sim -o DIR over
      sim/scenarios/ls128_*.txt) writes.

To refresh a README, run the benchmark, then this script, and paste its
output over the table (the line above each table names the command).
"""
import csv
import json
import os
import sys


def fmt(x, nd=2):
    return "-" if x is None else "%.*f" % (nd, x)


def ratio(a, b):
    return None if a is None or not b else a / b


def goal_note(goals, text):
    """' (goal ...: met/missed)' for the goal whose text starts with text."""
    for g in goals:
        if g["goal"].startswith(text):
            return {True: "met", False: "missed", None: "not measured"}[g["met"]]
    return None


def loopback(results):
    lb = json.load(open(os.path.join(results, "compare_loopback.json")))
    fi = json.load(open(os.path.join(results, "compare_fi.json")))
    m = lb["medians"]
    g = lb["goals"]
    get = m.get

    def pair(a, b, nd=1):
        return "%s / %s" % (fmt(get(a), nd), fmt(get(b), nd))

    def rpair(a, b, pa, pb):
        return "%sx / %sx" % (fmt(ratio(get(a), get(pa))),
                              fmt(ratio(get(b), get(pb))))

    def both(*texts):
        notes = [goal_note(g, t) or "not measured" for t in texts]
        return notes[0] if len(set(notes)) == 1 else " / ".join(notes)

    rows = [
        ("write_bw 64 KiB / 1 MiB, Gbit/s", pair("mroce_bw_64k", "mroce_bw_1m"),
         "raw UDP ceiling %s" % fmt(get("udp_ceiling"), 1),
         rpair("mroce_bw_64k", "mroce_bw_1m", "udp_ceiling", "udp_ceiling"),
         "0.8x: " + both("write_bw 64 KiB >= 80%", "write_bw 1 MiB >= 80%")),
        ("write_bw 1 MiB, -t 8, Gbit/s", fmt(get("mroce_bw_1m_t8"), 1),
         "raw UDP ceiling %s" % fmt(get("udp_ceiling"), 1),
         "%sx" % fmt(ratio(get("mroce_bw_1m_t8"), get("udp_ceiling"))), ""),
        ("", "", "tcp;ofi_rxm %s" % pair("rxm_bw_64k", "rxm_bw_1m"),
         rpair("mroce_bw_64k", "mroce_bw_1m", "rxm_bw_64k", "rxm_bw_1m"),
         "ahead: " + both("write_bw 64 KiB ahead of tcp", "write_bw 1 MiB ahead of tcp")),
        ("", "", "udp;ofi_rxd %s" % pair("rxd_bw_64k", "rxd_bw_1m"),
         rpair("mroce_bw_64k", "mroce_bw_1m", "rxd_bw_64k", "rxd_bw_1m"),
         "10x: " + both("write_bw 64 KiB >= 10x", "write_bw 1 MiB >= 10x")),
        ("", "", "iperf3 TCP %s" % fmt(get("iperf3_tcp"), 1),
         rpair("mroce_bw_64k", "mroce_bw_1m", "iperf3_tcp", "iperf3_tcp"),
         "ahead: " + both("write_bw 64 KiB ahead of iperf3", "write_bw 1 MiB ahead of iperf3")),
        ("write_bw 64 KiB, 1% tx loss, Gbit/s", fmt(get("mroce_bw_64k_loss"), 1),
         "loss-free %s" % fmt(get("mroce_bw_64k"), 1),
         "%sx" % fmt(ratio(get("mroce_bw_64k_loss"), get("mroce_bw_64k"))),
         "0.9x: " + both("1% loss")),
        ("write_lat / send_lat 64 B, us", pair("mroce_write_lat", "mroce_send_lat", 2),
         "raw UDP ping-pong %s" % fmt(get("udp_pingpong")),
         rpair("mroce_write_lat", "mroce_send_lat", "udp_pingpong", "udp_pingpong"),
         "1.3x: " + both("write_lat 64 B within", "send_lat 64 B within")),
        ("", "", "rxm %s, rxd %s" % (fmt(get("rxm_lat")), fmt(get("rxd_lat"))),
         "%sx / %sx (write_lat)" % (fmt(ratio(get("mroce_write_lat"), get("rxm_lat"))),
                                    fmt(ratio(get("mroce_write_lat"), get("rxd_lat")))),
         "below both: " + both("write_lat 64 B below", "send_lat 64 B below")),
    ]
    p = fi["providers"]
    mr = p.get("mroce", {})
    for peer in ("udp;ofi_rxd", "tcp;ofi_rxm"):
        q = p.get(peer, {})
        rows.append((
            "provider, fi_pingpong 64 B us / 1 MiB Gbit/s" if peer == "udp;ofi_rxd" else "",
            "%s / %s" % (fmt(mr.get("lat_us_median")), fmt(mr.get("bw_gbps_median"), 1))
            if peer == "udp;ofi_rxd" else "",
            "%s %s / %s" % (peer, fmt(q.get("lat_us_median")), fmt(q.get("bw_gbps_median"), 1)),
            "%sx / %sx" % (fmt(ratio(mr.get("lat_us_median"), q.get("lat_us_median"))),
                           fmt(ratio(mr.get("bw_gbps_median"), q.get("bw_gbps_median")))),
            ""))

    def loads(d):
        la = d.get("load_avg_per_rep") or []
        return "%.1f-%.1f" % (min(la), max(la)) if la else "?"

    print("Medians: `%s` %s (%s runs, load %s), `%s` %s (%s runs, load %s); "
          "host %s CPUs." % (lb["tool"], lb["date"][:16].replace("T", " "),
                              lb["reps"], loads(lb), fi["tool"],
                              fi["date"][:16].replace("T", " "), fi["reps"],
                              loads(fi), lb["host"]["cpus"]))
    print()
    print("| figure | mroce | peer | mroce / peer | goal |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


ENGINE_ROWS = [
    ("direct 64B", "direct, 64 B WRITEs, batched ACKs"),
    ("direct 64B acked", "direct, 64 B WRITEs, an ACK per 4 packets"),
    ("direct 4KiB", "direct, 4 KiB WRITEs"),
    ("direct 64KiB", "direct, 64 KiB WRITEs (MTU 4096)"),
    ("direct 64KiB mtu8192", "direct, 64 KiB WRITEs (MTU 8192)"),
    ("model 64B", "model, 64 B"),
    ("model 64KiB", "model, 64 KiB"),
]


def engine(results):
    d = json.load(open(os.path.join(results, "bench_engine.json")))
    print("In-cache memcpy in the same run: %.1f GB/s." % d["memcpy_GBps"])
    print()
    print("| case | ns / data packet | goodput | % of memcpy |")
    print("|---|---|---|---|")
    for key, label in ENGINE_ROWS:
        r = d.get(key)
        if r:
            print("| %s | %.0f | %.2f GB/s | %.1f %% |" % (
                label, r["ns_per_data_pkt"], r["goodput_GBps"], r["pct_of_memcpy"]))
    small = d.get("direct 64B acked", {}).get("ns_per_data_pkt")
    big = d.get("direct 64KiB", {}).get("pct_of_memcpy")
    print()
    print("Goals (issue 2): under 150 ns of engine work per small packet, "
          "with an ACK per 4 packets: %s; 64 KiB goodput at least 25%% of "
          "in-cache memcpy: %s." % (
              "-" if small is None else ("met" if small < 150 else "missed"),
              "-" if big is None else ("met" if big >= 25 else "missed")))


SIM_LABELS = [
    ("ls128_allreduce", "ring all-reduce 64 MiB, host order"),
    ("ls128_allreduce_random", "ring all-reduce 64 MiB, random order"),
    ("ls128_allreduce_linkdown", "... + leaf0-spine0 down at 5 ms (1 ms reroute)"),
    ("ls128_allreduce_loss1", "... + 1% loss on leaf0-spine0"),
    ("ls128_alltoall", "all-to-all 1 MiB/pair, 8 active peers"),
    ("ls128_alltoall_linkdown", "... + leaf0-spine0 down at 5 ms"),
    ("ls128_alltoall_loss1", "... + 1% loss on leaf0-spine0"),
]
SIM_TRANSPORTS = {"mroce": "MetaRoCE", "roce": "RoCEv2 ECMP, DCQCN, lossy",
                  "roce_pfc": "RoCEv2 + PFC"}


def sim(summary):
    rows = list(csv.DictReader(open(summary)))
    order, cells, transports = [], {}, []
    for r in rows:
        sc, tp = r["scenario"], r["transport"]
        if sc not in order:
            order.append(sc)
        if tp not in transports:
            transports.append(tp)
        cells[sc, tp] = "%.1f%%, %.0f/%.0f/%.0f" % (
            float(r["efficiency_pct"]), float(r["mct_p50_us"]),
            float(r["mct_p99_us"]), float(r["mct_p999_us"]))
    known = [k for k, _ in SIM_LABELS]
    order = [k for k in known if k in order] + [k for k in order if k not in known]
    labels = dict(SIM_LABELS)
    print("| scenario | " + " | ".join(SIM_TRANSPORTS.get(t, t)
                                       for t in transports) + " |")
    print("|---|" + "---|" * len(transports))
    for sc in order:
        print("| %s | %s |" % (labels.get(sc, sc), " | ".join(
            cells.get((sc, t), "-") for t in transports)))


def main(argv):
    if len(argv) >= 2 and argv[1] == "loopback":
        loopback(argv[2] if len(argv) > 2 else
                 os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    elif len(argv) >= 2 and argv[1] == "engine":
        engine(argv[2] if len(argv) > 2 else
               os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    elif len(argv) == 3 and argv[1] == "sim":
        sim(argv[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
