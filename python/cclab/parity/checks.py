"""What `cclab parity` compares and how: metric extraction and the tolerances.

Every value comes from :mod:`cclab.metrics` (the summary over the measure
window, or the parity metrics defined there), recomputed from each record's
per-interval frames, so the two backends are measured by the same code.

A check passes when ``|sim − kernel| ≤ max(rel × |kernel|, abs)``: the kernel
(real Linux TCP) is the reference the simulator is held to. Metrics without
a tolerance are reported as ``info`` and never decide a case.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

from cclab import metrics as M
from cclab.record import Run

__all__ = ["METRICS", "TOLERANCES", "Check", "Tolerance", "evaluate", "extract", "judge", "parse_spec"]


@dataclass(frozen=True)
class Tolerance:
    rel: float  # fraction of the kernel value
    abs: float  # in the metric's display unit
    text: str
    reason: str

    def allowed(self, kernel: float) -> float:
        return max(self.rel * abs(kernel), self.abs)


#: The parity tolerances (docs/validation.md, "Parity"). Never widened to make a case pass.
TOLERANCES: dict[str, Tolerance] = {
    "goodput": Tolerance(0.05, 2.0, "5 % or 2 Mbit/s",
                         "a utilisation error of a few per cent changes every throughput conclusion; at low rates one "
                         "loss episode more or less in the window moves goodput by ~1 Mbit/s, hence the absolute floor"),
    "share": Tolerance(0.0, 5.0, "5 points",
                       "coexistence studies read shares off plots where 5 points is the visible difference; "
                       "the share oscillates over seconds, so tighter is noise"),
    "queue_delay_p50": Tolerance(0.20, 0.5, "20 % or 0.5 ms",
                                 "the standing queue sets the latency conclusions (bufferbloat, BBR's 2-BDP cap); "
                                 "below 0.5 ms it is one or two packets and the emulator's timer resolution"),
    "retrans_rate": Tolerance(0.30, 0.1, "30 % or 0.1 point",
                              "loss recovery differs in detail (RACK timers, TLP, SACK reneging) and the count of "
                              "retransmissions is a heavy-tailed quantity; 0.1 point covers near-zero rates"),
    "startup_exit": Tolerance(0.0, 1.0, "1 round",
                              "STARTUP ends on a round-counted rule (three rounds without 25 % growth); one round is "
                              "the rule's own granularity"),
    "time_to_90": Tolerance(0.30, 0.0, "30 %",
                            "adaptation after a capacity step is quantised by probing cycles (BBR: 8 rounds) and "
                            "CUBIC's epochs; 30 % separates a model that adapts like Linux from one that does not"),
    "time_to_110": Tolerance(0.30, 0.0, "30 %",
                             "the same, for a step down: BBR's 10-round max filter must forget the old rate, "
                             "CUBIC's ACK clock follows at once"),
}


@dataclass(frozen=True)
class MetricDef:
    label: str
    unit: str
    tolerance: str | None  # key of TOLERANCES, None = info only
    extract: Callable[[Run, str | None, Mapping[str, Any]], dict[str, float]]
    doc: str


def _flow_ids(run: Run, of: str | None) -> list[int] | None:
    """``None`` (all flows), the flows of an algorithm, or ``flow<id>``."""
    if of is None:
        return None
    m = re.fullmatch(r"flow(\d+)", of)
    if m:
        return [int(m.group(1))]
    return [int(f["id"]) for f in run.ir["flows"] if str(f["cca"]) == of]


def _suffix(of: str | None) -> str:
    return f" {of}" if of else ""


def _summary(run: Run, cache: dict[str, Any]) -> dict[str, Any]:
    if "summary" not in cache:
        cache["summary"] = M.summary(run.flows, run.link, run.ir, histograms=run.histograms)
    return cache["summary"]


def _num(x: Any) -> float:
    return math.nan if x is None else float(x)


def _goodput(run: Run, of: str | None, cache: dict[str, Any]) -> dict[str, float]:
    s = _summary(run, cache)
    if of is None:
        return {"goodput": _num(s["aggregate"].get("goodput_bps")) / 1e6}
    ids = set(_flow_ids(run, of) or [])
    return {f"goodput{_suffix(of)}": sum(_num(f["goodput_bps"]) for f in s["per_flow"] if f["flow_id"] in ids) / 1e6}


def _share(run: Run, of: str | None, cache: dict[str, Any]) -> dict[str, float]:
    s = _summary(run, cache)
    if of is None:
        raise ValueError("share needs [algorithm] or [flow<id>]")
    ids = set(_flow_ids(run, of) or [])
    share = sum(_num(f.get("share")) for f in s["per_flow"] if f["flow_id"] in ids) if ids else math.nan
    return {f"share{_suffix(of)}": share * 100}


def _queue_p(q: int) -> Callable[[Run, str | None, dict[str, Any]], dict[str, float]]:
    def f(run: Run, of: str | None, cache: dict[str, Any]) -> dict[str, float]:
        return {f"queue delay p{q}": _num(_summary(run, cache)["aggregate"].get(f"queue_delay_ms_p{q}"))}

    return f


def _retrans(run: Run, of: str | None, cache: dict[str, Any]) -> dict[str, float]:
    return {f"retrans rate{_suffix(of)}": M.retrans_rate(run.flows, run.ir, _flow_ids(run, of)) * 100}


def _state_time(run: Run, of: str | None, cache: dict[str, Any]) -> dict[str, float]:
    ids = _flow_ids(run, of or "bbr")
    return {f"time in {k}{_suffix(of)}": v * 100 for k, v in M.state_fractions(run.flows, run.ir, ids).items()}


def _startup_exit(run: Run, of: str | None, cache: dict[str, Any]) -> dict[str, float]:
    ids = _flow_ids(run, of or "flow0") or [0]
    return {f"startup exit{_suffix(of)}": M.startup_exit_round(run.flows, run.ir, ids[0])}


def _startup_exit_rtts(run: Run, of: str | None, cache: dict[str, Any]) -> dict[str, float]:
    ids = _flow_ids(run, of or "flow0") or [0]
    return {f"startup exit{_suffix(of)} (base RTTs)": M.startup_exit_rounds(run.flows, run.ir, ids[0])}


def _rate_step(run: Run) -> tuple[float, float, float]:
    """(time s, rate before, rate after) of the scenario's first scheduled rate change."""
    step = next((ch for ch in run.ir["links"][0].get("schedule") or [] if ch.get("rate_bps") is not None), None)
    if step is None:
        raise ValueError("the rate-step metrics need a scenario with a scheduled rate change")
    return step["at_ns"] / 1e9, float(run.ir["links"][0]["capacity"]["rate_bps"]), float(step["rate_bps"])


