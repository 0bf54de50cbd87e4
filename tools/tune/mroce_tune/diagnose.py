"""mroce-tune diagnose: mis-tuned links named from the endpoints alone.

Input: per-path counters of MetaRoCE QPs, as mroce-sim writes them
(MROCE_SIM_FLOWS=PREFIX: PREFIX.paths.csv, with the switch each entropy
hashes to, and PREFIX.flows.csv, whose ToRs drop the pairs under one
leaf) or as libmroce prints them (MROCE_DUMP_COUNTERS=1: each QP's path
table: entropy, packets, losses, ECN marks, srtt), then with a --map file
naming the link each entropy takes (`mroce-fabric path` gives it on the
testbed).  Paths are grouped by the link or switch they cross; each group
is compared with the others, since one switch tuned differently from its
peers is what the endpoints can see:

  not marking        under a third of the upper quartile's CE fraction
                     (the median may itself be a link that does not
                     mark), while its paths queue, lose, or carry more
                     than their share (senders steer onto paths that do
                     not mark, PATH-6): ECN off, or Kmin above the buffer;
  dropping before    losses more frequent than marks, and well above the
  marking            others': Kmin above the queue limit, WRED in drop mode;
  marking too late   it marks, but its paths queue far longer than the
                     others' first, or their RTT over its peers' divided
                     by its CE fraction over theirs is 2 or more (under
                     0.2x their marks that is named not marking): Kmin or
                     Kmax above its peers', or too high for the link's
                     speed (a threshold in bytes meant for a faster port);
  asymmetric hashing entropies spread unevenly over the groups: the hash
                     ignores the UDP source port, or the seed polarises.
A fabric where no group marks at all while paths queue or lose is named
as a whole (every switch has ECN off).
"""

import csv
import json
import math
import os
import re
import sys

from .fabric import FabricError, parse_time


# How far above the median of its siblings (the other uplinks of its
# leaf, or downlinks into it: pinpoint) a link's loss (or queueing) must
# be to be blamed, the median taken as at least LOSS_FLOOR (%).  Sprayed
# packets overtake each other, and the loss detector declares some of
# them lost that were only late: a healthy all-to-all in mroce-sim shows
# up to 6% "losses" on a link with no packet dropped, most on the links of
# the busiest leaf, whose siblings show them too; against siblings that
# lose under 1% the ratio alone would blame one.  5x over the floored
# median stays clear of that noise (figures: bench/LOG.md).
LOSS_FACTOR = 5
LOSS_FLOOR = 1.0

# Marking too late, by comparison with the peers: a link whose paths' RTT
# over its peers' (median of paths), divided by its CE fraction over
# theirs, is at least LATE_FACTOR marks later for the queue it builds.  A
# correctly tuned link that queues more also marks more (the ratio stays
# near 1: 0.86-1.35 on the healthy testbed), one whose threshold is 10x
# its peers' queues as long and marks less (2.5-14).
LATE_FACTOR = 2.0
LATE_MIN_PKTS = 200


class Group:
    """Counters of the paths that cross one link or switch."""

    def __init__(self, name):
        self.name = name
        self.paths = 0
        self.tx = self.marks = self.lost = 0
        self.srtt_w = 0.0  # sum of srtt x tx_pkts, ns
        self.srtts = []  # each path's srtt, ns
        self.min_rtt = None

    def add(self, tx, marks, lost, srtt, min_rtt):
        self.paths += 1
        self.tx += tx
        self.marks += marks
        self.lost += lost
        if srtt and tx:
            self.srtt_w += srtt * tx
            self.srtts.append(srtt)
        if min_rtt:
            self.min_rtt = min_rtt if self.min_rtt is None else min(
                self.min_rtt, min_rtt)

    def srtt(self):
        return self.srtt_w / self.tx if self.tx else 0.0


def _sim_tors(paths_csv):
    """{(src, dst): (src_tor, dst_tor)} from the flows.csv beside it."""
    flows = re.sub(r"\.paths\.csv$", ".flows.csv", paths_csv)
    out = {}
    if flows != paths_csv and os.path.exists(flows):
        with open(flows) as f:
            for r in csv.DictReader(f):
                out[(r["src"], r["dst"])] = (r["src_tor"], r["dst_tor"])
    return out


