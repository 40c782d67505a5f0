"""The ``cclab`` command line (typer + rich).

    cclab run FILE [--out DIR] [--backend sim|kernel] [--seed N] [--svg] [--no-plot] [--overwrite]
              [--dry-run] [--allow-large]
    cclab validate-scenario FILE
    cclab bench [--quick] [--only NAME] [--json FILE] [--vs-ns3]
    cclab version

plus ``doctor``/``compare`` (:mod:`cclab.cli_kernel`), ``sweep``/``table``/
``plot``/``report``/``reproduce`` (:mod:`cclab.cli_sweep`) and ``parity``
(:mod:`cclab.cli_parity`) when installed.

Bad input — a missing file, a wrong unit, an unknown option, an existing
record — is one red ``error: …`` line on stderr and exit code 2, never a
traceback. Anything else is a bug and keeps its traceback.

Start-up is kept short: this module imports only typer and cclab's light
modules; rich, pandas, pyarrow, matplotlib, numpy, Dask and the engine are
imported by the commands that use them (``cclab --version`` and
``validate-scenario`` load none of the heavy ones; ``tests/test_startup.py``).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperGroup

try:  # typer >= 0.24 vendors click as typer._click
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover - older typer on top of click
    from click import exceptions as click_exc

from cclab.describe import _fmt_ns, _fmt_rate, describe_ir
from cclab.errors import MAX_FIELD, ScenarioError, clip

__all__ = ["app", "console", "err_console", "fail", "safe", "scenario_warnings", "user_errors"]


class _LazyConsole:
    """A ``rich.console.Console`` made on first use (importing rich costs start-up time)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Any = None

    def _real(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        # the console's own settings (``console.width = …``) go to the console; before, they landed
        # on this wrapper and did nothing (parity's table stayed 80 columns wide in a log)
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._real(), name, value)


console: Any = _LazyConsole(highlight=False)
err_console: Any = _LazyConsole(stderr=True, highlight=False)

#: Modules whose exception classes mean "bad input" (with ScenarioError and OSError), shown as one line
#: (exit 2). They are looked up only if their module is loaded: an exception of a module never
#: imported cannot have been raised, and importing it (pandas, …) would cost start-up time.
_USER_ERROR_CLASSES = (("cclab.record_dir", "RecordError"), ("cclab.record", "RecordError"),
                       ("cclab.backends", "BackendError"))


