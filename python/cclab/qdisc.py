"""Queue disciplines of the bottleneck: names, parameters, defaults and their IR form.

The scenario names a discipline under ``[link]``::

    qdisc = "fq_codel"                                  # the defaults
    qdisc = { name = "codel", target = "5ms", ecn = true }

This module is the catalogue both :mod:`cclab.scenario` (each parameter on
its own) and :mod:`cclab.resolve` (defaults, parameters that depend on the
link) use; the engines' side is ``crates/cclab-netmodel/src/qdisc/``, the
user's guide ``docs/queues.md``. Defaults are Linux's (``tc`` and the qdisc's
init function) or the RFC's, each cited below. The scenario's buffer is every
discipline's hard limit.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from . import units
from .errors import ScenarioError, show_value

__all__ = ["NAMES", "PARAMS", "Param", "allowed_names", "check_name", "check_param", "default_params", "qdisc_ir",
           "red_wlog"]

#: The disciplines, in the order the docs list them.
NAMES = ("droptail", "drop_front", "random_drop", "red", "codel", "fq_codel", "pie", "step")


@dataclass(frozen=True)
class Param:
    """One parameter: its kind decides the accepted values (and the error text)."""

    name: str
    kind: str  # duration | size | threshold (size or packets) | rate | bool | int | number | probability
    default: Any = None  # as a user would write it; None: derived (see qdisc_ir)
    low: float | None = None
    high: float | None = None


_CODEL = (
    Param("target", "duration", "5ms"),  # RFC 8289 §4.3; codel_params_init
    Param("interval", "duration", "100ms"),  # RFC 8289 §4.2
)

#: Parameters per discipline (docs/queues.md has their meaning and sources).
PARAMS: dict[str, tuple[Param, ...]] = {
    "droptail": (),
    "drop_front": (),
    "random_drop": (),
    # tc q_red.c: max = limit/4 (min·3 if only min is given), min = max/3,
    # probability 0.02, burst = (2·min + max)/(3·avpkt), avpkt 1000 B
    # (required by tc; its usual value); bandwidth: the link's rate.
    "red": (
        Param("min_th", "size"),
        Param("max_th", "size"),
        Param("max_p", "probability", 0.02),
        Param("burst", "int", None, 1, 2**31),
        Param("avpkt", "size", "1000B"),
        Param("bandwidth", "rate"),
        Param("gentle", "bool", False),
        Param("ecn", "bool", False),
        Param("harddrop", "bool", False),
    ),
    "codel": (*_CODEL, Param("ecn", "bool", False)),  # sch_codel.c: noecn by default
    # sch_fq_codel.c fq_codel_init; RFC 8290 §5.2; tc-fq_codel(8)
    "fq_codel": (
        *_CODEL,
        Param("ecn", "bool", True),
        Param("quantum", "size", "1514B", 256, 2**31),
        Param("flows", "int", 1024, 1, 65536),
        Param("memory_limit", "size", "32MiB", None, 2**31),  # at least a packet: checked in qdisc_ir
        Param("drop_batch", "int", 64, 1, 2**16),
    ),
    # include/net/pie.h pie_params_init / pie_vars_init; RFC 8033 §4.2, §4.4
    "pie": (
        Param("target", "duration", "15ms"),
        Param("tupdate", "duration", "15ms"),
        Param("alpha", "number", 0.125, 0, 2),  # Linux: 0..32 in 1/16 Hz
        Param("beta", "number", 1.25, 0, 2),
        Param("max_burst", "duration", "150ms"),
        Param("ecn", "bool", False),
        Param("bytemode", "bool", False),
    ),
    # RFC 8257 §3.1 (DCTCP's marking threshold K; no default: the paper's
    # guidance K > C·RTT/7 depends on the path), ecn on: it is a marker.
    "step": (
        Param("k", "threshold"),
        Param("ecn", "bool", True),
    ),
}


def allowed_names() -> str:
    return f"allowed: {', '.join(NAMES)}"


def check_name(value: Any) -> str:
    """The discipline's name, or a ScenarioError (field "") listing the allowed ones."""
    if not isinstance(value, str) or value not in NAMES:
        raise ScenarioError("", value, f"{show_value(value)} is not a queue discipline", allowed_names())
    return value


