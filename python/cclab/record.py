"""The run record: one directory per run, written atomically (docs/record.md).

Files: ``scenario.toml``, ``resolved.json`` (the IR), ``meta.json``,
``flows.parquet``, ``link.parquet``, ``summary.json``.

Atomicity: a record is built in a temporary sibling directory
(``<name>.tmp-XXXX``), every file fsynced, ``meta.json`` written last with
``"status": "complete"``, then the directory is renamed into place. A record
is complete iff its ``meta.json`` says ``"status": "complete"`` and all six
files are there; a leftover ``*.tmp-*`` directory (a crash mid-write) is never
complete. An existing complete record is only replaced with
``overwrite=True``, and then by renaming the old one aside, renaming the new
one in and only then deleting the old one: at no moment is there a partial
record under the target name. Both helper directories are siblings named
``<name>.tmp-…`` so that a directory scan can skip them by name.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cclab.metrics import json_safe
from cclab.resolve import migrate_ir

__all__ = [
    "FILES",
    "RECORD_VERSION",
    "RecordError",
    "RecordExistsError",
    "Run",
    "is_complete",
    "read_meta",
    "read_run",
    "write_run",
]

#: Version of the record layout; bumped when a file or column changes meaning.
RECORD_VERSION = 1

SCENARIO, RESOLVED, META, FLOWS, LINK, SUMMARY = (
    "scenario.toml", "resolved.json", "meta.json", "flows.parquet", "link.parquet", "summary.json",
)  # fmt: skip
FILES = (SCENARIO, RESOLVED, META, FLOWS, LINK, SUMMARY)


class RecordError(Exception):
    """A run record cannot be read or written; ``str()`` is one line for users."""


class RecordExistsError(RecordError, FileExistsError):
    """The target directory already holds a complete record (or other data)."""


@dataclass
class Run:
    """A run record in memory.

    Attributes: ``flows`` and ``link`` (per-interval DataFrames, docs/record.md),
    ``summary`` (summary.json), ``meta`` (meta.json), ``ir`` (resolved.json),
    ``scenario_toml`` (the scenario as written) and ``path`` (the record
    directory, ``None`` if not written).
    """

    flows: pd.DataFrame
    link: pd.DataFrame
    summary: dict[str, Any]
    meta: dict[str, Any]
    ir: dict[str, Any]
    scenario_toml: str = ""
    path: Path | None = None
    figures: list[Path] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.ir.get("name", "run"))

    def plot(self, path: str | Path | None = None, formats: tuple[str, ...] | list[str] = ("png",)) -> list[Path]:
        """Draw the stacked time-series figure; returns the files written.

        ``path`` is the file name without suffix (default
        ``<record>/timeseries``); one file per format (``png``, ``svg``).
        """
        from cclab.plot import plot_run

        if path is None:
            if self.path is None:
                raise RecordError("this run has no record directory; pass plot(path=…)")
            path = self.path / "timeseries"
        return plot_run(self, path, formats=formats)

    def __repr__(self) -> str:
        agg = self.summary.get("aggregate", {})
        lines = [
            f"Run {self.name!r} backend={self.meta.get('backend')} seed={self.meta.get('seed')} "
            f"valid={self.meta.get('valid', True)} path={str(self.path) if self.path else None}",
            f"  aggregate: goodput {_mbps(agg.get('goodput_bps'))} Mbps, utilization {_pct(agg.get('utilization'))}, "
            f"loss {_pct(agg.get('loss_rate'), 3)}, Jain {_num(agg.get('jain'), 3)}, "
            f"queue delay p50 {_num(agg.get('queue_delay_ms_p50'))} ms",
        ]
        for alg, a in self.summary.get("per_algorithm", {}).items():
            lines.append(
                f"  {alg}: {a.get('flows')} flow(s), {_mbps(a.get('goodput_bps'))} Mbps, "
                f"share {_pct(a.get('share'))} (IQR {_pct(a.get('share_iqr'))})"
            )
        return "\n".join(lines)


def _num(x: Any, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _mbps(x: Any) -> str:
    return "n/a" if x is None else f"{x / 1e6:.2f}"


def _pct(x: Any, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


# --------------------------------------------------------------------------
# reading


def is_complete(path: str | Path) -> bool:
    """True iff ``path`` holds a complete record (meta.json status "complete", all files present)."""
    p = Path(path)
    try:
        meta = json.loads((p / META).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("status") == "complete" and all((p / f).is_file() for f in FILES)


def read_meta(path: str | Path) -> dict[str, Any]:
    """meta.json of a record directory."""
    return json.loads((Path(path) / META).read_text())


def read_run(path: str | Path) -> Run:
    """Load a complete record; :class:`RecordError` if ``path`` is not one."""
    p = Path(path)
    if not p.exists():
        raise RecordError(f"{p}: no such run directory")
    if not is_complete(p):
        raise RecordError(f"{p}: not a complete run record (no meta.json with status \"complete\")")
    meta = json.loads((p / META).read_text())
    version = meta.get("record_version")
    if isinstance(version, int) and version > RECORD_VERSION:
        raise RecordError(f"{p}: record version {version} is newer than this cclab reads ({RECORD_VERSION})")
    return Run(
        flows=pq.read_table(p / FLOWS).to_pandas(),
        link=pq.read_table(p / LINK).to_pandas(),
        summary=json.loads((p / SUMMARY).read_text()),
        meta=meta,
        ir=migrate_ir(json.loads((p / RESOLVED).read_text())),
        scenario_toml=(p / SCENARIO).read_text(),
        path=p,
    )


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


def _write_text(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def _write_json(path: Path, obj: Any) -> None:
    _write_text(path, json.dumps(json_safe(obj), indent=1, allow_nan=False) + "\n")


def _write_parquet(path: Path, df: pd.DataFrame, table_name: str) -> None:
    table = pa.Table.from_pandas(df, preserve_index=False)
    extra = {b"cclab.record_version": str(RECORD_VERSION).encode(), b"cclab.table": table_name.encode()}
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **extra})
    pq.write_table(table, path, compression="zstd")
    _fsync_file(path)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_target(out: Path, overwrite: bool) -> None:
    """Refuse to replace existing data unless ``overwrite``."""
    if overwrite or not out.exists():
        return
    if not out.is_dir():
        raise RecordExistsError(f"{out}: exists and is not a directory")
    if is_complete(out):
        raise RecordExistsError(f"{out}: a complete run record already exists (use overwrite to replace it)")
    if any(out.iterdir()):
        raise RecordExistsError(f"{out}: directory exists, is not empty and is not a run record (use overwrite)")


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
) -> Path:
    """Write a complete run record to ``out_dir`` atomically; returns its path.

    ``meta`` supplies the provenance fields (backend, cclab_version,
    engine_version, seed, host, started_at, wall_time_s, valid,
    invalid_reasons, ir_hash, …); ``record_version`` and ``status`` are set
    here. Raises :class:`RecordExistsError` if ``out_dir`` holds a complete
    record (or other data) and ``overwrite`` is false.
    """
    out = Path(out_dir).absolute()
    check_target(out, overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{out.name}.tmp-", dir=out.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; a record is an ordinary directory
        _write_text(tmp / SCENARIO, scenario_toml)
        _write_json(tmp / RESOLVED, ir)
        _write_parquet(tmp / FLOWS, flows, "flows")
        _write_parquet(tmp / LINK, link, "link")
        _write_json(tmp / SUMMARY, summary)
        full_meta = {"record_version": RECORD_VERSION, **meta, "status": "complete"}
        full_meta.setdefault("valid", True)
        full_meta.setdefault("invalid_reasons", [])
        _write_json(tmp / META, full_meta)  # last: its status marks the record complete
        _fsync_dir(tmp)
        _install(tmp, out, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(out.parent)
    return out


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