def user_error_types() -> tuple[type[BaseException], ...]:
    """The exceptions that mean "bad input": ScenarioError, OSError, RecordError, BackendError."""
    found: list[type[BaseException]] = [ScenarioError, OSError]
    for module, name in _USER_ERROR_CLASSES:
        loaded = sys.modules.get(module)
        if loaded is not None and hasattr(loaded, name):
            found.append(getattr(loaded, name))
    return tuple(found)


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` in red on one line and exit with ``code``."""
    err_console.print(f"[bold red]error:[/bold red] {_one_line(message)}", soft_wrap=True, markup=True)
    raise typer.Exit(code)


def _one_line(message: str) -> str:
    from cclab.errors import clip

    return safe(clip(" ".join(str(message).split()), 2000))


def safe(text: Any) -> str:
    """A user-given string (scenario name, path, error text) ready for rich: markup such as ``[/]``
    and terminal control characters (escape sequences, carriage returns) are escaped."""
    from rich.markup import escape

    from cclab.errors import printable

    return escape(printable(str(text)))


@contextlib.contextmanager
def scenario_warnings() -> Iterator[None]:
    """Print scenario warnings (:class:`cclab.errors.ScenarioWarning`) as one ``warning:`` line
    each on stderr, each distinct message once."""
    import warnings

    from cclab.errors import ScenarioWarning

    shown: set[str] = set()
    with warnings.catch_warnings():
        original = warnings.showwarning

        def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
            if not issubclass(category, ScenarioWarning):
                original(message, category, *args, **kwargs)
            elif str(message) not in shown:
                shown.add(str(message))
                err_console.print(f"[bold yellow]warning:[/bold yellow] {safe(str(message))}", soft_wrap=True)

        warnings.showwarning = show
        warnings.simplefilter("always", ScenarioWarning)
        yield


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn the known bad-input exceptions into :func:`fail`, and print scenario warnings
    (:class:`cclab.errors.ScenarioWarning`) as one ``warning:`` line each."""
    try:
        with scenario_warnings():
            yield
    except Exception as exc:
        if not isinstance(exc, user_error_types()):
            raise
        if isinstance(exc, OSError) and not isinstance(exc, FileExistsError) and exc.strerror:
            # the path clipped, so that a very long one cannot push the reason out of the line
            where = f"{clip(str(exc.filename), 2 * MAX_FIELD)}: " if exc.filename else ""
            fail(f"{where}{exc.strerror}")
        fail(str(exc))


class _OneLineErrors(TyperGroup):
    """Usage errors (unknown option, missing argument, bad integer) as one ``error:`` line, exit 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        standalone = kwargs.pop("standalone_mode", True)
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)
        except click_exc.NoArgsIsHelpError as exc:
            if not standalone:
                raise
            sys.exit(0)  # typer has printed the help already
        except click_exc.ClickException as exc:
            if not standalone:
                raise
            hint = f" (see: {exc.ctx.command_path} --help)" if getattr(exc, "ctx", None) else ""
            err_console.print(f"[bold red]error:[/bold red] {_one_line(exc.format_message())}{hint}", soft_wrap=True)
            sys.exit(2)
        except typer.Abort:
            if not standalone:
                raise
            err_console.print("aborted")
            sys.exit(1)
        if not standalone:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    cls=_OneLineErrors,
    name="cclab",
    help="A congestion-control lab: one scenario file, a deterministic simulator and the real Linux stacks.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    # Help text is plain text: with rich markup, "[axes]" or "[default: …]" in a help string vanished as a
    # markup tag ("TOML: base, trials, , "). tests/test_cli_help.py checks every help string appears as written.
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,
)


def _print_version(value: bool) -> None:
    if value:
        from cclab import __version__

        typer.echo(f"cclab {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", "-V", callback=_print_version, is_eager=True,
                                 help="Print cclab's version and exit (cclab version: also the engine's)."),
) -> None:
    """A congestion-control lab: one scenario file, a deterministic simulator and the real Linux stacks."""


# --------------------------------------------------------------------------
# run


def _mbps(x: Any) -> str:
    return "–" if x is None else f"{x / 1e6:.2f}"


def _pct(x: Any, digits: int = 1) -> str:
    return "–" if x is None else f"{100 * x:.{digits}f}"


def _num(x: Any, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def flows_table(summary: dict[str, Any]) -> Table:
    """Per-flow metrics over the measure window (finite flows add their completion time)."""
    from rich import box
    from rich.table import Table
    t = Table(title="flows (measure window)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    flows = summary.get("per_flow", [])
    finite = any(f.get("fct_s") is not None for f in flows)
    columns = [("flow", "right"), ("cca", "left"), ("base\nRTT ms", "right"), ("goodput\nMbit/s", "right"),
               ("share\n%", "right"), ("retrans\n% sent", "right"), ("RTT\np50 ms", "right"), ("RTT\np95 ms", "right")]
    if finite:
        columns += [("FCT\ns", "right"), ("slow-\ndown", "right")]
    for name, justify in columns:
        t.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for f in flows:
        row = [str(f["flow_id"]), f["cca"], _num(f.get("rtt_ms"), 1), _mbps(f.get("goodput_bps")), _pct(f.get("share")),
               _pct(f.get("retrans_rate"), 2), _num(f.get("rtt_ms_p50")), _num(f.get("rtt_ms_p95"))]  # fmt: skip
        if finite:
            row += [_num(f.get("fct_s"), 3), _num(f.get("slowdown"), 2)]
        t.add_row(*row)
    return t


def aggregate_table(summary: dict[str, Any]) -> Table:
    """Aggregate and per-algorithm metrics over the measure window."""
    from rich.table import Table
    agg = summary.get("aggregate", {})
    w = summary.get("window", {})
    t = Table(title=f"aggregate ({_num(w.get('from_s'), 1)}–{_num(w.get('to_s'), 1)} s)", title_justify="left",
              show_header=False)  # fmt: skip
    t.add_column("metric")
    t.add_column("value", justify="right")
    drops = agg.get("drops") or {}
    t.add_row("total goodput", f"{_mbps(agg.get('goodput_bps'))} Mbit/s")
    bottleneck = f" of {safe(agg['bottleneck'])}" if agg.get("bottleneck") else ""
    t.add_row(f"utilization (goodput / capacity{bottleneck})", f"{_pct(agg.get('utilization'))} %")
    t.add_row("loss rate (all links)" if bottleneck else "bottleneck loss rate", f"{_pct(agg.get('loss_rate'), 3)} %")
    t.add_row("drops (overflow / random / aqm)", " / ".join(_num(drops.get(c), 0) for c in ("overflow", "random", "aqm")))
    if drops.get("policer"):
        t.add_row("policer drops", _num(drops.get("policer"), 0))
    if agg.get("marks_ce"):
        t.add_row("CE marks", _num(agg.get("marks_ce"), 0))
    t.add_row("Jain's index: window / per 1 s mean, min",
              f"{_num(agg.get('jain'), 3)} / {_num(agg.get('jain_1s_mean'), 3)}, {_num(agg.get('jain_1s_min'), 3)}")
    t.add_row("retransmitted (% of segments sent)", f"{_pct(agg.get('retrans_rate'), 2)} %")
    t.add_row("queueing delay p50 / p95", f"{_num(agg.get('queue_delay_ms_p50'))} / {_num(agg.get('queue_delay_ms_p95'))} ms")
    for alg, a in summary.get("per_algorithm", {}).items():
        n = a.get("flows")
        t.add_row(f"share {alg} ({n} flow{'' if n == 1 else 's'}), IQR over {_num(w.get('share_bin_s'), 0)} s bins",
                  f"{_pct(a.get('share'))} % (IQR {_pct(a.get('share_iqr'))} pp)")  # fmt: skip
    return t


def links_table(summary: dict[str, Any]) -> Table | None:
    """Per-link metrics over the measure window (topologies: more than one link), else None."""
    from rich.table import Table
    links = summary.get("per_link") or {}
    if len(links) < 2:
        return None
    t = Table(title="links (measure window)", title_justify="left")
    for name, justify in [("link", "left"), ("from → to", "left"), ("utilization %", "right"), ("loss %", "right"),
                          ("drops", "right"), ("queue delay p50 / p95 ms", "right"), ("flows / ACKs of", "left")]:  # fmt: skip
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for name, x in links.items():
        acks = ", ".join(map(str, x.get("ack_flows") or []))
        t.add_row(safe(name), f"{safe(x.get('from'))} → {safe(x.get('to'))}", _pct(x.get("utilization")),
                  _pct(x.get("loss_rate"), 3), _num(x.get("drops_total"), 0),
                  f"{_num(x.get('queue_delay_ms_p50'))} / {_num(x.get('queue_delay_ms_p95'))}",
                  ", ".join(map(str, x.get("flows") or [])) + (f" / {acks}" if acks else ""))  # fmt: skip
    return t


@app.command("run")
def run_cmd(
    file: Path = typer.Argument(..., metavar="FILE", help="Scenario file (TOML).", show_default=False),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Record directory [default: runs/<name>-<IR hash>; a second run of the same scenario needs --out or --overwrite]."),
    backend: str = typer.Option("sim", "--backend", "-b", help="sim or kernel."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Override the scenario's seed."),
    svg: bool = typer.Option(False, "--svg", help="Also write the figure as SVG."),
    no_plot: bool = typer.Option(False, "--no-plot", help="Do not draw the figure."),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="Replace an existing record in the output directory (only one cclab wrote)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary (summary.json) as JSON on stdout and nothing "
                                 "else there; the record's path goes to stderr. With --dry-run: the resolved scenario "
                                 "(IR) and the estimate."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the resolved scenario and its estimated events, wall "
                                 "time, memory and record size; run nothing, write nothing."),
    allow_large: bool = typer.Option(False, "--allow-large",
                                     help="Run even if the estimate exceeds the limits (docs/record.md)."),
) -> None:
    """Run one scenario: write its record and figure, print per-flow and aggregate metrics."""
    if dry_run:
        _dry_run(file, backend, seed, allow_large, as_json)
        return
    from cclab import api

    with user_errors():
        formats = ("png", "svg") if svg else ("png",)
        _sc, toml_text, ir = api.prepare(file, seed)
        target = out if out is not None else api.default_run_dir(ir, backend)  # the command writes to ./runs
        if out is None and not overwrite:
            from cclab.record_dir import RecordExistsError, is_complete

            if is_complete(target):
                raise RecordExistsError(
                    f"{target}: this scenario (same resolved file, backend {backend}) was already run into its "
                    "default directory; that record is kept — --out DIR to write another one, --overwrite to "
                    "replace it (cclab plot, cclab report and cclab.load read the existing one)")
        with err_console.status(f"running {safe(file)} on {safe(backend)}…"):
            result = api.run_prepared(ir, toml_text, target, backend=backend, plot=not no_plot, formats=formats,
                                      overwrite=overwrite, allow_large=allow_large)  # fmt: skip
    meta = result.meta
    if not meta.get("valid", True):
        reasons = safe("; ".join(meta.get("invalid_reasons") or []) or "no reason given")
        err_console.print(f"[bold yellow]warning:[/bold yellow] this run is marked invalid: {reasons}", soft_wrap=True)
    if as_json:  # stdout: the summary and nothing else (for jq and scripts)
        sys.stdout.write((result.path / "summary.json").read_text())
        sys.stdout.flush()
        err_console.print(f"record: {safe(result.path)}", soft_wrap=True)
        return
    console.print(
        f"[bold]{safe(result.name)}[/bold]  backend {safe(meta.get('backend'))}, engine {safe(meta.get('engine_version'))}, "
        f"seed {meta.get('seed')}, {_num(meta.get('wall_time_s'), 2)} s wall", soft_wrap=True
    )
    console.print(flows_table(result.summary))
    console.print(aggregate_table(result.summary))
    links = links_table(result.summary)
    if links is not None:
        console.print(links)
    console.print(f"record: {safe(result.path)}", soft_wrap=True)
    for fig in result.figures:
        console.print(f"figure: {safe(fig)}", soft_wrap=True)


def _dry_run(file: Path, backend: str, seed: Optional[int], allow_large: bool, as_json: bool) -> None:
    """The resolved scenario and its cost; nothing runs, nothing is written."""
    import dataclasses
    import json

    from cclab import api, limits
    from cclab.backends import check_name

    with user_errors():
        check_name(backend)  # as a real run would, before anything is said about its cost
        _sc, _text, ir = api.prepare(file, seed)
        est = limits.estimate(ir)
    if as_json:
        doc = {"ir": ir, "estimate": {**dataclasses.asdict(est), "wall_s": est.wall_s}, "limits": dict(limits.LIMITS),
               "over_limits": [what for what, _value, _limit in est.over(backend)]}  # fmt: skip
        typer.echo(json.dumps(doc, indent=1, sort_keys=True))
    else:
        typer.echo("\n".join(describe_ir(ir, str(file))))
        from cclab.resolve import describe_record, describe_start_offsets

        typer.echo(f"  record: {describe_record(ir)}")
        typer.echo(f"  start offsets: {describe_start_offsets(ir)}")
        typer.echo("  limits: " + ", ".join(
            f"{k.removesuffix('_bytes')} {limits.format_bytes(v) if k.endswith('bytes') else f'{v:.3g}'}"
            for k, v in limits.LIMITS.items()))  # fmt: skip
    with user_errors():
        limits.check(ir, backend=backend, allow_large=allow_large)
        if backend == "sim":
            from cclab.backends.sim import few_packet_warnings

            few_packet_warnings(ir)  # what the run would warn about
    if not as_json:
        typer.echo("  within the limits; nothing was run" if not est.over(backend)
                   else "  above the limits (allowed by --allow-large); nothing was run")  # fmt: skip


# --------------------------------------------------------------------------
# validate-scenario (the plain-text description lives in cclab.describe: the entry point answers
# `cclab validate-scenario FILE` through it without importing typer, cclab._entry)

@app.command("validate-scenario")
def validate_scenario_cmd(
    file: Path = typer.Argument(..., metavar="FILE", help="Scenario file (TOML).", show_default=False),
) -> None:
    """Check a scenario file without running it; print what it resolves to."""
    from cclab.backends.sim import few_packet_warnings
    from cclab.resolve import resolve
    from cclab.scenario import load_scenario

    with user_errors():
        sc = load_scenario(file)
        try:
            ir = resolve(sc)
        except ScenarioError as exc:  # a check across fields: still the file's error
            raise (exc if exc.source else exc.in_file(str(file))) from None
        few_packet_warnings(ir)  # as `cclab run` on the simulator (the default backend) warns
    lines = describe_ir(ir, str(file))
    typer.echo(typer.style("ok", fg="green") + " " + "\n".join(lines))


# --------------------------------------------------------------------------
# algorithms


@app.command("algorithms")
def algorithms_cmd(
    name: Optional[list[str]] = typer.Argument(None, metavar="NAME", help="Only these algorithms.", show_default=False),
    markdown: bool = typer.Option(False, "--markdown", help="Print the tables as Markdown (docs/algorithms.md)."),
    as_json: bool = typer.Option(False, "--json", help="Print every parameter with its range, default and source as JSON."),
) -> None:
    """Every congestion control algorithm with every parameter: meaning, allowed values, default, source."""
    import json

    from cclab import cca_params

    names = name or list(cca_params.PARAMS)
    for n in names:
        with user_errors():
            try:
                cca_params.check_algorithm(n)
            except ScenarioError as exc:
                raise ScenarioError(n, n, exc.problem, exc.allowed) from None
    if as_json:
        doc = {n: {"source": cca_params.SOURCES[n], "parameters": [
            {"name": p, "allowed": allowed, "meaning": meaning, "default": cca_params.DEFAULTS[n][p],
             "default_text": default, "source": source}
            for p, allowed, meaning, default, source in cca_params.describe(n)]} for n in names}  # fmt: skip
        typer.echo(json.dumps(doc, indent=1, ensure_ascii=False))
        return
    if markdown:
        typer.echo(algorithms_markdown(names), nl=False)
        return
    for n in names:  # plain text, two lines per parameter: readable in 80 columns
        rows = cca_params.describe(n)
        typer.echo(typer.style(n, bold=True) + f" — {cca_params.SOURCES[n]}")
        if not rows:
            typer.echo(f"  {n} takes no parameters")
        wn = max((len(r[0]) for r in rows), default=0)
        wd = max((len(r[3]) for r in rows), default=0)
        for p, allowed, meaning, default, source in rows:
            typer.echo(f"  {p.ljust(wn)}  {default.ljust(wd)}  {allowed}")
            typer.echo(f"  {'':{wn}}  {meaning}; source: {source}")
        typer.echo("")
    typer.echo('Set them in a scenario: cca = { name = "bbr", cwnd_gain = 1.5 } (docs/algorithms.md).')


def algorithms_markdown(names: list[str] | None = None) -> str:
    """docs/algorithms.md: the parameter registry (cclab.cca_params) as Markdown tables."""
    from cclab import cca_params

    out = [
        "# Congestion control algorithms and their parameters",
        "",
        "Generated from the parameter registry (`python/cclab/cca_params.py`) by",
        "`cclab algorithms --markdown`; `tests/test_cli_help.py` fails when this file is out of date,",
        "and `tests/test_cca_params.py` holds the registry equal to the engine (names, order, defaults).",
        "",
        "A scenario sets parameters beside the name: `cca = { name = \"bbr\", cwnd_gain = 1.5 }`",
        "(or `cca = { name = \"cubic\", params = { beta = 0.75 } }`). Every value is checked against",
        "its allowed range when the scenario is loaded; switches take `true`/`false`. Defaults are",
        "exactly what the engine uses when a parameter is left out — gains are held in the units",
        "of the Linux code (1/256 for BBR, 1/1024 for CUBIC), so `717/1024 ≈ 0.7002` is CUBIC's",
        "β of 0.7. A parameter kept in such units takes whole multiples of them only: CUBIC's",
        "β of 0.7 is written `beta = 0.7001953125` (717/1024), and `beta = 0.7` is refused with",
        "the two nearest allowed values — the engine would round it and run a value the record",
        "does not state. *Source* names the constant or module parameter of the file the",
        "algorithm follows, or the paper for cclab's BBRv1 variants.",
        "",
        "Some parameters belong to a feature with a switch and act only when it is on; set with",
        "the switch off they are refused (they would change nothing): BBRv1's `fb_*` need",
        "`cwnd_feedback` (on in `bbr_cwnd_feedback`), `sticky_probes` and `sticky_jump` need",
        "`sticky_rtprop` (on in `bbr_sticky_rtprop`), the `lt_*` knobs need `lt_bw` (on by",
        "default), and BBRv3's ECN parameters (`ecn_alpha_gain`, `ecn_factor`, `ecn_thresh`,",
        "`ecn_max_rtt_us`, `full_ecn_cnt`, `ecn_reprobe_gain`) need `ecn_low`, which in turn",
        "needs `ecn = true` on the flow.",
        "",
        "Three rules relate values that are each in range (the engine's own), and a scenario that",
        "breaks one is refused naming both parameters: Vegas's `alpha ≤ beta`; the BBRv1 family's",
        "`fb_gain_min ≤ fb_gain_max`, where `fb_gain_max` defaults to `cwnd_gain` (so a",
        "`bbr_cwnd_feedback` with `cwnd_gain` below 1 needs `fb_gain_min` set too); and BBRv2/v3's",
        "`probe_rtt_interval_ms ≤ 1000 × min_rtt_win_s` (the ProbeRTT clock inside the min-RTT",
        "window: with the default 5 s interval, `min_rtt_win_s` of at least 5).",
        "",
    ]
    for n in names or list(cca_params.PARAMS):
        out += [f"## `{n}`", "", f"{cca_params.SOURCES[n]}.", ""]
        rows = cca_params.describe(n)
        if not rows:
            out += [f"`{n}` takes no parameters.", ""]
            continue
        out += ["| parameter | default | allowed | meaning | source |", "|---|---|---|---|---|"]
        for p, allowed, meaning, default, source in rows:
            out.append(f"| `{p}` | {default} | {allowed} | {meaning} | {source} |")
        out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------
