"""The run record: one directory per run, written atomically (docs/record.md).

Files: ``scenario.toml``, ``resolved.json`` (the IR), ``meta.json``,
``flows.parquet``, ``link.parquet``, ``summary.json`` and ``manifest.json``
(the size and SHA-256 of each of the six).

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

import hashlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cclab.metrics import json_safe
from cclab.metrics import with_link_column
from cclab.resolve import migrate_ir

__all__ = [
    "FILES",
    "MANIFEST",
    "RECORD_VERSION",
    "RecordError",
    "RecordExistsError",
    "Run",
    "check_target",
    "is_complete",
    "read_meta",
    "read_run",
    "verify",
    "write_run",
    "written_by_cclab",
]

#: Version of the record layout; bumped when a file or column changes meaning.
#: 2: ``manifest.json`` (sizes and checksums). Records of version 1 have no
#: manifest; they are still read, without verification.
RECORD_VERSION = 2

SCENARIO, RESOLVED, META, FLOWS, LINK, SUMMARY = (
    "scenario.toml", "resolved.json", "meta.json", "flows.parquet", "link.parquet", "summary.json",
)  # fmt: skip
FILES = (SCENARIO, RESOLVED, META, FLOWS, LINK, SUMMARY)
MANIFEST = "manifest.json"
#: ``manifest.json``'s ``format`` field: the mark that cclab wrote the directory.
MANIFEST_FORMAT = "cclab run record manifest"
#: What else cclab writes into a record directory (figures of ``cclab run``,
#: ``cclab plot RUN``, ``cclab report RUN``): ``--overwrite`` may delete these.
EXTRA_FILES = ("timeseries.png", "timeseries.svg", "timeseries.pdf", "report.html")
EXTRA_DIRS = ("figures",)


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


#: Largest meta.json / manifest.json read (they are a few kB; anything bigger is not ours).
_SMALL_JSON = 1 << 20


def _read_small_json(path: Path) -> Any:
    """A small JSON file, or ``None`` if it is missing, not a regular file, too large or not JSON."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            data = fh.read(_SMALL_JSON + 1)
        if len(data) > _SMALL_JSON:
            return None
        return json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def _manifest(p: Path) -> dict[str, Any] | None:
    """The record's manifest if it is one of ours (right format, an entry for every file), else ``None``."""
    m = _read_small_json(p / MANIFEST)
    if not (isinstance(m, dict) and m.get("format") == MANIFEST_FORMAT and isinstance(m.get("files"), dict)):
        return None
    files = m["files"]
    for name in FILES:
        entry = files.get(name)
        if not (isinstance(entry, dict) and isinstance(entry.get("bytes"), int) and isinstance(entry.get("sha256"), str)):
            return None
    return m


def _legacy(meta: Any) -> bool:
    """A record of version 1 (before manifests)."""
    return isinstance(meta, dict) and meta.get("record_version") == 1


def _meta_complete(p: Path) -> dict[str, Any] | None:
    meta = _read_small_json(p / META)
    return meta if isinstance(meta, dict) and meta.get("status") == "complete" else None


def is_complete(path: str | Path) -> bool:
    """True iff ``path`` holds a finished record: meta.json says "complete", every file is there and
    (from record version 2) so is the manifest. Cheap; whether the files are intact is :func:`verify`'s question."""
    p = Path(path)
    meta = _meta_complete(p)
    if meta is None or not all((p / f).is_file() for f in FILES):
        return False
    return _manifest(p) is not None or (_legacy(meta) and not (p / MANIFEST).exists())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(path: str | Path) -> str | None:
    """Why ``path`` is not an intact complete record (one line), or ``None`` if it is.

    Checks meta.json's status, that every file is there, and every file's size
    and SHA-256 against ``manifest.json``. A record of version 1 (no manifest)
    is only checked for its files.
    """
    p = Path(path)
    if not p.is_dir():
        return "no such run directory"
    meta = _meta_complete(p)
    if meta is None:
        return 'not a complete run record (no meta.json with status "complete")'
    missing = [f for f in FILES if not (p / f).is_file()]
    if missing:
        return f"not a complete run record ({', '.join(missing)} missing)"
    manifest = _manifest(p)
    if manifest is None:
        if _legacy(meta) and not (p / MANIFEST).exists():
            return None
        return f"corrupt record: {MANIFEST} is missing or unreadable"
    for name in FILES:
        entry = manifest["files"][name]
        try:
            size = (p / name).stat().st_size
            if size != entry["bytes"]:
                return f"corrupt record: {name} has {size} bytes, the manifest says {entry['bytes']} (truncated or changed)"
            if _sha256(p / name) != entry["sha256"]:
                return f"corrupt record: {name} does not match its checksum in {MANIFEST} (changed after the run)"
        except OSError as exc:
            return f"corrupt record: {name} cannot be read ({exc.strerror})"
    return None


