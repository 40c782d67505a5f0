"""CLI commands for studies: `sweep`, `table`, `plot`, `report`, `reproduce`.

`cclab.cli` calls :func:`register` on its Typer app.
"""

from __future__ import annotations

import fnmatch
import math
import sys
from pathlib import Path
from typing import Optional

import typer


def _safe(text) -> str:
    """User-given text (names, paths, error messages) on one line, control characters escaped, bounded."""
    from cclab.errors import clip, printable

    return clip(printable(" ".join(str(text).split())), 2000)


def _fail(msg: str, code: int = 2) -> "typer.Exit":
    typer.secho(f"error: {_safe(msg)}", fg="red", err=True)
    return typer.Exit(code)


def _user_errors() -> tuple[type[BaseException], ...]:
    from cclab.errors import ScenarioError
    from cclab.record import RecordError
    from cclab.runner import DaskMissingError
    from cclab.store import StoreBusyError
    from cclab.sweep import SweepError

    return (SweepError, ScenarioError, RecordError, StoreBusyError, DaskMissingError)


def dry_run_command(sweep, backend: str, jobs, allow_large: bool) -> int:
    """Plan a sweep (every point validated) and print the runs' estimated resources; runs nothing."""
    import multiprocessing

    from cclab import limits
    from cclab.runner import plan

    try:
        tasks = plan(sweep, backend, allow_large=allow_large)
    except _user_errors() as e:
        raise _fail(str(e)) from None
    ests = [limits.estimate(t.ir) for t in tasks]
    workers = 1 if backend == "kernel" else max(1, min(jobs or multiprocessing.cpu_count(), len(ests)))
    events = sum(e.events for e in ests)
    peak = max(e.memory_bytes for e in ests)
    typer.echo(f"{sweep.n_points} points, {len(tasks)} runs")
    typer.echo(f"  estimate: ~{events:.3g} simulator events in all (~{limits.format_duration(events / limits.EVENTS_PER_S / workers)} "
               f"with {workers} worker(s)); memory ~{limits.format_bytes(peak)} per run at most "
               f"(~{limits.format_bytes(peak * workers)} with {workers} at once); "
               f"records ~{limits.format_bytes(sum(e.record_bytes for e in ests))} in all")
    over = sum(1 for e in ests if e.over(backend))
    typer.echo("  every run is within the limits" if not over else
               f"  {over} run(s) above the limits (allowed by --allow-large)")
    return 0


def _check_options(jobs, scheduler, out) -> None:
    """--jobs, --scheduler and --out checked before anything is loaded or run (one ``error:`` line each)."""
    from cclab.runner import check_jobs, check_scheduler
    from cclab.store import SweepStore

    try:
        check_jobs(jobs)
        check_scheduler(scheduler)
        if out is not None:
            SweepStore(out).check_root()
    except _user_errors() as e:
        raise _fail(str(e)) from None


def run_sweep_command(sweep, out: Path, jobs, scheduler, backend, progress: bool = True,
                      allow_large: bool = False) -> int:  # fmt: skip
    """Run a loaded sweep and print its outcome; returns the exit code."""
    from cclab.runner import run_sweep
    from cclab.store import SweepStore

    try:
        outcome = run_sweep(sweep, out, jobs=jobs, scheduler=scheduler, backend=backend, progress=progress,
                            allow_large=allow_large)  # fmt: skip
    except _user_errors() as e:
        raise _fail(str(e)) from None
    except OSError as e:  # the sweep directory cannot be created or written
        where = f" ({e.filename})" if e.filename and str(e.filename) != str(out) else ""
        raise _fail(f"--out {out}: cannot write the sweep directory{where}: {e.strerror or e}") from None
    except KeyboardInterrupt:
        done = len(SweepStore(out).complete_ids())
        typer.secho(f"interrupted: {done} complete record(s) kept in {_safe(out)}; "
                    "rerun the same command to resume", fg="yellow", err=True)
        raise typer.Exit(130) from None
    for rid, problem, moved in outcome.corrupt:
        typer.secho(f"  run {rid}: {_safe(problem)}; moved to {_safe(moved)}, running it again",
                    fg="yellow", err=True)
    typer.echo(
        f"{outcome.total_points} points, {outcome.total_runs} runs: {outcome.skipped} already complete, "
        f"{outcome.done} done now, {len(outcome.failures)} failed ({outcome.wall_s:.1f} s) -> {_safe(outcome.out_dir)}"
    )
    for f in outcome.failures:
        first = (f["error"] or "").strip().splitlines()
        typer.secho(f"  failed {f['run_id']}: {_safe(first[0]) if first else '?'}", fg="red", err=True)
    if outcome.failures:
        typer.echo(f"  details: {_safe(outcome.out_dir / 'failures.json')}; rerun the same command to retry them",
                   err=True)
    return 1 if outcome.failures else 0