def read_sim(path, groups, leaves, links=None, qps=None):
    """Add the rows of a mroce-sim paths.csv to groups (per switch) and to
    links [(uplink 'leafA>spineS', downlink 'spineS>leafB', counters)], one
    per path, when the flows.csv beside it gives the ToRs; returns the rows
    read.  qps: {(src, dst): set of switches its paths hash to}."""
    tors = _sim_tors(path)
    n = 0
    with open(path) as f:
        rd = csv.DictReader(f)
        need = {"entropy", "up_switch", "tx_pkts", "ecn_marks", "lost",
                "srtt_ns", "min_rtt_ns"}
        if not need <= set(rd.fieldnames or ()):
            raise FabricError(f"{path}: not a mroce-sim paths.csv")
        for r in rd:
            t = tors.get((r["src"], r["dst"]))
            if t and t[0] == t[1]:
                continue  # under one leaf: no spine crossed
            sw = int(r["up_switch"])
            name = (f"spine{sw - leaves}" if leaves is not None
                    else f"switch{sw}")
            vals = (int(r["tx_pkts"]), int(r["ecn_marks"]), int(r["lost"]),
                    float(r["srtt_ns"]), float(r["min_rtt_ns"]))
            groups.setdefault(name, Group(name)).add(*vals)
            if qps is not None:
                qps.setdefault((path, r["src"], r["dst"]), []).append(
                    f"leaf{t[0]}-{name}" if t else name)
            if t is not None and links is not None:
                links.append((f"leaf{t[0]}>{name}", f"{name}>leaf{t[1]}",
                              vals))
            n += 1
    return n


_ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+"
                  r"(\d+)\s+([0-9.]+)\s*$")


_QP = re.compile(r"^qp (0x[0-9a-fA-F]+) ")


def read_dump(path, groups, emap, qps=None):
    """Add the path rows of a libmroce counter dump (MROCE_DUMP_COUNTERS);
    an entropy missing from the map is grouped as 'unmapped'.  qps: {(file,
    qp): [group of each of its paths]}."""
    n = 0
    qp = None
    with open(path, errors="replace") as f:
        for line in f:
            q = _QP.match(line)
            if q:
                qp = q.group(1)
            m = _ROW.match(line)
            if not m:
                continue
            _, ent, _w, tx, _acked, lost, ecn, srtt_us = m.groups()
            name = emap.get(int(ent), "unmapped") if emap else f"e{ent}"
            g = groups.setdefault(name, Group(name))
            g.add(int(tx), int(ecn), int(lost), float(srtt_us) * 1e3, 0)
            if qps is not None and emap:
                qps.setdefault((path, qp), []).append(name)
            n += 1
    return n


def read_map(path):
    """{entropy: link} from lines 'ENTROPY LINK' ('#' comments)."""
    out = {}
    with open(path) as f:
        for ln, line in enumerate(f, 1):
            line = line.split("#")[0].split()
            if not line:
                continue
            if len(line) != 2 or not line[0].isdigit():
                raise FabricError(f"{path}:{ln}: want 'ENTROPY LINK'")
            out[int(line[0])] = line[1]
    return out


def _median(xs):
    xs = sorted(xs)
    if not xs:
        return 0.0
    k = len(xs) // 2
    return xs[k] if len(xs) % 2 else (xs[k - 1] + xs[k]) / 2


