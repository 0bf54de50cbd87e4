"""mroce-tune verify: the derived settings checked in mroce-sim.

Writes one mroce-sim scenario per grid point (the description's fabric
and workloads, the derived end-host settings, the switch thresholds
multiplied by each scale (with --coupled, target_qdelay too, as its rule
ties it to Kmin), optionally other Pmax values), runs them through
mroce-sim's command line (`-q -o DIR`, summary.csv) and reports each
point's efficiency and p99 message completion time, and how far the
derived point (scale 1, derived Pmax) is from the best found.  The goal:
within --goal percent of the best on both.  A fabric with two link speeds,
or whose leaves and spines differ (a mixed-vendor fabric: buffer, marking,
hash), is run with mroce-sim `switch` lines giving each port its own
role's profile at its speed, and each role's hash.
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from . import derive as dv


def find_sim(opt):
    """The mroce-sim binary: --sim, $MROCE_SIM, or build/sim/mroce-sim."""
    here = os.path.dirname(os.path.realpath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    for c in (opt, os.environ.get("MROCE_SIM"),
              os.path.join(root, "build", "sim", "mroce-sim")):
        if c and os.access(c, os.X_OK):
            return c
    return None


def scenario(fab, scale, pmax=None, seed=1, extra=(), defaults=False,
             coupled=False):
    """mroce-sim scenario text for one grid point; defaults: the same
    fabric and workloads with mroce-sim's own ECN and QP defaults (the
    reference row)."""
    # The switch thresholds at this scale; the end-host settings as derived
    # (scale 1), unless coupled: then target_qdelay follows Kmin as its
    # rule says (derive.py).
    raw = dv.derive(fab, scale)
    sw = dv.by_name(raw)
    s = sw if coupled else dv.by_name(dv.derive(fab, 1.0))
    tag = dv.speed_name(fab["host_speed"])
    kmin = sw[(f"queue@{tag}", "ecn_kmin")].value
    kmax = sw[(f"queue@{tag}", "ecn_kmax")].value
    pm = sw[(f"queue@{tag}", "ecn_pmax")].value if pmax is None else pmax
    if fab["link_delay"] is not None:
        delay = fab["link_delay"]
    else:
        delay = (fab["host_cable_m"] + fab["fabric_cable_m"]) / 2 * 5e-9
    lines = [f"name = {fab['name']}", f"seed = {seed}",
             "topology = leafspine", f"hosts = {fab['hosts']}",
             f"hosts_per_tor = {fab['hosts_per_leaf']}",
             f"spines = {fab['spines']}",
             f"host_rate = {int(fab['host_speed'])}",
             f"fabric_rate = {int(fab['fabric_speed'])}",
             f"delay = {delay * 1e9:.0f}ns",
             f"buffer = {fab['buffer_per_port']}",
             f"ecn_kmin = {kmin}", f"ecn_kmax = {kmax}",
             f"ecn_pmax = {pm / 100.0:g}", f"mtu = {fab['mtu']}",
             f"qp_npaths = {s[('host', 'npaths')].value}",
             f"qp_init_cwnd = {s[('host', 'init_cwnd')].value}",
             f"qp_target_qdelay = "
             f"{s[('host', 'target_qdelay')].value * 1e9:.0f}ns",
             f"qp_window = {fab['window']}",
             "transports = mroce"]
    if fab["planes"] > 1:
        lines.append(f"planes = {fab['planes']}")
    if defaults:
        lines = [x for x in lines
                 if not x.startswith(("ecn_", "qp_"))]
    lines += switch_lines(fab, raw, physical=defaults)
    for role in ("leaf", "spine"):
        if fab[role].get("hash", "5tuple") != "5tuple":
            lines.append(f"switch = {role} hash={fab[role]['hash']}")
    for k, v in fab["sim"].items():
        lines.append(f"{k} = {v}")
    for w in fab["workload"]:
        lines.append(f"workload = {w}")
    for kv in extra:
        k, _, v = kv.partition("=")
        lines.append(f"{k.strip()} = {v.strip()}")
    return "\n".join(lines) + "\n", (kmin, kmax, pm)


# The simulator's link tiers (tiers.csv) and whose queues they are: a
# leaf's host ports and uplinks, a spine's downlinks.
TIERS = (("tor-host", "leaf", "host_speed"), ("tor-spine", "leaf",
                                              "fabric_speed"),
         ("spine-tor", "spine", "fabric_speed"))


def switch_lines(fab, settings, physical=False):
    """mroce-sim `switch` lines giving each port its role's profile at its
    speed (a fabric of two speeds, or a mixed-vendor one whose roles differ
    in buffer or marking); none when every queue has the same.  physical:
    only what the switches are (buffer, step or ramp), for the reference
    run with mroce-sim's own thresholds."""
    if (fab["host_speed"] == fab["fabric_speed"]
            and not any(s.scope.startswith("queue@") and ":" in s.scope
                        for s in settings)):
        return []
    out = []
    for tier, role, speed in TIERS:
        view = dv.role_view(fab, role)
        prof = {t: (k, x, p) for t, k, x, p in
                dv.queue_profiles(settings, role)}
        tag = dv.speed_name(fab[speed])
        if tier == "tor-spine":
            tag = tag + "-up" if tag + "-up" in prof else tag
        kmin, kmax, pm = prof[tag]
        ecn = "step" if view["marking"] == "step" else "red"
        line = f"switch = {tier} buffer={view['buffer_per_port']} ecn={ecn}"
        if not physical:
            line += (f" ecn_kmin={kmin} ecn_kmax={kmax} "
                     f"ecn_pmax={pm / 100.0:g}")
        out.append(line)
    return out