def _time_to_90(run: Run, of: str | None, cache: dict[str, Any]) -> dict[str, float]:
    at, before, after = _rate_step(run)
    if after < before:
        raise ValueError("time_to_90 is for a step up (a step down is met at once: the queue keeps the link busy); "
                         "use time_to_110")
    return {"time to 90 %": M.time_to_rate(run.flows, at, after, fraction=0.9)}


def _time_to_110(run: Run, of: str | None, cache: dict[str, Any]) -> dict[str, float]:
    at, before, after = _rate_step(run)
    if after > before:
        raise ValueError("time_to_110 is for a step down; use time_to_90")
    return {"time to 110 %": M.time_to_rate(run.flows, at, after, fraction=1.1, column="send_rate_bps", direction="down")}


def _peak_queue(run: Run, of: str | None, cache: dict[str, Any]) -> dict[str, float]:
    return {"peak queue": M.peak_queue_bytes(run.link) / 1e3}


#: metric name -> definition. Values are in the display unit.
METRICS: dict[str, MetricDef] = {
    "goodput": MetricDef("goodput", "Mbit/s", "goodput", _goodput,
                         "payload delivered to the receiving application over the measure window"),
    "share": MetricDef("share", "%", "share", _share, "fraction of the total goodput (per algorithm or per flow)"),
    "queue_delay_p50": MetricDef("queue delay p50", "ms", "queue_delay_p50", _queue_p(50),
                                 "median bottleneck queueing delay (sojourn) of the packets that left the queue in the window, per packet"),
    "queue_delay_p95": MetricDef("queue delay p95", "ms", None, _queue_p(95), "95th percentile of the same"),
    "retrans_rate": MetricDef("retrans rate", "%", "retrans_rate", _retrans,
                              "retransmitted segments / segments sent (wire bytes / 1500) over the window"),
    "state_time": MetricDef("time per BBR state", "%", None, _state_time,
                            "fraction of the window the BBR flow(s) spent in each mode"),
    "startup_exit": MetricDef("startup exit", "rounds", "startup_exit", _startup_exit,
                              "when the flow left STARTUP, in its packet-timed round trips (each an RTT including "
                              "the queue it met: BBR's own rounds), estimated from the record's sent and delivered bytes"),
    "startup_exit_rtts": MetricDef("startup exit", "base RTTs", None, _startup_exit_rtts,
                                   "when the flow left STARTUP, in base RTTs after its start"),
    "time_to_90": MetricDef("time to 90 %", "s", "time_to_90", _time_to_90,
                            "seconds after the rate step until the flows' throughput at the bottleneck (100 ms mean) "
                            "reaches 90 % of the new rate"),
    "time_to_110": MetricDef("time to 110 %", "s", "time_to_110", _time_to_110,
                             "seconds after a rate step down until the senders' sending rate (wire bytes incl. "
                             "retransmissions, 100 ms mean) is at most 110 % of the new rate"),
    "peak_queue": MetricDef("peak queue", "KB", None, _peak_queue, "largest sampled queue over the run"),
}

