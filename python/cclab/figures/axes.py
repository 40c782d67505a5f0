"""Swept values as plot coordinates: numbers in one display unit, with a label.

Axis values are what users wrote (`"0.25bdp"`, `"40Mbps"`, `"100KB"`,
`0.01`). They are parsed with `cclab.units` (the one unit parser) and shown
in one unit per axis, chosen from the values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from cclab import units
from cclab.errors import ScenarioError

_FIELD_NAMES = {
    "buffer": "buffer",
    "rate": "bottleneck rate",
    "rtt": "RTT",
    "delay": "delay",
    "loss": "random loss",
    "count": "count",
    "start": "start",
    "stagger": "stagger",
    "duration": "duration",
    "cca": "algorithm",
    "base_seed": "base seed",
}


@dataclass
class AxisValues:
    """Coordinates of an axis: `numeric` is None when the values are categories."""

    name: str  # the axis path, e.g. "link.buffer"
    label: str  # axis label with unit, e.g. "buffer (BDP)"
    labels: list[str]  # one display string per distinct value, in axis order
    numeric: list[float] | None  # one number per distinct value, in display units
    log: bool = False  # a log scale suits these values
    base: int = 10  # of that log scale: 2 for buffers (the BBR papers' 0.25 … 8 BDP, doubling), else 10
    unit: str = ""  # the display unit of `numeric` ("BDP", "Mbit/s", "ms", "%"; "" for plain numbers)

    def texts(self) -> list[str]:
        """One label per distinct value in the axis's display unit (`0.25 BDP`, `40 Mbit/s`): what
        ticks, legends and panel titles show; the values as written when they are categories."""
        if self.numeric is None:
            return list(self.labels)
        return [f"{v:g} {self.unit}".rstrip() for v in self.numeric]

    def text(self, value: Any) -> str:
        """The display label of one of the axis's values."""
        return self.texts()[self.labels.index(display(value))]


def display(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def field_label(name: str) -> str:
    leaf = name.split(".")[-1]
    base = _FIELD_NAMES.get(leaf, leaf)
    prefix = name[: -len(leaf)].rstrip(".")
    if prefix.startswith("flows["):
        return f"{prefix} {base}"  # "flows[0] RTT", "flows[1] start"
    return base


def axis_values(name: str, values: Sequence[Any]) -> AxisValues:
    """Distinct values of an axis (first-seen order) and their coordinates."""
    distinct: list[Any] = []
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            continue
        if display(v) not in [display(d) for d in distinct]:
            distinct.append(v)
    labels = [display(v) for v in distinct]
    leaf = name.split(".")[-1]
    base = field_label(name)
    try:
        nums, unit, log = _numeric(leaf, distinct)
    except (ScenarioError, ValueError, TypeError):
        return AxisValues(name, base, labels, None)
    label = f"{base} ({unit})" if unit else base
    if leaf == "buffer" and len(nums) >= 2 and min(nums) > 0 and max(nums) / min(nums) >= 4:
        return AxisValues(name, label, labels, nums, True, 2, unit)  # buffers double from point to point: log2
    return AxisValues(name, label, labels, nums, log, unit=unit)


def _numeric(leaf: str, vals: list[Any]) -> tuple[list[float], str, bool]:
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        if leaf == "loss":
            return [100.0 * float(v) for v in vals], "%", True
        return [float(v) for v in vals], "", False
    if not all(isinstance(v, str) for v in vals):
        raise ValueError("mixed values")
    if leaf == "buffer":
        specs = [units.parse_buffer(v, leaf) for v in vals]
        kinds = {s.kind for s in specs}
        if kinds == {"bdp"}:
            return [float(s.amount) for s in specs], "BDP", False
        if kinds == {"packets"}:
            return [float(s.amount) for s in specs], "packets", False
        if kinds == {"bytes"}:
            return _scaled([float(s.amount) for s in specs], [(1e6, "MB"), (1e3, "KB"), (1, "B")])
        raise ValueError("mixed buffer kinds")
    if leaf == "loss":
        return [100.0 * units.parse_probability(v, leaf) for v in vals], "%", True
    if leaf == "rate":
        return _scaled([float(units.parse_rate(v, leaf)) for v in vals], [(1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"),
                                                                           (1, "bit/s")])
    if leaf in ("rtt", "delay", "start", "stagger", "duration", "stop", "at", "from", "to"):
        ns = [float(units.parse_duration(v, leaf)) for v in vals]
        return _scaled(ns, [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1, "ns")])
    raise ValueError("not a quantity")


def _scaled(values: list[float], ladder: list[tuple[float, str]]) -> tuple[list[float], str, bool]:
    """Pick the largest unit in which the smallest value is ≥ 1."""
    lo = min(values)
    for factor, unit in ladder:
        if lo >= factor or factor == ladder[-1][0]:
            out = [v / factor for v in values]
            spread = max(values) / lo if lo > 0 else 0
            return out, unit, spread >= 50
    raise AssertionError


def coords(av: AxisValues, values: Sequence[Any]) -> list[float]:
    """x positions for `values` (numbers, or category indices)."""
    index = {lab: i for i, lab in enumerate(av.labels)}
    if av.numeric is None:
        return [float(index[display(v)]) for v in values]
    return [av.numeric[index[display(v)]] for v in values]
