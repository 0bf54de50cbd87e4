"""The rules: from a fabric description to switch and end-host settings.

Every setting is a Setting: where it applies (scope), its value, the rule
that produced it in words a network engineer uses, and the spec
requirements it rests on (docs/spec/congestion.md, multipath.md and the
wire rules of docs/spec/README.md).  derive() returns them in a fixed
order; the emitters (emit.py) read only these values, so what the
explanation says is what the configuration holds.

Model of the fabric: a two-tier leaf-spine, store and forward, one packet
of MTU + 110 wire bytes (MetaRoCE's 64 bytes of headers and CRC plus
Ethernet, IPv4 and UDP).  A data packet crosses four links (host-leaf,
leaf-spine, spine-leaf, leaf-host) and its ACK four back.
"""

import math

from .fabric import role_view

DATA_OVERHEAD = 110  # wire bytes around a payload (sim/README.md, The model)
ACK_BYTES = 110  # an ACK on the wire, about
CABLE_NS_PER_M = 5.0  # light in fibre or copper, about 2/3 c
ENGINE_TQ_DEFAULT = 5e-6  # target_qdelay default (congestion.md, section 3)


class Setting:
    """One derived value with its rule and the requirement IDs behind it."""

    def __init__(self, scope, name, value, unit, rule, ids):
        self.scope = scope  # "host", "switch", or "queue@<speed>"
        self.name = name
        self.value = value  # number, bool or string
        self.unit = unit  # "B", "s", "bit/s", "", ...
        self.rule = rule
        self.ids = ids  # list of spec IDs

    def shown(self):
        return show(self.value, self.unit)

    def as_dict(self):
        return {"scope": self.scope, "name": self.name, "value": self.value,
                "unit": self.unit, "shown": self.shown(), "rule": self.rule,
                "ids": self.ids}


def show(v, unit):
    """A value in the unit an engineer reads it in."""
    if unit == "B":
        if v >= 1024 * 1024 and v % (1024 * 1024) == 0:
            return f"{v // (1024 * 1024)} MiB"
        if v >= 1024:
            return f"{v / 1024:.0f} KiB" if v % 1024 == 0 else f"{v / 1024:.1f} KiB"
        return f"{v} B"
    if unit == "s":
        if v >= 1e-3:
            return f"{v * 1e3:.3g} ms"
        return f"{v * 1e6:.3g} us"
    if unit == "bit/s":
        return f"{v / 1e9:g} Gbit/s"
    if unit == "Mbit/s":
        return f"{v} Mbit/s"
    if unit == "%":
        return f"{v:g}%"
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def speed_name(bps):
    """100G, 400G, 500M: the tag of a queue profile."""
    if bps >= 1e9:
        return f"{bps / 1e9:g}G"
    return f"{bps / 1e6:g}M"


def _ser(nbytes, bps):
    return nbytes * 8.0 / bps


def _round_up(x, q):
    return int(math.ceil(x / q) * q)


def base_rtt(fab):
    """The unloaded RTT of the longest path (seconds) and how it was got."""
    if fab["rtt"]:
        return fab["rtt"], "given in the description (rtt)"
    pkt = fab["mtu"] + DATA_OVERHEAD
    if fab["link_delay"] is not None:
        ph = pf = fab["link_delay"]
    else:
        ph = fab["host_cable_m"] * CABLE_NS_PER_M * 1e-9
        pf = fab["fabric_cable_m"] * CABLE_NS_PER_M * 1e-9
    hs, fs = fab["host_speed"], fab["fabric_speed"]
    rtt = (4 * ph + 4 * pf + 2 * (_ser(pkt, hs) + _ser(pkt, fs))
           + 2 * (_ser(ACK_BYTES, hs) + _ser(ACK_BYTES, fs)) + fab["host_delay"])
    return rtt, ("4 links each way: propagation + store-and-forward of one "
                 "MTU packet (data) and one ACK, plus host_delay")


