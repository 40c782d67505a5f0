"""``cclab doctor`` and ``cclab compare`` (registered into the main CLI by cli.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional

import typer

__all__ = ["register"]


def _fmt(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def _fmt_diff(r: Any, digits: int = 2) -> str:
    """B − A; of two percentages in percentage points ("+15.00 pp")."""
    if r.diff_unit == "pp" and not math.isnan(r.diff):
        return f"{r.diff:+.{digits}f} pp"
    return _fmt(r.diff, digits)


def doctor(
    clean: bool = typer.Option(False, "--clean", help="Remove leftovers of killed kernel runs (cclab namespaces and cclab-link processes)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    pauses: Optional[float] = typer.Option(None, "--pauses", metavar="SECONDS", show_default=False,
                                           help="Also measure for SECONDS how often and how long this machine's CPUs stall "
                                                "(a busy loop pinned to each CPU; run it on an idle machine), which tasks ran "
                                                "instead (as root, with tracefs), and the [host] pauses line that gives the "
                                                "simulator stalls of that rate and size."),
    read_latency: Optional[Path] = typer.Option(None, "--read-latency", metavar="SCENARIO", show_default=False,
                                                help="Also run SCENARIO once on the kernel (root) with the receiver timing its "
                                                     "own reads (oldest readable segment's arrival to the read's return), and "
                                                     "print their distribution and the [host] read_delay line that gives the "
                                                     "simulator's receivers the same latency."),
    seed: Optional[int] = typer.Option(None, "--seed", help="With --read-latency: the scenario's seed instead of its own."),
) -> None:
    """What this machine can run: root, netns, TUN, netem/tbf, iperf3, congestion controls, BPF struct_ops."""
    from rich.table import Table

    from cclab.cli import console, err_console, fail
    from cclab.kernel import machine, netns

    stalls = None
    if pauses is not None:
        from cclab.kernel import stalls as stalls_mod

        if not 0 < pauses <= stalls_mod.MAX_SECONDS:
            fail(f"--pauses: {pauses:g} is not a measuring time; expected seconds in (0, {stalls_mod.MAX_SECONDS:g}], e.g. --pauses 30")
        with console.status(f"measuring CPU stalls for {pauses:g} s (one busy loop per CPU)…"):
            try:
                stalls = stalls_mod.measure(pauses)
            except OSError as e:
                fail(f"--pauses: {e}")

    lat = None
    if read_latency is not None:
        from cclab.cli import user_errors
        from cclab.kernel import readlat

        if not machine.is_root():
            fail("--read-latency needs root (it is a kernel run)")
        with user_errors(), console.status(f"running {read_latency} on the kernel with the receiver timing its reads…"):
            lat = readlat.measure(read_latency, seed=seed)  # a refused scenario or a failed run: one error line
    elif seed is not None:
        fail("--seed: only with --read-latency SCENARIO")

    if clean:
        if not machine.is_root():
            fail("doctor --clean needs root (it removes network namespaces)")
        removed = netns.clean()
        ns, procs = removed["namespaces"], removed["processes"]
        console.print(f"removed {len(ns)} namespace(s){': ' + ', '.join(ns) if ns else ''}; "
                      f"killed {len(procs)} cclab-link process(es){': ' + ', '.join(map(str, procs)) if procs else ''}; "
                      f"removed {len(removed['workdirs'])} temporary run director(y/ies)")  # fmt: skip
    caps = machine.capabilities()
    if machine.is_root():
        caps["leftovers"] = netns.leftovers()
    if stalls is not None:
        caps["pauses"] = stalls
    if lat is not None:
        from cclab.kernel import readlat

        caps["read_latency"] = {**lat, "summary": readlat.summarize(lat)}
    if as_json:
        console.print_json(json.dumps(caps))
        return
    yes = lambda b: "[green]yes[/green]" if b else "[red]no[/red]"  # noqa: E731
    t = Table(title="cclab doctor", show_header=False)
    t.add_row("kernel", str(caps["kernel_release"]) + f" ({caps['cpus']} CPUs)")
    t.add_row("root", yes(caps["root"]))
    t.add_row("network namespaces", yes(caps["netns"]))
    t.add_row("TUN (/dev/net/tun)", yes(caps["tun"]))
    where = caps["cclab_link"] or ""
    where = "built into cclab" if where.endswith(" -m cclab._link") else where
    t.add_row("cclab-link emulator", f"{caps['cclab_link_version']} ({where})" if caps["cclab_link_version"] else "[red]not found[/red]")
    if "netem" in caps:
        t.add_row("netem qdisc", yes(caps["netem"]))
        t.add_row("tbf qdisc", yes(caps["tbf"]))
    t.add_row("iperf3", caps["iperf3"] or "[yellow]not installed[/yellow] (not needed: cclab-link sends and receives)")
    t.add_row("congestion controls", " ".join(caps["tcp_available_congestion_control"]) + f"  (default {caps['default_congestion_control']})")
    t.add_row("allowed to unprivileged", " ".join(caps["tcp_allowed_congestion_control"]))
    t.add_row("BPF struct_ops CC", yes(caps["bpf_struct_ops"]) + f" (kernel BTF: {'yes' if caps['btf'] else 'no'}, bpftool: {caps['bpftool'] or 'not installed'})")
    t.add_row("max emulated rate", f"{caps['max_rate_bps_mtu1500'] / 1e6:.0f} Mbit/s at MTU 1500, {caps['max_rate_bps_mtu9000'] / 1e6:.0f} at MTU 9000")
    steal = caps["host_steal_since_boot"]["steal_fraction"]
    steal_note = ("none (bare metal, or a VM whose host never took its CPUs)" if steal == 0 else f"{steal * 100:.2f} % of the CPU time since boot")
    if steal > machine.HOST_STEAL_LIMIT:
        steal_note = f"[yellow]{steal_note}[/yellow] — the host takes this VM's CPUs: expect some kernel runs to be flagged invalid (docs/kernel.md)"
    t.add_row("VM host steal", steal_note)
    left = caps.get("leftovers") or {}
    if left.get("namespaces") or left.get("processes"):
        t.add_row("leftovers", f"[yellow]{len(left['namespaces'])} namespace(s), {len(left['processes'])} process(es)[/yellow] — run cclab doctor --clean")
    t.add_row("kernel backend", "[green]ready[/green]" if caps["kernel_backend"] else "[red]unavailable[/red]: " + "; ".join(caps["why_not"]))
    console.print(t)
    if stalls is not None:
        _print_stalls(stalls, console)
    if lat is not None:
        _print_read_latency(lat, console)
    if not caps["kernel_backend"]:
        err_console.print("the sim backend works everywhere: cclab run FILE --backend sim")


def _print_stalls(st: dict[str, Any], console: Any) -> None:
    """The ``doctor --pauses`` table and the ``[host] pauses`` line."""
    from rich.table import Table

    from cclab.kernel.stalls import toml_line

    t = Table(title=f"CPU stalls longer than {st['threshold_ms']:g} ms in {st['seconds']:g} s")
    for col in ("CPU", "stalls", "per second", "time stalled", "median", "largest"):
        t.add_column(col, justify="left" if col == "CPU" else "right")
    rows = [*st["cpus"].items(), ("all", st["all"])]
    for name, r in rows:
        t.add_row(name, str(r["stalls"]), f"{r['per_second']:.2f}", f"{r['stalled_fraction'] * 100:.3f} %",
                  f"{r['median_ms']:.2f} ms" if r["stalls"] else "–", f"{r['largest_ms']:.2f} ms" if r["stalls"] else "–")  # fmt: skip
    console.print(t)
    _print_ran_instead(st.get("ran_instead"), console)
    if st["host_pauses"] is None:
        console.print("too few stalls (or one longer than 1 s) for a [host] pauses line; measure longer on an idle machine")
        return
    console.print("the simulator's hosts with these stalls (all CPUs together; docs/validation.md §4, \"Host pauses\"):")
    console.print("[host]", markup=False, highlight=False)
    console.print(toml_line(st["host_pauses"]), markup=False, highlight=False, soft_wrap=True)


def _print_read_latency(lat: dict[str, Any], console: Any) -> None:
    """The ``doctor --read-latency`` summary and the ``[host] read_delay`` line."""
    from cclab.kernel import readlat

    s = readlat.summarize(lat)
    us = lambda x: "–" if x is None else f"{x:g} µs"  # noqa: E731
    console.print(f"read latency of the receiving application ({lat['scenario']}; whole-run goodput "
                  f"{lat['goodput_bps'] / 1e6:.1f} Mbit/s): {s['reads']} reads, p50 {us(s.get('p50_us'))}, "
                  f"p90 {us(s.get('p90_us'))}, p99 {us(s.get('p99_us'))}, p99.9 {us(s.get('p99.9_us'))}, "
                  f"{s['per_million_over_1ms'] or 0:.0f} per million ≥ 1 ms (upper bin edges)", markup=False, highlight=False)  # fmt: skip
    if not lat["valid"]:
        from rich.markup import escape

        console.print("[yellow]the run was flagged invalid by the kernel backend's self-check:[/yellow] "
                      + escape("; ".join(lat["invalid_reasons"])) + " — measure again on an idle machine")  # fmt: skip
    if s["over_100ms"]:
        console.print(f"{s['over_100ms']} read(s) of 100 ms or more are left out of the line below")
    if not s["reads"]:
        console.print("no reads were timed (no data reached the receiver)")
        return
    console.print("the simulator's receivers with this latency (docs/validation.md §4, \"The receiving application's read latency\"):")
    console.print("[host]", markup=False, highlight=False)
    console.print(readlat.toml_line(lat), markup=False, highlight=False, soft_wrap=True)


def _print_ran_instead(ran: dict[str, Any] | None, console: Any, top: int = 8) -> None:
    """Which tasks the scheduler ran while the loops stalled (``doctor --pauses`` as root)."""
    from rich.table import Table

    if not ran:
        return
    if not ran["available"]:
        console.print(f"what ran during the stalls: not measured — {ran['why']}", markup=False, highlight=False)
        return
    t = Table(title="what ran during the stalls (the guest scheduler's switches away from the loops)")
    for col in ("task", "process", "stalls", "median", "time"):
        t.add_column(col, justify="left" if col in ("task", "process") else "right")
    rows = ran["tasks"]
    for r in rows[:top]:
        t.add_row(r["task"], r["process"] or "–", str(r["stalls"]), f"{r['median_ms']:.2f} ms", f"{r['stalled_ms']:.1f} ms")
    if len(rows) > top:
        rest = rows[top:]
        t.add_row(f"{len(rest)} other task(s)", "", str(sum(r["stalls"] for r in rest)), "", f"{sum(r['stalled_ms'] for r in rest):.1f} ms")
    ns = ran["no_switch"]
    if ns["stalls"]:
        t.add_row("no task switch", "interrupts, or the host took the vCPU", str(ns["stalls"]), f"{ns['median_ms']:.2f} ms", f"{ns['stalled_ms']:.1f} ms")
    console.print(t)


def compare_cmd(
    a: Path = typer.Argument(..., metavar="A", help="First run record (e.g. the kernel run).", show_default=False),
    b: Path = typer.Argument(..., metavar="B", help="Second run record of the same scenario (e.g. the sim run).", show_default=False),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Write compare.json and the overlaid figures here [default: compare/<A>-vs-<B>]; never into a run record."),
    svg: bool = typer.Option(False, "--svg", help="Also write SVG figures."),
    no_plot: bool = typer.Option(False, "--no-plot", help="Tables only."),
) -> None:
    """Compare two runs of the same scenario (any backends): per-flow and aggregate metrics side by side, differences, overlaid time series."""
    from rich.table import Table

    from cclab.cli import console, err_console, safe, user_errors
    from cclab.compare import compare

    with user_errors():
        # a str, not a Path: typer would make an empty --out '.', the working directory
        target = None if no_plot else (out if out is not None else Path("compare") / f"{a.name}-vs-{b.name}")
        c = compare(a, b, out=target, formats=("png", "svg") if svg else ("png",))
    for note in c.notes:
        err_console.print(f"[bold yellow]note:[/bold yellow] {safe(note)}", soft_wrap=True)
    la, lb = c.label("a"), c.label("b")
    t = Table(title=f"per flow — A = {la}, B = {lb}")
    for col in ("flow", "cca", "metric", "A", "B", "B − A", "rel"):
        t.add_column(col, justify="right" if col in ("A", "B", "B − A", "rel") else "left")
    for r in c.per_flow.itertuples():
        t.add_row(str(r.flow_id), str(r.cca), f"{r.metric} ({r.unit})", _fmt(r.a), _fmt(r.b), _fmt_diff(r),
                  "–" if math.isnan(r.rel_diff) else f"{r.rel_diff * 100:+.1f} %")  # fmt: skip
    console.print(t)
    t = Table(title="aggregate")
    for col in ("metric", "A", "B", "B − A", "rel"):
        t.add_column(col, justify="left" if col == "metric" else "right")
    for r in c.aggregate.itertuples():
        t.add_row(f"{r.metric} ({r.unit})" if r.unit else r.metric, _fmt(r.a, 3), _fmt(r.b, 3), _fmt_diff(r, 3),
                  "–" if math.isnan(r.rel_diff) else f"{r.rel_diff * 100:+.1f} %")  # fmt: skip
    console.print(t)
    for f in c.figures:
        console.print(f"figure: {f}")


def register(app: typer.Typer) -> None:
    """Add ``doctor`` and ``compare`` to the cclab CLI."""
    app.command("doctor")(doctor)
    app.command("compare")(compare_cmd)
