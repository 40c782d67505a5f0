"""Figures of runs and sweeps, from a registry.

Every figure kind is a function `draw(target, **params) -> Figure`
registered under a name with a scope: "sweep" kinds read the sweep's results
table (`results.parquet`), "run" kinds read one run record's time series
(for a sweep they draw one chosen run, `point = N`, default the first).
Kinds:

| kind | scope | what |
|---|---|---|
| `line` | sweep | a metric against one axis, median line with the interquartile band over trials or over samples (`bbr.share` uses `share_p25/p75`) |
| `box` | sweep | box plots of a metric over trials at each value of one axis |
| `heatmap` | sweep | a metric over two axes; with `gain = {over, a, b}` the goodput gain of A over B on a diverging scale |
| `loss` | sweep | throughput against random loss, log x (the BBR paper's figure) |
| `series` | sweep | one time-series column of every point's run, overlaid |
| `jain` | sweep/run | Jain's fairness index over time |
| `period` | run | per-algorithm share over time and its autocorrelation, with the dominant period |
| `timeseries` | run | the stacked per-run figure of `cclab.plot`, BBR states shaded |
| `links` | run | one panel per link of a topology: queue, queueing delay, drops |
| `topology` | run | the topology drawn: nodes, links (rate, delay), each flow group's path |
| `cdf` | sweep/run | CDF of per-packet RTT or queueing delay, or of flow completion times |
| `scatter` | sweep/run | goodput vs 95th-percentile RTT per algorithm, 1-σ ellipses over trials (Pantheon) |

A sweep file may list its figures (`[[figures]]` tables with `kind` and the
parameters of that kind); otherwise `default_specs` picks figures from the
sweep's axes. Every figure is written as PNG and SVG. Colours per algorithm
come from `cclab.plot.color_for`, the same in every figure.
"""

from __future__ import annotations

try:  # Python ≥ 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover — Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
import types
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


class FigureError(ValueError):
    """A figure cannot be drawn from this data; the message says why."""


@dataclass
class FigureKind:
    name: str
    scope: str  # "sweep", "run" or "both"
    doc: str
    draw: Callable[..., Figure]


REGISTRY: dict[str, FigureKind] = {}

#: keys of a figure spec that are not parameters of the figure.
SPEC_KEYS = ("kind", "name", "caption")


def register(name: str, scope: str, doc: str):
    def deco(fn):
        REGISTRY[name] = FigureKind(name, scope, doc, fn)
        return fn

    return deco


