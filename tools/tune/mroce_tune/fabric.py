"""Fabric description: the JSON file mroce-tune reads, parsed and checked.

A description names the fabric's shape (a two-tier leaf-spine, optionally
several parallel planes), its link speeds and cable lengths, the switches'
buffers, the hosts' own share of the round-trip time, the QP settings in
use and the traffic to check against.  Sizes are bytes with binary
suffixes (64K, 1M), speeds bit/s with decimal ones (100G), times take
ns/us/ms.  tools/tune/README.md documents every key; a bad or unknown key
is an error naming it, never silently ignored.
"""

import json
import re

# key -> (kind, default, meaning); None as a default means "required".
KEYS = {
    "name": ("str", "fabric", "label used in outputs"),
    "topology": ("str", "leafspine", "only leafspine (two tiers)"),
    "hosts": ("int", None, "hosts (NICs per plane)"),
    "hosts_per_leaf": ("int", None, "hosts under one leaf"),
    "spines": ("int", None, "spines per plane (= uplinks per leaf)"),
    "planes": ("int", 1, "parallel fabrics, one NIC port per host each"),
    "host_speed": ("rate", None, "host-leaf link speed"),
    "fabric_speed": ("rate", None, "leaf-spine link speed"),
    "host_cable_m": ("float", 3.0, "host-leaf cable length, metres"),
    "fabric_cable_m": ("float", 100.0, "leaf-spine cable length, metres"),
    "link_delay": ("time", None, "propagation per link; overrides cables"),
    "buffer_per_port": ("size", None, "buffer one egress queue may take"),
    "buffer_shared": ("size", 0, "switch shared buffer (0: not modelled)"),
    "host_delay": ("time", 0, "NIC + stack time in one RTT"),
    "rtt": ("time", 0, "measured base RTT; 0 = compute it"),
    "mtu": ("int", 4096, "MetaRoCE payload MTU"),
    "dscp": ("int", 26, "DSCP the endpoints send (WIRE-12)"),
    "queue": ("int", 3, "switch queue / traffic class for MetaRoCE"),
    "incast": ("int", 8, "largest fan-in expected at one receiver"),
    "npaths": ("int", 0, "QP npaths in use; 0 = derive"),
    "path_burst": ("int", 1, "QP path_burst in use"),
    "window": ("int", 256, "QP window (packets)"),
    "marking": ("str", "red", "ECN marking the switches do: red or step"),
    "leaf": ("dict", {}, "leaf overrides: buffer_per_port, marking, os, "
             "hash"),
    "spine": ("dict", {}, "spine overrides: buffer_per_port, marking, os, "
              "hash"),
    "workload": ("list", [], "mroce-sim workloads for --verify"),
    "seed": ("int", 1, "simulator seed for --verify"),
    "sim": ("dict", {}, "extra mroce-sim keys for --verify"),
}

_SIZE = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_RATE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_TIME = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


class FabricError(ValueError):
    """A description that cannot be used; the message names the key."""


def _num(key, v, table, unit_re):
    if isinstance(v, bool):
        raise FabricError(f"{key}: expected a number, got {v!r}")
    if isinstance(v, (int, float)):
        return float(v)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(" + unit_re + r")\s*", str(v))
    if not m:
        raise FabricError(f"{key}: cannot read {v!r}")
    return float(m.group(1)) * table[m.group(2)]


def parse_size(key, v):
    """Bytes from 1M / 64K / 4096 (binary suffixes, as mroce-sim)."""
    return int(_num(key, v, _SIZE, r"[KMGB]?") + 0.5)


def parse_rate(key, v):
    """bit/s from 100G / 400G / 500M (decimal suffixes)."""
    r = _num(key, v, _RATE, r"[KMGT]?")
    if r < 1000:
        raise FabricError(f"{key}: rate {v!r} below 1 kbit/s")
    return r


def parse_time(key, v):
    """Seconds from 1us / 500ns / 2ms; a bare number is ns (as mroce-sim)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v) * 1e-9
    return _num(key, v, _TIME, r"ps|ns|us|ms|s")


def load(path):
    """Read and check a description file; returns a dict of typed values."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except json.JSONDecodeError as e:
        raise FabricError(f"{path}: not JSON: {e}") from None
    return check(raw)


