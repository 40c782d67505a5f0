"""What a scenario resolves to, as plain text (``cclab validate-scenario`` and ``cclab run
--dry-run``), and the number formats the CLI's tables share. Imports nothing heavy and not the
CLI framework: ``cclab._entry`` answers ``validate-scenario`` through it directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _fmt_ns(ns: Any, unit: str = "ms") -> str:
    """A duration in ms or s; the other unit where it reads better (a start offset of
    12 385 123 ns is "12.4 ms", not "0.0123851 s"), at most four significant digits."""
    if ns is None:
        return "–"
    if unit == "s" and 0 < ns < 1_000_000_000:
        unit = "ms"
    elif unit == "ms" and ns >= 10_000_000_000:
        unit = "s"
    return f"{ns / 1e6:.4g} ms" if unit == "ms" else f"{ns / 1e9:.4g} s"


def _qdisc_text(link: dict[str, Any]) -> str:
    """``fq_codel (target 5 ms, interval 100 ms, ecn)`` from the IR's ``link.qdisc``."""
    q = link.get("qdisc") or {"kind": link.get("aqm", "droptail")}
    parts = []
    for key, value in q.items():
        if key in ("kind", "mtu_bytes") or value is None:  # None: the other spelling was used (step's k)
            continue
        name = key.removesuffix("_ns").removesuffix("_bytes").removesuffix("_bps").removesuffix("_packets")
        if key.endswith("_packets"):
            parts.append(f"{name} {value} pkts")
        elif isinstance(value, bool):
            if value:
                parts.append(name)
        elif key.endswith("_ns"):
            parts.append(f"{name} {_fmt_ns(value)}")
        elif key.endswith("_bps"):
            parts.append(f"{name} {_fmt_rate(value)}")
        elif key.endswith("_bytes"):
            parts.append(f"{name} {value} B")
        else:
            parts.append(f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}")
    return q["kind"] + (f" ({', '.join(parts)})" if parts else "")


def _fmt_short_ns(ns: float) -> str:
    """A host delay: µs below a millisecond (``2.3 µs``), else :func:`_fmt_ns`."""
    return f"{ns / 1e3:.3g} µs" if ns < 1_000_000 else _fmt_ns(ns)


def _table_quantile(table: list[int], probs: list[int] | None, q: float) -> float:
    """The quantile ``q`` of a resolved host table (docs/ir.md ``host``: points evenly spaced in
    probability, or at ``probs`` in units of 2⁻³²), linear between points."""
    import bisect

    if probs is None:
        x = q * (len(table) - 1)
        i = min(int(x), len(table) - 2)
        return table[i] + (table[i + 1] - table[i]) * (x - i)
    target = q * 2**32
    j = min(max(bisect.bisect_left(probs, target), 1), len(probs) - 1)
    lo, hi = probs[j - 1], probs[j]
    return table[j] if hi == lo else table[j - 1] + (table[j] - table[j - 1]) * (target - lo) / (hi - lo)


def _host_text(host: dict[str, Any]) -> str | None:
    """``hosts: jitter p50 2.3 µs, p99 14 µs; …`` for the simulator's host models, None without any."""
    parts = []
    for key, name in (("jitter_ns", "jitter"), ("read_delay_ns", "read delay")):
        if host.get(key):
            table, probs = host[key], host.get(key.removesuffix("_ns") + "_p")
            parts.append(f"{name} p50 {_fmt_short_ns(_table_quantile(table, probs, 0.5))}, "
                         f"p99 {_fmt_short_ns(_table_quantile(table, probs, 0.99))}")  # fmt: skip
    if host.get("pauses"):
        gaps, durations = host["pauses"]["gaps_ns"], host["pauses"]["durations_ns"]
        parts.append(f"pauses: gap p50 {_fmt_short_ns(_table_quantile(gaps, None, 0.5))}, length p50 "
                     f"{_fmt_short_ns(_table_quantile(durations, None, 0.5))}, p99 "
                     f"{_fmt_short_ns(_table_quantile(durations, None, 0.99))}")  # fmt: skip
    return "  hosts: " + "; ".join(parts) if parts else None


def _loss_text(loss: dict[str, Any]) -> str:
    """``0.01`` for random loss, ``gilbert_elliott (p 0.01, r 0.3, h 0, k 1)`` for a model with parameters."""
    if loss["kind"] == "bernoulli":
        return f"{loss.get('p', 0):g}"
    params = [f"{k} {v:g}" for k, v in loss.items() if k != "kind" and isinstance(v, (int, float))]
    return loss["kind"] + (f" ({', '.join(params)})" if params else "")