def register(app: typer.Typer) -> None:
    """Add the study commands to `app`."""

    @app.command("sweep")
    def sweep_cmd(
        file: Path = typer.Argument(..., metavar="FILE", help="Sweep file (TOML: base, trials, [axes], [zip])."),
        out: Optional[Path] = typer.Option(None, "--out", "-o", help="Sweep directory [default: sweeps/<file stem>]."),
        jobs: Optional[int] = typer.Option(None, "--jobs", "-j",
                                           help="Local worker processes, at least 1 [default: all cores]."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                                help="Dask scheduler address, tcp://HOST:PORT or tls://HOST:PORT."),
        backend: str = typer.Option("sim", "--backend", help="sim or kernel."),
        quick: bool = typer.Option(False, "--quick", help="Apply the file's [quick] overrides."),
        no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Validate every point and print the estimated "
                                     "events, memory and record size; run nothing."),
        allow_large: bool = typer.Option(False, "--allow-large",
                                         help="Run even runs whose estimate exceeds the limits (docs/record.md)."),
    ) -> None:
        """Run every point x trial of a sweep; rerun to resume (complete runs are skipped)."""
        from cclab.sweep import load_sweep, validate_quick

        if backend not in ("sim", "kernel"):
            raise _fail(f"--backend {backend!r}: expected sim or kernel")
        _check_options(jobs, scheduler, out)
        try:
            sw = load_sweep(file)
        except _user_errors() as e:
            raise _fail(str(e)) from None
        try:
            if quick:
                sw = sw.quick_variant()
            else:
                validate_quick(sw)
        except _user_errors() as e:
            raise _fail(str(e)) from None
        from cclab.cli import scenario_warnings

        with scenario_warnings():
            if dry_run:
                raise typer.Exit(dry_run_command(sw, backend, jobs, allow_large))
            out = out or Path("sweeps") / file.stem
            raise typer.Exit(run_sweep_command(sw, out, jobs, scheduler, backend, progress=not no_progress,
                                               allow_large=allow_large))

    @app.command("table")
    def table_cmd(
        sweep_dir: Path = typer.Argument(..., metavar="SWEEP_DIR", help="A sweep directory."),
        metric: Optional[list[str]] = typer.Option(
            None, "--metric", "-m", metavar="GLOB", help="Metric columns to show (glob, repeatable), e.g. 'agg.*' or 'bbr.share'."
        ),
        all_trials: bool = typer.Option(False, "--trials", help="One row per run instead of grouping over trials."),
        csv: bool = typer.Option(False, "--csv", help="Print CSV instead of a table."),
    ) -> None:
        """Print a sweep's results: means over trials with 95 % confidence intervals."""
        from cclab.store import POINTS, read_results

        if not (sweep_dir / POINTS).exists():
            raise _fail(f"{sweep_dir}: not a sweep directory (no {POINTS}); run `cclab sweep` first")
        try:
            df = read_results(sweep_dir)
        except _user_errors() as e:
            raise _fail(str(e)) from None
        for rid in df.attrs.get("corrupt", []):
            typer.secho(f"warning: run {rid} left out: its record is incomplete, does not match its manifest, or is "
                        "another run's; rerun the sweep to redo it", fg="yellow", err=True)
        missing = df.attrs.get("missing", [])
        if missing:
            typer.secho(f"note: {len(missing)} run(s) of this sweep have no record yet (not run, or removed); "
                        "rerun the sweep to complete it", fg="yellow", err=True)
        if df.empty:
            raise _fail(f"{sweep_dir}: no complete runs yet", code=1)
        print_results(df, metric, grouped=not all_trials, csv=csv)

    @app.command("plot")
    def plot_cmd(
        target: Optional[Path] = typer.Argument(None, metavar="TARGET", show_default=False,
                                                help="A run directory or a sweep directory (not needed with --list)."),
        kind: Optional[list[str]] = typer.Option(None, "--kind", "-k", metavar="KIND", help="Figure kind (repeatable); see --list."),
        out: Optional[str] = typer.Option(None, "--out", "-o", help="Output directory [default: TARGET/figures]."),
        fmt: Optional[list[str]] = typer.Option(None, "--format", "-f", metavar="FORMAT", help="png, svg or pdf (repeatable) "
                                                "[default: png and svg; with --size: pdf]."),
        size: Optional[str] = typer.Option(None, "--size", help="For a paper: column (3.5 in wide) or page "
                                           "(7.16 in, two columns); 8 pt text."),
        list_kinds: bool = typer.Option(False, "--list", help="List the figure kinds."),
    ) -> None:
        """Draw figures for a run or a sweep (PNG and SVG; vector PDF sized for a paper with --size)."""
        from cclab import figures

        if list_kinds:
            for name, fig in figures.REGISTRY.items():
                typer.echo(f"{name:18} {fig.scope:6} {fig.doc}")
            return
        if target is None:
            raise _fail("missing TARGET: a run directory or a sweep directory (or --list for the figure kinds)")
        from cclab.fsutil import FIGURE_FORMATS, figure_formats

        try:  # the one check every figure-writing path uses
            formats = figure_formats(tuple(fmt) if fmt else ("pdf",) if size else ("png", "svg"))
        except ValueError:
            bad = next(f for f in fmt or () if f.lower().lstrip(".") not in FIGURE_FORMATS)
            raise _fail(f"--format {bad!r}: expected {', '.join(FIGURE_FORMATS[:-1])} or {FIGURE_FORMATS[-1]}") from None
        out_dir = _check_plot_out(out, target) if out is not None else None
        try:
            written, skipped = figures.render_all(target, kinds=kind, out_dir=out_dir, formats=formats, size=size)
        except (figures.FigureError, *_user_errors()) as e:
            raise _fail(str(e)) from None
        except OSError as e:
            raise _fail(f"--out (-o) {out_dir or Path(target) / 'figures'}: cannot write the figures: "
                        f"{e.strerror or e}" + (f" ({e.filename})" if e.filename else "")) from None
        for path in written:
            typer.echo(str(path))
        for e in skipped:
            typer.echo(f"skipped figure {e}", err=True)
        if skipped:  # drawn what could be, but not everything asked for: not a success
            raise typer.Exit(1)

    @app.command("report")
    def report_cmd(
        target: Path = typer.Argument(..., metavar="TARGET", help="A run directory or a sweep directory."),
        out: Optional[str] = typer.Option(None, "--out", "-o", help="HTML file [default: TARGET/report.html]."),
    ) -> None:
        """Write one self-contained HTML page: scenario, summary tables, all figures."""
        from cclab import figures
        from cclab.report import write_report

        try:
            path = write_report(target, out)
        except (figures.FigureError, *_user_errors()) as e:
            raise _fail(str(e)) from None
        except OSError as e:
            raise _fail(f"--out (-o) {out if out is not None else Path(target) / 'report.html'}: cannot write the "
                        f"report: {e.strerror or e}" + (f" ({e.filename})" if e.filename else "")) from None
        typer.echo(str(path))

    @app.command("reproduce")
    def reproduce_cmd(
        name: Optional[str] = typer.Argument(None, metavar="NAME", help="Preset name (see --list)."),
        list_presets: bool = typer.Option(False, "--list", help="List the presets."),
        quick: bool = typer.Option(False, "--quick", help="Reduced version (shorter runs, fewer points)."),
        out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory [default: reproduce/NAME, reproduce/NAME-quick with --quick]."),
        jobs: Optional[int] = typer.Option(None, "--jobs", "-j",
                                           help="Local worker processes, at least 1 [default: all cores]."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                                help="Dask scheduler address, tcp://HOST:PORT or tls://HOST:PORT."),
        backend: str = typer.Option("sim", "--backend", help="sim or kernel."),
        no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    ) -> None:
        """Reproduce a published experiment: run its sweep(s), draw its figures, write its report."""
        from cclab import presets

        if name is not None and name not in presets.PRESETS:
            try:
                presets.get(name)
            except KeyError as e:
                raise _fail(str(e.args[0])) from None
        if list_presets or not name:
            for p in presets.PRESETS.values():
                typer.echo(f"{p.name:28} {p.ref:8} {p.title}")
            if not name and not list_presets:
                raise _fail("give a preset name (see the list above)")
            return
        _check_options(jobs, scheduler, None)
        from cclab.backends import BackendError, check_name

        try:
            check_name(backend)
        except BackendError as e:
            raise _fail(f"--backend: {e}") from None
        try:
            preset = presets.get(name)
        except KeyError as e:
            raise _fail(str(e.args[0])) from None
        out = out or Path("reproduce") / (name + ("-quick" if quick else ""))
        code = 0
        for part, sw in preset.sweeps(quick=quick):
            part_dir = out / part if len(preset.files) > 1 else out
            typer.echo(f"== {name}: {part} -> {part_dir}")
            code |= run_sweep_command(sw, part_dir, jobs, scheduler, backend, progress=not no_progress)
            from cclab.report import write_report

            try:
                typer.echo(f"report: {write_report(part_dir, figures_dir=part_dir / 'figures')}")
            except Exception as e:  # noqa: BLE001 — the runs are kept; say what failed
                typer.secho(f"report failed: {type(e).__name__}: {e}", fg="red", err=True)
                code |= 1
        from cclab.presets import published

        try:
            published.print_table(published.compare(preset, out, quick=quick), quick=quick)
        except published.PublishedError as e:
            typer.secho(f"published values: {e}", fg="red", err=True)
            code |= 1
        raise typer.Exit(code)


