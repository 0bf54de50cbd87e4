"""Command line of mroce-tune: parses arguments and calls the modules.

  mroce-tune derive FABRIC.json [--json]        settings, rules, spec IDs
  mroce-tune emit FORMAT FABRIC.json [--role leaf|spine] [--switch N]
             [-o FILE]
             FORMAT: sonic | nvue | eos | testbed
  mroce-tune check SONIC.json                   schema check of a fragment
  mroce-tune verify FABRIC.json [options]       (also: --verify FABRIC.json)
  mroce-tune diagnose PATHS [--map FILE] [--json]
Exit status: 0 done (verify: goal met), 1 goal missed or findings
(diagnose), 2 bad input.
"""

import argparse
import json
import sys

from . import derive as dv
from . import emit
from .fabric import FabricError, load


def _parser():
    p = argparse.ArgumentParser(
        prog="mroce-tune",
        description="Switch and end-host settings for MetaRoCE: derive, "
        "explain, emit, verify in mroce-sim, diagnose from path counters.")
    sub = p.add_subparsers(dest="cmd")
    d = sub.add_parser("derive", help="print every setting with its rule")
    d.add_argument("fabric")
    d.add_argument("--json", action="store_true")
    e = sub.add_parser("emit", help="emit configuration")
    e.add_argument("format", choices=sorted(emit.EMITTERS) + ["testbed"])
    e.add_argument("fabric")
    e.add_argument("--role", choices=("leaf", "spine"), default="leaf")
    e.add_argument("--switch", type=int, default=0,
                   help="which switch of the role (0..): its hash seed")
    e.add_argument("-o", "--output")
    c = sub.add_parser("check", help="schema check of a SONiC fragment")
    c.add_argument("file")
    v = sub.add_parser("verify", help="check the settings in mroce-sim")
    v.add_argument("fabric")
    v.add_argument("--sim", help="mroce-sim binary (default: $MROCE_SIM, "
                   "then build/sim/mroce-sim)")
    v.add_argument("--scales", default="0.25,0.5,1,2,4",
                   help="threshold multipliers to sweep")
    v.add_argument("--pmax", default="",
                   help="also sweep these Pmax values (%%), e.g. 10,50,100")
    v.add_argument("--seeds", type=int, default=3,
                   help="seeds per point, averaged (default 3: one seed's "
                   "noise is as large as the sweep's differences)")
    v.add_argument("--coupled", action="store_true",
                   help="scale target_qdelay with the thresholds")
    v.add_argument("--goal", type=float, default=2.0,
                   help="allowed distance from the best, %% (default 2)")
    v.add_argument("-j", "--jobs", type=int, default=1)
    v.add_argument("--no-defaults", action="store_true",
                   help="skip the reference run with mroce-sim's defaults")
    v.add_argument("--keep", help="keep scenario files and outputs here")
    v.add_argument("-s", action="append", default=[], metavar="KEY=VALUE",
                   help="extra mroce-sim key for every run")
    g = sub.add_parser("diagnose", help="name mis-tuned links from the "
                       "endpoints' per-path counters")
    g.add_argument("paths", nargs="+",
                   help="mroce-sim PREFIX.paths.csv or MROCE_DUMP_COUNTERS "
                   "output of libmroce")
    g.add_argument("--map", help="entropy-to-link map: lines 'ENTROPY LINK'")
    g.add_argument("--fabric", help="the description, to name mroce-sim's "
                   "switches spine0.. (else switchN)")
    g.add_argument("--target-qdelay", default="5us",
                   help="the QPs' target_qdelay (default 5us)")
    g.add_argument("--json", action="store_true")
    return p


def main(argv):
    if argv and argv[0] == "--verify":
        argv = ["verify"] + argv[1:]
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "derive":
            fab = load(args.fabric)
            st = dv.derive(fab)
            if args.json:
                json.dump({"fabric": fab["name"],
                           "settings": [s.as_dict() for s in st]},
                          sys.stdout, indent=2)
                sys.stdout.write("\n")
            else:
                sys.stdout.write(dv.explain(fab, st))
            return 0
        if args.cmd == "emit":
            fab = load(args.fabric)
            st = dv.derive(fab)
            if args.format == "testbed":
                text = emit.testbed(fab, st)
            else:
                text = emit.EMITTERS[args.format](fab, st, args.role,
                                                 args.switch)
            if args.output:
                with open(args.output, "w", encoding="utf-8") as f:
                    f.write(text)
            else:
                sys.stdout.write(text)
            return 0
        if args.cmd == "check":
            try:
                with open(args.file, encoding="utf-8") as f:
                    doc = json.load(f)
            except (OSError, json.JSONDecodeError) as ex:
                print(f"mroce-tune: {args.file}: {ex}", file=sys.stderr)
                return 2
            errs = emit.check_sonic(doc) if isinstance(doc, dict) else [
                "not a JSON object"]
            for x in errs:
                print(f"{args.file}: {x}")
            if not errs:
                print(f"{args.file}: ok")
            return 1 if errs else 0
        if args.cmd == "verify":
            from . import verify
            return verify.run(load(args.fabric), args)
        if args.cmd == "diagnose":
            from . import diagnose
            return diagnose.run(args)
    except FabricError as ex:
        print(f"mroce-tune: {ex}", file=sys.stderr)
        return 2
    except OSError as ex:
        print(f"mroce-tune: {ex}", file=sys.stderr)
        return 2
    _parser().print_help(sys.stderr)
    return 2
