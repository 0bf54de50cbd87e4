"""Emitters: the derived settings as configuration a switch or testbed reads.

Each emitter takes the description and the settings of derive.py and
returns text.  A leaf has hosts_per_leaf host ports (host_speed) then one
uplink per spine (fabric_speed); a spine has one port per leaf.  Port
names follow each platform's usual front-panel names (SONiC Ethernet0,
Ethernet4, ...; Cumulus swp1..; EOS Ethernet1..) and are meant to be
renamed to the real cabling.  SONIC_SCHEMA is the schema the SONiC
fragment is checked against (tests/test_tune.py, `mroce-tune check`).
"""

import json

from .derive import by_name, queue_profiles, speed_name

PROFILE = "MROCE"  # name of every map and profile the emitters create


def _ports(fab, role, tags=()):
    """[(index, profile tag)] of one switch of the role, host ports first:
    the port's speed, or for a leaf's uplinks SPEED-up where `tags` (the
    role's profiles) has one."""
    leaves = fab["hosts"] // fab["hosts_per_leaf"]
    hs, fs = speed_name(fab["host_speed"]), speed_name(fab["fabric_speed"])
    if role == "leaf":
        up = fs + "-up" if fs + "-up" in tags else fs
        return ([(i, hs) for i in range(fab["hosts_per_leaf"])]
                + [(fab["hosts_per_leaf"] + i, up)
                   for i in range(fab["spines"])])
    return [(i, fs) for i in range(leaves)]


def _tags(settings, role):
    return [t for t, _, _, _ in queue_profiles(settings, role)]


def _v(settings, scope, name):
    return by_name(settings)[(scope, name)].value


# SONiC config_db.json fragment: table -> (key pattern, field -> type).
# Values in config_db are strings; "int" means a string of digits.
SONIC_SCHEMA = {
    "DSCP_TO_TC_MAP": {"fields": "dscp->tc", "value": "int"},
    "TC_TO_QUEUE_MAP": {"fields": "tc->queue", "value": "int"},
    "WRED_PROFILE": {"fields": {
        "wred_green_enable": "bool", "wred_yellow_enable": "bool",
        "wred_red_enable": "bool", "ecn": "ecn",
        "green_min_threshold": "int", "green_max_threshold": "int",
        "green_drop_probability": "pct",
        "yellow_min_threshold": "int", "yellow_max_threshold": "int",
        "yellow_drop_probability": "pct",
        "red_min_threshold": "int", "red_max_threshold": "int",
        "red_drop_probability": "pct"}},
    "QUEUE": {"key": "PORT|Q", "fields": {"wred_profile": "ref:WRED_PROFILE"}},
    "PORT_QOS_MAP": {"fields": {"dscp_to_tc_map": "ref:DSCP_TO_TC_MAP",
                                "tc_to_queue_map": "ref:TC_TO_QUEUE_MAP",
                                "pfc_enable": "optional list of TCs"}},
}


