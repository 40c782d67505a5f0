"""The run record: one directory per run, written atomically (docs/record.md).

Files: ``scenario.toml``, ``resolved.json`` (the IR), ``meta.json``,
``flows.parquet``, ``link.parquet``, ``histograms.parquet`` (record version
3: per-packet RTT and queueing-delay distributions), ``summary.json`` and
``manifest.json`` (the size and SHA-256 of each of the others).

Writing is streaming (:class:`RecordWriter`): the per-flow and link rows go
into their Parquet files chunk by chunk as the engine hands them over, so a
run's rows are never all in memory at once.

Reading migrates: records of versions 1 and 2 (no histograms, float64
columns, summaries of the first definitions) are read into the current
layout — the histograms are empty and the summary is recomputed from the
record's series with the current definitions (``meta["summary_migrated_from"]``
says from which), falling back to per-interval delay statistics where
per-packet ones do not exist.

Atomicity: a record is built in a temporary sibling directory
(``<name>.tmp-XXXX``, made by ``mkdtemp``; every file in it created with
``O_EXCL | O_NOFOLLOW``), every file fsynced, ``meta.json`` written with
``"status": "complete"``, ``manifest.json`` last, then the directory is
renamed into place. A record is complete iff its ``meta.json`` says
``"status": "complete"``, all files are there and their sizes match the
manifest; :func:`verify` also compares the checksums, and :func:`read_run`
(``cclab.load``) and sweeps verify before using a record, so a truncated or
edited file is reported, never read as data. A leftover ``*.tmp-*`` directory
(a crash mid-write) is never complete.

Replacing: an existing record is only replaced with ``overwrite=True``, and
only if cclab wrote it (it has a manifest, or is a complete record of
version 1, and holds nothing but files cclab writes into a record: see
:func:`written_by_cclab`) — a directory of anything else is never deleted.
The old record is renamed aside, the new one renamed in and only then is the
old one deleted: at no moment is there a partial record under the target
name. Both helper directories are siblings named ``<name>.tmp-…`` so that a
directory scan can skip them by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cclab.metrics import json_safe
from cclab.metrics import with_link_column
from cclab.record_dir import (  # the directory's names and checks, light to import (cclab.record_dir)
    EXTRA_DIRS,
    EXTRA_FILES,
    FILES,
    FILES_V2,
    FLOWS,
    HISTOGRAMS,
    LINK,
    MANIFEST,
    MANIFEST_FORMAT,
    META,
    RECORD_VERSION,
    RESOLVED,
    SCENARIO,
    SUMMARY,
    RecordError,
    RecordExistsError,
    _sha256,
    check_target,
    enclosing_record,
    files_of,
    is_complete,
    is_record_dir,
    output_place_problem,
    read_meta,
    verify,
    written_by_cclab,
)
from cclab.resolve import migrate_ir

__all__ = [
    "FILES",
    "MANIFEST",
    "RECORD_VERSION",
    "RecordError",
    "RecordExistsError",
    "RecordWriter",
    "Run",
    "check_target",
    "is_complete",
    "read_meta",
    "read_run",
    "verify",
    "write_run",
    "written_by_cclab",
]


@dataclass
class Run:
    """A run record in memory.

    Attributes: ``flows`` and ``link`` (per-interval DataFrames, docs/record.md;
    ``flows`` is read from the record the first time it is used, so loading a
    record of many flows costs nothing until then), ``summary`` (summary.json),
    ``meta`` (meta.json), ``ir`` (resolved.json), ``scenario_toml`` (the
    scenario as written), ``path`` (the record directory, ``None`` if not
    written) and ``histograms`` (the per-packet distributions as
    :func:`cclab.metrics.distribution` takes them; ``None`` for records
    before version 3).
    """

    flows: pd.DataFrame | None
    link: pd.DataFrame
    summary: dict[str, Any]
    meta: dict[str, Any]
    ir: dict[str, Any]
    scenario_toml: str = ""
    path: Path | None = None
    figures: list[Path] = field(default_factory=list)
    histograms: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return str(self.ir.get("name", "run"))

    def plot(self, kind: str = "timeseries", **options: Any) -> Any:
        """A figure of this run as a ``matplotlib.figure.Figure`` (nothing is saved: see
        :meth:`save_plot`, or ``fig.savefig``). ``kind``: ``timeseries`` (the stacked per-run
        figure, :func:`cclab.plot.figure_timeseries`) or any run figure of ``cclab plot --list``;
        ``options`` are that figure's parameters."""
        from cclab import figures

        if kind == "timeseries":
            from cclab.plot import figure_timeseries

            # an unknown option named with the allowed ones, not a raw TypeError
            figures.check_known(kind, figure_timeseries, options, ("flows", "link", "ir"))
            return figure_timeseries(self.flows, self.link, self.ir, **options)

        return figures.draw(figures.Target.of_run(self), kind, **options)

    def save_plot(self, path: str | Path | None = None, formats: tuple[str, ...] | list[str] = ("png",),
                  kind: str = "timeseries", **options: Any) -> list[Path]:  # fmt: skip
        """Draw :meth:`plot` and save it; returns the files written.

        ``path`` is the file name without suffix (default ``<record>/timeseries`` for the time-series
        figure, ``<record>/figures/<kind>`` for the others); one file per format (``png``, ``svg``,
        ``pdf``). Inside a run record only those places are allowed: anything else there would make
        the record one cclab can no longer replace (docs/record.md).
        """
        from cclab.plot import save_figure

        if path is None:
            if self.path is None:
                raise RecordError("this run has no record directory; pass save_plot(path=…)")
            path = self.path / kind if kind == "timeseries" else self.path / "figures" / kind
        _check_figure_path(Path(path))
        fig = self.plot(kind, **options)
        return save_figure(fig, path, formats)

    def __repr__(self) -> str:
        agg = self.summary.get("aggregate", {})
        lines = [
            f"Run {self.name!r} backend={self.meta.get('backend')} seed={self.meta.get('seed')} "
            f"valid={self.meta.get('valid', True)} path={str(self.path) if self.path else None}",
            f"  aggregate: goodput {_mbps(agg.get('goodput_bps'))} Mbit/s, utilization {_pct(agg.get('utilization'))}, "
            f"loss {_pct(agg.get('loss_rate'), 3)}, Jain {_num(agg.get('jain'), 3)}, "
            f"queue delay p50 {_num(agg.get('queue_delay_ms_p50'))} ms",
        ]
        for alg, a in self.summary.get("per_algorithm", {}).items():
            lines.append(
                f"  {alg}: {a.get('flows')} flow(s), {_mbps(a.get('goodput_bps'))} Mbit/s, "
                f"share {_pct(a.get('share'))} (IQR {_pct(a.get('share_iqr'))})"
            )
        return "\n".join(lines)


