"""What `cclab parity` prints and writes: the table, parity.json/parquet, parity.html."""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from cclab.fsutil import atomic_file, atomic_write_text
from cclab.parity.checks import METRICS, TOLERANCES
from cclab.parity.matrix import DROPPED, SIM_HOST, Case, estimated_wall_s
from cclab.parity.run import CaseResult, ParityOutcome

__all__ = ["host_text", "steal_text", "list_lines", "list_footer", "markdown", "results_frame", "results_table", "spread", "write_html", "write_markdown",
           "write_results"]

JSON_FILE, PARQUET_FILE, HTML_FILE, MD_FILE = "parity.json", "parity.parquet", "parity.html", "parity.md"


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float) and math.isinf(x):
        return "never" if x > 0 else "-inf"
    x = float(x)
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _per_seed(c: Any) -> str:
    """Each side's values per seed — "sim 23.1–64 (20), kernel 20.6, 20.8, 31.3" (a side of more than
    five seeds as its range and count) — or "" when each side has one seed."""
    if len(c.sim_values) < 2 and len(c.kernel_values) < 2:
        return ""

    def side(values: tuple[float, ...]) -> str:
        if len(values) <= 5 or any(math.isnan(v) for v in values):
            return ", ".join(_fmt(v) for v in values)
        return f"{_fmt(min(values))}–{_fmt(max(values))} ({len(values)})"

    return f"sim {side(c.sim_values)}, kernel {side(c.kernel_values)}"


def spread(c: Any) -> str:
    """A check's values per seed for a report, "per seed: sim …, kernel …" (:func:`_per_seed`), or ""
    when each side has one seed: whether a difference is larger than either side's own seed-to-seed spread."""
    body = _per_seed(c)
    return f"per seed: {body}" if body else ""


def _diff(c: Any) -> str:
    if c.status == "info" and (math.isnan(c.diff) if isinstance(c.diff, float) else False):
        return "–"
    scale = max([1.0] + [abs(v) for v in (c.sim, c.kernel) if isinstance(v, float) and math.isfinite(v)])
    if isinstance(c.diff, float) and abs(c.diff) <= 1e-9 * scale:  # rounding noise, e.g. 1.8e-14
        return "0"
    text = _fmt(c.diff)
    if text not in ("–", "0") and isinstance(c.diff, float) and not text.startswith("-") and math.isfinite(c.diff):
        text = "+" + text
    if isinstance(c.rel_diff, float) and math.isfinite(c.rel_diff):
        text += f" ({c.rel_diff * 100:+.0f} %)"
    return text


def _tol(c: Any) -> str:
    if not c.tolerance:
        return "–"
    if isinstance(c.allowed, float) and math.isfinite(c.allowed):
        return f"±{_fmt(c.allowed)} ({c.tolerance})"
    return c.tolerance


_STATUS_STYLE = {"pass": "green", "fail": "bold red", "info": "dim", "invalid": "yellow", "error": "bold red"}


def results_table(outcome: ParityOutcome):  # -> rich.table.Table
    """One row per check (invalid and failed cases: one row with the reason)."""
    from rich.table import Table

    t = Table(title=f"cclab parity — {len(outcome.results)} case(s), sim vs kernel", title_justify="left")
    for name, justify in (("case", "left"), ("metric", "left"), ("sim", "right"), ("kernel", "right"),
                          ("difference", "right"), ("tolerance", "right"), ("result", "left")):  # fmt: skip
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in outcome.results:
        if r.status in ("invalid", "error"):
            # the first words of each reason: a whole one squeezed every column to a few characters
            # (`problem_lines` prints them in full under the table)
            reason = "; ".join(_short(x) for x in r.invalid_reasons) if r.status == "invalid" else _short(r.error or "")
            style = _STATUS_STYLE[r.status]
            t.add_row(r.case.id, reason, "", "", "", "", f"[{style}]{r.status.upper()}[/{style}]", end_section=True)
            continue
        for j, c in enumerate(r.checks):
            style = _STATUS_STYLE[c.status]
            t.add_row(
                r.case.id if j == 0 else "", f"{c.metric} ({c.unit})", _fmt(c.sim), _fmt(c.kernel), _diff(c), _tol(c),
                f"[{style}]{c.status}[/{style}]" + (f" {c.note}" if c.note else ""), end_section=j == len(r.checks) - 1,
            )  # fmt: skip
    return t


