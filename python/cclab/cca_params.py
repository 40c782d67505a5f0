"""Every algorithm and every parameter a scenario may set, with its allowed range: one registry.

The algorithm names and their parameters are :data:`PARAMS` — the one list
that validation (:func:`check_algorithm`, :func:`check_params`), the docs and
``cclab algorithms`` read; ``tests/test_cca_params.py`` checks that it names
exactly the engine's algorithms and parameters (``cclab._native.algorithms()``),
in the engine's order.

``cca = { name = "cubic", beta = 0.75 }`` is checked here when the scenario is
built, so an out-of-range value is a one-line error naming the field, the
value and the range — never an engine error after the run has started.

The ranges are the simulator engine's own checks (``crates/cclab-sim/src/cc``:
``from_params`` of each algorithm), tightened where the engine would silently
round or clamp a value (a gain below its 1/256 quantum, ``full_loss_cnt``
above 15) and bounded where a larger value could only overflow the engine's
integer counters (counts at most 10⁶, times at most one day).

The engine keeps many parameters in Linux's fixed-point units and rounds a
value to the nearest unit: BBR's gains and fractions in 1/256 (``BBR_UNIT``;
bbr/config.rs ``gain_param``, bbr3/config.rs ``fraction``, bbr/lt_bw.rs,
bbr/variants.rs), CUBIC's β and C in 1/1024 (cc/cubic.rs), BBRv3's
``probe_bw_up_cwnd_gain_extra`` in quarters, windows in seconds in whole ns.
Such a parameter has a ``step``, and a value that is not a whole number of
steps is refused with the two nearest allowed values (``cubic beta = 0.8``:
"0.8 is not a multiple of 1/1024 …, nearest: 0.7998046875 (819/1024) or
0.80078125 (820/1024)") — never rounded behind the user's back. ``tests/test_cca_params.py``
runs the engine at every range's ends and checks that it accepts them, and
that the registry names exactly the engine's parameters.

Three rules relate parameters (also the engine's): Vegas ``alpha ≤ beta``;
the BBRv1 family's ``fb_gain_min ≤ fb_gain_max`` (``fb_gain_max`` defaults to
``cwnd_gain``); BBRv2/v3's ``probe_rtt_interval_ms ≤ 1000 × min_rtt_win_s``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import ScenarioError, show_value

__all__ = ["DEFAULTS", "PARAMS", "SOURCES", "Param", "algorithm_names", "check_algorithm", "check_params",
           "describe", "format_default"]

#: Largest integer count (rounds, packets, samples) a parameter takes.
MAX_COUNT = 10**6
#: Largest time a parameter takes: one day.
DAY_S = 86_400
DAY_MS = DAY_S * 1000


@dataclass(frozen=True)
class Param:
    """One parameter: a number in [lo, hi] (ends open when ``lo_open``/``hi_open``), an integer
    when ``integer``, a whole multiple of ``step`` when given, or a switch (true/false, 1/0).
    ``step`` is the unit the engine keeps the value in (1/256 for BBR's gains, 1/1024 for
    CUBIC's β, 10⁻⁹ for seconds kept in ns): a value between two multiples would be
    rounded by the engine, so it is refused; ``unit`` says why (the Linux field), for
    the error. ``doc`` says what it is, ``source`` where its default comes from (the knob
    in the Linux file or paper of the algorithm, :data:`SOURCES`)."""

    lo: float = 0.0
    hi: float = 0.0
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False
    switch: bool = False
    step: float | None = None
    unit: str = ""
    doc: str = ""
    source: str = ""

    @property
    def per(self) -> int:
        """Units per 1 (``step`` = 1/``per``): 256, 1024, 4, 10⁹."""
        assert self.step is not None
        return round(1 / self.step)

    @property
    def allowed(self) -> str:
        if self.switch:
            return "expected true or false (or 1 or 0)"
        if self.integer:
            return f"expected an integer from {_num(self.lo)} to {_num(self.hi)}"
        left, right = "(" if self.lo_open else "[", ")" if self.hi_open else "]"
        if self.step is not None:
            ks = self.multiples()
            if len(ks) <= 8:
                return f"expected one of {', '.join(_num(k / self.per) for k in ks)}"
            return f"expected a multiple of {_step(self.per)} in {left}{_num(self.lo)}, {_num(self.hi)}{right}"
        return f"expected a number in {left}{_num(self.lo)}, {_num(self.hi)}{right}"

    def multiples(self) -> range:
        """The whole numbers of units ``k`` whose value ``k / per`` is allowed (a ``step`` is given)."""
        per = self.per

        def units(x: float, up: bool) -> int:
            k = round(x * per)
            if k / per == x:  # an end that is itself a whole number of units (0.001 s = 10⁶ ns)
                return k
            return math.ceil(x * per) if up else math.floor(x * per)

        first, last = units(self.lo, True), units(self.hi, False)
        if self.lo_open and first / per == self.lo:
            first += 1
        if self.hi_open and last / per == self.hi:
            last -= 1
        return range(first, last + 1)

    def in_range(self, value: float) -> bool:
        """``value`` within [lo, hi] (ends open as given); integers and steps aside."""
        if not math.isfinite(value):
            return False
        if value < self.lo or (self.lo_open and value == self.lo):
            return False
        return not (value > self.hi or (self.hi_open and value == self.hi))

    def on_step(self, value: float) -> bool:
        """``value`` is a whole number of units (always true without a ``step``).

        Exactly: ``value`` is the float nearest to ``k / per`` for a whole ``k`` (Python's
        int/int division is correctly rounded). For the power-of-two units (256, 1024, 4)
        that is ``value · per`` being an integer, exactly — 0.75 is 192/256, 0.8 is not a
        multiple of 1/256; for ns (10⁹) it is a value written with at most nine decimals.
        """
        if self.step is None:
            return True
        return math.isfinite(value) and round(value * self.per) / self.per == value

    def contains(self, value: float) -> bool:
        if self.switch:
            return value in (0.0, 1.0)
        if not self.in_range(value):
            return False
        if self.integer and value != int(value):
            return False
        return self.on_step(value)

    def off_step(self, value: float, where: str, shown: str) -> ScenarioError:
        """The error for an in-range ``value`` that is not a whole number of units, with the
        nearest allowed values (both sides, those in range)."""
        per = self.per
        k = value * per
        near = [n for n in sorted({math.floor(k), math.ceil(k)}) if self.in_range(n / per)]
        why = f" ({self.unit})" if self.unit else ""
        return ScenarioError(where, value, f"{shown} is not a multiple of {_step(per)}{why}",
                             f"{self.allowed}, nearest: {' or '.join(_unit_value(n, per) for n in near)}")


def _num(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    if x == int(x):
        return f"{int(x):,}".replace(",", " ") if abs(x) >= 10**4 else str(int(x))
    if x == 1 / 256:
        return "1/256"
    if x == 1 / 1024:
        return "1/1024"
    if x == 1023 / 1024:
        return "1023/1024"
    return f"{x:g}"


def _step(per: int) -> str:
    return "1 ns" if per == 10**9 else f"1/{per}"


def _unit_value(k: int, per: int) -> str:
    """``k`` units as the user would write it, with the fraction: ``0.7998046875 (819/1024)``."""
    if per == 10**9:
        return repr(k / per)
    v = k / per
    return _num(v) if v == int(v) else f"{v!r} ({k}/{per})"


#: Why a BBR gain or fraction is a multiple of 1/256 (the engine rounds ``v × 256``: bbr/config.rs
#: ``gain_param``, bbr3/config.rs ``fraction``, bbr/lt_bw.rs, bbr/variants.rs).
_BBR_UNIT = "Linux keeps it in 1/256 units, BBR_UNIT in tcp_bbr.c"
#: Seconds the engine keeps in whole nanoseconds (``Dur((s * 1e9).round())``).
_NS = "the engine keeps seconds in whole nanoseconds"


def _gain(doc: str, source: str) -> Param:
    # gain_param (bbr/config.rs): 0 < v < 64, used in 1/256 units (BBR_UNIT); below 1/256 it would be clamped.
    return Param(1 / 256, 64, hi_open=True, step=1 / 256, unit=_BBR_UNIT, doc=doc, source=source)


def _fraction(lo: float, hi: float, doc: str, source: str, *, lo_open: bool = False, hi_open: bool = False,
              unit: str = _BBR_UNIT) -> Param:
    """A number in 1/256 units (bbr3/config.rs ``fraction``, the LT and feedback knobs of BBRv1)."""
    return Param(lo, hi, lo_open=lo_open, hi_open=hi_open, step=1 / 256, unit=unit, doc=doc, source=source)


def _seconds(doc: str, source: str) -> Param:
    return Param(0.001, DAY_S, step=1e-9, unit=_NS, doc=doc, source=source)


def _count(lo: int, doc: str, source: str, hi: int = MAX_COUNT) -> Param:
    return Param(lo, hi, integer=True, doc=doc, source=source)


def _switch(doc: str, source: str) -> Param:
    return Param(switch=True, doc=doc, source=source)


def _ms(lo: int, doc: str, source: str) -> Param:
    return Param(lo, DAY_MS, integer=True, doc=doc, source=source)


_THESIS = "WPI 2019 thesis"
#: The cwnd feedback loop's gains (bbr/variants.rs ``CwndFeedbackConfig``: ``round(g × 256)``).
_FB_UNIT = "the engine keeps it in 1/256 units like cwnd_gain, bbr/variants.rs"

RENO: dict[str, Param] = {}

CUBIC = {
    # tcp_cubic.c: beta = 717/1024, used in 1/1024 units; 0 < beta < 1 (cc/cubic.rs).
    "beta": Param(1 / 1024, 1023 / 1024, step=1 / 1024, unit="Linux keeps it in 1/1024 units, BETA_SCALE in tcp_cubic.c",
                  doc="multiplicative decrease factor", source="beta = 717 (/1024)"),
    # C = bic_scale·10/1024 (0.4), used in 1/1024 units; larger values overflow the cubic term.
    "c": Param(1 / 1024, 100, step=1 / 1024,
               unit="the engine keeps it in 1/1024 units, as cube_rtt_scale = bic_scale·10 in tcp_cubic.c",
               doc="cubic scaling constant C", source="bic_scale = 41 (C = bic_scale·10/1024)"),
    "fast_convergence": _switch("fast convergence", "fast_convergence = 1"),
    "tcp_friendliness": _switch("Reno-friendly region", "tcp_friendliness = 1"),
    "hystart": _switch("HyStart (delay- and ACK-train-based slow-start exit)", "hystart = 1"),
}

VEGAS = {
    # cc/vegas.rs: non-negative integers below 10^6, alpha ≤ beta.
    "alpha": _count(0, "lower bound of queued packets", "alpha = 2", 999_999),
    "beta": _count(0, "upper bound of queued packets", "beta = 4", 999_999),
    "gamma": _count(0, "slow-start exit threshold in packets", "gamma = 1", 999_999),
}

BBR1 = {
    "startup_gain": _gain("Startup pacing and cwnd gain", "bbr_high_gain = 2885/1000 + 1/256"),
    "drain_gain": _gain("Drain pacing gain", "bbr_drain_gain = 1000/2885"),
    "cwnd_gain": _gain("ProbeBW cwnd gain (1.5 in bbr_shallow)", f"bbr_cwnd_gain = 2; bbr_shallow: {_THESIS} §5"),
    "probe_bw_up_gain": _gain("ProbeBW probing pacing gain", "bbr_pacing_gain[0] = 5/4"),
    "probe_bw_down_gain": _gain("ProbeBW draining pacing gain", "bbr_pacing_gain[1] = 3/4"),
    "bw_filter_rounds": _count(1, "max-bandwidth filter length in rounds", "bbr_bw_rtts = CYCLE_LEN + 2"),
    "min_rtt_win_s": _seconds("min_rtt filter window (s), also the ProbeRTT interval", "bbr_min_rtt_win_sec = 10"),
    "probe_rtt_mode_ms": _ms(0, "time in ProbeRTT (0 disables ProbeRTT)", "bbr_probe_rtt_mode_ms = 200"),
    "cwnd_min_target": _count(1, "minimum cwnd in packets", "bbr_cwnd_min_target = 4"),
    "full_bw_thresh": _gain("bandwidth growth that counts as growth", "bbr_full_bw_thresh = 5/4"),
    "full_bw_cnt": _count(1, "rounds without growth that end Startup", "bbr_full_bw_cnt = 3"),
    "pacing_margin_percent": _count(0, "pacing below the estimate, %", "bbr_pacing_margin_percent = 1", 99),
    "extra_acked_gain": _fraction(0, 64, "ACK-aggregation provisioning gain (0 off)", "bbr_extra_acked_gain = 1",
                                  hi_open=True),
    "extra_acked_win_rtts": _count(1, "ACK-aggregation filter length in rounds", "bbr_extra_acked_win_rtts = 5"),
    "extra_acked_max_ms": _ms(0, "cap on the ACK-aggregation allowance", "bbr_extra_acked_max_us = 100 ms"),
    "lt_bw": _switch("long-term (policer) bandwidth model", "bbr_lt_bw_sampling (always on in Linux)"),
    "lt_intvl_min_rtts": _count(1, "LT sampling interval in rounds", "bbr_lt_intvl_min_rtts = 4"),
    "lt_loss_thresh": _fraction(0, 1, "LT loss threshold", "bbr_lt_loss_thresh = 50/256", lo_open=True),
    "lt_bw_max_rtts": _count(1, "rounds at the LT rate", "bbr_lt_bw_max_rtts = 48"),
    "sticky_rtprop": _switch("sticky RTprop (on in bbr_sticky_rtprop)", f"{_THESIS} §5.5.2"),
    "sticky_probes": _count(1, "consecutive higher probes that raise RTprop", f"cclab's choice for {_THESIS} §5.5.2"),
    "sticky_jump": Param(1, 1000, lo_open=True, doc="RTprop jump taken at once (× RTprop)",
                         source=f"cclab's choice for {_THESIS} §5.5.2"),
    "cwnd_feedback": _switch("cwnd feedback loop (on in bbr_cwnd_feedback)", f"{_THESIS}, Algorithm 1"),
    "fb_loss_thresh": Param(0, 1, lo_open=True, doc="feedback: loss rate of a lossy round",
                            source=f"{_THESIS}, Algorithm 1"),
    "fb_rate_thresh": Param(0, 1, lo_open=True, doc="feedback: rate of a round that did not fill the pipe",
                            source=f"{_THESIS}, Algorithm 1"),
    "fb_rtt_thresh": Param(1, 100, lo_open=True, doc="feedback: RTT ratio of a queue-building round",
                           source=f"{_THESIS}, Algorithm 1"),
    "fb_gain_min": _fraction(0, 64, "feedback: lowest cwnd gain", f"{_THESIS}, Algorithm 1", lo_open=True,
                             unit=_FB_UNIT),
    "fb_gain_max": _fraction(0, 64, "feedback: highest cwnd gain (default: cwnd_gain)", f"{_THESIS}, Algorithm 1",
                             lo_open=True, unit=_FB_UNIT),
    "fb_decrease": Param(0, 1, lo_open=True, doc="feedback: multiplicative decrease per round",
                         source=f"{_THESIS}, Algorithm 1"),
    "fb_increase": _fraction(0, 64, "feedback: additive increase per round", f"{_THESIS}, Algorithm 1",
                             lo_open=True, unit=_FB_UNIT),
}

_BBR3_COMMON = {
    "startup_gain": _gain("Startup pacing gain", "bbr_startup_pacing_gain"),
    "startup_cwnd_gain": _gain("Startup cwnd gain", "bbr_startup_cwnd_gain"),
    "drain_gain": _gain("Drain pacing gain", "bbr_drain_gain"),
    "cwnd_gain": _gain("cwnd gain", "bbr_cwnd_gain"),
    "probe_bw_up_gain": _gain("PROBE_UP pacing gain", "bbr_pacing_gain[BBR_BW_PROBE_UP]"),
    "probe_bw_down_gain": _gain("PROBE_DOWN pacing gain", "bbr_pacing_gain[BBR_BW_PROBE_DOWN]"),
    "min_rtt_win_s": _seconds("min_rtt filter window (s)", "bbr_min_rtt_win_sec"),
    "probe_rtt_interval_ms": _ms(1, "ProbeRTT interval", "bbr_probe_rtt_win_ms"),
    "probe_rtt_mode_ms": _ms(0, "time in ProbeRTT", "bbr_probe_rtt_mode_ms"),
    "probe_rtt_cwnd_gain": _fraction(0, 64, "cwnd gain in ProbeRTT", "bbr_probe_rtt_cwnd_gain"),
    "cwnd_min_target": _count(1, "minimum cwnd in packets", "bbr_cwnd_min_target"),
    "full_bw_thresh": _gain("bandwidth growth that counts as growth", "bbr_full_bw_thresh"),
    "full_bw_cnt": _count(1, "rounds without growth that end Startup", "bbr_full_bw_cnt"),
    "full_loss_cnt": _count(0, "lossy rounds that end Startup", "bbr_full_loss_cnt", 15),
    "loss_thresh": _fraction(0, 0.99, "loss rate that bounds inflight", "bbr_loss_thresh"),
    "beta": _fraction(0, 1, "multiplicative decrease on loss", "bbr_beta"),
    "inflight_headroom": _fraction(0, 0.99, "headroom below inflight_hi", "bbr_inflight_headroom"),
    "bw_probe_max_rounds": _count(1, "most rounds between bandwidth probes", "bbr_bw_probe_max_rounds", 255),
    "bw_probe_rand_rounds": _count(1, "random rounds added between probes", "bbr_bw_probe_rand_rounds"),
    "bw_probe_base_ms": _ms(0, "base wall time between probes", "bbr_bw_probe_base_us"),
    "bw_probe_rand_ms": _ms(1, "random wall time added between probes", "bbr_bw_probe_rand_us"),
    "extra_acked_gain": _fraction(0, 64, "ACK-aggregation provisioning gain", "bbr_extra_acked_gain"),
    "extra_acked_win_rtts": _count(1, "ACK-aggregation filter length in rounds", "bbr_extra_acked_win_rtts"),
    "pacing_margin_percent": _count(0, "pacing below the estimate, %", "bbr_pacing_margin_percent", 99),
}


def _after(params: dict[str, Param], key: str, extra: dict[str, Param]) -> dict[str, Param]:
    """``params`` with ``extra`` inserted after ``key`` (the engine's order)."""
    out: dict[str, Param] = {}
    for name, p in params.items():
        out[name] = p
        if name == key:
            out.update(extra)
    return out


BBR3 = {
    **_after(_BBR3_COMMON, "probe_bw_down_gain", {
        # bw_probe_cwnd_gain is in quarters (the v3 code): 0, 0.25, 0.5 or 0.75.
        "probe_bw_up_cwnd_gain_extra": Param(0, 0.75, step=0.25, unit="the v3 code keeps bw_probe_cwnd_gain in quarters",
                                             doc="extra cwnd gain in PROBE_UP", source="bbr_bw_probe_cwnd_gain (quarters)"),
    }),
    # The ECN response (google/bbr v3 tcp_bbr.c), used only with ecn_low on an ECN flow.
    "ecn_low": _switch("use the ECN response on this (low-RTT) path", "TCP_ECN_LOW (route feature ecn_low)"),
    "ecn_alpha_gain": _fraction(0, 1, "EWMA gain of the per-round CE ratio", "bbr_ecn_alpha_gain"),
    "ecn_factor": _fraction(0, 0.99, "inflight_lo cut per unit of ECN alpha", "bbr_ecn_factor"),
    "ecn_thresh": _fraction(0, 0.99, "CE ratio of a round that ends probing", "bbr_ecn_thresh"),
    # The engine caps the value at 0x7ffff µs (the v3 field width): refused above, never clamped.
    "ecn_max_rtt_us": _count(0, "ECN logic only when min RTT is below this, µs", "bbr_ecn_max_rtt_us", 0x7FFFF),
    "full_ecn_cnt": _count(0, "rounds with a high CE ratio that end Startup", "bbr_full_ecn_cnt"),
    "ecn_reprobe_gain": _fraction(0, 0.99, "bandwidth re-probe gain after an ECN-marked cycle",
                                  "bbr_ecn_reprobe_gain"),
}

#: DCTCP (Linux tcp_dctcp.c): module parameters dctcp_shift_g (0..10) and dctcp_alpha_on_init (0..1024).
DCTCP = {
    "shift_g": _count(0, "EWMA weight g = 1/2^shift_g", "dctcp_shift_g = 4", 10),
    "alpha_on_init": _count(0, "initial alpha in 1/1024", "dctcp_alpha_on_init = 1024", 1024),
}

BBR2 = {
    **_BBR3_COMMON,
    "bw_probe_pif_gain": _gain("inflight (× BDP) that ends PROBE_UP", "bbr_bw_probe_pif_gain"),
    "bw_probe_reno_gain": _fraction(0, 64, "Reno-coexistence probe bound, × BDP rounds", "bbr_bw_probe_reno_gain"),
}

#: ``{algorithm: {parameter: Param}}`` for every algorithm of the simulator, in the engine's order.
PARAMS: dict[str, dict[str, Param]] = {
    "reno": RENO,
    "cubic": CUBIC,
    "bbr": BBR1,
    "bbr2": BBR2,
    "bbr3": BBR3,
    "vegas": VEGAS,
    "dctcp": DCTCP,
    "bbr_shallow": BBR1,
    "bbr_cwnd_feedback": BBR1,
    "bbr_sticky_rtprop": BBR1,
}

#: Where each algorithm comes from: the file (or paper) its parameters' ``source`` names knobs of.
SOURCES: dict[str, str] = {
    "reno": "Linux net/ipv4/tcp_cong.c (tcp_reno_cong_avoid, tcp_reno_ssthresh); RFC 5681",
    "cubic": "Linux net/ipv4/tcp_cubic.c (module parameters); RFC 9438",
    "bbr": "Linux net/ipv4/tcp_bbr.c (BBRv1)",
    "bbr2": "google/bbr v2alpha branch, net/ipv4/tcp_bbr2.c",
    "bbr3": "google/bbr v3 branch, net/ipv4/tcp_bbr.c",
    "vegas": "Linux net/ipv4/tcp_vegas.c (module parameters)",
    "dctcp": "Linux net/ipv4/tcp_dctcp.c (module parameters); RFC 8257",
    "bbr_shallow": f"BBRv1 with cwnd_gain 1.5 ({_THESIS} “Sharing but not Caring”, §5)",
    "bbr_cwnd_feedback": f"BBRv1 with the cwnd feedback loop ({_THESIS}, Algorithm 1)",
    "bbr_sticky_rtprop": f"BBRv1 with a sticky RTprop ({_THESIS}, §5.5.2)",
}


def _defaults_bbr1(**changes: float) -> dict[str, float]:
    d = {
        "startup_gain": 739 / 256, "drain_gain": 88 / 256, "cwnd_gain": 2.0, "probe_bw_up_gain": 1.25,
        "probe_bw_down_gain": 0.75, "bw_filter_rounds": 10, "min_rtt_win_s": 10, "probe_rtt_mode_ms": 200,
        "cwnd_min_target": 4, "full_bw_thresh": 1.25, "full_bw_cnt": 3, "pacing_margin_percent": 1,
        "extra_acked_gain": 1.0, "extra_acked_win_rtts": 5, "extra_acked_max_ms": 100, "lt_bw": 1,
        "lt_intvl_min_rtts": 4, "lt_loss_thresh": 50 / 256, "lt_bw_max_rtts": 48, "sticky_rtprop": 0,
        "sticky_probes": 3, "sticky_jump": 3.0, "cwnd_feedback": 0, "fb_loss_thresh": 0.02, "fb_rate_thresh": 0.95,
        "fb_rtt_thresh": 1.5, "fb_gain_min": 1.0, "fb_gain_max": 2.0, "fb_decrease": 0.9, "fb_increase": 1 / 16,
    }  # fmt: skip
    return {k: float(v) for k, v in {**d, **changes}.items()}


def _defaults_bbr3(**changes: float) -> dict[str, float]:
    d = {
        "startup_gain": 710 / 256, "startup_cwnd_gain": 2.0, "drain_gain": 88 / 256, "cwnd_gain": 2.0,
        "probe_bw_up_gain": 1.25, "probe_bw_down_gain": 232 / 256, "probe_bw_up_cwnd_gain_extra": 0.25,
        "min_rtt_win_s": 10, "probe_rtt_interval_ms": 5000, "probe_rtt_mode_ms": 200, "probe_rtt_cwnd_gain": 0.5,
        "cwnd_min_target": 4, "full_bw_thresh": 1.25, "full_bw_cnt": 3, "full_loss_cnt": 6, "loss_thresh": 5 / 256,
        "beta": 76 / 256, "inflight_headroom": 38 / 256, "bw_probe_max_rounds": 63, "bw_probe_rand_rounds": 2,
        "bw_probe_base_ms": 2000, "bw_probe_rand_ms": 1000, "extra_acked_gain": 1.0, "extra_acked_win_rtts": 5,
        "pacing_margin_percent": 1, "ecn_low": 0, "ecn_alpha_gain": 1 / 16, "ecn_factor": 85 / 256, "ecn_thresh": 0.5,
        "ecn_max_rtt_us": 5000, "full_ecn_cnt": 2, "ecn_reprobe_gain": 0.5,
    }  # fmt: skip
    return {k: float(v) for k, v in {**d, **changes}.items()}


_BBR2_ONLY = {"bw_probe_pif_gain": 1.25, "bw_probe_reno_gain": 1.0}
_BBR3_ONLY = ("probe_bw_up_cwnd_gain_extra", "ecn_low", "ecn_alpha_gain", "ecn_factor", "ecn_thresh", "ecn_max_rtt_us",
              "full_ecn_cnt", "ecn_reprobe_gain")  # fmt: skip

#: ``{algorithm: {parameter: default}}``: the value the engine uses when a scenario leaves a parameter
#: out (switches 1/0; gains exactly as the engine holds them, in 1/256 or 1/1024 units).
#: ``tests/test_cca_params.py`` checks every one against the engine (``cclab._native.algorithm_defaults``).
DEFAULTS: dict[str, dict[str, float]] = {
    "reno": {},
    "cubic": {"beta": 717 / 1024, "c": 410 / 1024, "fast_convergence": 1.0, "tcp_friendliness": 1.0, "hystart": 1.0},
    "bbr": _defaults_bbr1(),
    "bbr2": {
        k: v for k, v in _defaults_bbr3(startup_gain=739 / 256, startup_cwnd_gain=739 / 256, probe_bw_down_gain=0.75,
                                        full_loss_cnt=8, **_BBR2_ONLY).items()
        if k not in _BBR3_ONLY
    },  # fmt: skip
    "bbr3": _defaults_bbr3(),
    "vegas": {"alpha": 2.0, "beta": 4.0, "gamma": 1.0},
    "dctcp": {"shift_g": 4.0, "alpha_on_init": 1024.0},
    "bbr_shallow": _defaults_bbr1(cwnd_gain=1.5, fb_gain_max=1.5),
    "bbr_cwnd_feedback": _defaults_bbr1(cwnd_feedback=1),
    "bbr_sticky_rtprop": _defaults_bbr1(sticky_rtprop=1),
}


def algorithm_names() -> list[str]:
    """Every algorithm name, sorted (as error messages list them)."""
    return sorted(PARAMS)


def check_algorithm(value: Any) -> str:
    """``value`` if it names an algorithm; else a :class:`ScenarioError` (field ``""``) listing them."""
    if not isinstance(value, str) or value not in PARAMS:
        raise ScenarioError("", value, f"{show_value(value)} is not a known congestion control algorithm",
                            f"allowed: {', '.join(algorithm_names())}")
    return value

#: Defaults the cross-parameter rules need (the engine's).
_BBR1_CWND_GAIN = {"bbr_shallow": 1.5}
_BBR3_MIN_RTT_WIN_S = 10.0
_BBR3_PROBE_RTT_INTERVAL_MS = 5000


def format_default(algorithm: str, name: str) -> str:
    """The default of ``algorithm``'s parameter ``name`` as shown in docs: ``true``/``false`` for
    switches, an exact quantized gain as the fraction and its decimal (``739/256 ≈ 2.887``)."""
    p, v = PARAMS[algorithm][name], DEFAULTS[algorithm][name]
    if p.switch:
        return "true" if v else "false"
    if v == int(v):
        return _num(v)
    for unit in (256, 1024):
        k = v * unit
        if k == int(k) and round(v, 4) != v:
            return f"{int(k)}/{unit} ≈ {v:.4g}"
    return f"{v:g}"


def describe(algorithm: str) -> list[tuple[str, str, str, str, str]]:
    """``(parameter, allowed, meaning, default, source)`` rows for ``algorithm`` (``cclab algorithms``, docs)."""
    return [(name, p.allowed.removeprefix("expected "), p.doc, format_default(algorithm, name), p.source)
            for name, p in PARAMS[algorithm].items()]  # fmt: skip


def check_params(algorithm: str, params: dict[str, Any], field: str = "") -> dict[str, float]:
    """Check ``params`` of ``algorithm`` (a name :func:`check_algorithm` accepts) against the
    registry; return them as floats.

    Raises :class:`ScenarioError` naming ``<field>.<parameter>``: a name that is
    not a parameter of the algorithm (with the list of those that are), or the
    value and the allowed range (or the rule two parameters break).
    """
    registry = PARAMS[algorithm]
    for key, value in params.items():
        if key not in registry:
            listing = f"allowed: {', '.join(registry)}" if registry else f"{algorithm} takes no parameters"
            raise ScenarioError(f"{field}.{key}" if field else str(key), value, f"unknown parameter of {algorithm!r}",
                                listing)
    out: dict[str, float] = {}
    for key, value in params.items():
        where = f"{field}.{key}" if field else str(key)
        p = registry[key]
        number = _number(value, where, p)
        if not p.switch and p.in_range(number) and not (p.integer and number != int(number)) \
                and not p.on_step(number):
            raise p.off_step(number, where, show_value(value))  # the engine would round it
        if not p.contains(number):
            raise ScenarioError(where, value, f"{show_value(value)} is out of range", p.allowed)
        out[str(key)] = number
    _check_together(algorithm, out, field)
    return out


def _number(value: Any, where: str, p: Param) -> float:
    if isinstance(value, bool):
        if not p.switch:  # true is not 1.0 for a gain: only switches take true/false
            raise ScenarioError(where, value, f"{str(value).lower()} is a switch value, not a number", p.allowed)
        return 1.0 if value else 0.0
    if isinstance(value, int):
        if abs(value) > 2**53:
            raise ScenarioError(where, value, f"{show_value(value)} is too large to be represented exactly", p.allowed)
        return float(value)
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise ScenarioError(where, value, f"{show_value(value)} is not a number", p.allowed)


def _g(x: float) -> str:
    return f"{x:g}" if float(f"{x:g}") == x else repr(x)


#: BBRv1 parameters that act only with a switch on: (switch, parameters, the variant that turns it on).
_BBR1_SWITCHED = (
    ("cwnd_feedback", ("fb_loss_thresh", "fb_rate_thresh", "fb_rtt_thresh", "fb_gain_min", "fb_gain_max",
                       "fb_decrease", "fb_increase"), "bbr_cwnd_feedback"),
    ("sticky_rtprop", ("sticky_probes", "sticky_jump"), "bbr_sticky_rtprop"),
    ("lt_bw", ("lt_intvl_min_rtts", "lt_loss_thresh", "lt_bw_max_rtts"), None),
)
#: BBRv3's ECN response: used only with ``ecn_low`` (``bbr_can_use_ecn``) on a flow with ``ecn = true``.
_BBR3_ECN_KNOBS = ("ecn_alpha_gain", "ecn_factor", "ecn_thresh", "ecn_max_rtt_us", "full_ecn_cnt", "ecn_reprobe_gain")


def _needs_switch(algorithm: str, v: dict[str, float], at: Any, switch: str, knobs: tuple[str, ...],
                  variant: str | None) -> None:
    """Refuse a parameter the engine would ignore because its feature's switch is off (given as 0 or
    left at an algorithm's default of off): a setting that silently does nothing."""
    if v.get(switch, DEFAULTS[algorithm][switch]):
        return
    given = [k for k in knobs if k in v]
    if not given:
        return
    why = "set to false here" if switch in v else f"off by default for {algorithm}"
    turn_on = f"{switch} = true" + (f" (or cca = {variant!r})" if variant and algorithm != variant else "")
    if switch == "ecn_low":
        turn_on += " (and ecn = true on the flow)"
    raise ScenarioError(at(given[0]), v[given[0]], f"has no effect: {given[0]} belongs to {switch}, which is {why}",
                        f"expected {turn_on} beside it, or leave {', '.join(given)} out")


def _check_together(algorithm: str, v: dict[str, float], field: str) -> None:
    def at(name: str) -> str:
        return f"{field}.{name}" if field else name

    if algorithm == "vegas":
        alpha, beta = v.get("alpha", 2.0), v.get("beta", 4.0)
        if alpha > beta:
            name = "alpha" if "alpha" in v else "beta"
            raise ScenarioError(at(name), v.get(name), f"alpha = {_g(alpha)} is above beta = {_g(beta)}",
                                "expected alpha ≤ beta (defaults 2 and 4)")
    elif algorithm in ("bbr", "bbr_shallow", "bbr_cwnd_feedback", "bbr_sticky_rtprop"):
        for switch, knobs, variant in _BBR1_SWITCHED:
            _needs_switch(algorithm, v, at, switch, knobs, variant)
        if not v.get("cwnd_feedback", DEFAULTS[algorithm]["cwnd_feedback"]):
            return  # the feedback loop's gains are not used
        cwnd_gain = v.get("cwnd_gain", _BBR1_CWND_GAIN.get(algorithm, 2.0))
        gain_max = v.get("fb_gain_max", max(1, round(cwnd_gain * 256)) / 256)
        gain_min = v.get("fb_gain_min", 1.0)
        if gain_min > gain_max:
            name = "fb_gain_min" if "fb_gain_min" in v else "fb_gain_max" if "fb_gain_max" in v else "cwnd_gain"
            raise ScenarioError(at(name), v.get(name),
                                f"fb_gain_min = {_g(gain_min)} is above fb_gain_max = {_g(gain_max)}",
                                "expected fb_gain_min ≤ fb_gain_max (defaults: 1 and cwnd_gain; "
                                "with cwnd_gain below 1 also set fb_gain_min)")
    elif algorithm in ("bbr2", "bbr3"):
        if algorithm == "bbr3":
            _needs_switch(algorithm, v, at, "ecn_low", _BBR3_ECN_KNOBS, None)
        window_s = v.get("min_rtt_win_s", _BBR3_MIN_RTT_WIN_S)
        interval_ms = v.get("probe_rtt_interval_ms", _BBR3_PROBE_RTT_INTERVAL_MS)
        if interval_ms * 1_000_000 > round(window_s * 1e9):
            name = "probe_rtt_interval_ms" if "probe_rtt_interval_ms" in v else "min_rtt_win_s"
            raise ScenarioError(at(name), v.get(name),
                                f"probe_rtt_interval_ms = {_g(interval_ms)} is longer than min_rtt_win_s = {_g(window_s)} s",
                                "expected probe_rtt_interval_ms ≤ 1000 × min_rtt_win_s (defaults 5000 and 10)")