class Target:
    """What a figure is drawn from: a sweep directory or one run directory."""

    _run: Any = None  # a run in memory (Target.of_run)

    @classmethod
    def of_run(cls, run: Any) -> "Target":
        """A run in memory (:class:`cclab.record.Run`), e.g. from ``cclab.run(…)``: nothing is read from disk."""
        target = cls.__new__(cls)
        target.path = Path(run.path) if run.path is not None else Path(".")
        target.kind = "run"
        target._run = run
        return target

    def __init__(self, path: str | Path):
        from cclab.record import META, is_complete, verify
        from cclab.store import POINTS

        self.path = Path(path)
        if (self.path / POINTS).exists():
            self.kind = "sweep"
        elif is_complete(self.path):
            self.kind = "run"
        elif (self.path / META).exists():  # a run record, but not a whole one: say what is wrong with it
            raise FigureError(f"{self.path}: {verify(self.path)}")
        else:
            raise FigureError(f"{self.path}: neither a sweep directory (points.json) nor a run record (meta.json)")

    @cached_property
    def results(self) -> pd.DataFrame:
        from cclab.store import read_results

        if self.kind != "sweep":
            raise FigureError(f"{self.path}: a run has no sweep results table")
        df = read_results(self.path)
        if df.empty:
            raise FigureError(f"{self.path}: no complete runs yet")
        return df

    @cached_property
    def axes(self) -> list[str]:
        from cclab.store import axis_columns

        return axis_columns(self.results)

    @cached_property
    def sweep_toml(self) -> dict[str, Any]:
        p = self.path / "sweep.toml"
        return tomllib.loads(p.read_text()) if p.exists() else {}

    def runs(self, trial: int = 0) -> list[tuple[dict[str, Any], Path]]:
        """(axis values, record dir) of every point's run for `trial`, in point order."""
        if self.kind == "run":
            return [({}, self.path)]
        df = self.results
        if not (df["trial"] == trial).any():  # never all trials overlaid in place of the one asked for
            have = sorted({int(t) for t in df["trial"]})
            raise FigureError(f"trial = {trial!r}: {self.path} has no complete run of that trial; expected one of "
                              f"{', '.join(map(str, have)) or '(none yet)'}")  # fmt: skip
        df = df[df["trial"] == trial]
        return [({a: row[a] for a in self.axes}, self.path / "runs" / row["run_id"]) for _, row in df.iterrows()]

    def run_records(self, trial: int = 0):
        """(axis values, :class:`cclab.record.Run`) of every point's run for `trial`, in point order (read lazily)."""
        from cclab.record import read_run

        if self._run is not None:
            yield {}, self._run
            return
        for params, run_dir in self.runs(trial):
            yield params, read_run(run_dir)

    def run(self, point: int | None = None):
        """One run record (`cclab.record.Run`): the run itself, or a sweep's point."""
        from cclab.record import read_run

        if self._run is not None:
            return self._run
        if self.kind == "run":
            return read_run(self.path)
        df = self.results
        if point is None:
            row = df.iloc[0]
        else:
            sel = df[df["point"] == point]
            if sel.empty:
                raise FigureError(f"{self.path}: no complete run for point {point}")
            row = sel.iloc[0]
        return read_run(self.path / "runs" / row["run_id"])


def draw(target: Target | str | Path, kind: str, *, size: str | None = None, **params: Any) -> Figure:
    """The figure ``kind`` of ``target`` with ``params``. ``size``: ``"column"`` or ``"page"`` draws
    it for a paper (one or two columns wide, 8 pt text; :data:`cclab.plot.PAPER_WIDTHS`)."""
    from cclab.plot import fit_width, paper_style

    if not isinstance(target, Target):
        target = Target(target)
    check_spec({**params, "kind": kind})
    check_size(size, "figure size")
    fk = REGISTRY[kind]
    params = {k: v for k, v in params.items() if k not in SPEC_KEYS}
    if fk.scope == "sweep" and target.kind != "sweep":
        raise FigureError(f"figure {kind!r} needs a sweep directory, {target.path} is a run")
    try:
        with paper_style(size):
            return fit_width(fk.draw(target, **params), size)
    except TypeError as e:
        if "unexpected keyword" in str(e):
            raise FigureError(f"figure {kind!r}: {e}") from None
        raise


def check_spec(spec: dict[str, Any]) -> None:
    """:class:`FigureError` (one line) unless ``spec`` — a ``[[figures]]`` entry — names a known kind and
    only parameters that kind's figure takes, each of a type its annotation allows: checked when a sweep
    file is loaded, before anything runs, not when the figure is drawn."""
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in REGISTRY:
        raise FigureError(f"unknown figure kind {kind!r}; known: {', '.join(REGISTRY)}")
    fn = REGISTRY[kind].draw
    params = {k: v for k, v in spec.items() if k not in SPEC_KEYS}
    check_known(kind, fn, params, ("target",), SPEC_KEYS[1:])
    check_params(kind, fn, params)