def _quartile3(xs):
    """The upper quartile (linear interpolation)."""
    xs = sorted(xs)
    if not xs:
        return 0.0
    pos = 0.75 * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def analyse(groups, tq, ref=None):
    """Findings: [(group or 'fabric', kind, explanation)], and the table
    (one dict per group; 'severity': how far it is from the median).
    ref: (mark %, loss %, queue us) medians to compare with instead of
    these groups' own."""
    gs = [g for g in groups.values() if g.tx > 0]
    if not gs:
        return [], []
    base = min([g.min_rtt for g in gs if g.min_rtt] or
               [g.srtt() for g in gs if g.srtt()] or [0.0])
    rows = []
    for g in gs:
        rows.append({"group": g.name, "paths": g.paths, "tx_pkts": g.tx,
                     "mark_pct": 100.0 * g.marks / g.tx,
                     "loss_pct": 100.0 * g.lost / g.tx,
                     "srtt_us": g.srtt() / 1e3,
                     "queue_us": max(0.0, g.srtt() - base) / 1e3,
                     "tx_per_path": g.tx / max(g.paths, 1),
                     "srtt_med_us": _median(g.srtts) / 1e3})
    med_m = _median([r["mark_pct"] for r in rows])
    # "not marking" compares with the upper quartile: with half the links
    # misconfigured the median is itself a link that does not mark
    q3_m = _quartile3([r["mark_pct"] for r in rows])
    med_l = _median([r["loss_pct"] for r in rows])
    med_q = _median([r["queue_us"] for r in rows])
    med_t = _median([r["tx_per_path"] for r in rows])
    if ref:
        med_m, med_l, med_q, q3_m = ref
    tq_us = tq * 1e6
    for r in rows:
        r["severity"] = max(r["loss_pct"] / max(med_l, LOSS_FLOOR),
                            r["queue_us"] / max(med_q, 0.1))
    out = []
    if all(r["mark_pct"] == 0 for r in rows):
        lossy = [r for r in rows if r["loss_pct"] > 0.01]
        deep = [r for r in rows if r["queue_us"] > 4 * tq_us]
        if lossy or deep:
            out.append(("fabric", "not marking",
                        f"no path saw a CE mark, yet {len(lossy)} of "
                        f"{len(rows)} groups lose packets and {len(deep)} "
                        f"queue > {4 * tq_us:g} us: ECN is off (or Kmin "
                        "above the buffer) on every switch"))
        return out, rows
    for r in rows:
        n = r["group"]
        if (r["mark_pct"] < q3_m / 3
                and (r["queue_us"] > 2 * tq_us
                     or r["loss_pct"] > max(0.01, 2 * med_l)
                     or r["tx_per_path"] > 1.25 * med_t)):
            out.append((n, "not marking",
                        f"CE on {r['mark_pct']:.2f}% of packets where the "
                        f"upper quartile marks {q3_m:.2f}%, with "
                        f"{r['queue_us']:.1f} us of queueing, "
                        f"{r['loss_pct']:.2f}% loss and "
                        f"{r['tx_per_path'] / max(med_t, 1):.2f}x the "
                        "packets per path of the others (senders steer onto "
                        "paths that do not mark): ECN off on this link, or "
                        "Kmin above its buffer"))
        elif (r["loss_pct"] > LOSS_FACTOR * max(med_l, LOSS_FLOOR)
              and r["loss_pct"] > r["mark_pct"] / 4):
            out.append((n, "dropping before marking",
                        f"{r['loss_pct']:.2f}% loss against {med_l:.2f}% "
                        f"elsewhere, while it marks {r['mark_pct']:.2f}%: "
                        "the queue overflows before it marks enough (Kmin "
                        "near or above the queue limit, WRED in drop mode) "
                        "or the link itself loses"))
        elif (r["queue_us"] > max(3 * med_q, med_q + 2 * tq_us)
              and 0 < r["mark_pct"] <= med_m):
            # (a link that queues longer and marks more than the others
            # marks in time: it carries more)
            out.append((n, "marking too late",
                        f"{r['queue_us']:.1f} us of queueing against "
                        f"{med_q:.1f} us elsewhere before its marks "
                        f"({r['mark_pct']:.2f}%) slow the senders: Kmin/"
                        "Kmax too high for this link's speed (a threshold "
                        "in bytes meant for a faster port)"))
    out += _late(rows, {f[0] for f in out})
    paths = [r["paths"] for r in rows]
    if len(rows) >= 2 and sum(paths) >= 4 * len(rows):
        even = sum(paths) / len(rows)
        lo, hi = min(paths), max(paths)
        worst = max(rows, key=lambda r: abs(r["paths"] - even))
        # A link that loses has its paths retired onto fresh entropies
        # (PATH-9, PATH-10), which hash elsewhere: with another finding
        # made, an uneven count follows from it, not from the hash.
        if (lo < 0.5 * even or hi > 2 * even) and not out:
            out.append((worst["group"], "asymmetric hashing",
                        f"{worst['paths']} path(s) where an even hash puts "
                        f"{even:.1f} (range {lo}..{hi} over {len(rows)} "
                        "groups): the ECMP hash ignores the UDP source "
                        "port or the seeds polarise"))
    return out, rows