def sonic(fab, settings, role="leaf", index=0):
    """config_db.json fragment for one switch of `role` (leaf or spine)."""
    q = str(fab["queue"])
    dscp_map = {str(d): "0" for d in range(64)}
    dscp_map[str(fab["dscp"])] = q
    wred = {}
    for tag, kmin, kmax, pmax in queue_profiles(settings, role):
        p = {"wred_green_enable": "true", "wred_yellow_enable": "true",
             "wred_red_enable": "true", "ecn": "ecn_all"}
        for c in ("green", "yellow", "red"):
            p[f"{c}_min_threshold"] = str(kmin)
            p[f"{c}_max_threshold"] = str(kmax)
            p[f"{c}_drop_probability"] = str(pmax)
        wred[f"{PROFILE}_{tag.upper().replace('-', '_')}"] = p
    queue, pqm = {}, {}
    for i, tag in _ports(fab, role, _tags(settings, role)):
        port = f"Ethernet{4 * i}"
        queue[f"{port}|{q}"] = {
            "wred_profile": f"{PROFILE}_{tag.upper().replace('-', '_')}"}
        # no pfc_enable: PFC on no priority (the YANG pattern wants a
        # non-empty list of priorities when it is present)
        pqm[port] = {"dscp_to_tc_map": PROFILE, "tc_to_queue_map": PROFILE}
    doc = {
        "DSCP_TO_TC_MAP": {PROFILE: dscp_map},
        "TC_TO_QUEUE_MAP": {PROFILE: {str(t): str(t) for t in range(8)}},
        "WRED_PROFILE": wred,
        "QUEUE": queue,
        "PORT_QOS_MAP": pqm,
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def check_sonic(doc):
    """Errors (strings) of a parsed SONiC fragment against SONIC_SCHEMA."""
    errs = []
    for t in SONIC_SCHEMA:
        if t not in doc or not isinstance(doc[t], dict) or not doc[t]:
            errs.append(f"{t}: missing or empty")
    for t in doc:
        if t not in SONIC_SCHEMA:
            errs.append(f"{t}: not a table this fragment documents")
    if errs:
        return errs

    def digits(s, lo, hi):
        return isinstance(s, str) and s.isdigit() and lo <= int(s) <= hi

    for name, m in doc["DSCP_TO_TC_MAP"].items():
        for k, v in m.items():
            if not digits(k, 0, 63) or not digits(v, 0, 7):
                errs.append(f"DSCP_TO_TC_MAP|{name}: bad entry {k}->{v}")
    for name, m in doc["TC_TO_QUEUE_MAP"].items():
        for k, v in m.items():
            if not digits(k, 0, 7) or not digits(v, 0, 7):
                errs.append(f"TC_TO_QUEUE_MAP|{name}: bad entry {k}->{v}")
    want = SONIC_SCHEMA["WRED_PROFILE"]["fields"]
    for name, p in doc["WRED_PROFILE"].items():
        if set(p) != set(want):
            errs.append(f"WRED_PROFILE|{name}: fields {sorted(set(p) ^ set(want))}")
            continue
        for f, kind in want.items():
            v = p[f]
            ok = (kind == "bool" and v in ("true", "false")
                  or kind == "ecn" and v in ("ecn_none", "ecn_green",
                                             "ecn_yellow", "ecn_red",
                                             "ecn_green_yellow", "ecn_all")
                  or kind == "int" and digits(v, 0, 1 << 40)
                  or kind == "pct" and digits(v, 0, 100))
            if not ok:
                errs.append(f"WRED_PROFILE|{name}.{f}: bad value {v!r}")
        for c in ("green", "yellow", "red"):
            if (digits(p[f"{c}_min_threshold"], 0, 1 << 40)
                    and digits(p[f"{c}_max_threshold"], 0, 1 << 40)
                    and int(p[f"{c}_min_threshold"])
                    >= int(p[f"{c}_max_threshold"])):
                errs.append(f"WRED_PROFILE|{name}: {c} min >= max")
    for key, f in doc["QUEUE"].items():
        port, _, qi = key.partition("|")
        if not port.startswith("Ethernet") or not digits(qi, 0, 7):
            errs.append(f"QUEUE|{key}: key is not PORT|QUEUE")
        if f.get("wred_profile") not in doc["WRED_PROFILE"]:
            errs.append(f"QUEUE|{key}: wred_profile names no WRED_PROFILE")
    for port, f in doc["PORT_QOS_MAP"].items():
        if f.get("dscp_to_tc_map") not in doc["DSCP_TO_TC_MAP"]:
            errs.append(f"PORT_QOS_MAP|{port}: dscp_to_tc_map dangling")
        if f.get("tc_to_queue_map") not in doc["TC_TO_QUEUE_MAP"]:
            errs.append(f"PORT_QOS_MAP|{port}: tc_to_queue_map dangling")
        pe = f.get("pfc_enable")
        if pe is not None and (not isinstance(pe, str) or any(
                not digits(x, 0, 7) for x in pe.split(","))):
            errs.append(f"PORT_QOS_MAP|{port}: pfc_enable not a list of TCs")
    return errs


def _ranges(idx, prefix, base):
    """Cumulus-style port ranges: swp1-16,swp17."""
    idx = sorted(i + base for i in idx)
    out, start, prev = [], None, None
    for i in idx + [None]:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{prefix}{start}" + (f"-{prev}" if prev > start else ""))
            start = prev = i
    return ",".join(out)


def nvue(fab, settings, role="leaf", index=0):
    """NVIDIA Cumulus Linux (NVUE) commands for switch `index` of `role`
    (the index sets its ECMP hash seed: every switch a different one)."""
    q = fab["queue"]
    lines = [f"# mroce-tune: {fab['name']}, {role}: MetaRoCE on a lossy "
             f"queue {q} with ECN (NVUE)",
             "nv set qos mapping default-global trust l3",
             f"nv set qos mapping default-global dscp {fab['dscp']} "
             f"switch-priority {q}",
             f"nv set qos egress-queue-mapping default-global switch-priority "
             f"{q} traffic-class {q}",
             f"nv unset qos pfc default-global switch-priority {q}",
             "nv unset qos link-pause"]
    ports = _ports(fab, role, _tags(settings, role))
    for tag, kmin, kmax, pmax in queue_profiles(settings, role):
        sel = [i for i, t in ports if t == tag]
        if not sel:
            continue
        prof = f"mroce-{tag.lower()}"
        pre = f"nv set qos congestion-control {prof} traffic-class {q}"
        # NVUE takes the thresholds in bytes
        lines += [f"{pre} min-threshold {kmin}",
                  f"{pre} max-threshold {kmax}",
                  f"{pre} probability {pmax}",
                  f"{pre} ecn enable",
                  f"{pre} red disable",
                  f"nv set interface {_ranges(sel, 'swp', 1)} qos "
                  f"congestion-control profile {prof}"]
    for f in ("source-ip", "destination-ip", "ip-protocol", "source-port",
              "destination-port"):
        lines.append(f"nv set system forwarding ecmp-hash {f} on")
    seed = index + 1 + (0 if role == "leaf" else 1000)
    lines.append(f"nv set system forwarding hash-seed {seed}")
    lines.append(f"nv set interface swp1-{len(ports)} link mtu 9216")
    lines.append("nv config apply")
    return "\n".join(lines) + "\n"


def eos(fab, settings, role="leaf", index=0):
    """Arista EOS configuration for one switch of `role`."""
    q = fab["queue"]
    lines = [f"! mroce-tune: {fab['name']}, {role}: MetaRoCE on a lossy "
             f"uc-tx-queue {q} with ECN (EOS)",
             f"qos map dscp {fab['dscp']} to traffic-class {q}",
             "!",
             "! Trident/Tomahawk-family syntax (7050X, 7060X, 7260X): "
             "Jericho platforms",
             "! (7280R, 7500R) hash with load-balance sand profile and "
             "queue in tx-queue",
             "ip load-sharing trident fields ip source-ip destination-ip "
             "source-port destination-port",
             "!"]
    prof = {t: (a, b, p) for t, a, b, p in queue_profiles(settings, role)}
    for i, tag in _ports(fab, role, prof):
        kmin, kmax, pmax = prof[tag]
        lines += [f"interface Ethernet{i + 1}",
                  "   mtu 9214",
                  "   qos trust dscp",
                  "   no priority-flow-control",
                  f"   uc-tx-queue {q}",
                  f"      random-detect ecn minimum-threshold {kmin // 1024} "
                  f"kbytes maximum-threshold {kmax // 1024} kbytes "
                  f"max-mark-probability {pmax}",
                  "!"]
    return "\n".join(lines) + "\n"


def testbed(fab, settings):
    """The key=value file `mroce-fabric up --tune FILE` reads (ECN marking
    between Kmin and Kmax per link speed, queue limit, MTU)."""
    hosts_per_leaf = fab["hosts_per_leaf"]
    prof = {t: (a, b, p) for t, a, b, p in queue_profiles(settings, "leaf")}
    hs, fs = speed_name(fab["host_speed"]), speed_name(fab["fabric_speed"])

    def tc_rate(bps):
        return f"{int(bps // 1000)}kbit"

    hk, hx, hp = prof[hs]
    fk, fx, fp = prof.get(fs + "-up", prof[fs])
    sprof = {t: (a, b, p) for t, a, b, p in queue_profiles(settings,
                                                              "spine")}
    lines = [f"# mroce-tune testbed form: {fab['name']} "
             "(mroce-fabric up --tune FILE)",
             f"HOSTS={fab['hosts']}",
             f"LEAVES={fab['hosts'] // hosts_per_leaf}",
             f"SPINES={fab['spines']}",
             f"RATE={tc_rate(fab['host_speed'])}",
             f"SPINE_RATE={tc_rate(fab['fabric_speed'])}",
             "ECN=1",
             f"MARK_KB={hk // 1024}",
             f"KMAX_KB={hx // 1024}",
             f"PMAX_PCT={hp}",
             f"SPINE_MARK_KB={fk // 1024}",
             f"SPINE_KMAX_KB={fx // 1024}",
             f"SPINE_PMAX_PCT={fp}",
             f"LIMIT_KB={_v(settings, 'switch', 'lossy_queue_limit') // 1024}",
             "MTU=9000"]
    if sprof[fs] != (fk, fx, fp):
        # spines tuned apart from the leaves (a mixed fabric): per node
        sk, sx, sp = sprof[fs]
        for i in range(fab["spines"]):
            lines += [f"MARK_KB_s{i}={sk // 1024}", f"KMAX_KB_s{i}={sx // 1024}",
                      f"PMAX_PCT_s{i}={sp}"]
    return "\n".join(lines) + "\n"


EMITTERS = {"sonic": sonic, "nvue": nvue, "eos": eos}
