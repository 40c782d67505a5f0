"""The Python API: ``cclab.run(scenario)`` and ``cclab.load(run_dir)``.

    >>> import cclab
    >>> run = cclab.run("examples/cubic-vs-reno.toml")     # doctest: +SKIP
    >>> run.summary["aggregate"]["jain"], run.flows.head()  # doctest: +SKIP

A run goes scenario → :func:`cclab.resolve.resolve` (the IR) → a backend
(:mod:`cclab.backends`) → :mod:`cclab.metrics` → :func:`cclab.record.write_run`
(atomic) → optionally the time-series figure (:mod:`cclab.plot`), drawn into
the finished record directory as ``timeseries.png``/``.svg``.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import platform
import re
import sys
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cclab.backends import get_backend

__all__ = ["Run", "default_run_dir", "load", "prepare", "run", "run_prepared", "run_resolved", "run_to_dir"]

#: Where ``cclab run`` (the command) writes when no ``--out`` is given: ``runs/<name>-<short IR hash>``.
#: :func:`run` (Python) writes into a new temporary directory instead: the API writes only where it is told.
RUNS_DIR = Path("runs")


def __getattr__(name: str) -> Any:
    if name == "Run":  # cclab.record (pandas, pyarrow) loads on first use
        from cclab.record import Run

        return Run
    raise AttributeError(f"module 'cclab.api' has no attribute {name!r}")


def cclab_version() -> str:
    try:
        return importlib.metadata.version("cclab")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source checkout without install
        return "unknown"


def prepare(scenario: Any, seed: int | None = None) -> tuple[Any, str, dict[str, Any]]:
    """``(Scenario, scenario TOML text, IR)`` from a path, a Scenario or a TOML-shaped dict.

    For a path the TOML text is the file as written (unless ``seed`` overrides
    the file's seed; then it is the scenario re-serialised).
    """
    from cclab.errors import ScenarioError
    from cclab.resolve import resolve
    from cclab.scenario import Scenario, load_scenario, scenario_from_dict

    text: str | None = None
    source: str | None = None
    if isinstance(scenario, Scenario):
        sc = _revalidated(scenario)
    elif isinstance(scenario, Mapping):
        _check_keys(scenario, "")
        sc = scenario_from_dict(dict(scenario), base_dir=Path.cwd())
    elif isinstance(scenario, (str, Path)):
        sc = load_scenario(scenario)
        from cclab.scenario import read_text_file

        text = read_text_file(Path(scenario))
        source = str(scenario)
    else:
        raise TypeError(f"scenario must be a path, a cclab.Scenario or a dict, not {type(scenario).__name__}")
    if isinstance(seed, bool):  # an int to Python, never meant as one (the file refuses seed = true too)
        from cclab.errors import ScenarioError

        raise ScenarioError("seed", seed, f"{seed!r} is not an integer", "expected an integer from 0 to 2^64 − 1")
    if seed is not None and seed != sc.seed:
        sc = sc.model_copy()
        sc.seed = seed
        text = None
    if text is None:
        text = sc.to_toml()
    try:
        ir = resolve(sc)
    except ScenarioError as exc:  # a check across fields (e.g. sample_interval against duration): still the file's
        raise (exc.in_file(source) if source and not exc.source else exc) from None
    return sc, text, ir


def _revalidated(sc: Any) -> Any:
    """A :class:`~cclab.scenario.Scenario` validated again from its fields: a model changed after it
    was built (``sc.flows.append({...})``, ``sc.flows[0].cca.params["beta"] = 5.0``) skipped its
    checks, and is refused here, one line naming the field, like a file would be."""
    import warnings

    from cclab.errors import ScenarioError
    from cclab.scenario import scenario_from_dict

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pydantic's "unexpected type" serializer warnings: judged below
            data = sc.to_dict()
    except Exception as exc:  # noqa: BLE001 - whatever was put into the model, it is not a scenario
        raise ScenarioError("", None, f"this Scenario object was changed into something that is not a scenario "
                            f"({type(exc).__name__}: {exc})", "change a scenario through a dict or "
                            "cclab.scenario.scenario_from_dict, which check every field") from None  # fmt: skip
    _check_keys(data, "")
    return scenario_from_dict(data, base_dir=sc.base_dir)


def _check_keys(data: Any, where: str) -> None:
    """Every table key of a scenario given as a dict is a string, as in a TOML file."""
    from cclab.errors import ScenarioError

    if isinstance(data, Mapping):
        for key, value in data.items():
            if not isinstance(key, str):
                raise ScenarioError(where or "scenario", key, f"has the key {key!r} ({type(key).__name__})",
                                    "expected string keys, as in a TOML table")  # fmt: skip
            _check_keys(value, f"{where}.{key}" if where else key)
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            _check_keys(value, f"{where}[{i}]")


def default_run_dir(ir: Mapping[str, Any], backend: str = "sim") -> Path:
    """``runs/<scenario name>-<first 8 hex of the IR hash>`` (``-<backend>`` appended unless sim)."""
    from cclab.resolve import ir_hash

    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", str(ir.get("name", "run"))).strip("-.") or "run"
    suffix = "" if backend == "sim" else f"-{backend}"
    return RUNS_DIR / f"{slug}-{ir_hash(dict(ir))[:8]}{suffix}"


def run(
    scenario: Any,
    *,
    out: str | Path | None = None,
    backend: str = "sim",
    seed: int | None = None,
    plot: bool = True,
    formats: Iterable[str] | str = ("png",),
    overwrite: bool = False,
    allow_large: bool = False,
) -> Run:
    """Run a scenario and write its record; returns the :class:`~cclab.record.Run`.

    ``scenario``: a path to a TOML file, a :class:`cclab.scenario.Scenario` or a
    TOML-shaped dict. ``out``: the record directory; without it, a new
    temporary directory (``<tmp>/cclab-XXXXXXXX/<name>-<IR hash>``, kept: the
    record is ``run.path``) — nothing is written to the working directory. An
    existing complete record in ``out`` is an error unless ``overwrite`` (and
    even then, a directory cclab did not write is never replaced). ``seed``
    overrides the scenario's seed. ``plot`` draws ``timeseries.<fmt>`` for each
    of ``formats`` into the record (``run.plot()`` returns the figures
    without saving). A run whose estimated memory, events or record size
    exceeds :data:`cclab.limits.LIMITS` is refused before it starts unless
    ``allow_large``.
    """
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out: {out!r} is not a path; expected a str or os.PathLike directory name")
    if out is not None and "\0" in os.fspath(out):
        raise ValueError(f"out: {os.fspath(out)!r} contains a NUL byte, which no path can hold")
    _sc, toml_text, ir = prepare(scenario, seed)
    if out is not None:
        return run_prepared(ir, toml_text, out, backend=backend, plot=plot, formats=formats, overwrite=overwrite,
                            allow_large=allow_large)  # fmt: skip
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="cclab-"))
    try:
        return run_prepared(ir, toml_text, tmp / default_run_dir(ir, backend).name, backend=backend, plot=plot,
                            formats=formats, overwrite=overwrite, allow_large=allow_large)  # fmt: skip
    except BaseException:
        if not any(tmp.iterdir()):  # the run was refused or failed before its record: leave nothing behind
            shutil.rmtree(tmp, ignore_errors=True)
        raise


def run_prepared(ir: Mapping[str, Any], scenario_toml: str, out: str | Path, *, backend: str = "sim",
                 plot: bool = True, formats: Iterable[str] | str = ("png",), overwrite: bool = False,
                 allow_large: bool = False) -> Run:  # fmt: skip
    """:func:`run` of what :func:`prepare` returned (the IR and the scenario text the record keeps),
    into ``out`` — without validating and resolving the scenario again."""
    if plot:
        from cclab.fsutil import figure_formats

        formats = figure_formats(formats)
    result = _run(dict(ir), scenario_toml, Path(out), backend=backend, overwrite=overwrite, allow_large=allow_large)
    if plot:
        result.figures = result.save_plot(formats=tuple(formats))
    return result


def run_resolved(ir: Mapping[str, Any], scenario_toml: str, out_dir: str | Path, backend: str = "sim", *,
                 overwrite: bool = False, allow_large: bool = False) -> Path:  # fmt: skip
    """Run an already resolved scenario (``ir``, from :func:`cclab.resolve.resolve`) and write its
    record to ``out_dir``; returns its path. ``scenario_toml`` is the scenario text the record keeps.

    What a sweep's workers call: the sweep resolved every point once, when it
    planned them, and sends the IR (no validation or resolution again).
    """
    return _run(dict(ir), scenario_toml, Path(out_dir), backend=backend, overwrite=overwrite,
                allow_large=allow_large).path


def _run(ir: dict[str, Any], toml_text: str, out_dir: Path, *, backend: str, overwrite: bool,
         allow_large: bool) -> Run:  # fmt: skip
    from cclab import limits
    from cclab.record_dir import check_target
    from cclab.resolve import ir_hash

    check_target(out_dir.absolute(), overwrite)  # fail before a long run, not after
    limits.check(ir, backend=backend, allow_large=allow_large, override="--allow-large (Python: allow_large=True)")
    engine = get_backend(backend)
    started = _dt.datetime.now(_dt.timezone.utc)
    meta: dict[str, Any] = {
        "backend": backend,
        "cclab_version": cclab_version(),
        "seed": ir.get("seed"),
        "host": platform.node(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "started_at": started.isoformat(timespec="seconds"),
        "valid": True,
        "invalid_reasons": [],
        "ir_hash": ir_hash(ir),
    }
    store_flows = bool((ir.get("record") or {}).get("flows_stored", True))
    if hasattr(engine, "stream"):
        t_start = time.perf_counter()
        # The engine starts on its first chunk in its own thread now; importing pandas and pyarrow
        # (cclab.metrics, cclab.record: most of a short run's start-up) happens meanwhile.
        stream = engine.stream(ir).start()
        try:
            from cclab import metrics, record

            path, summary, link, tail = _run_streaming(stream, ir, toml_text, out_dir, meta, overwrite, store_flows,
                                                       t_start)  # fmt: skip
        finally:
            stream.close()
        flows = None
    else:
        from cclab import metrics, record

        t0 = time.perf_counter()
        raw = engine.run(ir)
        meta["wall_time_s"] = time.perf_counter() - t0
        raw = {**raw, "flows": metrics.flows_at_record_interval(raw["flows"], ir)}
        flows = metrics.flows_frame(raw, ir)
        link = metrics.link_frame(raw, ir)
        tail = raw
        t1 = time.perf_counter()
        summary = metrics.summary(flows, link, ir, histograms=raw.get("histograms"), flow_info=raw.get("flow_info"))
        meta["timing"] = {"engine_s": meta["wall_time_s"], "summary_s": time.perf_counter() - t1}
        _finish_meta(meta, raw)
        path = record.write_run(out_dir, scenario_toml=toml_text, ir=ir, meta=meta,
                                flows=flows if store_flows else flows.iloc[0:0], link=link, summary=summary,
                                overwrite=overwrite, histograms=raw.get("histograms"))  # fmt: skip
    return record.Run(flows=flows if store_flows else None, link=link, summary=summary, meta=record.read_meta(path),
                      ir=ir, scenario_toml=toml_text, path=path, histograms=tail.get("histograms"))  # fmt: skip


def _finish_meta(meta: dict[str, Any], tail: Mapping[str, Any]) -> None:
    meta["engine_version"] = str(tail.get("engine_version", "unknown"))
    meta["counters"] = dict(tail.get("counters") or {})
    meta.update(tail.get("meta") or {})


#: Columns of the per-flow frame the summary reads (kept in memory while the rest is streamed to disk).
_SUMMARY_COLUMNS = ("time_s", "flow_id", "active", "goodput_bps", "send_rate_bps", "sent_segs", "retrans_segs",
                    "rto_count", "rtt_ms", "cwnd_bytes", "state")  # fmt: skip


def _run_streaming(stream: Any, ir: dict[str, Any], toml_text: str, out_dir: Path, meta: dict[str, Any],
                   overwrite: bool, store_flows: bool, t_start: float) -> tuple[Path, dict[str, Any], Any, dict[str, Any]]:
    """Run ``ir`` through a backend's ``stream``, writing the record as the chunks come (docs/record.md "Writing");
    ``t_start``: when the stream was made."""
    import pandas as pd

    from cclab import metrics, record

    builder = metrics.FrameBuilder(ir, stream.state_names)
    states = sorted({name for names in stream.state_names.values() for name in names})  # one small code per row
    kept: list[pd.DataFrame] = []
    links: list[pd.DataFrame] = []
    with record.RecordWriter(out_dir, scenario_toml=toml_text, ir=ir, overwrite=overwrite,
                             store_flows=store_flows) as writer:  # fmt: skip
        for chunk in stream:
            ff = builder.flows(chunk["flows"])
            lf = builder.link(chunk["link"])
            writer.add_flows(ff)
            writer.add_link(lf)
            part = ff[list(_SUMMARY_COLUMNS)]
            kept.append(part.assign(state=pd.Categorical(part["state"], categories=states)))
            links.append(lf)
        tail = stream.finish()
        meta["wall_time_s"] = stream.engine_s
        _finish_meta(meta, tail)
        flows = pd.concat(kept, ignore_index=True) if kept else builder.flows({"time_ns": [], "flow_id": []})
        del kept
        link = pd.concat(links, ignore_index=True) if links else builder.link({"time_ns": []})
        t1 = time.perf_counter()
        summary = metrics.summary(flows, link, ir, histograms=tail.get("histograms"), flow_info=tail.get("flow_info"))
        # engine: in the simulator; summary: cclab.metrics.summary; total: run + frames + writing + summary
        # (from the engine's start: in a fresh process also the imports that overlap its first chunk)
        meta["timing"] = {"engine_s": stream.engine_s, "summary_s": time.perf_counter() - t1,
                          "total_s": time.perf_counter() - t_start}  # fmt: skip
        path = writer.finish(meta=meta, summary=summary, histograms=tail.get("histograms"))
    return path, summary, link, tail


def run_to_dir(scenario: Any, out_dir: str | Path, backend: str = "sim", *, seed: int | None = None,
               overwrite: bool = False, plot: bool = False, allow_large: bool = False) -> Path:  # fmt: skip
    """Run ``scenario`` and write a complete record to ``out_dir`` (for sweeps); returns its path.

    No figure unless ``plot``. Raises :class:`cclab.record.RecordExistsError`
    if ``out_dir`` already holds a complete record and ``overwrite`` is false.
    """
    return run(scenario, out=out_dir, backend=backend, seed=seed, plot=plot, overwrite=overwrite,  # type: ignore[return-value]
               allow_large=allow_large).path


def load(run_dir: str | Path) -> Run:
    """Load a complete run record (:func:`cclab.record.read_run`)."""
    from cclab import record

    return record.read_run(run_dir)