def oversubscription(fab):
    """A leaf's host capacity over its uplink capacity (2.0: 2:1)."""
    return (fab["hosts_per_leaf"] * fab["host_speed"]
            / (fab["spines"] * fab["fabric_speed"]))


# Where the ramp of an oversubscribed core (the leaves' uplinks and the
# spines' downlinks) ends, in packets: see queue_thresholds.
CORE_KMAX_PKTS = 8


def queue_thresholds(fab, speed, rtt, scale=1.0, core=False):
    """Kmin, Kmax (bytes), Pmax (%) for an egress queue at `speed`, and the
    rules that set them; `scale` multiplies both thresholds (--verify);
    core: the queue is a leaf's uplink or a spine's downlink."""
    pkt = fab["mtu"] + DATA_OVERHEAD
    bdp = speed * rtt / 8.0
    kmin = max(bdp, 4 * pkt)
    kmax = 4 * kmin
    rules = {}
    rules["kmin"] = (f"one base RTT of queue at {speed_name(speed)} "
                     f"(BDP {bdp / 1024:.0f} KiB), at least 4 packets: below "
                     "it the marks would answer the transient bursts of "
                     "spraying, not a standing queue")
    rules["kmax"] = ("4 x Kmin: the marking ramp spans 3 BDP, so the "
                     "connection's ECN fraction (alpha) grows with the queue")
    limit = fab["buffer_per_port"]
    if kmax > limit:
        # The senders' rate hints (CC-25, CC-36..38) bound an incast's
        # first round trip, so the ramp may span the whole share: marks
        # start once a quarter of it is used and reach Pmax where the
        # queue would drop.
        kmax = limit
        kmin = min(kmin, kmax / 4)
        rules["kmax"] = ("the queue's buffer (shallow buffer): the ramp "
                         "spans the whole share, reaching Pmax where the "
                         "queue would drop; the rate hints bound an "
                         "incast's first round trip")
        rules["kmin"] = ("a quarter of the buffer (shallow buffer: the ramp "
                         "keeps its shape)")
    over = oversubscription(fab)
    if core and over > 1 and fab["marking"] != "step":
        # An oversubscribed core holds an all-to-all's standing queue, and
        # its marks are what moves a QP's traffic off a busy uplink (a
        # path's window and weight, PATH-6): the ramp sits as low as the
        # transient of spraying allows, 4 to 8 packets, well before the
        # delay signal (set by the host ports) reacts.  A step already
        # sits at 4 packets or a quarter of the ramp.
        kmin = 4 * pkt
        kmax = min(kmax, CORE_KMAX_PKTS * pkt)
        why = (f"oversubscribed core ({over:g}:1 at the leaves): the queue "
               "that builds here is the fabric's, and marks on a busy "
               "uplink or downlink are what steers each QP's paths off it "
               "(PATH-6), so marking starts at the spraying transient, ")
        rules["kmin"] = why + "4 packets"
        rules["kmax"] = why + (f"up to {CORE_KMAX_PKTS} packets (or the "
                               "port's own Kmax if lower)")
    kmin = max(int(kmin * scale), pkt)
    kmax = max(int(kmax * scale), kmin + pkt)
    pmax = 20
    if fab["marking"] == "step":
        # A switch that marks on one threshold marks every packet above it,
        # written as a RED ramp one packet wide.  In an oversubscribed core
        # its marks steer paths (PATH-6) and it sits at a quarter of Kmin;
        # on a 1:1 fabric no standing queue builds in the core, and a step
        # below Kmin marks the queue that sprayed packets meeting leave,
        # halving windows of paths that are not congested (CC-21), so it
        # sits at Kmin.
        part = 4 if oversubscription(fab) > 1 else 1
        kmin = max(int(kmin / part), 4 * pkt)
        kmax, pmax = kmin + pkt, 100
        rules["kmin"] = ("step marking: " + (
            "a quarter of the ramp's Kmin (one BDP, or the shallow-buffer "
            "cap), at least 4 packets: in an oversubscribed core the marks "
            "steer paths, and a step marks every packet above it, so it "
            "sits low (DCTCP's guideline is BDP/7)" if part == 4 else
            "the ramp's Kmin (one BDP, or the shallow-buffer cap): on a 1:1 "
            "fabric a lower step marks the transient of spraying, every "
            "packet above it"))
        rules["kmax"] = ("step marking: K + one packet at 100%, a step "
                         "written as a RED ramp")
    return _round_up(kmin, 1024), _round_up(kmax, 1024), pmax, rules