def _late(rows, named):
    """Links that mark late for the queue they build, each against the
    median of its peers (links not already named, with enough packets):
    RTT ratio / CE ratio >= LATE_FACTOR, the RTT not well below theirs
    (0.6), nor the packets carried unless it marks under a fifth as
    often."""
    cand = [r for r in rows if r["group"] not in named
            and r["tx_pkts"] >= LATE_MIN_PKTS and r["srtt_med_us"] > 0]
    out = []
    if len(cand) < 3:
        return out
    for r in cand:
        peers = [o for o in cand if o is not r]
        m_ce = _median([o["mark_pct"] for o in peers])
        m_rtt = _median([o["srtt_med_us"] for o in peers])
        if m_ce <= 0 or m_rtt <= 0 or r["mark_pct"] <= 0:
            continue
        r_ce = r["mark_pct"] / m_ce
        r_rtt = r["srtt_med_us"] / m_rtt
        # a link carrying much less than its peers (fewer entropies hashed
        # onto it) queues and marks less for that alone, though not a
        # fifth as much
        r_load = r["tx_pkts"] / _median([o["tx_pkts"] for o in peers])
        if (r_rtt < 0.6 or r_rtt / r_ce < LATE_FACTOR
                or (r_load < 0.6 and r_ce >= 0.2)):
            continue
        if r_ce < 0.2:
            # hardly a mark where its peers mark at the same RTT: its queue
            # seldom or never reaches its threshold, ECN off or a Kmin far
            # above theirs, which the endpoints cannot tell apart
            out.append((r["group"], "not marking",
                        f"CE on {r['mark_pct']:.2f}% of packets, "
                        f"{r_ce:.2f}x its peers' {m_ce:.2f}%, while its "
                        f"paths' RTT is {r_rtt:.2f}x theirs (medians "
                        f"{r['srtt_med_us']:.0f} against {m_rtt:.0f} us): "
                        "ECN off on this link, or Kmin far above its "
                        "peers' (10x), so its queue seldom reaches it"))
        else:
            out.append((r["group"], "marking too late",
                        f"its paths' RTT is {r_rtt:.2f}x its peers' "
                        f"({r['srtt_med_us']:.0f} against {m_rtt:.0f} us, "
                        f"medians) while it marks {r_ce:.2f}x as often "
                        f"({r['mark_pct']:.2f}% against {m_ce:.2f}%): it "
                        "lets its queue grow further than they do before "
                        "marking (Kmin/Kmax above its peers', or in bytes "
                        "meant for a faster port)"))
    return out


def _leaf_of(link):
    """The leaf end of 'leafA>spineS' or 'spineS>leafB'."""
    return next((x for x in link.split(">") if x.startswith("leaf")), link)


def pinpoint(paths, tq, rounds=8):
    """Single links to blame, by greedy tomography: a path crosses one
    uplink and one downlink, so a bad link spoils the figures of every
    link its paths also cross.  Each round groups the remaining paths by
    uplink and by downlink, compares each link with its siblings (the
    uplinks of the same leaf, the downlinks into the same leaf), blames
    the one furthest from its siblings, and drops every path through it.
    Siblings, not the whole tier: a path's marks come mostly from the
    leaf's host port it ends in (incast builds there), so the downlinks
    into a busy leaf all mark more than those into a quiet one, and the
    uplinks of one leaf carry the same senders."""
    out = []
    left = list(paths)
    ref = {}
    for _ in range(rounds):
        best = None
        by = {}  # (side, leaf) -> {link: Group}
        for p in left:
            for side in (0, 1):
                gs = by.setdefault((side, _leaf_of(p[side])), {})
                gs.setdefault(p[side], Group(p[side])).add(*p[2])
        for (side, leaf), groups in sorted(by.items()):
            if len(groups) < 3:
                continue
            if (side, leaf) not in ref:  # the siblings' medians, kept
                _, rows = analyse(groups, tq)
                ref[side, leaf] = tuple(
                    _median([r[k] for r in rows]) for k in
                    ("mark_pct", "loss_pct", "queue_us")) + (
                    _quartile3([r["mark_pct"] for r in rows]),)
            found, rows = analyse(groups, tq, ref[side, leaf])
            sev = {r["group"]: r["severity"] for r in rows}
            for f in found:
                if f[0] in sev and f[1] != "asymmetric hashing" and sev[
                        f[0]] >= LOSS_FACTOR and (best is None
                                                  or sev[f[0]] > best[0]):
                    best = (sev[f[0]], f)
        if best is None:
            break
        out.append(best[1])
        left = [p for p in left if best[1][0] not in (p[0], p[1])]
    return out