_SPEC = re.compile(r"^([a-z0-9_]+)(?:\[([A-Za-z0-9_.-]+)\])?$")


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``"share[bbr]"`` -> ``("share", "bbr")``; ``"goodput"`` -> ``("goodput", None)``."""
    m = _SPEC.match(spec)
    if not m or m.group(1) not in METRICS:
        raise ValueError(f"unknown parity metric {spec!r}; known: {', '.join(METRICS)}")
    return m.group(1), m.group(2)


def extract(spec: str, run: Run, cache: dict[str, Any] | None = None) -> dict[str, float]:
    """``{row label: value}`` of one metric spec on one run (several rows for ``state_time``)."""
    name, of = parse_spec(spec)
    return METRICS[name].extract(run, of, cache if cache is not None else {})


@dataclass
class Check:
    """One row of the parity table."""

    case: str
    metric: str  # row label, e.g. "share bbr"
    kind: str  # metric name, e.g. "share"
    unit: str
    sim: float
    kernel: float
    status: str  # pass, fail, info
    diff: float = math.nan  # sim − kernel
    rel_diff: float = math.nan  # (sim − kernel) / |kernel|
    allowed: float = math.nan  # the tolerance for this kernel value, in the unit
    tolerance: str = ""  # the rule, e.g. "5 % or 2 Mbit/s"
    note: str = ""
    # each seed's value, in the order of the case's seeds (sim and kernel are their means): what
    # shows whether a difference is larger than the seed-to-seed spread of either side
    sim_values: tuple[float, ...] = ()
    kernel_values: tuple[float, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        from cclab.metrics import json_safe

        def inf_text(x: Any) -> Any:  # keep "never reached" distinguishable from missing
            return ("inf" if x > 0 else "-inf") if isinstance(x, float) and math.isinf(x) else x

        d = dict(self.__dict__)
        for k in ("sim", "kernel", "diff"):
            d[k] = inf_text(d[k])
        for k in ("sim_values", "kernel_values"):
            d[k] = [inf_text(x) for x in d[k]]
        return json_safe(d)


def judge(kind: str, sim: float, kernel: float) -> tuple[str, float, float, float, str]:
    """``(status, diff, rel_diff, allowed, note)`` of one value pair under ``TOLERANCES[kind]``.

    +inf (e.g. "never reached 90 %") on both sides agrees; on one side it fails.
    A missing value (NaN) on either side fails: a check that cannot be made
    is not a pass.
    """
    tol = TOLERANCES.get(kind)
    diff = sim - kernel if not (math.isinf(sim) and math.isinf(kernel) and sim == kernel) else 0.0
    rel = diff / abs(kernel) if kernel not in (0.0,) and math.isfinite(kernel) and math.isfinite(diff) else math.nan
    if tol is None:
        return "info", diff, rel, math.nan, ""
    if math.isnan(sim) or math.isnan(kernel):
        which = " and ".join(n for n, v in (("sim", sim), ("kernel", kernel)) if math.isnan(v))
        return "fail", diff, rel, math.nan, f"no value from {which}"
    if math.isinf(sim) or math.isinf(kernel):
        if sim == kernel:
            return "pass", 0.0, math.nan, math.nan, "neither reached it"
        return "fail", diff, rel, math.nan, ("sim" if math.isinf(sim) else "kernel") + " never reached it"
    allowed = tol.allowed(kernel)
    ok = abs(diff) <= allowed * (1 + 1e-9) + 1e-12
    return ("pass" if ok else "fail"), diff, rel, allowed, ""


def _mean(values: Sequence[float]) -> float:
    if not values:
        return math.nan
    if any(math.isnan(v) for v in values):
        return math.nan
    return sum(values) / len(values)


def evaluate(case_id: str, specs: Sequence[str], sim_runs: Sequence[Run], kernel_runs: Sequence[Run]) -> list[Check]:
    """The checks of one case: each metric on each backend's runs, averaged over its seeds, judged.

    ``sim_runs`` and ``kernel_runs`` are the two backends' records, one per
    seed (the simulator may have more seeds than the kernel:
    :attr:`~cclab.parity.matrix.Case.sim_seeds`). Rows that only one backend
    has (a BBR state the other never entered) count 0 % for the other — only
    for ``state_time``; for any other metric a missing row is a missing value.
    """
    if not sim_runs or not kernel_runs:
        raise ValueError("evaluate needs at least one sim and one kernel run")
    sim_cache: list[dict[str, Any]] = [{} for _ in sim_runs]
    k_cache: list[dict[str, Any]] = [{} for _ in kernel_runs]
    checks: list[Check] = []
    for spec in specs:
        name, _of = parse_spec(spec)
        mdef = METRICS[name]
        per_sim = [extract(spec, r, c) for r, c in zip(sim_runs, sim_cache)]
        per_k = [extract(spec, r, c) for r, c in zip(kernel_runs, k_cache)]
        labels = list(dict.fromkeys([k for d in per_sim + per_k for k in d]))
        if name == "state_time":
            labels.sort()
        default = 0.0 if name == "state_time" else math.nan
        for label in labels:
            sv = tuple(float(d.get(label, default)) for d in per_sim)
            kv = tuple(float(d.get(label, default)) for d in per_k)
            s, k = _mean(sv), _mean(kv)
            status, diff, rel, allowed, note = judge(mdef.tolerance or "", s, k)
            tol = TOLERANCES.get(mdef.tolerance or "")
            checks.append(Check(case=case_id, metric=label, kind=name, unit=mdef.unit, sim=s, kernel=k, status=status,
                                diff=diff, rel_diff=rel, allowed=allowed, tolerance=tol.text if tol else "",
                                note=note, sim_values=sv, kernel_values=kv))  # fmt: skip
    return checks