def _check_figure_path(path: Path) -> None:
    """:class:`RecordError` if ``path`` (a figure's name without suffix) lies in a run record other than as
    its ``timeseries`` or under its ``figures/``."""
    rec = enclosing_record(path.parent)
    if rec is None:
        return
    where = Path(os.path.normpath(path.absolute()))
    if where == rec / "timeseries" or rec / "figures" in where.parents:
        return
    raise RecordError(f"{path}: lies in the run record {rec}, which holds only what its run wrote, its "
                      f"timeseries figure and figures/; expected {rec / 'figures' / path.name} or a path outside it")


def _get_flows(self: Run) -> pd.DataFrame:
    df = self.__dict__.get("_flows")
    if df is None:
        if self.path is None:
            raise RecordError("this run has no per-flow frame and no record to read it from")
        df = _read_flows_checked(Path(self.path), self.__dict__.get("_flows_sha256"))
        self.__dict__["_flows"] = df
    return df


def _read_flows_checked(p: Path, sha256: str | None) -> pd.DataFrame:
    """flows.parquet, read on first use after :func:`read_run`: the file the record's manifest named then
    (``sha256``), or :class:`RecordError` — a record replaced or removed since it was loaded must not
    lend its rows to the other files' run."""
    import hashlib

    try:
        data = (p / FLOWS).read_bytes()
    except OSError as exc:
        raise RecordError(f"{p}: {FLOWS} cannot be read any more ({exc.strerror or exc}); load the record again") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise RecordError(f"{p}: {FLOWS} changed since the record was loaded (another run written there?); "
                          "load the record again")
    return pq.read_table(pa.BufferReader(data)).to_pandas()


