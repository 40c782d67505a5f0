"""``cclab compare A B``: two run records of the same scenario, side by side.

Any backends: typically the same scenario on ``kernel`` and ``sim``. The
runs are aligned by flow id (per-flow metrics from each record's
summary.json, which :mod:`cclab.metrics` computed the same way for both)
and by sample time (time series). Differences are B − A, and relative
differences (B − A) / A. A difference of two percentages (utilization, loss
and retransmission rates, shares) is in percentage points (``diff_unit``
"pp"); shares (a flow's or an algorithm's percentage of the total goodput)
get no relative difference: 30 % vs 45 % is +15 pp, not "+50 %".

Output: :class:`Comparison` with a per-flow table, an aggregate table, the
notes on how the two scenarios differ (if they do), and — with
:func:`plot_comparison` — overlaid time-series figures (A solid, B dashed).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
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
    """One table row. A difference of two percentages is in percentage points (``diff_unit`` "pp":
    a loss rate of 2.86 % and 3.21 % differ by +0.35 pp, +12 % relative); ``pp``: a and b are
    percentages of a whole (shares), which get no relative difference."""
    rel = (b - a) / a if not pp and a not in (0.0,) and not math.isnan(a) else math.nan
    unit = base.get("unit", "")
    return {**base, "a": a, "b": b, "diff": b - a, "diff_unit": "pp" if pp or unit == "%" else unit, "rel_diff": rel}


#: The one-link form of IR versions before 4 (``link``) as version 4 spells it (``links``).
_ONE_LINK = {"name": "link", "from": "left", "to": "right"}

#: flow fields compared, with the words a note uses for them (and the default of records that predate them)
FLOW_FIELDS = (
    ("cca", "algorithm", None),
    ("cca_params", "algorithm parameters", {}),
    ("rtt_ns", "RTT", None),
    ("start_ns", "start time", None),
    ("stop_ns", "stop time", None),
    ("bytes", "bytes", None),
    ("rwnd_bytes", "receive window", None),
    ("ecn", "ECN", False),
    ("path", "path", ["link"]),
    ("ack_path", "ACK path", []),
    ("ack_every", "ACK frequency", 2),
    ("sack", "SACK", True),
    ("group", "group", None),
)  # fmt: skip


def _links(ir: dict[str, Any]) -> list[dict[str, Any]]:
    """The IR's links in the version-4 form (a record before version 4 has one ``link``)."""
    links = ir.get("links")
    if isinstance(links, list):
        return [dict(x) for x in links if isinstance(x, dict)]
    if isinstance(ir.get("link"), dict):
        return [{**_ONE_LINK, **ir["link"]}]
    return []


def _show(value: Any) -> str:
    from cclab.errors import show_value

    return show_value(value, 40)


def _diff_fields(where: str, a: Any, b: Any, out: list[tuple[str, Any, Any]]) -> None:
    """Every differing field below ``where``: tables are compared key by key (unless their ``kind`` differs:
    then the whole table is one difference), anything else as a whole."""
    if isinstance(a, dict) and isinstance(b, dict) and a.get("kind") == b.get("kind"):
        for key in [*a, *(k for k in b if k not in a)]:
            if key == "name" and not where:
                continue
            _diff_fields(f"{where}.{key}" if where else str(key), a.get(key), b.get(key), out)
    elif a != b:
        out.append((where, a, b))


def _link_notes(ia: dict[str, Any], ib: dict[str, Any]) -> list[str]:
    la, lb = _links(ia), _links(ib)
    names_a, names_b = [x.get("name") for x in la], [x.get("name") for x in lb]
    notes = []
    if names_a != names_b:
        notes.append(f"links differ ({_show(names_a)} vs {_show(names_b)})")
    one_link = len(la) == len(lb) == 1 and names_a == names_b == ["link"]
    by_name = {x.get("name"): x for x in lb}
    for link in la:
        other = by_name.get(link.get("name"))
        if other is None:
            continue
        prefix = "link" if one_link else f"links.{link.get('name')}"
        diffs: list[tuple[str, Any, Any]] = []
        _diff_fields("", link, other, diffs)
        for field_, va, vb in diffs:
            notes.append(f"{prefix}.{field_} differs between the two runs ({_show(va)} vs {_show(vb)})")
    return notes


def _flow_notes(fa: list[dict[str, Any]], fb: list[dict[str, Any]]) -> list[str]:
    notes = []
    for key, words, default in FLOW_FIELDS:
        differ = [(f.get("id"), f.get(key, default), g.get(key, default)) for f, g in zip(fa, fb)
                  if f.get(key, default) != g.get(key, default)]  # fmt: skip
        if differ:
            shown = "; ".join(f"flow {fid}: {_show(va)} vs {_show(vb)}" for fid, va, vb in differ[:3])
            more = f"; and {len(differ) - 3} more" if len(differ) > 3 else ""
            notes.append(f"flows differ in {words} ({shown}{more})")
    return notes


def _scenario_notes(a: Run, b: Run) -> list[str]:
    notes = []
    ia, ib = dict(a.ir), dict(b.ir)
    fa, fb = list(ia.get("flows", [])), list(ib.get("flows", []))
    if [f["id"] for f in fa] != [f["id"] for f in fb]:
        raise RecordError(f"{a.path} and {b.path} have different flows ({len(fa)} vs {len(fb)}); compare needs the same scenario")
    notes += _flow_notes(fa, fb)
    notes += _link_notes(ia, ib)
    for key in ("duration_ns", "sample_interval_ns", "measure", "mss", "header_bytes"):
        if ia.get(key) != ib.get(key):
            notes.append(f"{key} differs between the two runs")
    for key in ("jitter", "pauses", "read_delay"):  # the rest of `host` (socket buffers) follows from the links and flows
        ha, hb = ({k: v for k, v in dict(ir.get("host") or {}).items() if k.startswith(key)} for ir in (ia, ib))
        if ha != hb:
            notes.append(f"host.{key} differs between the two runs")
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