def uplink_view(fab):
    """The description as the leaves' uplinks see it when the spines hold
    less per port than the leaves (a mixed fabric): the leaves' marking
    with the spines' buffer; None when the uplinks need no profile of
    their own."""
    lv, sv = role_view(fab, "leaf"), role_view(fab, "spine")
    if sv["buffer_per_port"] >= lv["buffer_per_port"]:
        return None
    v = dict(lv)
    v["buffer_per_port"] = sv["buffer_per_port"]
    return v


def derive(fab, scale=1.0):
    """All settings for `fab` (a checked description), in emit order."""
    out = []
    rtt, how = base_rtt(fab)
    out.append(Setting("fabric", "base_rtt", rtt, "s", how, ["CC-7"]))
    pkt = fab["mtu"] + DATA_OVERHEAD
    speeds = sorted({fab["host_speed"], fab["fabric_speed"]})
    kmin_time = None
    # One profile per port speed; a role whose switches differ (buffer,
    # marking: a mixed-vendor fabric) gets its own, scoped queue@ROLE:SPEED
    # (a spine has only fabric-speed ports).
    over = oversubscription(fab) > 1
    views = [(None, fab, speeds)]
    for role in ("leaf", "spine"):
        if fab[role].keys() & {"buffer_per_port", "marking"} or (
                role == "spine" and over):
            views.append((role, role_view(fab, role),
                          speeds if role == "leaf" else [fab["fabric_speed"]]))
    for role, view, sp in [(r, v, sp) for r, v, sps in views for sp in sps]:
        kmin, kmax, pmax, rules = queue_thresholds(view, sp, rtt, scale,
                                                   core=role == "spine")
        sc = f"queue@{role + ':' if role else ''}{speed_name(sp)}"
        out.append(Setting(sc, "ecn_kmin", kmin, "B", rules["kmin"],
                           ["CC-9", "CC-11", "WIRE-11"]))
        out.append(Setting(sc, "ecn_kmax", kmax, "B", rules["kmax"],
                           ["CC-11", "CC-21"]))
        why = ("20% at Kmax, every packet above it: one CE echo halves the "
               "path's window (CC-21) and the connection averages the "
               "fraction (g = 1/4, CC-11), so marks need not be certain to "
               "be heard") if pmax != 100 else (
               "100%: a step marks every packet above its threshold")
        out.append(Setting(sc, "ecn_pmax", pmax, "%", why,
                           ["CC-11", "CC-21"]))
        if role in (None, "leaf") and sp == fab["host_speed"]:
            # the leaves' host ports; the leaf's own profile, listed after
            # the fabric's, wins
            kmin_time = kmin * 8.0 / sp
    up = uplink_view(fab)
    if up is not None or over:
        # the leaves' uplinks: their own profile (tag SPEED-up) next to
        # shallower spines (the ramp of the spines' buffer) or in an
        # oversubscribed core
        why = "" if up is None else (
            f"the leaves' uplinks feed spines with "
            f"{show(up['buffer_per_port'], 'B')} per port: they get the "
            "ramp derived for that buffer, so the fabric's core marks at "
            "the depth the spines can hold and a path's marks do not "
            "wait on the leaf's deeper queue; ")
        up = up or role_view(fab, "leaf")
        sp = fab["fabric_speed"]
        kmin, kmax, pmax, rules = queue_thresholds(up, sp, rtt, scale,
                                                   core=True)
        sc = f"queue@leaf:{speed_name(sp)}-up"
        out.append(Setting(sc, "ecn_kmin", kmin, "B", why + rules["kmin"],
                           ["CC-9", "CC-11", "WIRE-11"]))
        out.append(Setting(sc, "ecn_kmax", kmax, "B", why + rules["kmax"],
                           ["CC-11", "CC-21"]))
        out.append(Setting(sc, "ecn_pmax", pmax, "%",
                           "as the leaves' other ramps (20% at Kmax)"
                           if pmax != 100 else "100%: a step",
                           ["CC-11", "CC-21"]))
    limit = fab["buffer_per_port"]
    for role, view, _ in views:
        out.append(Setting(f"switch@{role}" if role else "switch",
                           "lossy_queue_limit", view["buffer_per_port"], "B",
                           "the whole per-port buffer for the MetaRoCE queue, "
                           "no headroom reserved (no PFC): above Kmax every "
                           "packet is marked, so the space above it only "
                           "absorbs bursts until senders hear the marks",
                           ["CC-12"]))
    out.append(Setting("switch", "ecn_mode", "mark", "",
                       "ECN marking, not WRED dropping, on the MetaRoCE "
                       "queue: every MetaRoCE packet is ECT(0)", ["WIRE-11"]))
    out.append(Setting("switch", "dscp", fab["dscp"], "",
                       "the DSCP the endpoints send: data, ACKs and NAKs "
                       "all carry it", ["WIRE-12"]))
    out.append(Setting("switch", "queue", fab["queue"], "",
                       f"DSCP {fab['dscp']} -> traffic class and queue "
                       f"{fab['queue']}, a lossy queue of its own; ACKs share "
                       "it, so their delay is the data's (the RTT sample)",
                       ["WIRE-12", "CC-9"]))
    out.append(Setting("switch", "pfc", False, "",
                       f"PFC off on priority {fab['queue']}: MetaRoCE resends "
                       "only what was lost and reads loss as one marked "
                       "packet, so pauses (head-of-line blocking, deadlock) "
                       "buy nothing", ["CC-12", "PATH-9"]))
    out.append(Setting("switch", "ecmp_hash",
                       "src-ip,dst-ip,ip-proto,src-port,dst-port", "",
                       "ECMP on the UDP 5-tuple: the UDP source port is the "
                       "path entropy, so each of a QP's paths hashes on its "
                       "own; a different hash seed per switch keeps the tiers "
                       "from polarising", ["WIRE-10", "PATH-1"]))
    for role in ("leaf", "spine"):
        if fab[role].get("hash") == "l3":
            out.append(Setting(f"switch@{role}", "ecmp_hash",
                               "src-ip,dst-ip,ip-proto,src-port,dst-port", "",
                               f"the {role}s hash on addresses only (as "
                               "described): every path of a QP would take "
                               "one uplink, so spraying and path steering "
                               "do nothing; their hash policy must add the "
                               "L4 ports, as emitted", ["WIRE-10", "PATH-1"]))
    # End hosts.
    tq = max(1e-6, round(kmin_time / 2 * 2e6) / 2e6)
    out.append(Setting("host", "target_qdelay", tq, "s",
                       "half of Kmin's queueing time at the leaves' host "
                       "ports, the queue every path ends in (incast builds "
                       "there): a path's window halves once its RTT passes "
                       "base_rtt + 2 x target_qdelay (CC-21), which is where "
                       "that port starts marking, so delay and ECN see "
                       "congestion at the same queue", ["CC-9", "CC-21"]))
    bdp_host = fab["host_speed"] * rtt / 8.0
    burst_room = max(4 * (fab["mtu"] + 80), limit / (2 * fab["incast"]))
    icw = min(bdp_host, burst_room)
    icw = _round_up(icw, fab["mtu"] + 80)
    icw = min(icw, fab["window"] * (fab["mtu"] + 76))
    out.append(Setting("host", "init_cwnd", icw, "B",
                       f"one BDP of the host link ({bdp_host / 1024:.0f} KiB), "
                       f"but at most buffer / (2 x incast ({fab['incast']})): "
                       "the first round trip of an incast, sent before any "
                       "rate hint, fits in half the receiver's leaf queue, "
                       "the other half being what marking lets build",
                       ["CC-4", "CC-8", "CC-29"]))
    if fab["npaths"]:
        npaths = fab["npaths"]
        why = "as in use (the description's npaths)"
    else:
        want = 4 * fab["spines"] * fab["planes"]
        npaths = min(256, max(16, 1 << (want - 1).bit_length()))
        why = (f"4 entropies per uplink ({fab['spines']} spines x "
               f"{fab['planes']} planes), power of two, 16..256: hashed at "
               "random, fewer leave some uplinks with a share well off even")
    out.append(Setting("host", "npaths", npaths, "", why,
                       ["PATH-1", "CC-22"]))
    out.append(Setting("host", "entropy_range", "49152-65535", "",
                       "the UDP source ports the paths use: keep them out "
                       "of any ACL or port-based policer", ["PATH-1",
                                                            "WIRE-10"]))
    rx = int(fab["host_speed"] * fab["planes"] / 1e6)
    out.append(Setting("host", "rx_rate_mbps", rx, "Mbit/s",
                       f"the host's receive capacity ({fab['planes']} x "
                       f"{speed_name(fab['host_speed'])}): the rate-hint "
                       "budget shared among senders, 95% of it once two or "
                       "more send (MROCE_RX_RATE)", ["CC-25", "CC-26"]))
    out.append(Setting("host", "mtu", fab["mtu"], "",
                       f"payload MTU; switch ports need >= {pkt} bytes "
                       "(MTU + headers), 9216 is the usual jumbo setting",
                       ["CC-4"]))
    return out