def _short(reason: str, limit: int = 60) -> str:
    """A reason up to its first parenthesis, at most ``limit`` characters."""
    head = reason.split(" (", 1)[0]
    return head if len(head) <= limit else head[: limit - 1] + "…"


def problem_lines(outcome: ParityOutcome) -> list[str]:
    """Each invalid or failed-to-run case's reasons in full, and each failing check's values per seed
    (:func:`spread`), one line each (printed under the table)."""
    lines = []
    for r in outcome.results:
        if r.status == "invalid":
            lines += [f"INVALID {r.case.id}: {x}" for x in r.invalid_reasons]
        elif r.status == "error":
            lines.append(f"ERROR {r.case.id}: {r.error}")
        else:
            lines += [f"FAIL {r.case.id}, {c.metric}: {text}" for c in r.checks if c.status == "fail" and (text := spread(c))]
    return lines


def describe_host(host: dict[str, Any]) -> str:
    """A ``[host]`` of the simulator side in words: ``jitter median 2.3us, p99 14us; read_delay
    histogram of 809764 values in 10us bins (p50 20–30us, p99 110–120us, 70 per million ≥ 1 ms)``."""
    from cclab.jitter import histogram_summary
    from cclab.units import parse_duration

    parts = []
    for key, spec in host.items():
        h = spec.get("histogram") if isinstance(spec, dict) else None
        if h is None:
            parts.append(f"{key} " + (", ".join(f"{k} {v}" for k, v in spec.items()) if isinstance(spec, dict) else str(spec)))
            continue
        width_ns = parse_duration(h["bin"])
        s = histogram_summary(h["counts"], width_ns)
        w = width_ns / 1e3
        ranges = {q: "?" if i is None else f"{i * w:g}–{(i + 1) * w:g}us" for q, i in s["bins"].items()}
        parts.append(f"{key} histogram of {s['total']} values in {h['bin']} bins (p50 {ranges[0.5]}, p99 {ranges[0.99]}, "
                     f"{s['per_million_over_1ms']:.0f} per million ≥ 1 ms)")  # fmt: skip
    return "; ".join(parts)


def host_text(outcome: ParityOutcome) -> str:
    """Which hosts the simulator side had: the jitter and read latency it was given, or punctual."""
    host = outcome.sim_host
    if not host:
        return "simulator hosts punctual (--punctual)"
    return f"simulator hosts with [host] {describe_host(host)} (the kernel hosts' measured timing; --punctual for none)"


def steal_text(outcome: ParityOutcome) -> str | None:
    """The VM host's steal time over the kernel runs, in one line; None when no record has it."""
    st = outcome.kernel_steal()
    if st is None:
        return None
    text = (f"host steal time over {st['runs']} kernel run(s): mean {st['mean_fraction'] * 100:.2f} %, "
            f"largest {st['max_fraction'] * 100:.1f} % of the CPU time")  # fmt: skip
    if st["runs_over"]:
        text += (f"; {st['runs_over']} run(s) above {st['over_fraction'] * 100:g} % — the VM's host took its CPUs "
                 "during them, which makes kernel results noisier (docs/validation.md §4, \"Validity\")")  # fmt: skip
    return text


def summary_line(outcome: ParityOutcome) -> str:
    n = len(outcome.results)
    checks = [c for r in outcome.results for c in r.checks if c.status in ("pass", "fail")]
    failed = sum(1 for c in checks if c.status == "fail")
    return (f"{n} case(s): {outcome.count('pass')} passed, {outcome.count('fail')} failed, "
            f"{outcome.count('invalid')} invalid, {outcome.count('error')} error(s); "
            f"{len(checks) - failed}/{len(checks)} checks within tolerance; "
            f"{outcome.ran} run(s) made, {outcome.reused} record(s) reused")  # fmt: skip


# ---------------------------------------------------------------- machine-readable results