# bench, version


@app.command("bench")
def bench_cmd(
    quick: bool = typer.Option(False, "--quick", help="Short (5 s) versions of each case, for CI smoke tests."),
    only: Optional[list[str]] = typer.Option(None, "--only", metavar="CASE", help="Run only this case (repeatable)."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the results as JSON to this file."),
    vs_ns3: bool = typer.Option(False, "--vs-ns3", help="Run the same dumbbell in cclab and ns-3 (pip install 'cclab[bench]') and print the speed ratio."),
) -> None:
    """Benchmark the simulator on the reference scenarios (each case in a fresh process)."""
    from cclab import bench

    with user_errors():
        bench.main(quick=quick, only=only or None, json_path=json_out, console=console, vs_ns3=vs_ns3)


@app.command("version")
def version_cmd() -> None:
    """Print the versions of cclab and of the simulator engine, and its algorithms."""
    from cclab import __version__, _native
    from cclab.cca_params import algorithm_names

    console.print(f"cclab {__version__}")
    console.print(f"engine {getattr(_native, 'ENGINE_VERSION', 'unknown')}")
    console.print(f"algorithms: {', '.join(algorithm_names())}")
    console.print(f"python {sys.version.split()[0]}")


# --------------------------------------------------------------------------
# commands from the other parts of cclab, when present


def _register_optional(module_name: str) -> None:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        if os.environ.get("CCLAB_DEBUG"):
            raise
        return
    module.register(app)


for _module in ("cclab.cli_kernel", "cclab.cli_sweep", "cclab.cli_parity"):
    _register_optional(_module)


if __name__ == "__main__":  # pragma: no cover
    app()