def _set_flows(self: Run, value: pd.DataFrame | None) -> None:
    self.__dict__["_flows"] = value


Run.flows = property(_get_flows, _set_flows, doc="Per-flow per-interval frame (read from the record on first use).")  # type: ignore[assignment]


def _num(x: Any, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _mbps(x: Any) -> str:
    return "n/a" if x is None else f"{x / 1e6:.2f}"


def _pct(x: Any, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


# --------------------------------------------------------------------------
# reading


def read_run(path: str | Path) -> Run:
    """Load a complete, intact record (sizes and checksums verified, :func:`verify`);
    :class:`RecordError` (one line) if ``path`` is not one."""
    p = Path(path)
    problem = verify(p)
    if problem is not None:
        raise RecordError(f"{p}: {problem}")
    meta = json.loads((p / META).read_text())
    version = meta.get("record_version")
    if isinstance(version, int) and version > RECORD_VERSION:
        raise RecordError(f"{p}: record version {version} is newer than this cclab reads ({RECORD_VERSION})")
    try:
        run = Run(
            flows=None,
            link=with_link_column(pq.read_table(p / LINK).to_pandas()),  # records before topologies: one link
            summary=json.loads((p / SUMMARY).read_text()),
            meta=meta,
            ir=migrate_ir(json.loads((p / RESOLVED).read_text())),
            scenario_toml=(p / SCENARIO).read_text(),
            path=p,
            histograms=read_histograms(p) if (p / HISTOGRAMS).is_file() else None,
        )
        if not isinstance(version, int) or version < 3:
            run.flows = read_flows(p)  # a version-1 record has no checksums: read it now, fail now
        else:  # flows.parquet is read on first use: as the manifest verified above names it
            entry = json.loads((p / MANIFEST).read_text()).get("files", {}).get(FLOWS, {})
            run.__dict__["_flows_sha256"] = entry.get("sha256") if isinstance(entry, dict) else None
        _migrate_summary(run)
        return run
    except (OSError, ValueError, pa.ArrowException) as exc:  # a version-1 record has no checksums to catch this
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise RecordError(f"{p}: corrupt record: {first}") from None


def read_flows(path: str | Path, columns: list[str] | None = None) -> pd.DataFrame:
    """``flows.parquet`` of a record as a DataFrame (only ``columns`` if given)."""
    return pq.read_table(Path(path) / FLOWS, columns=columns).to_pandas()


def _migrate_summary(run: Run) -> None:
    """Recompute the summary of a record whose summary.json has older definitions (in memory only)."""
    from cclab import metrics

    version = run.summary.get("summary_version", 1) if isinstance(run.summary, dict) else 1
    if version == metrics.SUMMARY_VERSION:
        return
    old = run.summary if isinstance(run.summary, dict) else {}
    info = [{"completion_ns": None if f.get("fct_s") is None else round((f["fct_s"] + f.get("start_s", 0)) * 1e9)}
            for f in old.get("per_flow", [])] if version >= 2 else None  # fmt: skip
    run.summary = metrics.summary(run.flows, run.link, run.ir, histograms=run.histograms,
                                  flow_info=info if info and len(info) == len(run.ir["flows"]) else None)
    run.meta = {**run.meta, "summary_migrated_from": version}


# --------------------------------------------------------------------------
# histograms.parquet: per-packet distributions (docs/record.md "Distributions")

_HIST_KINDS = ("rtt", "sojourn")


def histograms_table(histograms: dict[str, Any] | None) -> pa.Table:
    """The engine's histograms (``raw["histograms"]``) as the ``histograms.parquet`` table.

    One row per non-empty bin: ``metric`` (``rtt`` = every ACK's RTT sample
    of a flow, ``sojourn`` = every packet leaving the bottleneck), ``flow_id``
    (−1 for the link), ``bin``, ``lower_ns``, ``width_ns``, ``count``. The
    exact per-histogram count, sum, minimum and maximum are in the schema's
    metadata (``cclab.hist_stats``), with ``cclab.hist_sub_bits``.
    """
    from cclab.metrics import HIST_SUB_BITS, hist_bin_edges

    h = histograms or {}
    sub_bits = int(h.get("sub_bits", HIST_SUB_BITS))
    parts = {"metric": [], "flow_id": [], "bin": [], "count": []}
    stats: dict[str, Any] = {"sub_bits": sub_bits}
    for kind in _HIST_KINDS:
        d = h.get(kind) or {}
        b = np.asarray(d.get("bin", []), dtype=np.int64)
        parts["metric"].append(np.full(b.size, kind, dtype=object))
        parts["flow_id"].append(np.asarray(d["flow_id"], dtype=np.int32) if "flow_id" in d
                                else np.full(b.size, -1, dtype=np.int32))  # fmt: skip
        parts["bin"].append(b.astype(np.int32))
        parts["count"].append(np.asarray(d.get("count", []), dtype=np.int64))
        stats[kind] = {k: np.asarray(d[k]).tolist() for k in ("stats_flow_id", "n", "sum_ns", "min_ns", "max_ns")
                       if k in d}  # fmt: skip
    for k in ("rtt_source", "rtt_source_kind"):
        if k in h:
            stats[k] = h[k]
    bins = np.concatenate(parts["bin"]) if parts["bin"] else np.zeros(0, dtype=np.int32)
    lower, width = hist_bin_edges(bins, sub_bits)
    table = pa.table({
        "metric": pa.array(np.concatenate(parts["metric"]).tolist(), type=pa.string()),
        "flow_id": pa.array(np.concatenate(parts["flow_id"]), type=pa.int32()),
        "bin": pa.array(bins, type=pa.int32()),
        "lower_ns": pa.array(lower.astype(np.int64), type=pa.int64()),
        "width_ns": pa.array(width.astype(np.int64), type=pa.int64()),
        "count": pa.array(np.concatenate(parts["count"]), type=pa.int64()),
    })
    meta = {b"cclab.hist_sub_bits": str(sub_bits).encode(),
            b"cclab.hist_stats": json.dumps(json_safe(stats), separators=(",", ":")).encode()}  # fmt: skip
    return table.replace_schema_metadata(meta)


def read_histograms(path: str | Path) -> dict[str, Any]:
    """``histograms.parquet`` of a record back in the engine's form (what :mod:`cclab.metrics` takes)."""
    table = pq.read_table(Path(path) / HISTOGRAMS)
    md = table.schema.metadata or {}
    stats = json.loads(md.get(b"cclab.hist_stats", b"{}").decode())
    out: dict[str, Any] = {"sub_bits": int(md.get(b"cclab.hist_sub_bits", b"7"))}
    for k in ("rtt_source", "rtt_source_kind"):
        if k in stats:
            out[k] = stats[k]
    metric = np.asarray(table.column("metric").to_pylist(), dtype=object)
    cols = {c: table.column(c).to_numpy() for c in ("flow_id", "bin", "count")}
    for kind in _HIST_KINDS:
        m = metric == kind
        d: dict[str, Any] = {"bin": cols["bin"][m].astype(np.int64), "count": cols["count"][m]}
        if kind == "rtt":
            d["flow_id"] = cols["flow_id"][m].astype(np.int64)
        for k, v in (stats.get(kind) or {}).items():
            d[k] = np.asarray([np.nan if x is None else x for x in v], dtype=float if k != "stats_flow_id" else np.int64)
        out[kind] = d
    return out


# --------------------------------------------------------------------------
# writing


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _create(path: Path):
    """A new file opened for writing: created exclusively, never through a symlink."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    return os.fdopen(fd, "wb")


def _write_bytes(path: Path, data: bytes) -> None:
    with _create(path) as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _write_text(path: Path, text: str) -> None:
    _write_bytes(path, text.encode("utf-8"))


def _write_json(path: Path, obj: Any) -> None:
    _write_text(path, json.dumps(json_safe(obj), indent=1, allow_nan=False) + "\n")


def _table(df: pd.DataFrame, table_name: str, schema: pa.Schema | None = None) -> pa.Table:
    table = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
    extra = {b"cclab.record_version": str(RECORD_VERSION).encode(), b"cclab.table": table_name.encode()}
    return table.replace_schema_metadata({**(table.schema.metadata or {}), **extra})


def _write_table(path: Path, table: pa.Table) -> None:
    with _create(path) as fh:
        pq.write_table(table, fh, compression="zstd")
        fh.flush()
        os.fsync(fh.fileno())


def _write_parquet(path: Path, df: pd.DataFrame, table_name: str) -> None:
    _write_table(path, _table(df, table_name))


def flows_schema() -> pa.Schema:
    """The Arrow schema of ``flows.parquet`` (record version 3)."""
    from cclab.metrics import FLOW_COLUMNS, FLOW_FLOAT32

    types = {"time_s": pa.float64(), "flow_id": pa.int32(), "group": pa.int32(), "cca": pa.string(),
             "active": pa.bool_(), "state": pa.string()}  # fmt: skip
    return pa.schema([pa.field(c, types.get(c, pa.float32() if c in FLOW_FLOAT32 else pa.float64()))
                      for c in FLOW_COLUMNS])  # fmt: skip


class _StreamingParquet:
    """A Parquet file written row group by row group (zstd), created exclusively, fsynced on close."""

    def __init__(self, path: Path, table_name: str, schema: pa.Schema | None = None):
        self.path, self.table_name, self.schema = path, table_name, schema
        self._fh = None
        self._writer: pq.ParquetWriter | None = None

    def write(self, df: pd.DataFrame) -> None:
        table = _table(df, self.table_name, self.schema)
        if self._writer is None:
            self._fh = _create(self.path)
            self._writer = pq.ParquetWriter(self._fh, table.schema, compression="zstd")
            self.schema = table.schema
        self._writer.write_table(table)

    def close(self, empty: pd.DataFrame) -> None:
        if self._writer is None:
            self.write(empty)
        assert self._writer is not None and self._fh is not None
        self._writer.close()
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()

    def abort(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        if self._fh is not None:
            self._fh.close()


def _empty_flows() -> pd.DataFrame:
    return flows_schema().empty_table().to_pandas()


class RecordWriter:
    """Writes a run record while the run goes on (docs/record.md "Writing").

        with RecordWriter(out, scenario_toml=…, ir=…) as w:
            for chunk in …:
                w.add_flows(flows_frame_chunk)      # appended to flows.parquet
                w.add_link(link_frame_chunk)
            path = w.finish(meta=…, summary=…, histograms=…)

    The files are created in a private temporary sibling directory and the
    directory renamed into place by :meth:`finish` (everything else as
    :func:`write_run`); leaving the block without ``finish`` (an error, a
    Ctrl-C) removes it. ``store_flows=False`` keeps ``flows.parquet`` empty
    (``record = { flows = "off" }``): chunks given to :meth:`add_flows` are dropped.
    """

    def __init__(self, out_dir: str | Path, *, scenario_toml: str, ir: dict[str, Any], overwrite: bool = False,
                 store_flows: bool = True):
        self.out = Path(out_dir).absolute()
        self.overwrite = overwrite
        self.store_flows = store_flows
        check_target(self.out, overwrite)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.tmp = Path(tempfile.mkdtemp(prefix=f"{self.out.name}.tmp-", dir=self.out.parent))
        except OSError as exc:  # name the directory asked for, not the temporary one beside it
            raise OSError(exc.errno, f"cannot write a record there ({exc.strerror})", str(self.out)) from None
        self._flows = _StreamingParquet(self.tmp / FLOWS, "flows", flows_schema())
        self._link = _StreamingParquet(self.tmp / LINK, "link")
        self._done = False
        try:
            os.chmod(self.tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; a record is an ordinary directory
            _write_text(self.tmp / SCENARIO, scenario_toml)
            _write_json(self.tmp / RESOLVED, ir)
        except BaseException:
            self.abort()
            raise

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._done:
            self.abort()

    def add_flows(self, df: pd.DataFrame) -> None:
        if self.store_flows and len(df):
            self._flows.write(df)

    def add_link(self, df: pd.DataFrame) -> None:
        if len(df):
            self._link.write(df)

    def finish(self, *, meta: dict[str, Any], summary: dict[str, Any], histograms: dict[str, Any] | None = None) -> Path:
        """Close the tables, write histograms, summary, meta and manifest, rename into place."""
        from cclab.metrics import LINK_COLUMNS

        try:
            self._flows.close(_empty_flows())
            self._link.close(pd.DataFrame({c: pd.Series(dtype=float) for c in LINK_COLUMNS}))
            _write_table(self.tmp / HISTOGRAMS, histograms_table(histograms))
            _write_json(self.tmp / SUMMARY, summary)
            full_meta = {"record_version": RECORD_VERSION, **meta, "status": "complete"}
            full_meta["record_version"] = RECORD_VERSION
            full_meta.setdefault("valid", True)
            full_meta.setdefault("invalid_reasons", [])
            _write_json(self.tmp / META, full_meta)  # its status marks the record complete
            _write_manifest(self.tmp)  # last: sizes and checksums of everything above
            _fsync_dir(self.tmp)
            _install(self.tmp, self.out, self.overwrite)
        except BaseException:
            self.abort()
            raise
        self._done = True
        _fsync_dir(self.out.parent)
        return self.out

    def abort(self) -> None:
        self._done = True
        self._flows.abort()
        self._link.abort()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _write_manifest(directory: Path) -> None:
    files = {name: {"bytes": (directory / name).stat().st_size, "sha256": _sha256(directory / name)} for name in FILES}
    _write_json(directory / MANIFEST, {"format": MANIFEST_FORMAT, "record_version": RECORD_VERSION, "files": files})


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_run(
    out_dir: str | Path,
    *,
    scenario_toml: str,
    ir: dict[str, Any],
    meta: dict[str, Any],
    flows: pd.DataFrame,
    link: pd.DataFrame,
    summary: dict[str, Any],
    overwrite: bool = False,
    histograms: dict[str, Any] | None = None,
) -> Path:
    """Write a complete run record to ``out_dir`` atomically; returns its path (:class:`RecordWriter` in one go).

    ``meta`` supplies the provenance fields (backend, cclab_version,
    engine_version, seed, host, started_at, wall_time_s, valid,
    invalid_reasons, ir_hash, …); ``record_version`` and ``status`` are set
    here. Raises :class:`RecordExistsError` if ``out_dir`` holds a complete
    record (or other data) and ``overwrite`` is false.
    """
    with RecordWriter(out_dir, scenario_toml=scenario_toml, ir=ir, overwrite=overwrite) as w:
        w.add_flows(flows)
        w.add_link(link)
        return w.finish(meta=meta, summary=summary, histograms=histograms)


def _install(tmp: Path, out: Path, overwrite: bool) -> None:
    """Rename the finished ``tmp`` to ``out`` (replacing ``out`` only if ``overwrite``)."""
    if not out.exists():
        try:
            os.rename(tmp, out)
            return
        except OSError:
            if not out.exists():
                raise
            # someone created it meanwhile: fall through to the checks
    check_target(out, overwrite)
    if out.is_dir() and not any(out.iterdir()):
        os.rename(tmp, out)  # replacing an empty directory is atomic on POSIX
        return
    old = Path(tempfile.mkdtemp(prefix=f"{out.name}.tmp-old-", dir=out.parent))
    os.rmdir(old)
    os.rename(out, old)
    try:
        os.rename(tmp, out)
    except BaseException:
        os.rename(old, out)  # put the previous record back
        raise
    if old.is_dir():
        shutil.rmtree(old)
    else:
        old.unlink()
