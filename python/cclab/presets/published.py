"""A preset's published values beside what cclab measured.

Each sweep file of a preset may list, in `[[published]]` tables, what the
study it reproduces reported and how cclab measures the same quantity:

```toml
[[published]]
quantity = "BBR goodput at 1 % loss"            # the row's label
published = 85.4                                # number (with `unit`) or text ("~20 s", "BBR >> CUBIC")
unit = "Mbit/s"                                 # of `published` and of the measured value
source = "CS244 ReBBR 2017, figure8.csv (Linux 4.11.1, Mahimahi)"
point = { "link.loss" = 0.01, "flows[0].cca" = "bbr" }   # which runs (axis values; all trials)
metric = "agg.goodput_bps"                      # what to measure (below)
scale = 1e-6                                    # measured × scale is shown in `unit`
```

`metric` is a column of the sweep's results table (`cclab table`), averaged
over the matching runs, or one computed from their records:

* `period.<cca>` — dominant period (s) of that algorithm's share of the
  goodput, over 1 s bins in the measure window (`cclab.metrics.dominant_period`);
* `step.up_s` / `step.down_s` — seconds after the first rate increase
  (decrease) of the link schedule until the goodput (100 ms mean) reaches 90 %
  of the new payload capacity (until BBR's bandwidth estimate is within 5 % of
  it);
* `minrtt.follow_s` — seconds after the first delay change of the link
  schedule until flow 0's BBR min_rtt (`bw_min_rtt_ms`) is within 10 % of the
  new base RTT (the flow's `rtt` with the link's old delay replaced by the new);
* with `gain = { over = "flows[0].cca", a = "bbr", b = "cubic" }` the row shows
  100 · (mean_a − mean_b) / mean_b of the metric (Cao et al.'s goodput gain).

A `point` key that is not an axis of the sweep is compared with the base
scenario's value. Entries without `metric` show the published value only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # Python ≥ 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover — Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

_KEYS = {"quantity", "published", "unit", "source", "point", "metric", "scale", "gain", "note"}
_REQUIRED = ("quantity", "published", "source")
_RUN_METRICS = ("period.", "step.up_s", "step.down_s", "minrtt.follow_s")


class PublishedError(ValueError):
    """A `[[published]]` entry is malformed; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class Published:
    quantity: str
    published: Any
    source: str
    unit: str = ""
    point: dict[str, Any] = field(default_factory=dict)
    metric: str | None = None
    scale: float = 1.0
    gain: dict[str, str] | None = None
    note: str = ""

    def published_text(self) -> str:
        if isinstance(self.published, (int, float)) and not isinstance(self.published, bool):
            return f"{_num(self.published)} {self.unit}".strip()
        return str(self.published)


def load(path: str | Path) -> list[Published]:
    """The `[[published]]` entries of one sweep file (checked; one-line errors)."""
    path = Path(path)
    data = tomllib.loads(path.read_text())
    raw = data.get("published", [])
    if not isinstance(raw, list):
        raise PublishedError(f"{path.name}: 'published' must be an array of tables ([[published]])")
    out = []
    for i, e in enumerate(raw):
        where = f"{path.name}: published[{i}]"
        if not isinstance(e, dict):
            raise PublishedError(f"{where}: expected a table, got {e!r}")
        unknown = set(e) - _KEYS
        if unknown:
            raise PublishedError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(_KEYS))}")
        for k in _REQUIRED:
            if k not in e:
                raise PublishedError(f"{where}: '{k}' is required")
        if not isinstance(e.get("point", {}), dict):
            raise PublishedError(f"{where}.point: expected a table of axis values, got {e['point']!r}")
        gain = e.get("gain")
        if gain is not None and (not isinstance(gain, dict) or set(gain) != {"over", "a", "b"}):
            raise PublishedError(f"{where}.gain: expected {{ over = AXIS, a = VALUE, b = VALUE }}, got {gain!r}")
        scale = e.get("scale", 1.0)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale == 0:
            raise PublishedError(f"{where}.scale: expected a non-zero number, got {scale!r}")
        out.append(
            Published(
                quantity=str(e["quantity"]), published=e["published"], source=str(e["source"]),
                unit=str(e.get("unit", "")), point=dict(e.get("point", {})), metric=e.get("metric"),
                scale=float(scale), gain=gain, note=str(e.get("note", "")),
            )
        )
    return out