def check_known(kind: str, fn: Callable[..., Any], params: dict[str, Any], data: tuple[str, ...],
                also: tuple[str, ...] = ()) -> None:
    """:class:`FigureError` naming the first of ``params`` that ``fn`` does not take (its ``data``
    arguments aside), with the ones it does (and ``also``)."""
    import inspect

    takes = [n for n, p in inspect.signature(fn).parameters.items()
             if n not in data and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [k for k in params if k not in takes]
    if unknown:
        raise FigureError(f"figure {kind!r}: unknown parameter {unknown[0]!r}; allowed: {', '.join([*also, *takes])}")


def check_size(size: str | None, what: str = "figure size") -> None:
    """:class:`FigureError` unless ``size`` is None or a paper size (:data:`cclab.plot.PAPER_WIDTHS`);
    ``what`` names it in the error (``--size`` for the command line)."""
    from cclab.plot import PAPER_WIDTHS

    if size is not None and size not in PAPER_WIDTHS:
        raise FigureError(f"{what} {size!r}: expected one of {', '.join(PAPER_WIDTHS)}")


#: What a figure parameter's annotation allows, as the error says it (``check_params``).
_KIND_WORDS = {str: "a string", bool: "true or false", int: "an integer", float: "a number", dict: "a table",
               list: "a list of strings", type(None): "nothing"}  # fmt: skip
#: Parameters of a figure that are durations or widths in seconds: a number > 0.
_POSITIVE = ("smooth_s", "min_period_s", "bin_s")
#: Parameters that take one of a few words (the figure's own docs list them).
_CHOICES = {("line", "band"): ("auto", "trials", "samples", "none"), ("series", "table"): ("link", "flows")}


def check_params(kind: str, fn: Callable[..., Figure], params: dict[str, Any]) -> None:
    """Refuse (:class:`FigureError`, one line) a figure parameter whose value its function's
    annotation does not allow — `y = 5`, `logx = "no"`, `smooth_s = "1s"` would otherwise crash in
    the drawing, or (a string for a switch) be taken as true — a duration that is not > 0, or a
    word outside a parameter's choices. Parameters without an annotation pass as given."""
    import math
    import typing

    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an annotation this Python cannot evaluate: nothing to check against
        return
    for name, value in params.items():
        hint = hints.get(name)
        if hint is None:
            continue
        allowed = list(typing.get_args(hint)) if typing.get_origin(hint) in (typing.Union, types.UnionType) else [hint]
        ok = False
        for a in allowed:
            base = typing.get_origin(a) or a
            if base is float:
                ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            elif base is int:
                ok = isinstance(value, int) and not isinstance(value, bool)
            elif base is list:
                ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
            elif base is type(None):
                ok = value is None
            elif isinstance(base, type):
                ok = isinstance(value, base)
            else:
                ok = True  # Any and the like
            if ok:
                break
        words = " or ".join(dict.fromkeys(_KIND_WORDS.get(typing.get_origin(a) or a, str(a)) for a in allowed
                                          if a is not type(None)))  # fmt: skip
        if not ok:
            raise FigureError(f"figure {kind!r}: {name} = {value!r} is not {words}; expected {words}")
        if name in _POSITIVE and value is not None and not (math.isfinite(value) and value > 0):
            raise FigureError(f"figure {kind!r}: {name} = {value!r}; expected a number of seconds > 0")
        choices = _CHOICES.get((kind, name))
        if choices and value not in choices:
            raise FigureError(f"figure {kind!r}: {name} = {value!r}; expected one of {', '.join(choices)}")


def default_specs(target: Target) -> list[dict[str, Any]]:
    """The figures drawn when none are asked for."""
    if target.kind == "run":
        specs: list[dict[str, Any]] = [{"kind": "timeseries"}, {"kind": "jain"}]
        run = target.run()
        if len({f["cca"] for f in run.ir["flows"]}) > 1:
            specs.append({"kind": "period"})
        specs += distribution_specs(run.summary, getattr(run, "histograms", None))
        if len(run.ir.get("links") or []) > 1 or any(f.get("ack_path") for f in run.ir["flows"]):
            specs = [{"kind": "topology"}, *specs, {"kind": "links"}]
        return specs
    listed = target.sweep_toml.get("figures")
    if listed:
        return [dict(s) for s in listed]
    from cclab.figures.sweep_figs import auto_specs

    return auto_specs(target)


def has_distributions(histograms: Any) -> bool:
    """A record's per-packet histograms (record version 3) hold samples."""
    if not histograms:
        return False
    return any(len((histograms.get(k) or {}).get("count", ())) for k in ("rtt", "sojourn"))


def distribution_specs(summary: dict[str, Any], histograms: Any) -> list[dict[str, Any]]:
    """The CDFs a record can draw: RTT and queueing delay when it has per-packet histograms
    (record version 3), flow completion times when a finite flow completed."""
    specs: list[dict[str, Any]] = []
    if has_distributions(histograms):
        specs += [{"kind": "cdf", "metric": "rtt"}, {"kind": "cdf", "metric": "queue_delay"}]
    if any(f.get("fct_s") is not None for f in summary.get("per_flow", [])):
        specs.append({"kind": "cdf", "metric": "fct"})
    return specs


def check_spec_name(name: Any) -> str | None:
    """Why ``name`` cannot be a ``[[figures]]`` entry's ``name`` (the file name of the figure, without the
    extension, in the output directory), or ``None``."""
    if not isinstance(name, str):
        return f"{name!r} is not a string"
    if name.strip() in ("", ".", ".."):
        return f"{name!r} is empty or a directory name"
    if "/" in name or "\\" in name or "\0" in name or name.startswith("~"):
        return f"{name!r} contains a path separator"
    return None


def _name_error(name: Any, where: str = "") -> FigureError:
    return FigureError(f"{where}[[figures]] name {check_spec_name(name)}; expected a plain file name "
                       "(no '/', '\\', '..' or absolute path, not empty), e.g. \"goodput-vs-rtt\"")


def spec_name(spec: dict[str, Any], i: int) -> str:
    if "name" in spec:
        if check_spec_name(spec["name"]) is not None:
            raise _name_error(spec["name"])
        return spec["name"]
    key = "-".join(str(spec[k]) for k in ("y", "metric", "x") if isinstance(spec.get(k), str))
    slug = "".join(c if c.isalnum() or c in "-_" else "_" for c in key).strip("_")
    return f"{i:02d}-{spec['kind']}" + (f"-{slug}" if slug else "")


def render(target: Target, specs: list[dict[str, Any]], out_dir: Path, formats=("png", "svg"), size: str | None = None):
    """Draw each spec to out_dir/<name>.<format>; yields (spec, name, paths or error)."""
    from cclab.plot import save_figure

    for i, spec in enumerate(specs):  # every name checked before anything is drawn
        spec_name(spec, i)
    for i, spec in enumerate(specs):
        params = {k: v for k, v in spec.items() if k != "kind"}
        name = spec_name(spec, i)
        try:
            fig = draw(target, spec["kind"], size=size, **params)
        except FigureError as e:
            yield spec, name, e
            continue
        yield spec, name, save_figure(fig, out_dir / name, formats)


def render_all(path: str | Path, kinds: list[str] | None = None, out_dir: Path | None = None,
               formats: tuple[str, ...] = ("png", "svg"), size: str | None = None
               ) -> tuple[list[Path], list[str]]:  # fmt: skip
    """`cclab plot`: draw the default (or the named kinds of) figures; return the files written and
    the figures skipped (``name: reason``). :class:`FigureError` if none could be drawn."""
    check_size(size, "--size")  # once, not once per figure
    target = Target(path)
    specs = default_specs(target)
    if kinds:
        unknown = [k for k in kinds if k not in REGISTRY]
        if unknown:
            raise FigureError(f"unknown figure kind(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
        chosen = [s for s in specs if s["kind"] in kinds]
        chosen += [{"kind": k} for k in kinds if k not in {s["kind"] for s in chosen}]
        specs = chosen
    out_dir = out_dir or target.path / "figures"
    written: list[Path] = []
    errors = []
    for spec, name, result in render(target, specs, out_dir, formats=formats, size=size):
        if isinstance(result, Exception):
            errors.append(f"{name}: {result}")
        else:
            written.extend(result)
    if errors and not written:
        raise FigureError("; ".join(errors))
    return written, errors


# register the kinds
from cclab.figures import dist_figs, sweep_figs, time_figs  # noqa: E402,F401

__all__ = ["REGISTRY", "FigureError", "Target", "check_spec", "draw", "default_specs", "render", "render_all"]
