#!/usr/bin/env python3
"""Unit tests of mroce-tune: the description parser, the rules, every
emitter and the SONiC schema check (run: python3 tools/tune/tests/test_tune.py;
ctest -R tune_unit).  Each test asserts a property that a wrong rule or a
broken emitter would fail: values consistent across formats, cited spec
IDs present in docs/spec/README.md, the schema check rejecting bad input."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
TUNE = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(TUNE))
sys.path.insert(0, TUNE)

from mroce_tune import derive as dv  # noqa: E402
from mroce_tune import emit  # noqa: E402
from mroce_tune.fabric import FabricError, check, load  # noqa: E402

EXAMPLES = sorted(os.path.join(TUNE, "examples", f)
                  for f in os.listdir(os.path.join(TUNE, "examples"))
                  if f.endswith(".json"))


def example(name):
    with open(os.path.join(TUNE, "examples", name)) as f:
        return json.load(f)


def spec_ids():
    with open(os.path.join(ROOT, "docs", "spec", "README.md")) as f:
        return set(re.findall(r"^\|\s*([A-Z]+-[0-9]+)\s*\|", f.read(), re.M))


class Derive(unittest.TestCase):
    def test_every_setting_cites_existing_ids(self):
        ids = spec_ids()
        self.assertIn("CC-21", ids)
        for ex in EXAMPLES:
            st = dv.derive(load(ex))
            self.assertGreater(len(st), 10)
            for s in st:
                self.assertTrue(s.ids, f"{ex}: {s.name} cites nothing")
                self.assertTrue(s.rule)
                for i in s.ids:
                    self.assertIn(i, ids, f"{ex}: {s.name} cites {i}")

    def test_thresholds_order_and_buffer(self):
        for ex in EXAMPLES:
            fab = load(ex)
            for tag, kmin, kmax, pmax in dv.queue_profiles(dv.derive(fab)):
                self.assertLess(kmin, kmax, ex)
                self.assertLessEqual(kmax, fab["buffer_per_port"] // 2 + 1024,
                                     f"{ex} {tag}: marking must saturate "
                                     "before the queue drops")
                self.assertGreaterEqual(kmin, fab["mtu"])
                self.assertTrue(0 < pmax <= 100)

    def test_kmin_scales_with_speed_and_rtt(self):
        base = example("small32.json")
        base["buffer_per_port"] = "64M"
        k1 = dv.queue_profiles(dv.derive(check(dict(base))))[0][1]
        fast = dict(base, host_speed="400G", fabric_speed="400G")
        k4 = dv.queue_profiles(dv.derive(check(fast)))[0][1]
        self.assertGreater(k4, 3 * k1)  # ~4x, less the shorter serialisation
        far = dict(base, link_delay="4us")
        kf = dv.queue_profiles(dv.derive(check(far)))[0][1]
        self.assertGreater(kf, 2.5 * k1)

    def test_headline_matches_engine_scale(self):
        # ls128 (100G, 1 us links): base RTT ~9.4 us, target_qdelay near the
        # engine's 5 us default, 64 paths for 16 spines.
        st = dv.by_name(dv.derive(load(os.path.join(TUNE, "examples",
                                                    "ls128.json"))))
        self.assertAlmostEqual(st[("fabric", "base_rtt")].value, 9.38e-6,
                               delta=0.1e-6)
        self.assertTrue(3e-6 <= st[("host", "target_qdelay")].value <= 6e-6)
        self.assertEqual(st[("host", "npaths")].value, 64)
        self.assertEqual(st[("host", "rx_rate_mbps")].value, 100000)

    def test_bad_descriptions(self):
        good = example("small32.json")
        for bad, word in ((dict(good, hosts=33), "multiple"),
                          (dict(good, colour="red"), "colour"),
                          (dict(good, host_speed="fast"), "host_speed"),
                          (dict(good, dscp=64), "dscp"),
                          ({k: v for k, v in good.items() if k != "spines"},
                           "spines")):
            with self.assertRaises(FabricError) as cm:
                check(bad)
            self.assertIn(word, str(cm.exception))


class Emit(unittest.TestCase):
    def test_sonic_parses_and_passes_schema(self):
        for ex in EXAMPLES:
            fab = load(ex)
            st = dv.derive(fab)
            for role in ("leaf", "spine"):
                doc = json.loads(emit.sonic(fab, st, role))
                self.assertEqual(emit.check_sonic(doc), [], f"{ex} {role}")
                ports = (fab["hosts_per_leaf"] + fab["spines"] if role ==
                         "leaf" else fab["hosts"] // fab["hosts_per_leaf"])
                self.assertEqual(len(doc["PORT_QOS_MAP"]), ports)
                self.assertEqual(len(doc["QUEUE"]), ports)
                m = doc["DSCP_TO_TC_MAP"]["MROCE"]
                self.assertEqual(m[str(fab["dscp"])], str(fab["queue"]))
                for p in doc["PORT_QOS_MAP"].values():
                    self.assertEqual(p["pfc_enable"], "")
                prof = {f"MROCE_{t}": (a, b, c)
                        for t, a, b, c in dv.queue_profiles(st)}
                for name, w in doc["WRED_PROFILE"].items():
                    a, b, c = prof[name]
                    self.assertEqual(w["green_min_threshold"], str(a))
                    self.assertEqual(w["green_max_threshold"], str(b))
                    self.assertEqual(w["ecn"], "ecn_all")

    def test_schema_check_rejects(self):
        fab = load(EXAMPLES[0])
        doc = json.loads(emit.sonic(fab, dv.derive(fab)))
        cases = []
        d = json.loads(json.dumps(doc))
        del d["WRED_PROFILE"]
        cases.append((d, "WRED_PROFILE"))
        d = json.loads(json.dumps(doc))
        w = next(iter(d["WRED_PROFILE"].values()))
        w["green_min_threshold"] = w["green_max_threshold"]
        cases.append((d, "min >= max"))
        d = json.loads(json.dumps(doc))
        next(iter(d["QUEUE"].values()))["wred_profile"] = "NOPE"
        cases.append((d, "names no WRED_PROFILE"))
        d = json.loads(json.dumps(doc))
        next(iter(d["PORT_QOS_MAP"].values()))["pfc_enable"] = "3,x"
        cases.append((d, "pfc_enable"))
        d = json.loads(json.dumps(doc))
        d["DSCP_TO_TC_MAP"]["MROCE"]["64"] = "3"
        cases.append((d, "bad entry"))
        d = json.loads(json.dumps(doc))
        next(iter(d["WRED_PROFILE"].values()))["ecn"] = 1
        cases.append((d, "ecn"))
        for bad, word in cases:
            errs = emit.check_sonic(bad)
            self.assertTrue(any(word in e for e in errs), (word, errs))

    def test_cli_text_formats_carry_the_thresholds(self):
        ex = os.path.join(TUNE, "examples", "mixed400.json")
        fab = load(ex)
        prof = dv.queue_profiles(dv.derive(fab))
        run = [sys.executable, os.path.join(TUNE, "mroce-tune")]
        nv = subprocess.run(run + ["emit", "nvue", ex], check=True,
                            capture_output=True, text=True).stdout
        eo = subprocess.run(run + ["emit", "eos", ex], check=True,
                            capture_output=True, text=True).stdout
        for tag, kmin, kmax, pmax in prof:
            pre = f"congestion-control mroce-{tag.lower()} traffic-class 3"
            self.assertIn(f"{pre} min-threshold {kmin // 1024}KB", nv)
            self.assertIn(f"{pre} max-threshold {kmax // 1024}KB", nv)
            self.assertIn(f"minimum-threshold {kmin // 1024} kbytes "
                          f"maximum-threshold {kmax // 1024} kbytes "
                          f"max-mark-probability {pmax}", eo)
        self.assertIn("nv unset qos pfc default-global switch-priority 3", nv)
        self.assertIn("qos map dscp 26 to traffic-class 3", eo)
        self.assertEqual(eo.count("no priority-flow-control"), 32 + 16)
        # the SONiC fragment through the command line and `check`
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "s.json")
            subprocess.run(run + ["emit", "sonic", ex, "-o", f], check=True)
            r = subprocess.run(run + ["check", f], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 0, r.stdout)
            with open(f, "w") as o:
                o.write("{\"QUEUE\": {}}")
            r = subprocess.run(run + ["check", f], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 1)

    def test_testbed_form(self):
        ex = os.path.join(TUNE, "examples", "testbed.json")
        fab = load(ex)
        st = dv.derive(fab)
        kv = {}
        for line in emit.testbed(fab, st).splitlines():
            if line and not line.startswith("#"):
                k, v = line.split("=", 1)
                kv[k] = v
        tag, kmin, kmax, pmax = dv.queue_profiles(st)[0]
        self.assertEqual(int(kv["MARK_KB"]), kmin // 1024)
        self.assertEqual(int(kv["KMAX_KB"]), kmax // 1024)
        self.assertEqual(int(kv["PMAX_PCT"]), pmax)
        self.assertEqual(kv["RATE"], "500000kbit")
        self.assertEqual(kv["ECN"], "1")
        self.assertEqual(int(kv["LIMIT_KB"]), 512)
        # mroce-fabric's reader accepts exactly these keys (tools/mroce-fabric)
        with open(os.path.join(ROOT, "tools", "mroce-fabric")) as f:
            src = f.read()
        for k in kv:
            self.assertIn(k, src)


if __name__ == "__main__":
    unittest.main(verbosity=1)
