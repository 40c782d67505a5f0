"""``cclab compare A B``: two run records of the same scenario, side by side.

Any backends: typically the same scenario on ``kernel`` and ``sim``. The
runs are aligned by flow id (per-flow metrics from each record's
summary.json, which :mod:`cclab.metrics` computed the same way for both)
and by sample time (time series). Differences are B − A, and relative
differences (B − A) / A — except for shares (a flow's or an algorithm's
percentage of the total goodput), whose difference is in percentage points
(``diff_unit`` "pp") and which get no relative difference: 30 % vs 45 % is
+15 pp, not "+50 %".

Output: :class:`Comparison` with a per-flow table, an aggregate table, the
notes on how the two scenarios differ (if they do), and — with
:func:`plot_comparison` — overlaid time-series figures (A solid, B dashed).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cclab import record
from cclab.errors import printable
from cclab.fsutil import atomic_file
from cclab.record import RecordError, Run

__all__ = ["Comparison", "compare", "compare_runs", "plot_comparison"]

#: per-flow metrics compared: (summary key, label, scale, unit)
FLOW_METRICS = (
    ("goodput_bps", "goodput", 1e-6, "Mbit/s"),
    ("share", "share", 100.0, "%"),
    ("retrans_segs", "retransmits", 1.0, "segs"),
    ("retrans_rate", "retrans rate", 100.0, "%"),
    ("rtt_ms_p50", "RTT p50", 1.0, "ms"),
    ("rtt_ms_p95", "RTT p95", 1.0, "ms"),
    ("cwnd_bytes_mean", "cwnd mean", 1e-3, "KB"),
)  # fmt: skip

#: summary keys that are shares of a whole: compared in percentage points, without a relative difference
PP_METRICS = frozenset({"share"})

AGGREGATE_METRICS = (
    ("goodput_bps", "goodput", 1e-6, "Mbit/s"),
    ("utilization", "utilization", 100.0, "%"),
    ("loss_rate", "loss rate", 100.0, "%"),
    ("retrans_segs", "retransmits", 1.0, "segs"),
    ("queue_delay_ms_mean", "queue delay mean", 1.0, "ms"),
    ("queue_delay_ms_p50", "queue delay p50", 1.0, "ms"),
    ("queue_delay_ms_p99", "queue delay p99", 1.0, "ms"),
    ("queue_bytes_mean", "queue mean", 1e-3, "KB"),
    ("jain", "Jain's index", 1.0, ""),
)  # fmt: skip


@dataclass
class Comparison:
    a: Run
    b: Run
    per_flow: pd.DataFrame
    aggregate: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)

    def label(self, which: str) -> str:
        run = self.a if which == "a" else self.b
        return f"{run.meta.get('backend', '?')}:{run.path.name if run.path else run.name}"

    def to_dict(self) -> dict[str, Any]:
        from cclab.metrics import json_safe

        return json_safe(
            {
                "a": {"path": str(self.a.path), "backend": self.a.meta.get("backend"), "valid": self.a.meta.get("valid", True)},
                "b": {"path": str(self.b.path), "backend": self.b.meta.get("backend"), "valid": self.b.meta.get("valid", True)},
                "notes": self.notes,
                "per_flow": self.per_flow.to_dict(orient="records"),
                "aggregate": self.aggregate.to_dict(orient="records"),
                "figures": [str(p) for p in self.figures],
            }
        )


def _num(x: Any) -> float:
    return math.nan if x is None else float(x)


def _diff_row(base: dict[str, Any], a: float, b: float, *, pp: bool = False) -> dict[str, Any]:
    """One table row; ``pp``: a and b are percentages of a whole, their difference is in percentage points."""
    rel = (b - a) / a if not pp and a not in (0.0,) and not math.isnan(a) else math.nan
    return {**base, "a": a, "b": b, "diff": b - a, "diff_unit": "pp" if pp else base.get("unit", ""), "rel_diff": rel}


def _scenario_notes(a: Run, b: Run) -> list[str]:
    notes = []
    ia, ib = dict(a.ir), dict(b.ir)
    fa = [(f["id"], f["cca"], f["rtt_ns"], f["start_ns"]) for f in ia.get("flows", [])]
    fb = [(f["id"], f["cca"], f["rtt_ns"], f["start_ns"]) for f in ib.get("flows", [])]
    if [x[0] for x in fa] != [x[0] for x in fb]:
        raise RecordError(f"{a.path} and {b.path} have different flows ({len(fa)} vs {len(fb)}); compare needs the same scenario")
    if fa != fb:
        notes.append("flows differ in algorithm, RTT or start time")
    for key in ("link", "duration_ns", "sample_interval_ns", "measure", "mss", "header_bytes"):
        if ia.get(key) != ib.get(key):
            notes.append(f"{key} differs between the two runs")
    if ia.get("seed") != ib.get("seed"):
        notes.append(f"seeds differ ({ia.get('seed')} vs {ib.get('seed')})")
    for run in (a, b):
        if not run.meta.get("valid", True):
            notes.append(f"{run.path}: marked invalid: {'; '.join(run.meta.get('invalid_reasons') or [])}")
    return notes


def compare_runs(a: Run, b: Run) -> Comparison:
    """Compare two loaded runs (flows aligned by id)."""
    notes = _scenario_notes(a, b)
    rows = []
    fa = {int(f["flow_id"]): f for f in a.summary.get("per_flow", [])}
    fb = {int(f["flow_id"]): f for f in b.summary.get("per_flow", [])}
    for fid in sorted(fa):
        ra, rb = fa[fid], fb.get(fid, {})
        for key, label, scale, unit in FLOW_METRICS:
            base = {"flow_id": fid, "cca": ra.get("cca"), "metric": label, "unit": unit}
            rows.append(_diff_row(base, _num(ra.get(key)) * scale, _num(rb.get(key)) * scale, pp=key in PP_METRICS))
    per_flow = pd.DataFrame(rows, columns=["flow_id", "cca", "metric", "unit", "a", "b", "diff", "diff_unit", "rel_diff"])
    ga, gb = a.summary.get("aggregate", {}), b.summary.get("aggregate", {})
    agg = [
        _diff_row({"metric": label, "unit": unit}, _num(ga.get(key)) * scale, _num(gb.get(key)) * scale)
        for key, label, scale, unit in AGGREGATE_METRICS
    ]
    for alg in a.summary.get("per_algorithm", {}):
        pa = a.summary["per_algorithm"][alg]
        pb = b.summary.get("per_algorithm", {}).get(alg, {})
        agg.append(_diff_row({"metric": f"share {alg}", "unit": "%"}, _num(pa.get("share")) * 100, _num(pb.get("share")) * 100, pp=True))
    aggregate = pd.DataFrame(agg, columns=["metric", "unit", "a", "b", "diff", "diff_unit", "rel_diff"])
    return Comparison(a=a, b=b, per_flow=per_flow, aggregate=aggregate, notes=notes)


def compare(a_dir: str | Path, b_dir: str | Path, out: str | Path | None = None, formats: tuple[str, ...] = ("png",)) -> Comparison:
    """Load two run records and compare them; with ``out``, write compare.json and the figures there."""
    c = compare_runs(record.read_run(a_dir), record.read_run(b_dir))
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        c.figures = plot_comparison(c, out / "compare", formats=formats)
        from cclab.fsutil import atomic_write_text

        atomic_write_text(out / "compare.json", json.dumps(c.to_dict(), indent=1))
    return c


def plot_comparison(c: Comparison, path: str | Path, formats: tuple[str, ...] = ("png",)) -> list[Path]:
    """Overlaid time series (A solid, B dashed): per-flow goodput, RTT, cwnd; queue delay and queue length."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("flows", "goodput_bps", 1e-6, "goodput (Mbit/s)"),
        ("flows", "srtt_ms", 1.0, "smoothed RTT (ms)"),
        ("flows", "cwnd_bytes", 1e-3, "cwnd (KB)"),
        ("link", "queue_delay_ms", 1.0, "queue delay (ms)"),
        ("link", "queue_bytes", 1e-3, "queue (KB)"),
    ]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.1 * len(panels)), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (table, col, scale, ylabel) in zip(axes, panels):
        for run, style, which in ((c.a, "-", "a"), (c.b, "--", "b")):
            df = run.flows if table == "flows" else run.link
            if col not in df:
                continue
            if table == "flows":
                for i, (fid, g) in enumerate(df.groupby("flow_id")):
                    ax.plot(g["time_s"], g[col] * scale, style, color=colors[i % len(colors)], lw=1,
                            label=f"flow {fid} ({g['cca'].iloc[0]}) {c.label(which)}")  # fmt: skip
            else:
                ax.plot(df["time_s"], df[col] * scale, style, color="k" if which == "a" else "tab:gray", lw=1, label=c.label(which))
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2, loc="best")
    axes[-2].legend(fontsize=7, loc="best")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(printable(f"{c.a.name}: {c.label('a')} (solid) vs {c.label('b')} (dashed)"), fontsize=10,
                 parse_math=False)
    fig.tight_layout()
    files = []
    for fmt in formats:
        p = Path(f"{path}.{fmt}")
        with atomic_file(p) as fh:
            fig.savefig(fh, format=fmt, dpi=110)
        files.append(p)
    plt.close(fig)
    return files