# ---- measuring -------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-15)
    return str(a) == str(b)


def _base_value(base: dict[str, Any], path: str) -> Any:
    from cclab.sweep import parse_path

    cur: Any = base
    for k in parse_path(path):
        try:
            cur = cur[k]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


def _rows(df, base: dict[str, Any], point: dict[str, Any]):
    mask = [True] * len(df)
    for key, want in point.items():
        if key in df.columns:
            mask = [m and _same(v, want) for m, v in zip(mask, df[key])]
        elif not _same(_base_value(base, key), want):
            return df.iloc[0:0]
    return df[mask]


def _payload_bps(ir: dict[str, Any], rate_bps: float) -> float:
    return rate_bps * ir["mss"] / (ir["mss"] + ir["header_bytes"])


def run_metric(run, metric: str) -> float:
    """A metric computed from one run record (see the module docstring); NaN when undefined."""
    from cclab.metrics import SHARE_BIN_S, dominant_period, in_window, share_series

    if metric.startswith("period."):
        cca = metric.split(".", 1)[1]
        fl = run.flows.loc[in_window(run.flows["time_s"], run.ir)]
        shares = share_series(fl, bin_s=SHARE_BIN_S)
        if cca not in shares:
            return math.nan
        period, _, _ = dominant_period(shares[cca].to_numpy(), SHARE_BIN_S, SHARE_BIN_S)
        return period
    if metric in ("step.up_s", "step.down_s"):
        link = run.ir["links"][0]
        rate = link["capacity"].get("rate_bps")
        changes = [c for c in link.get("schedule", []) if c.get("rate_bps") is not None]
        up = metric == "step.up_s"
        for c in changes:
            if rate is not None and (c["rate_bps"] > rate) == up and c["rate_bps"] != rate:
                t0, new = c["at_ns"] / 1e9, _payload_bps(run.ir, c["rate_bps"])
                f = run.flows.set_index("time_s")
                after = f.index > t0 + 1e-9
                if up:
                    n = max(1, round(0.1 / (run.ir["sample_interval_ns"] / 1e9)))  # 100 ms of samples
                    good = f["goodput_bps"].rolling(n, min_periods=1).mean()
                    hit = good.index[after & (good >= 0.9 * new).to_numpy()]
                else:
                    hit = f.index[after & (f["bw_bps"] <= 1.05 * new).to_numpy()]
                return float(hit.min()) - t0 if len(hit) else math.nan
            rate = c["rate_bps"]
        return math.nan
    if metric == "minrtt.follow_s":
        link = run.ir["links"][0]
        changes = [c for c in link.get("schedule", []) if c.get("delay_ns") is not None]
        if not changes:
            return math.nan
        t0 = changes[0]["at_ns"] / 1e9
        base_ms = (run.ir["flows"][0]["rtt_ns"] - link["delay_ns"] + changes[0]["delay_ns"]) / 1e6
        f = run.flows
        if "flow_id" in f.columns:
            f = f[f["flow_id"] == 0]
        f = f.set_index("time_s")
        after = f.index > t0 + 1e-9
        hit = f.index[after & (f["bw_min_rtt_ms"] >= 0.9 * base_ms).to_numpy()]
        return float(hit.min()) - t0 if len(hit) else math.nan
    raise PublishedError(
        f"unknown run metric {metric!r}; known: period.<cca>, step.up_s, step.down_s, minrtt.follow_s"
    )