def _allowed(p: Param) -> str:
    if p.kind == "duration":
        return 'expected a positive duration (e.g. "5ms")'
    if p.kind == "size":
        lo, hi = p.low, p.high
        span = (f" from {int(lo)} to {int(hi)} bytes" if lo is not None and hi is not None
                else f" of at least {int(lo)} bytes" if lo is not None
                else f" of at most {int(hi)} bytes" if hi is not None else "")  # fmt: skip
        return f'expected a size{span} (e.g. "1514B", "32MiB")'
    if p.kind == "threshold":
        return 'expected a size or a packet count, not a BDP multiple (e.g. "30KB", "20pkts")'
    if p.kind == "rate":
        return 'expected a rate (e.g. "100Mbps")'
    if p.kind == "bool":
        return "expected true or false"
    if p.kind == "int":
        return f"expected an integer from {int(p.low or 0)} to {int(p.high or 0)}"
    if p.kind == "probability":
        return "expected a probability in (0, 1] (e.g. 0.02)"
    return f"expected a number from {p.low:g} to {p.high:g}"


def check_param(name: str, key: str, value: Any) -> Any:
    """Check one parameter of discipline ``name``; raises a ScenarioError with field ``key``.

    Returns the value, durations, sizes, thresholds and rates parsed into their
    :mod:`cclab.units` typed strings (which :func:`qdisc_ir` reads without parsing again).
    """
    params = {p.name: p for p in PARAMS[name]}
    if key not in params:
        listing = f"allowed: {', '.join(params)}" if params else f"{name} takes no parameters"
        raise ScenarioError(key, value, f"unknown parameter of {name!r}", listing)
    p = params[key]
    allowed = _allowed(p)
    if p.kind == "duration":
        value = units.Duration.parse(value, key, allow_zero=False)
    elif p.kind == "size":
        value = units.Size.parse(value, key)
        if (p.low is not None and value.bytes < p.low) or (p.high is not None and value.bytes > p.high):
            raise ScenarioError(key, value, f"{show_value(value)} is out of range", allowed)
    elif p.kind == "threshold":
        try:
            value = units.Buffer.parse(value, key)
        except ScenarioError as e:  # its "allowed" offers BDP multiples, which a threshold is not
            raise ScenarioError(key, value, e.problem, allowed) from None
        if value.spec.kind == "bdp":
            raise ScenarioError(key, value, f"{show_value(value)} is a BDP multiple", allowed)
    elif p.kind == "rate":
        value = units.Rate.parse(value, key)
    elif p.kind == "bool":
        if not isinstance(value, bool):
            raise ScenarioError(key, value, f"{show_value(value)} is not true or false", allowed)
    elif p.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(key, value, f"{show_value(value)} is not an integer", allowed)
        if not p.low <= value <= p.high:  # type: ignore[operator]
            raise ScenarioError(key, value, f"{value} is out of range", allowed)
    else:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ScenarioError(key, value, f"{show_value(value)} is not a number", allowed)
        if p.kind == "probability":
            if not 0 < value <= 1:
                raise ScenarioError(key, value, f"{value} is out of range", allowed)
        elif not p.low <= value <= p.high:  # type: ignore[operator]
            raise ScenarioError(key, value, f"{value} is out of range", allowed)
    return value


@functools.cache
def _typed_defaults(name: str) -> dict[str, Any]:
    """The defaults of discipline ``name``, parsed once per process (None: derived from the link)."""
    return {p.name: None if p.default is None else check_param(name, p.name, p.default) for p in PARAMS[name]}