def check(raw):
    """Type every key of a parsed description and check it is coherent."""
    if not isinstance(raw, dict):
        raise FabricError("the description must be one JSON object")
    out = {}
    for k in raw:
        if k not in KEYS and not k.startswith("_"):
            raise FabricError(f"unknown key '{k}'")
    for k, (kind, default, _) in KEYS.items():
        if k not in raw:
            if default is None and not (k == "link_delay"):
                raise FabricError(f"missing key '{k}'")
            out[k] = default
            continue
        v = raw[k]
        if kind == "str":
            if not isinstance(v, str):
                raise FabricError(f"{k}: expected a string")
            out[k] = v
        elif kind == "int":
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise FabricError(f"{k}: expected a non-negative integer")
            out[k] = v
        elif kind == "float":
            out[k] = _num(k, v, {"": 1}, r"")
        elif kind == "rate":
            out[k] = parse_rate(k, v)
        elif kind == "size":
            out[k] = parse_size(k, v)
        elif kind == "time":
            out[k] = parse_time(k, v)
        elif kind == "list":
            out[k] = v if isinstance(v, list) else [v]
        elif kind == "dict":
            if not isinstance(v, dict):
                raise FabricError(f"{k}: expected an object")
            out[k] = v
    if out["topology"] != "leafspine":
        raise FabricError("topology: only 'leafspine' is supported")
    for k in ("hosts", "hosts_per_leaf", "spines", "planes", "mtu"):
        if out[k] < 1:
            raise FabricError(f"{k}: must be at least 1")
    if out["hosts"] % out["hosts_per_leaf"]:
        raise FabricError("hosts must be a multiple of hosts_per_leaf")
    if not 256 <= out["mtu"] <= 9000:
        raise FabricError("mtu: 256..9000")
    if out["dscp"] > 63:
        raise FabricError("dscp: 0..63")
    if out["queue"] > 7:
        raise FabricError("queue: 0..7")
    if out["npaths"] > 256:
        raise FabricError("npaths: 0..256 (PATH-1)")
    if out["planes"] > 8:
        raise FabricError("planes: 1..8")
    if out["incast"] < 1:
        out["incast"] = 1
    for role in ("leaf", "spine"):
        ov = out[role]
        for k in ov:
            if k not in ("buffer_per_port", "marking", "os", "hash"):
                raise FabricError(f"{role}.{k}: only buffer_per_port, "
                                  "marking, os and hash differ per role")
        if ov.get("hash", "5tuple") not in HASHES:
            raise FabricError(f"{role}.hash: one of {', '.join(HASHES)}")
        if "buffer_per_port" in ov:
            ov["buffer_per_port"] = parse_size(f"{role}.buffer_per_port",
                                               ov["buffer_per_port"])
        if ov.get("os", "sonic") not in ("sonic", "nvue", "eos"):
            raise FabricError(f"{role}.os: sonic, nvue or eos")
    for m in [out["marking"]] + [out[r].get("marking", "red")
                                 for r in ("leaf", "spine")]:
        if m not in ("red", "step"):
            raise FabricError(f"marking: 'red' or 'step', not {m!r}")
    for b in [out["buffer_per_port"]] + [out[r].get("buffer_per_port",
                                                     out["buffer_per_port"])
                                         for r in ("leaf", "spine")]:
        if b < 4 * (out["mtu"] + 110):
            raise FabricError("buffer_per_port: less than four packets")
    return out


# The ECMP hash a role's switches use (the simulator's `switch ... hash=`):
# the 5-tuple (what MetaRoCE needs), addresses only (a hash policy without
# the L4 ports), or another function of the 5-tuple (another ASIC's).
HASHES = ("5tuple", "l3", "xor")


def role_view(fab, role):
    """The description as one role's switches see it (its overrides)."""
    v = dict(fab)
    for k in ("buffer_per_port", "marking"):
        if k in fab[role]:
            v[k] = fab[role][k]
    return v