def results_frame(outcome: ParityOutcome) -> pd.DataFrame:
    """One row per check; invalid and error cases one row each (metric empty)."""
    rows: list[dict[str, Any]] = []
    for r in outcome.results:
        base = {"case": r.case.id, "family": r.case.family, "case_status": r.status, "seeds": len(r.case.seeds),
                "sim_seeds": len(r.case.sim_seeds)}
        if not r.checks:
            rows.append({**base, "metric": None, "kind": None, "unit": None, "sim": math.nan, "kernel": math.nan,
                         "diff": math.nan, "rel_diff": math.nan, "allowed": math.nan, "tolerance": None,
                         "status": r.status, "note": "; ".join(r.invalid_reasons) or r.error})  # fmt: skip
        for c in r.checks:
            rows.append({**base, "metric": c.metric, "kind": c.kind, "unit": c.unit, "sim": c.sim, "kernel": c.kernel,
                         "diff": c.diff, "rel_diff": c.rel_diff, "allowed": c.allowed, "tolerance": c.tolerance,
                         "status": c.status, "note": c.note, **_extremes("sim", c.sim_values),
                         **_extremes("kernel", c.kernel_values)})  # fmt: skip
    return pd.DataFrame(rows)


def _extremes(side: str, values: tuple[float, ...]) -> dict[str, float]:
    """``{side}_min`` and ``{side}_max`` of one side's per-seed values (NaN if none, or if any is missing)."""
    ok = bool(values) and not any(math.isnan(v) for v in values)
    return {f"{side}_min": min(values) if ok else math.nan, f"{side}_max": max(values) if ok else math.nan}


def _case_dict(r: CaseResult) -> dict[str, Any]:
    return {
        "id": r.case.id,
        "family": r.case.family,
        "status": r.status,
        "why": r.case.why,
        "scenario": r.case.scenario,
        "description": r.case.describe(),
        "seeds": list(r.case.seeds),
        "sim_seeds": list(r.case.sim_seeds),
        "metrics": list(r.case.metrics),
        "invalid_reasons": r.invalid_reasons,
        "error": r.error,
        "records": {"sim": r.sim_records, "kernel": r.kernel_records},
        "kernel_attempts": r.kernel_attempts,
        "checks": [c.as_dict() for c in r.checks],
    }


def write_results(outcome: ParityOutcome, selection: dict[str, Any]) -> tuple[Path, Path]:
    """parity.json (everything) and parity.parquet (one row per check) in the output directory."""
    from cclab.metrics import json_safe

    doc = {
        "started_at": outcome.started_at,
        "wall_s": outcome.wall_s,
        "selection": selection,
        "engines": outcome.engines,
        "sim_host": outcome.sim_host,
        "kernel_steal": outcome.kernel_steal(),
        "exit_code": outcome.exit_code,
        "counts": {s: outcome.count(s) for s in ("pass", "fail", "invalid", "error")},
        "tolerances": {k: {"rel": t.rel, "abs": t.abs, "unit": _unit_of(k), "text": t.text, "reason": t.reason}
                       for k, t in TOLERANCES.items()},  # fmt: skip
        "cases": [_case_dict(r) for r in outcome.results],
    }
    jpath = outcome.out_dir / JSON_FILE
    atomic_write_text(jpath, json.dumps(json_safe(doc), indent=1, allow_nan=False) + "\n")
    ppath = outcome.out_dir / PARQUET_FILE
    with atomic_file(ppath) as fh:
        results_frame(outcome).to_parquet(fh, index=False)
    return jpath, ppath


def _unit_of(kind: str) -> str:
    return next((m.unit for m in METRICS.values() if m.tolerance == kind), "")