def hash_check(qps, nswitch):
    """A hash that ignores the UDP source port puts all of a QP's paths on
    one link: flag a leaf (or the fabric, if every leaf) when most of its
    QPs with 8 paths or more do so and a random hash over nswitch uplinks
    would do that with a chance under one in a million (n paths on one of
    S links: S^-(n-1), multiplied over the QPs).  qps' values name each
    path's link as 'LEAF-UPLINK' ('l0-s2', 'leaf0-spine2') where known."""
    by = {}
    for sw in qps.values():
        if len(sw) >= 8:
            leaf = sw[0].split("-")[0] if "-" in sw[0] else "fabric"
            by.setdefault(leaf, []).append(sw)
    if nswitch < 2:
        return []
    out = []
    for leaf, big in sorted(by.items()):
        ones = [sw for sw in big if len(set(sw)) == 1]
        bits = sum((len(sw) - 1) * math.log2(nswitch) for sw in ones)
        if len(ones) * 2 > len(big) and bits >= 20:
            out.append((leaf, len(ones), len(big), bits))
    if len(out) == len(by) > 1:
        out = [("fabric", sum(o[1] for o in out), sum(o[2] for o in out),
                sum(o[3] for o in out))]
    return [(where, "asymmetric hashing",
             f"{one} of {n} QPs with 8 paths or more put all their paths "
             f"on one link (by chance with a random hash: 1 in 2^{bits:.0f})"
             ": the ECMP hash ignores the UDP source port (the path "
             "entropy); set its hash policy to the 5-tuple")
            for where, one, n, bits in out]


def run(args):
    """The diagnose command; exit 1 when something is named."""
    try:
        tq = parse_time("--target-qdelay", args.target_qdelay)
        emap = read_map(args.map) if args.map else None
        leaves = fab = None
        if args.fabric:
            from .fabric import load
            fab = load(args.fabric)
            leaves = fab["hosts"] // fab["hosts_per_leaf"]
        groups, links, qps = {}, [], {}
        n = 0
        for p in args.paths:
            with open(p, errors="replace") as f:
                head = f.readline()
            if head.startswith("src,dst,slot,entropy"):
                n += read_sim(p, groups, leaves, links, qps)
            else:
                n += read_dump(p, groups, emap, qps)
    except (OSError, FabricError) as ex:
        print(f"mroce-tune: diagnose: {ex}", file=sys.stderr)
        return 2
    if not n:
        print("mroce-tune: diagnose: no path counters found",
              file=sys.stderr)
        return 2
    found, rows = analyse(groups, tq)
    found += pinpoint(links, tq)
    # the links a path may take: the description's uplinks per leaf, else
    # those seen
    nsw = fab["spines"] * fab["planes"] if args.fabric else len(rows)
    found += hash_check(qps, max(nsw, len(rows)))
    found = list(dict.fromkeys(found))  # a QP dumped twice names it twice
    if args.json:
        json.dump({"groups": rows, "findings": [
            {"where": w, "kind": k, "why": y} for w, k, y in found]},
            sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"mroce-tune diagnose: {n} paths in {len(rows)} groups")
        print(f"{'group':<12} {'paths':>5} {'tx_pkts':>9} {'CE %':>7} "
              f"{'loss %':>7} {'srtt us':>8} {'queue us':>8}")
        for r in sorted(rows, key=lambda r: r["group"]):
            print(f"{r['group']:<12} {r['paths']:>5} {r['tx_pkts']:>9} "
                  f"{r['mark_pct']:>7.2f} {r['loss_pct']:>7.2f} "
                  f"{r['srtt_us']:>8.1f} {r['queue_us']:>8.1f}")
        if not found:
            print("no link looks mis-tuned")
        for w, k, y in found:
            print(f"{w}: {k}: {y}")
    return 1 if found else 0