def _fmt_rate(bps: Any) -> str:
    if bps is None:
        return "–"
    for div, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if bps >= div:
            return f"{bps / div:g} {unit}"
    return f"{bps:g} bit/s"


def _plain_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Columns padded to their widest cell (plain text: validate-scenario stays clear of rich's import)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [headers, *rows]]


def describe_ir(ir: dict[str, Any], source: str) -> list[str]:
    """What a scenario resolves to, as plain lines: link, run, resource estimate, flow groups
    (``validate-scenario`` and ``run --dry-run``). User text is made printable."""
    from cclab import limits
    from cclab.errors import printable
    from cclab.resolve import buffer_bytes_for_bdp, ir_hash, link_field

    m = ir["measure"]
    est = limits.estimate(ir)
    lines = [
        f"{printable(source)}: {printable(ir['name'])} (IR hash {ir_hash(ir)[:8]})",
        f"  duration {_fmt_ns(ir['duration_ns'], 's')}, seed {ir['seed']}, samples every "
        f"{_fmt_ns(ir['sample_interval_ns'])}, measure {_fmt_ns(m['from_ns'], 's')}–{_fmt_ns(m['to_ns'], 's')}",
    ]
    for link in ir["links"]:
        cap = link["capacity"]
        rate = cap.get("rate_bps")
        capacity = _fmt_rate(rate) if cap["kind"] == "constant" else f"trace {printable(Path(cap.get('path', '')).name)}"
        buf = link["buffer"]
        crossing = [f["rtt_ns"] for f in ir["flows"] if link["name"] in f["path"] or link["name"] in f["ack_path"]]
        min_rtt = min(crossing or [f["rtt_ns"] for f in ir["flows"]])
        buf_text = " + ".join(x for x in (f"{buf['bytes']} B" if buf.get("bytes") else "",
                                           f"{buf['packets']} pkts" if buf.get("packets") else "") if x)  # fmt: skip
        if buf.get("bytes") and rate:  # the BDP the scenario's "bdp" buffers use (cclab.resolve)
            buf_text += f" ({buf['bytes'] / buffer_bytes_for_bdp(1, rate, min_rtt):.2f} BDP at {min_rtt / 1e6:g} ms)"
        loss_text = _loss_text(link["loss"])
        policer = link.get("policer")
        policer_text = f", policer {_fmt_rate(policer['rate_bps'])} burst {policer['burst_bytes']} B" if policer else ""
        field = link_field(ir, link)
        where = "" if field == "link" else f" {printable(link['from'])} → {printable(link['to'])}"
        lines.append(f"  {printable(field)}{where}: {capacity}, delay {_fmt_ns(link['delay_ns'])}, buffer "
                     f"{buf_text or '–'}, loss {loss_text}, qdisc {_qdisc_text(link)}{policer_text}"
                     + (f", {len(link['schedule'])} scheduled change(s)" if link.get("schedule") else ""))
    host = _host_text(ir.get("host") or {})
    if host is not None:
        lines.append(host)
    lines += [
        f"  estimate: {est.summary()}"
        + (" (above the limits: cclab run refuses it without --allow-large)" if est.over() else ""),
        f"  {len(ir['flows'])} flow(s):",
    ]
    topology = len(ir["links"]) > 1 or any(f["ack_path"] for f in ir["flows"])
    rows = []
    groups: dict[int, list[dict[str, Any]]] = {}
    for f in ir["flows"]:
        groups.setdefault(int(f["group"]), []).append(f)
    for g, fl in groups.items():
        first, last = fl[0], fl[-1]
        params = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in (first.get("cca_params") or {}).items())
        ids = str(first["id"]) if len(fl) == 1 else f"{first['id']}–{last['id']}"
        start = _fmt_ns(first["start_ns"], "s") + ("" if len(fl) == 1 else f" … {_fmt_ns(last['start_ns'], 's')}")
        paths = [printable(" → ".join(first["path"])), printable(" → ".join(first["ack_path"])) or "–"] if topology else []
        rows.append([str(g), ids, first["cca"], params or "–", _fmt_ns(first["rtt_ns"]), start,
                     _fmt_ns(first.get("stop_ns"), "s"), str(first["bytes"]) if first.get("bytes") else "–",
                     "yes" if first.get("ecn") else "no", *paths])  # fmt: skip
    lines += ["    " + line for line in _plain_table(
        ["group", "flows", "cca", "params", "RTT", "start", "stop", "bytes", "ECN"] + (["path", "ack path"] if topology else []),
        rows)]  # fmt: skip
    return lines