# ---------------------------------------------------------------- HTML

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; } th { background: #f4f4f4; }
td.l, th.l { text-align: left; } .fail { color: #b00; font-weight: bold; } .pass { color: #080; }
.invalid { color: #a60; } .info { color: #777; } .sub { color: #666; }
figure img { max-width: 100%; border: 1px solid #eee; }
"""


def _e(s: Any) -> str:
    return html.escape(str(s), quote=True)


def _checks_html(checks: list[Any]) -> str:
    head = "".join(f"<th{' class=l' if h in ('metric', 'result', 'per seed') else ''}>{h}</th>"
                   for h in ("metric", "sim", "kernel", "difference", "tolerance", "result", "per seed"))  # fmt: skip
    rows = "".join(
        f"<tr><td class=l>{_e(c.metric)} ({_e(c.unit)})</td><td>{_fmt(c.sim)}</td><td>{_fmt(c.kernel)}</td>"
        f"<td>{_e(_diff(c))}</td><td>{_e(_tol(c))}</td><td class='l {c.status}'>{_e(c.status)}"
        f"{(' — ' + _e(c.note)) if c.note else ''}</td><td class=l>{_e(_per_seed(c))}</td></tr>"
        for c in checks
    )
    return f"<table><tr>{head}</tr>{rows}</table>"


def _figure(r: CaseResult, tmp: Path) -> str:
    """The overlaid time series (kernel solid, sim dashed) of the case's first seed, as an inline PNG."""
    from cclab.compare import compare_runs, plot_comparison
    from cclab.record import read_run

    try:
        c = compare_runs(read_run(r.kernel_records[0]), read_run(r.sim_records[0]))
        png = plot_comparison(c, tmp / r.case.id.replace("/", "--"), formats=("png",))[0]
    except Exception as exc:  # noqa: BLE001 — the page still lists the case
        return f"<p class=fail>figure not drawn: {_e(type(exc).__name__)}: {_e(exc)}</p>"
    uri = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
    seed = f" (seed {r.case.seeds[0]} of {len(r.case.seeds)})" if len(r.case.seeds) > 1 else ""
    return (f"<figure><img alt=\"{_e(r.case.id)}\" src=\"{uri}\"><figcaption>{_e(r.case.id)}{seed}: "
            f"kernel solid, simulator dashed; measure window from {_e(r.case.scenario['measure']['from'])}"
            "</figcaption></figure>")  # fmt: skip


def write_html(outcome: ParityOutcome, selection: dict[str, Any]) -> Path:
    """parity.html: every failing case with its checks and overlaid time series; invalid cases; the full table."""
    failing = [r for r in outcome.results if r.status == "fail"]
    invalid = [r for r in outcome.results if r.status in ("invalid", "error")]
    parts = [
        f"<h1>cclab parity: simulator vs kernel</h1><p class=sub>{_e(summary_line(outcome))}. "
        f"Wall time {outcome.wall_s / 60:.1f} min. Started {_e(outcome.started_at)}; selection {_e(json.dumps(selection))}.</p>",
        f"<p class=sub>Engines: sim {_e(outcome.engines.get('sim'))}; kernel {_e(outcome.engines.get('kernel'))}; "
        f"{_e(host_text(outcome))}. "
        + (f"{_e(steal_text(outcome))}. " if steal_text(outcome) else "")
        + "A check passes when |sim − kernel| ≤ max(rel × |kernel|, abs) (docs/validation.md, “Parity”).</p>",
        f"<h2>Failing cases ({len(failing)})</h2>",
    ]
    if not failing:
        parts.append("<p>None.</p>")
    with tempfile.TemporaryDirectory(prefix="cclab-parity-") as tmpdir:
        for r in failing:
            parts.append(f"<h3 id=\"{_e(r.case.id)}\">{_e(r.case.id)}</h3><p class=sub>{_e(r.case.describe())}. "
                         f"{_e(r.case.why)}.</p>")  # fmt: skip
            parts.append(_checks_html(r.checks))
            parts.append(_figure(r, Path(tmpdir)))
    parts.append(f"<h2>Invalid or failed runs ({len(invalid)})</h2>")
    if not invalid:
        parts.append("<p>None.</p>")
    for r in invalid:
        why = "; ".join(r.invalid_reasons) if r.status == "invalid" else r.error
        parts.append(f"<p><b>{_e(r.case.id)}</b> <span class={r.status}>{r.status.upper()}</span>: {_e(why)}</p>")
    parts.append("<h2>All cases</h2>")
    for r in outcome.results:
        if r.status in ("invalid", "error"):
            continue
        parts.append(f"<h4>{_e(r.case.id)} <span class={r.status}>{r.status}</span></h4>{_checks_html(r.checks)}")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>cclab parity</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(parts)
            + f"\n<p class=sub>Generated {_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}.</p>"
            "</body></html>\n")  # fmt: skip
    path = outcome.out_dir / HTML_FILE
    atomic_write_text(path, page)
    return path


# ---------------------------------------------------------------- --list


FAMILIES = {
    "single": "one flow alone: {cubic, bbr, reno} × {20, 100, 500} Mbit/s × {10, 50, 200} ms × 4 buffers",
    "loss": "random loss on 100 Mbit/s × 100 ms, 1 BDP",
    "step": "a capacity step at 10 s, 40 ms, 100 KB buffer",
    "startup": "BBR's STARTUP",
    "mix": "algorithms sharing the link",
    "rtt": "BBR flows of different RTTs sharing the link",
    "qdisc": "CoDel and FQ-CoDel (the emulator runs the simulator's qdisc code) under real TCP, without and with ECN",
}


def list_lines(cases: list[Case]) -> list[str]:
    """The matrix as plain text: per case its id, quick marker, scenario, metrics and why."""
    lines: list[str] = []
    family = None
    for c in cases:
        if c.family != family:
            family = c.family
            lines += ["", f"== {family}: {FAMILIES.get(family, '')}"]
        lines.append(f"{c.id}{'  [quick]' if c.quick else ''}")
        lines.append(f"    scenario: {c.describe()}")
        lines.append(f"    metrics:  {', '.join(c.metrics)}")
        lines.append(f"    why:      {c.why}" + (f" ({c.note})" if c.note else ""))
    return lines


def list_footer(cases: list[Case], all_cases: list[Case] | tuple[Case, ...], quick: list[Case]) -> list[str]:
    lines = []
    runs, sim_runs = sum(len(c.seeds) for c in cases), sum(len(c.sim_seeds) for c in cases)
    lines.append(f"{len(cases)} case(s), {runs} kernel run(s) and {sim_runs} simulator run(s); estimated wall time from scratch "
                 f"{estimated_wall_s(cases) / 60:.0f} min (kernel runs one at a time)")  # fmt: skip
    lines.append(f"full matrix: {len(all_cases)} cases, ~{estimated_wall_s(all_cases) / 60:.0f} min; "
                 f"--quick: {len(quick)} cases, ~{estimated_wall_s(quick) / 60:.0f} min")  # fmt: skip
    if DROPPED:
        lines.append("left out of the matrix:")
        lines += [f"  {what}: {why}" for what, why in DROPPED]
    else:
        lines.append("left out of the matrix: nothing (the emulator carries every combination; "
                     "500 Mbit/s at MTU 1500 is its measured sustained rate)")  # fmt: skip
    lines.append(f"simulator hosts: [host] {describe_host(SIM_HOST)} (the kernel hosts' measured timing; --punctual: none)")
    lines.append("tolerances (|sim − kernel| ≤ max(rel × |kernel|, abs)): "
                 + "; ".join(f"{k} {t.text}" for k, t in TOLERANCES.items()))  # fmt: skip
    return lines


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(outcome: ParityOutcome) -> str:
    """One Markdown table row per case — its result and every decisive check, sim vs kernel (failing checks
    in bold; `info` metrics left out) — headed by the counts, the engines and the date: for reports and docs."""
    lines = [
        f"{summary_line(outcome)}",
        "",
        f"Started {outcome.started_at or '?'}; simulator {outcome.engines.get('sim', '?')}; "
        f"{outcome.engines.get('kernel', '?')}; {host_text(outcome)}"
        + (f"; {steal_text(outcome)}." if steal_text(outcome) else "."),
        "",
        "| case | result | sim vs kernel (failing checks in bold) |",
        "|---|---|---|",
    ]
    for r in outcome.results:
        if r.status in ("invalid", "error"):
            detail = "; ".join(r.invalid_reasons) if r.status == "invalid" else r.error
        else:
            parts = []
            for c in r.checks:
                if c.status not in ("pass", "fail"):
                    continue
                text = f"{c.metric} {_fmt(c.sim)} vs {_fmt(c.kernel)}{(' ' + c.unit) if c.unit else ''}"
                if c.status == "fail":
                    per_seed = spread(c)
                    text = f"**{text}**" + (f" ({per_seed})" if per_seed else "")
                parts.append(text)
            detail = "; ".join(parts)
        result = "pass" if r.status == "pass" else f"**{r.status.upper()}**"
        lines.append(f"| `{r.case.id}` | {result} | {_md_cell(detail)} |")
    return "\n".join(lines) + "\n"


def write_markdown(outcome: ParityOutcome) -> Path:
    """parity.md in the output directory (see :func:`markdown`)."""
    from cclab.store import atomic_write_text

    path = outcome.out_dir / MD_FILE
    atomic_write_text(path, markdown(outcome))
    return path