def red_wlog(min_th: int, burst: int, avpkt: int) -> int | None:
    """tc's ``tc_red_eval_ewma``: the smallest Wlog (w = 2^−Wlog) such that a
    burst of ``burst`` packets does not push the average above min_th,
    ``burst + 1 − min_th/avpkt ≤ (1 − (1 − W)^burst)/W``; None if none below 32."""
    a = burst + 1 - min_th / avpkt
    if a < 1.0:
        return None
    w = 0.5
    for wlog in range(1, 32):
        if a <= (1 - (1 - w) ** burst) / w:
            return wlog
        w /= 2
    return None


def qdisc_ir(name: str, params: dict[str, Any], *, field: str, packet_bytes: int, limit_bytes: int,
             link_rate_bps: int) -> dict[str, Any]:  # fmt: skip
    """The IR's ``link.qdisc``: every parameter explicit, in ns / bytes / bit/s.

    ``packet_bytes``: the link's largest packet (mss + headers), CoDel's
    MAXPACKET and PIE's MTU (Linux: the device's ``psched_mtu``);
    ``limit_bytes``: the buffer in bytes (RED's default thresholds);
    ``link_rate_bps``: the rate at 0 s (RED's idle decay).
    """
    given = {}
    for key, value in params.items():
        try:
            given[key] = check_param(name, key, value)  # typed values (a validated scenario's) pass as they are
        except ScenarioError as exc:
            raise exc.within(field) from None
    defaults = _typed_defaults(name)
    values = {p.name: given.get(p.name, defaults[p.name]) for p in PARAMS[name]}

    def ns(key: str) -> int:
        return units.Duration.parse(values[key], f"{field}.{key}", allow_zero=False).ns

    def size(key: str) -> int:
        return units.Size.parse(values[key], f"{field}.{key}").bytes

    if name in ("droptail", "drop_front", "random_drop"):
        return {"kind": name}
    if name == "step":
        if values["k"] is None:
            raise ScenarioError(f"{field}.k", None, "the step marker needs its threshold k",
                                'expected k = a size or a packet count (e.g. "30KB", "20pkts"; RFC 8257: K > C·RTT/7)')
        spec = units.Buffer.parse(values["k"], f"{field}.k").spec
        return {"kind": "step", "k_bytes": int(spec.amount) if spec.kind == "bytes" else None,
                "k_packets": int(spec.amount) if spec.kind == "packets" else None, "ecn": bool(values["ecn"])}
    if name == "codel":
        return {"kind": "codel", "target_ns": ns("target"), "interval_ns": ns("interval"), "mtu_bytes": packet_bytes,
                "ecn": bool(values["ecn"])}  # fmt: skip
    if name == "fq_codel":
        memory_limit = size("memory_limit")
        if memory_limit < packet_bytes:  # as buffer and policer.burst (cclab.resolve): not one packet would fit
            from .scenario import HEADER_BYTES

            raise ScenarioError(f"{field}.memory_limit", values["memory_limit"],
                                f"{values['memory_limit']!r} is less than one packet ({memory_limit} bytes): "
                                "fq_codel would drop every packet",
                                f"expected at least one full packet: mss + {HEADER_BYTES} = {packet_bytes} bytes")
        return {
            "kind": "fq_codel", "target_ns": ns("target"), "interval_ns": ns("interval"), "mtu_bytes": packet_bytes,
            "ecn": bool(values["ecn"]), "quantum_bytes": size("quantum"), "flows": int(values["flows"]),
            "memory_limit_bytes": memory_limit, "drop_batch": int(values["drop_batch"]),
        }  # fmt: skip
    if name == "pie":
        return {
            "kind": "pie", "target_ns": ns("target"), "tupdate_ns": ns("tupdate"), "alpha": float(values["alpha"]),
            "beta": float(values["beta"]), "max_burst_ns": ns("max_burst"), "mtu_bytes": packet_bytes,
            "ecn": bool(values["ecn"]), "bytemode": bool(values["bytemode"]),
        }  # fmt: skip
    # RED, with tc's defaults (q_red.c red_parse_opt)
    min_th = None if values["min_th"] is None else size("min_th")
    max_th = None if values["max_th"] is None else size("max_th")
    if max_th is None:
        max_th = min_th * 3 if min_th is not None else limit_bytes // 4
    if min_th is None:
        min_th = max_th // 3
    if min_th >= max_th:
        shown = values["min_th"] if values["min_th"] is not None else f"{min_th}B"
        raise ScenarioError(f"{field}.min_th", shown, f"min_th ({min_th} bytes) is not below max_th ({max_th} bytes)",
                            "expected min_th < max_th (defaults: max_th = buffer/4, min_th = max_th/3)")  # fmt: skip
    avpkt = size("avpkt")
    burst = values["burst"] if values["burst"] is not None else (2 * min_th + max_th) // (3 * avpkt)
    wlog = red_wlog(min_th, burst, avpkt)
    if wlog is None:
        need = math.ceil(min_th / avpkt)
        if values["burst"] is None and values["min_th"] is None and values["max_th"] is None and "avpkt" in given:
            # the thresholds are the buffer's defaults, the average packet the user's: burst comes out too small
            top = min(avpkt, min_th)  # at avpkt = min_th the default burst is 1 packet, which fits
            fits = next((a for a in range(top, max(0, top - 100_000), -1)
                         if red_wlog(min_th, (2 * min_th + max_th) // (3 * a), a) is not None), None)  # fmt: skip
            example = f"here e.g. {fits}B, the largest below {avpkt}B that works, or " if fits else ""
            raise ScenarioError(f"{field}.avpkt", values["avpkt"],
                                f"an average packet of {avpkt} bytes makes the default burst ((2·min_th + max_th)"
                                f"/(3·avpkt) = {burst} packets) too small for min_th = {min_th} bytes (max_th = "
                                f"buffer/4 = {max_th}; tc_red_eval_ewma)",
                                f"expected a smaller avpkt (the packets' average size: {example}tc's usual 1000B), "
                                f"or min_th, max_th and burst set in the qdisc table")  # fmt: skip
        if values["burst"] is None and values["min_th"] is None and values["max_th"] is None:
            # nothing of this was written by the user: the buffer is what is too small
            link = field.rsplit(".", 1)[0]
            raise ScenarioError(f"{link}.buffer", f"{limit_bytes}B",
                                f"a buffer of {limit_bytes} bytes is too small for RED's default thresholds "
                                f"(max_th = buffer/4 = {max_th}, min_th = max_th/3 = {min_th} bytes) and burst "
                                f"((2·min_th + max_th)/(3·avpkt) = {burst} packets; tc_red_eval_ewma)",
                                "expected a larger buffer, or min_th, max_th and burst set in the qdisc table")
        raise ScenarioError(f"{field}.burst", burst, f"a burst of {burst} packets is too small for min_th = {min_th} "
                            f"bytes (tc_red_eval_ewma)", f"expected burst ≥ {need} (min_th / avpkt)")  # fmt: skip
    bandwidth = link_rate_bps if values["bandwidth"] is None else units.Rate.parse(values["bandwidth"], f"{field}.bandwidth").bps
    return {
        "kind": "red", "min_th_bytes": min_th, "max_th_bytes": max_th, "max_p": float(values["max_p"]),
        "weight": float(Fraction(1, 2**wlog)), "avpkt_bytes": avpkt, "bandwidth_bps": int(bandwidth),
        "gentle": bool(values["gentle"]), "ecn": bool(values["ecn"]), "harddrop": bool(values["harddrop"]),
    }  # fmt: skip


def default_params(name: str) -> dict[str, Any]:
    """The user-facing defaults of a discipline (None: derived from the link)."""
    return {p.name: p.default for p in PARAMS[name]}

