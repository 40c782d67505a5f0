"""A run record's directory without its data: the file names, the manifest, the checks of what a
directory holds (complete, intact, written by cclab) and of where a record may be written.

Everything here reads small JSON files and stats paths; nothing imports numpy, pandas or pyarrow.
That lets ``cclab run`` refuse a bad output directory, start the engine and only then import the
heavy libraries that turn the engine's rows into a record (:mod:`cclab.record`, which re-exports all
of this), while the engine runs in its own thread (docs/performance.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

__all__ = [
    "EXTRA_DIRS",
    "EXTRA_FILES",
    "FILES",
    "FILES_V2",
    "MANIFEST",
    "MANIFEST_FORMAT",
    "RECORD_VERSION",
    "RecordError",
    "RecordExistsError",
    "check_target",
    "enclosing_record",
    "output_place_problem",
    "files_of",
    "is_complete",
    "is_record_dir",
    "read_meta",
    "verify",
    "written_by_cclab",
]

#: Version of the record layout; bumped when a file or column changes meaning.
#: 2: ``manifest.json`` (sizes and checksums). Records of version 1 have no
#: manifest; they are still read, without verification.
#: 3: ``histograms.parquet``; per-flow columns float32; the summary's
#: definitions of version 2 (goodput over the active interval, per-packet
#: percentiles, …; ``metrics.SUMMARY_VERSION``). Versions 1 and 2 are migrated on read.
RECORD_VERSION = 3

SCENARIO, RESOLVED, META, FLOWS, LINK, HISTOGRAMS, SUMMARY = (
    "scenario.toml", "resolved.json", "meta.json", "flows.parquet", "link.parquet", "histograms.parquet",
    "summary.json",
)  # fmt: skip
#: The files of a record of the current version (besides the manifest).
FILES = (SCENARIO, RESOLVED, META, FLOWS, LINK, HISTOGRAMS, SUMMARY)
#: … of records of versions 1 and 2.
FILES_V2 = (SCENARIO, RESOLVED, META, FLOWS, LINK, SUMMARY)
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


#: Largest meta.json / manifest.json read; anything bigger is not ours. Most are a few kB, but a
#: kernel run's meta.json holds the emulator's lateness histograms — up to 100 001 one-µs buckets
#: per direction, about 3 MB each as written — and a run the host stalled fills thousands of them
#: (1.36 MB seen; a 1 MiB limit took that complete record for foreign data).
_SMALL_JSON = 64 << 20


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


def files_of(version: Any) -> tuple[str, ...]:
    """The files a record of ``version`` holds (besides its manifest)."""
    return FILES if isinstance(version, int) and version >= 3 else FILES_V2


def _manifest(p: Path) -> dict[str, Any] | None:
    """The record's manifest if it is one of ours (right format, an entry for every file), else ``None``."""
    m = _read_small_json(p / MANIFEST)
    if not (isinstance(m, dict) and m.get("format") == MANIFEST_FORMAT and isinstance(m.get("files"), dict)):
        return None
    files = m["files"]
    for name in files_of(m.get("record_version")):
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
    if meta is None or not all((p / f).is_file() for f in files_of(meta.get("record_version"))):
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
        return "not a run record directory (it is a file)" if p.exists() else "no such run directory"
    meta = _meta_complete(p)
    if meta is None:
        return 'not a complete run record (no meta.json with status "complete")'
    files = files_of(meta.get("record_version"))
    missing = [f for f in files if not (p / f).is_file()]
    if missing:
        return f"not a complete run record ({', '.join(missing)} missing)"
    manifest = _manifest(p)
    if manifest is None:
        if _legacy(meta) and not (p / MANIFEST).exists():
            return None
        return f"corrupt record: {MANIFEST} is missing or unreadable"
    for name in files_of(manifest.get("record_version")):
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


def is_record_dir(path: str | Path) -> bool:
    """True when the directory ``path`` is a run record cclab wrote: it has cclab's ``manifest.json``
    or a ``meta.json`` saying the record is complete (a version-1 record, or one whose manifest was damaged)."""
    p = Path(path)
    try:
        if p.is_symlink() or not p.is_dir():
            return False
    except OSError:
        return False
    return _manifest(p) is not None or _meta_complete(p) is not None


def enclosing_record(path: str | Path) -> Path | None:
    """The run record that ``path`` is or lies inside (``path`` itself or the nearest of its parents,
    followed also through symlinks), or ``None``. ``path`` need not exist."""
    given = Path(os.path.normpath(Path(path).absolute()))
    candidates = [given, *given.parents]
    try:
        real = Path(path).resolve()
    except (OSError, RuntimeError):
        real = given
    if real != given:
        candidates += [real, *real.parents]
    for c in candidates:
        if is_record_dir(c):
            return c
    return None


def output_place_problem(out: str | Path, own: str, label: str, target: str | Path | None = None) -> str | None:
    """Why a command that writes ``out`` must not write there, or ``None``: ``out`` lies in a run record
    but is not that record's own ``own`` entry (``report.html``, ``figures``: the one place inside a
    record that cclab writes after the run), or it is the ``own`` entry of a record other than
    ``target`` (the record the output is made from), or it is part of a sweep directory's data.
    ``label`` names the own entry in the message ("report.html", "figures/")."""
    from cclab.store import sweep_part

    out = Path(out)
    rec = enclosing_record(out)
    if rec is None:
        why = sweep_part(out)
        return None if why is None else f"{why}, which cclab would overwrite"
    if Path(os.path.normpath(out.absolute())) != rec / own:
        return f"lies inside the run record {rec}; cclab writes nothing into a run record but its {label}"
    if target is not None and Path(os.path.normpath(Path(target).absolute())) != rec:
        return f"is the {label} of the run record {rec}, not of {target}"
    return None


def _probe_writable(out: Path) -> None:
    """Refuse, before a run, an output directory that could not be made: try to make (and at once
    remove) a directory where ``out``'s nearest existing parent is — e.g. under /proc, on a read-only
    file system, without permission — instead of failing after the run with nothing kept."""
    import tempfile

    parent = next((p for p in out.parents if p.exists()), None)
    if parent is None:
        return
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".cclab-probe-", dir=parent))
    except OSError as e:
        raise RecordError(f"{out}: cannot write a record there ({e.strerror or e} in {parent}); "
                          "choose an output directory you can write") from None


def check_target(out: Path, overwrite: bool) -> None:
    """Refuse to replace existing data: anything without ``overwrite``, and with it anything cclab did not write;
    and refuse a target inside an existing run record (which could then never be replaced)."""
    inside = enclosing_record(out.parent)
    if inside is not None:
        raise RecordError(f"{out}: lies inside the run record {inside}; cclab writes nothing into a run record "
                          "(it could no longer be overwritten) — choose an output directory outside it")
    if not out.exists() and not out.is_symlink():
        from cclab.fsutil import file_in_the_way

        blocked = file_in_the_way(out)
        if blocked is not None:
            raise RecordExistsError(f"{out}: cannot be made, {blocked} is not a directory; "
                                    "choose an output directory whose parents are directories")
        _probe_writable(out)
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
        raise RecordExistsError(f"{out}: a complete run record already exists "
                                "(to replace it: --overwrite, or overwrite=True in Python)")
    raise RecordExistsError(f"{out}: directory exists, is not empty and is not a run record; "
                            "choose another output directory")