def _check_plot_out(out: str, target: Path | None = None) -> Path:
    """The output directory of `cclab plot -o`, or a one-line error: not empty, not a file, not in a run
    record (but its own figures/), not a sweep directory's data."""
    from cclab.fsutil import file_in_the_way
    from cclab.record import output_place_problem

    allowed = "expected a directory for the figures (created if missing)"
    if out == "":
        raise _fail(f"--out (-o) '': an empty path; {allowed}")
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise _fail(f"--out (-o) {p}: exists and is not a directory; {allowed}")
    blocked = file_in_the_way(p)
    if blocked is not None:
        raise _fail(f"--out (-o) {p}: {blocked} is not a directory; {allowed}")
    problem = output_place_problem(p, "figures", "figures/", target)
    if problem is not None:
        raise _fail(f"--out (-o) {p}: {problem}; {allowed} outside it")
    return p


def select_metrics(columns: list[str], patterns: list[str] | None) -> list[str]:
    """Metric columns matching the glob patterns (default: the headline metrics)."""
    if not patterns:
        from cclab.store import headline_metrics

        return headline_metrics(columns)
    out: list[str] = []
    for pat in patterns:
        found = [c for c in columns if fnmatch.fnmatchcase(c, pat)]
        if not found:  # each pattern on its own: one that matches nothing is a typo, never dropped
            raise _fail(f"-m {pat}: no metric matches; available: {', '.join(columns)}")
        out += [c for c in found if c not in out]
    return out