def measure(entry: Published, sweep_dir: str | Path, base: dict[str, Any], df=None) -> float | None:
    """The measured value (in `entry.unit`), or None when the sweep has no run for the entry's point.

    `df` is the sweep's results table (read from `sweep_dir` when not given).
    """
    import numpy as np

    from cclab.record import read_run
    from cclab.store import read_results

    if entry.metric is None:
        return None
    sweep_dir = Path(sweep_dir)
    if df is None:
        df = read_results(sweep_dir)
    if df.empty:
        return None

    def mean_of(rows) -> float | None:
        if rows.empty:
            return None
        if entry.metric.startswith(_RUN_METRICS):
            vals = [run_metric(read_run(sweep_dir / "runs" / rid), entry.metric) for rid in rows["run_id"]]
        else:
            if entry.metric not in rows.columns:
                raise PublishedError(f"metric {entry.metric!r} is not a column of {sweep_dir}/results.parquet")
            vals = rows[entry.metric].astype(float).tolist()
        vals = [v for v in vals if math.isfinite(v)]
        return float(np.mean(vals)) if vals else math.nan

    if entry.gain:
        g = entry.gain
        a = mean_of(_rows(df, base, {**entry.point, g["over"]: g["a"]}))
        b = mean_of(_rows(df, base, {**entry.point, g["over"]: g["b"]}))
        if a is None or b is None:
            return None
        return 100.0 * (a - b) / b if b else math.nan
    v = mean_of(_rows(df, base, entry.point))
    return None if v is None else v * entry.scale


@dataclass(frozen=True)
class Row:
    part: str
    entry: Published
    measured: float | None
    trials: int

    def measured_text(self) -> str:
        if self.measured is None:
            return "– (no run at this point)" if self.entry.metric else "–"
        if not math.isfinite(self.measured):
            return "none found" if self.entry.metric and self.entry.metric.startswith("period.") else "undefined"
        return f"{_num(self.measured)} {self.entry.unit}".strip()


def compare(preset, out: str | Path, quick: bool = False) -> list[Row]:
    """One row per published entry of each of the preset's parts, measured from `out`."""
    from cclab.presets import HERE
    from cclab.store import read_results

    rows = []
    for (part, sweep), file in zip(preset.sweeps(quick=quick), preset.files):
        part_dir = Path(out) / part if len(preset.files) > 1 else Path(out)
        entries = load(HERE / file)
        if not entries:
            continue
        df = read_results(part_dir) if (part_dir / "points.json").exists() else None
        trials = int(df["trial"].nunique()) if df is not None and not df.empty else 0
        for e in entries:
            rows.append(Row(part, e, measure(e, part_dir, sweep.base, df) if df is not None else None, trials))
    return rows


def print_table(rows: list[Row], quick: bool) -> None:
    """Print the published-vs-measured table (rich)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    if not rows:
        return
    table = Table(title="published vs measured", header_style="bold", show_lines=True)
    table.add_column("quantity")
    table.add_column("published (source)")
    table.add_column("measured (cclab, this run)", justify="right")
    for r in rows:
        label = escape(r.entry.quantity) + (f"\n[dim]{escape(r.part)}[/dim]" if len({x.part for x in rows}) > 1 else "")
        pub = f"{escape(r.entry.published_text())}\n[dim]{escape(r.entry.source)}[/dim]"
        meas = escape(r.measured_text())
        if r.entry.note:
            meas += f"\n[dim]{escape(r.entry.note)}[/dim]"
        table.add_row(label, pub, meas)
    Console(width=140).print(table)
    trials = sorted({r.trials for r in rows if r.trials})
    what = "the \\[quick] variant (shorter runs, fewer points: magnitudes differ from the full study)" if quick else "the full preset"
    Console(width=140).print(f"measured: mean over {'/'.join(map(str, trials)) or '0'} trial(s) of {what}.")


def _num(v: float) -> str:
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    return f"{v:.3g}"