def _read(path: str | Path) -> Run:
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise RecordError(f"{p}: not a run record directory (it is a file); "
                          "expected the directory `cclab run` wrote (with meta.json and manifest.json)")
    return record.read_run(p)


def allowed_out() -> str:
    return "expected a new directory, or an existing one outside every run record (e.g. compare/A-vs-B)"


def check_out(out: str | Path) -> Path:
    """``out`` if compare may write compare.json and its figures there; else :class:`RecordError` (one line).

    Refused: an existing file; a run record or a directory inside one (a record holds only what its run
    wrote, or it could no longer be overwritten); a sweep directory's ``runs/`` or anything inside it.
    """
    from cclab.store import sweep_part

    if str(out) == "":
        raise RecordError(f"--out '': an empty path; {allowed_out()}")
    out = Path(out)
    allowed = allowed_out()
    if out.is_symlink() and not out.exists() or out.exists() and not out.is_dir():
        raise RecordError(f"--out {out}: exists and is not a directory; {allowed}")
    rec = record.enclosing_record(out)
    if rec is not None:
        where = "is a run record" if rec == Path(os.path.normpath(out.absolute())) else f"lies inside the run record {rec}"
        raise RecordError(f"--out {out}: {where}; compare never writes into a run record — {allowed}")
    why = sweep_part(out)
    if why is not None:
        raise RecordError(f"--out {out}: {why}; {allowed}")
    # what compare writes there replaces only an earlier comparison's files, never a user's
    ours = _is_comparison(out / "compare.json")
    for name in ("compare.json", "compare.png", "compare.svg", "compare.pdf"):
        f = out / name
        if (f.exists() or f.is_symlink()) and not ours:
            raise RecordError(f"--out {out}: holds {name}, which is not from cclab compare; not overwritten — {allowed}")
    return out


def _is_comparison(path: Path) -> bool:
    """``path`` is a compare.json cclab wrote (a regular file with the keys of :meth:`Comparison.to_dict`)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and {"a", "b", "per_flow", "aggregate", "figures"} <= set(doc)


def compare(a_dir: str | Path, b_dir: str | Path, out: str | Path | None = None, formats: tuple[str, ...] = ("png",)) -> Comparison:
    """Load two run records and compare them; with ``out``, write compare.json and the figures there
    (a directory outside every run record: :func:`check_out`)."""
    c = compare_runs(_read(a_dir), _read(b_dir))
    if out is not None:
        out = check_out(out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RecordError(f"--out {out}: cannot create the directory ({exc.strerror or exc}); {allowed_out()}") from None
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
    from cclab.plot import auto_bin_s, bin_series

    # As the run's own figure (cclab.plot): means over bins (a 10 ms sample of in-order delivery
    # is a burst, not a rate), and a flow drawn only while it is active (the record's `active`).
    def interval_s(run: Run) -> float:
        ns = (run.ir.get("record") or {}).get("flows_interval_ns") or run.ir.get("sample_interval_ns") or 10_000_000
        return int(ns) / 1e9

    duration_s = max(float(r.link["time_s"].max()) if len(r.link) else 0.0 for r in (c.a, c.b))
    bin_s = max(auto_bin_s(duration_s, interval_s(r)) for r in (c.a, c.b))
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.1 * len(panels)), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (table, col, scale, ylabel) in zip(axes, panels):
        for run, style, which in ((c.a, "-", "a"), (c.b, "--", "b")):
            df = run.flows if table == "flows" else run.link
            if col not in df:
                continue
            if table == "flows":
                values = df[col].to_numpy(dtype=float)
                if "active" in df:
                    values = np.where(df["active"].to_numpy(dtype=bool), values, np.nan)
                binned = bin_series(df["time_s"].to_numpy(), values, bin_s, keys=df["flow_id"].to_numpy())
                ccas = df.groupby("flow_id")["cca"].first()
                for i, fid in enumerate(ccas.index):
                    g = binned[binned["key"] == fid]
                    ax.plot(g["t"], g["mean"] * scale, style, color=colors[i % len(colors)], lw=1,
                            label=f"flow {fid} ({ccas[fid]}) {c.label(which)}")  # fmt: skip
            else:  # a line per link (a topology's links kept apart, not averaged together)
                names = df["link"].astype(str).to_numpy() if "link" in df else np.full(len(df), "")
                binned = bin_series(df["time_s"].to_numpy(), df[col].to_numpy(dtype=float), bin_s, keys=names)
                many = len(set(names)) > 1
                for i, name in enumerate(dict.fromkeys(names)):
                    g = binned[binned["key"] == name]
                    color = colors[i % len(colors)] if many else ("k" if which == "a" else "tab:gray")
                    ax.plot(g["t"], g["mean"] * scale, style, color=color, lw=1,
                            label=f"{name} {c.label(which)}" if many else c.label(which))  # fmt: skip
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2, loc="best")
    axes[-2].legend(fontsize=7, loc="best")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(printable(f"{c.a.name}: {c.label('a')} (solid) vs {c.label('b')} (dashed); means over {bin_s:g} s "
                           "bins, each flow while active"), fontsize=10, parse_math=False)  # fmt: skip
    fig.tight_layout()
    files = []
    for fmt in formats:
        p = Path(f"{path}.{fmt}")
        with atomic_file(p) as fh:
            fig.savefig(fh, format=fmt, dpi=110)
        files.append(p)
    plt.close(fig)
    return files