def print_results(df, patterns: list[str] | None, grouped: bool = True, csv: bool = False) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from cclab.store import axis_columns, describe_interval, describe_trials, group_over_trials, metric_columns

    axes = axis_columns(df)
    metrics = select_metrics(metric_columns(df), patterns)
    if grouped:
        view = group_over_trials(df, metrics)
        lead = [*axes, "trials"]
    else:
        view = df
        lead = [*axes, "trial", "seed", "run_id"]
    if csv:
        suffixes = ("", ".lo", ".hi", ".ci95", ".n", ".stat")
        cols = lead + (["n_effective", "deterministic"] if grouped else []) + [
            f"{m}{x}" for m in metrics for x in suffixes if f"{m}{x}" in view.columns]  # fmt: skip
        view[cols].to_csv(sys.stdout, index=False)
        return
    from cclab.figures.sweep_figs import metric_label

    table = Table(show_lines=False, header_style="bold")
    for c in lead:
        table.add_column(escape(c))
    labels = {m: metric_label(m) for m in metrics}
    for m in metrics:
        unit = labels[m][0]
        how = ""
        if grouped:
            how = "median [95% CI]" if pd_series_first(view, f"{m}.stat") == "median" else "mean ± 95% CI"
        table.add_column(f"{escape(m)}\n[dim]{escape(unit)}{', ' + how if how else ''}[/dim]", justify="right")
    for _, row in view.iterrows():
        cells = [escape(describe_trials(row) if grouped and c == "trials" else str(row[c])) for c in lead]
        for m in metrics:
            scale = labels[m][1]
            v = row[m]
            if grouped:
                cells.append(escape(describe_interval(row, m, _num, scale)))
            else:
                cells.append(_num(v * scale if isinstance(v, (int, float)) else v))
        table.add_row(*cells)
    Console(width=max(120, 26 * (len(lead) + len(metrics)))).print(table)
    if grouped and "deterministic" in view and bool(view["deterministic"].any()):
        Console(stderr=True).print("[yellow]note:[/yellow] points marked 'deterministic' gave the same result in "
                                   "every trial (the seed changed nothing: e.g. no loss and start_offset = 0); "
                                   "their trials are one sample repeated, so no interval is shown.")


def pd_series_first(view, col: str) -> str:
    """The first value of a column (``""`` when absent): the statistic a metric is summarised by."""
    return str(view[col].iloc[0]) if col in view.columns and len(view) else ""


def _num(v) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(f):
        return "–"
    if f != 0 and (abs(f) >= 1e6 or abs(f) < 1e-3):
        return f"{f:.4g}"
    return f"{f:.4g}" if abs(f) < 1000 else f"{f:,.0f}"