def by_name(settings):
    """{(scope, name): Setting} for lookups."""
    return {(s.scope, s.name): s for s in settings}


def queue_profiles(settings, role=None):
    """[(speed_tag, kmin, kmax, pmax)] in speed order: the fabric's
    profiles, replaced by the role's own where it has one."""
    d, own = {}, {}
    for s in settings:
        if not s.scope.startswith("queue@"):
            continue
        r, _, tag = s.scope[6:].rpartition(":")
        if not r:
            d.setdefault(tag, {})[s.name] = s.value
        elif r == role:
            own.setdefault(tag, {})[s.name] = s.value
    d.update(own)
    return [(k, v["ecn_kmin"], v["ecn_kmax"], v["ecn_pmax"])
            for k, v in d.items()]


def explain(fab, settings):
    """The text report: one block per setting, value then rule and IDs."""
    mixed = [f"{r}: " + ", ".join(f"{k} {v}" for k, v in fab[r].items())
             for r in ("leaf", "spine") if fab[r]]
    lines = [f"mroce-tune: {fab['name']}: {fab['hosts']} hosts, "
             f"{fab['hosts'] // fab['hosts_per_leaf']} leaves x "
             f"{fab['spines']} spines x {fab['planes']} plane(s), hosts "
             f"{speed_name(fab['host_speed'])}, fabric "
             f"{speed_name(fab['fabric_speed'])}, buffer "
             f"{show(fab['buffer_per_port'], 'B')} per port, "
             f"{fab['marking']} marking"
             + (" (" + "; ".join(mixed) + ")" if mixed else "")]
    for s in settings:
        lines.append(f"{s.scope + ' ' + s.name:<28} {s.shown():<16} "
                     f"[{', '.join(s.ids)}]")
        lines.append(f"{'':<4}{s.rule}")
    return "\n".join(lines) + "\n"