def read_meta(path: str | Path) -> dict[str, Any]:
    """meta.json of a record directory."""
    return json.loads((Path(path) / META).read_text())


def read_run(path: str | Path) -> Run:
    """Load a complete, intact record (sizes and checksums verified, :func:`verify`);
    :class:`RecordError` (one line) if ``path`` is not one."""
    p = Path(path)
    if not p.exists():
        raise RecordError(f"{p}: no such run directory")
    problem = verify(p)
    if problem is not None:
        raise RecordError(f"{p}: {problem}")
    meta = json.loads((p / META).read_text())
    version = meta.get("record_version")
    if isinstance(version, int) and version > RECORD_VERSION:
        raise RecordError(f"{p}: record version {version} is newer than this cclab reads ({RECORD_VERSION})")
    try:
        return Run(
            flows=pq.read_table(p / FLOWS).to_pandas(),
            link=with_link_column(pq.read_table(p / LINK).to_pandas()),  # records before topologies: one link
            summary=json.loads((p / SUMMARY).read_text()),
            meta=meta,
            ir=migrate_ir(json.loads((p / RESOLVED).read_text())),
            scenario_toml=(p / SCENARIO).read_text(),
            path=p,
        )
    except (OSError, ValueError, pa.ArrowException) as exc:  # a version-1 record has no checksums to catch this
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise RecordError(f"{p}: corrupt record: {first}") from None


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


def _write_parquet(path: Path, df: pd.DataFrame, table_name: str) -> None:
    table = pa.Table.from_pandas(df, preserve_index=False)
    extra = {b"cclab.record_version": str(RECORD_VERSION).encode(), b"cclab.table": table_name.encode()}
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **extra})
    with _create(path) as fh:
        pq.write_table(table, fh, compression="zstd")
        fh.flush()
        os.fsync(fh.fileno())


def _write_manifest(directory: Path) -> None:
    files = {name: {"bytes": (directory / name).stat().st_size, "sha256": _sha256(directory / name)} for name in FILES}
    _write_json(directory / MANIFEST, {"format": MANIFEST_FORMAT, "record_version": RECORD_VERSION, "files": files})


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def written_by_cclab(path: str | Path) -> str | None:
    """Why cclab may not delete the directory ``path`` (one line), or ``None`` if it may.

    cclab deletes (replaces) only what it wrote: a directory with cclab's
    ``manifest.json`` (or a complete record of version 1, which predates
    manifests) that holds nothing but the record's files, its figures
    (``timeseries.*``, ``figures/`` of PNG/SVG/PDF files) and ``report.html``.
    """
    p = Path(path)
    if p.is_symlink() or not p.is_dir():
        return "it is not a directory"
    if _manifest(p) is None and not (_legacy(_meta_complete(p)) and is_complete(p)):
        return f"it is not a run record cclab wrote (no cclab {MANIFEST})"
    foreign = []
    for entry in sorted(os.listdir(p)):
        q = p / entry
        if entry in FILES or entry == MANIFEST or entry in EXTRA_FILES:
            if q.is_symlink() or not q.is_file():
                foreign.append(entry)
        elif entry in EXTRA_DIRS and not q.is_symlink() and q.is_dir():
            foreign += [f"{entry}/{f.name}" for f in q.iterdir()
                        if f.is_symlink() or not f.is_file() or f.suffix not in (".png", ".svg", ".pdf")]
        else:
            foreign.append(entry)
    if foreign:
        shown = ", ".join(repr(f) for f in foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        return f"it holds files cclab did not write into it ({shown})"
    return None


def check_target(out: Path, overwrite: bool) -> None:
    """Refuse to replace existing data: anything without ``overwrite``, and with it anything cclab did not write."""
    if not out.exists() and not out.is_symlink():
        return
    if out.is_symlink() or not out.is_dir():
        raise RecordExistsError(f"{out}: exists and is not a directory; choose another output directory")
    if not any(out.iterdir()):
        return
    if overwrite:
        why = written_by_cclab(out)
        if why is not None:
            raise RecordExistsError(f"{out}: not overwritten: {why}; cclab only replaces a run record it wrote — "
                                    "choose another output directory or remove this one yourself")
        return
    if is_complete(out):
        raise RecordExistsError(f"{out}: a complete run record already exists (use --overwrite to replace it)")
    raise RecordExistsError(f"{out}: directory exists, is not empty and is not a run record; "
                            "choose another output directory")


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
        full_meta["record_version"] = RECORD_VERSION
        full_meta.setdefault("valid", True)
        full_meta.setdefault("invalid_reasons", [])
        _write_json(tmp / META, full_meta)  # its status marks the record complete
        _write_manifest(tmp)  # last: sizes and checksums of everything above
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