def run_one(sim, text, d):
    """Run one scenario in directory d; returns the summary row (dict)."""
    os.makedirs(d, exist_ok=True)
    # mroce-sim appends to summary.csv: a run kept from before (--keep)
    # must not add its rows to this one's
    summ = os.path.join(d, "summary.csv")
    if os.path.exists(summ):
        os.remove(summ)
    path = os.path.join(d, "scenario.txt")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([sim, "-q", "-o", d, path], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(f"mroce-sim failed ({r.returncode}): "
                           f"{r.stderr.strip()[-400:]}")
    with open(os.path.join(d, "summary.csv")) as f:
        rows = list(csv.DictReader(f))
    return rows


def run(fab, args):
    """The verify command; returns the exit status."""
    sim = find_sim(args.sim)
    if not sim:
        print("mroce-tune: verify: no mroce-sim (build it: cmake --build "
              "build --target mroce-sim, or give --sim)", file=sys.stderr)
        return 2
    if not fab["workload"]:
        print("mroce-tune: verify: the description has no workload",
              file=sys.stderr)
        return 2
    scales = [float(x) for x in args.scales.split(",") if x]
    if 1.0 not in scales:
        scales.append(1.0)
    pmaxes = [None] + [float(x) for x in args.pmax.split(",") if x]
    points = [(sc, pm) for sc in sorted(scales) for pm in pmaxes]
    if not args.no_defaults:
        points.append(("defaults", None))
    work = args.keep or tempfile.mkdtemp(prefix="mroce-tune-")

    def job(i_pt_seed):
        i, (sc, pm), seed = i_pt_seed
        if sc == "defaults":
            text, _ = scenario(fab, 1.0, None, seed, args.s, defaults=True)
            thr = (0, 0, 0)
        else:
            text, thr = scenario(fab, sc, pm, seed, args.s,
                                 coupled=args.coupled)
        rows = run_one(sim, text, os.path.join(work, f"p{i}_s{seed}"))
        return i, seed, thr, rows

    jobs = [(i, pt, seed) for i, pt in enumerate(points)
            for seed in range(fab["seed"], fab["seed"] + args.seeds)]
    res = {}
    try:
        with ThreadPoolExecutor(max(1, args.jobs)) as ex:
            for i, seed, thr, rows in ex.map(job, jobs):
                res.setdefault(i, {"thr": thr, "eff": [], "p99": []})
                # one row per workload; a point's figure is their mean
                eff = sum(float(r["efficiency_pct"]) for r in rows) / len(rows)
                p99 = sum(float(r["mct_p99_us"]) for r in rows) / len(rows)
                done = all(r["complete"] in ("1", "yes", "complete")
                           for r in rows)
                res[i]["eff"].append(eff if done else 0.0)
                res[i]["p99"].append(p99 if done else float("inf"))
    except RuntimeError as ex_:
        print(f"mroce-tune: verify: {ex_}", file=sys.stderr)
        return 2
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    table = []
    for i, (sc, pm) in enumerate(points):
        r = res[i]
        eff = sum(r["eff"]) / len(r["eff"])
        p99 = sum(r["p99"]) / len(r["p99"])
        table.append((sc, r["thr"], eff, p99, sc == 1.0 and pm is None, r))
    ref = table.pop() if not args.no_defaults else None
    best_eff = max(t[2] for t in table)
    best_p99 = min(t[3] for t in table)
    der = next(t for t in table if t[4])
    beff = next(t for t in table if t[2] == best_eff)
    bp99 = next(t for t in table if t[3] == best_p99)
    n = args.seeds
    print(f"mroce-tune verify: {fab['name']}, thresholds"
          + (" and target_qdelay" if args.coupled else "") + " scaled, "
          f"{len(jobs)} runs "
          f"({len(table)} points"
          + (" + the simulator's defaults" if ref else "") + f", x "
          f"{n} seed(s)), workloads: "
          + "; ".join(fab["workload"]))
    print(f"{'scale':>6} {'Kmin':>9} {'Kmax':>9} {'Pmax':>5} "
          f"{'eff %':>7} {'p99 us':>9}" + (f" {'(sd eff':>8} {'p99)':>6}"
                                          if n > 1 else ""))
    for sc, (kmin, kmax, pm), eff, p99, isd, r in table:
        mark = "  <- derived" if isd else ""
        mark += " best-eff" if eff == best_eff else ""
        mark += " best-p99" if p99 == best_p99 else ""
        sd = (f" {_sd(r['eff']):>8.2f} {_sd(r['p99']):>6.1f}" if n > 1
              else "")
        print(f"{sc:>6g} {kmin // 1024:>7}Ki {kmax // 1024:>7}Ki {pm:>5g} "
              f"{eff:>7.2f} {p99:>9.1f}{sd}{mark}")
    if ref:
        print(f"{'sim defaults':>24} {'':>5} {ref[2]:>7.2f} {ref[3]:>9.1f}"
              "  (mroce-sim's own ECN and QP defaults, same fabric)")
    d_eff = (best_eff - der[2]) / best_eff * 100 if best_eff else 0.0
    d_p99 = (der[3] - best_p99) / best_p99 * 100 if best_p99 else 0.0
    ok = d_eff <= args.goal and d_p99 <= args.goal
    verdict = "MET" if ok else "MISSED"
    if n > 1:
        # The same seed gives every point the same placement and the same
        # random streams, so the per-seed differences are paired.
        ie = _interval([(b - d) / best_eff * 100 for b, d in
                        zip(beff[5]["eff"], der[5]["eff"])])
        ip = _interval([(d - b) / best_p99 * 100 for b, d in
                        zip(bp99[5]["p99"], der[5]["p99"])])
        print(f"over {n} seeds (paired by seed, 95% t interval of the "
              f"mean distance): efficiency {d_eff:.2f}% "
              f"[{ie[0]:.2f}, {ie[1]:.2f}], p99 {d_p99:.2f}% "
              f"[{ip[0]:.2f}, {ip[1]:.2f}]")
        if not ok and (d_eff <= args.goal or ie[0] <= args.goal) and (
                d_p99 <= args.goal or ip[0] <= args.goal):
            verdict += (f" (within the seeds' noise: each interval reaches "
                        f"{args.goal:g}%; more seeds would resolve it)")
    print(f"derived vs best: efficiency {der[2]:.2f}% vs {best_eff:.2f}% "
          f"({d_eff:.2f}% below), p99 MCT {der[3]:.1f} vs {best_p99:.1f} us "
          f"({d_p99:.2f}% above); goal {args.goal:g}%: {verdict}")
    return 0 if ok else 1


# Two-sided 95% Student t quantiles by degrees of freedom (1..10; 2.0 above).
_T95 = (12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23)


def _sd(xs):
    """Sample standard deviation (0 for fewer than two)."""
    n = len(xs)
    if n < 2:
        return 0.0
    m = sum(xs) / n
    return (sum((x - m) ** 2 for x in xs) / (n - 1)) ** 0.5


def _interval(ds):
    """The 95% t interval of the mean of ds."""
    n = len(ds)
    m = sum(ds) / n
    h = (_T95[n - 2] if n - 1 <= len(_T95) else 2.0) * _sd(ds) / n ** 0.5
    return m - h, m + h
