"""The sweep store: content-addressed run records and the results table.

A sweep directory:

    sweep.toml        the sweep file as given (copied once)
    points.json       every point: run id, axis values, trial, seed
    runs/<id>/        one complete run record each (docs/record.md)
    failures.json     runs that failed in the last invocation, with error text
    results.parquet   one row per point with a complete record

A run id is the content hash of (the resolved IR's hash, backend, engine
version): the same scenario on the same engine always lands in the same
directory, so a rerun finds what is done. Records are written by
`cclab.api.run_to_dir` atomically (temporary directory, then rename), so a
directory under runs/ is either complete or absent.

Before a sweep (re)starts, cclab removes only its own debris: temporary
record directories (`<id>.tmp-…`, holding nothing but record files) and
empty directories. A record directory that is not intact — incomplete, or
its files no longer match its manifest (truncated, edited) — is moved to
`corrupt/` (kept, not deleted) and run again. Anything else under runs/ (a
`.git`, a user's notes) is left alone. The results table is rebuilt from
intact records only.

One sweep at a time per directory: `SweepStore.lock()` takes an exclusive
`flock` on `DIR/sweep.lock`; a second sweep in the same directory is refused.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

RUNS = "runs"
POINTS = "points.json"
FAILURES = "failures.json"
RESULTS = "results.parquet"
SWEEP_FILE = "sweep.toml"
LOCK = "sweep.lock"
CORRUPT = "corrupt"

#: A record's temporary directory as `cclab.record.write_run` names it (mkdtemp: 8 random characters).
_TEMP_DIR = re.compile(r"\.tmp-(old-)?[A-Za-z0-9_]{8}$")


class StoreBusyError(RuntimeError):
    """Another sweep holds the directory's lock; ``str()`` is one line for users."""


def engine_version() -> str:
    from cclab import _native

    return str(_native.ENGINE_VERSION)


def run_id(ir: dict[str, Any], backend: str, engine: str | None = None) -> str:
    """Content hash (sha256, 20 hex digits) of (IR hash, backend, engine version)."""
    from cclab.resolve import ir_hash

    key = json.dumps(
        {"ir": ir_hash(ir), "backend": backend, "engine": engine or engine_version()},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old or the new file, never half (`cclab.fsutil`)."""
    from cclab.fsutil import atomic_write_text as write

    write(path, text)


def is_complete(run_dir: Path) -> bool:
    """True when `run_dir` holds a complete record (as `cclab.record` judges it)."""
    from cclab.record import is_complete as record_is_complete

    return run_dir.is_dir() and bool(record_is_complete(run_dir))


def _only_record_files(d: Path) -> bool:
    """True when the directory `d` holds nothing but files cclab writes into a record (or nothing)."""
    from cclab.record import EXTRA_FILES, FILES, MANIFEST

    known = {*FILES, MANIFEST, *EXTRA_FILES}
    try:
        with os.scandir(d) as entries:
            return all(e.name in known and e.is_file(follow_symlinks=False) for e in entries)
    except OSError:
        return False


class SweepStore:
    """One sweep directory (see the module docstring)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.runs = self.root / RUNS

    # -- records
    def run_dir(self, rid: str) -> Path:
        return self.runs / rid

    def is_complete(self, rid: str) -> bool:
        return is_complete(self.run_dir(rid))

    def clean_partials(self) -> list[str]:
        """Remove cclab's own debris under runs/ and return the names removed: temporary record
        directories (``<id>.tmp-XXXXXXXX`` holding nothing but record files) and empty directories.
        Anything else — a foreign file or directory, a ``.git`` — is left alone."""
        removed: list[str] = []
        if not self.runs.is_dir():
            return removed
        for d in sorted(self.runs.iterdir()):
            if d.is_symlink() or not d.is_dir():
                continue
            temporary = _TEMP_DIR.search(d.name) is not None and _only_record_files(d)
            if temporary or not any(d.iterdir()):
                shutil.rmtree(d, ignore_errors=True)
                removed.append(d.name)
        return removed

    def quarantine_corrupt(self) -> list[tuple[str, str, Path]]:
        """Check every record directory under runs/ (sizes and checksums against its manifest); move
        each one that is incomplete or corrupt to ``corrupt/<id>-<UTC time>`` so that it is run again.

        Only directories holding nothing but record files are touched. Returns
        ``(run id, what is wrong, where it went)`` for each.
        """
        from cclab.record import verify

        moved: list[tuple[str, str, Path]] = []
        if not self.runs.is_dir():
            return moved
        for d in sorted(self.runs.iterdir()):
            if (d.is_symlink() or not d.is_dir() or d.name.startswith(".") or _TEMP_DIR.search(d.name)
                    or not _only_record_files(d)):
                continue
            problem = verify(d)
            if problem is None:
                continue
            stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
            target = self.root / CORRUPT / f"{d.name}-{stamp}"
            n = 1
            while target.exists():
                n += 1
                target = self.root / CORRUPT / f"{d.name}-{stamp}-{n}"
            target.parent.mkdir(exist_ok=True)
            os.rename(d, target)
            moved.append((d.name, problem, target))
        return moved

    def complete_ids(self, verify: bool = False) -> set[str]:
        """Run ids with a complete record (``verify``: also intact, sizes and checksums checked)."""
        from cclab.record import verify as verify_record

        if not self.runs.is_dir():
            return set()
        return {d.name for d in self.runs.iterdir()
                if not _TEMP_DIR.search(d.name) and is_complete(d) and (not verify or verify_record(d) is None)}

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the directory's exclusive lock (``flock`` on ``sweep.lock``) for the block.

        Raises :class:`StoreBusyError` at once if another process holds it.
        The kernel drops the lock when the holder exits, also on ``kill -9``,
        so a crashed sweep never leaves the directory locked.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / LOCK
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise StoreBusyError(f"{path}: cannot open the sweep lock ({exc.strerror})") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
                who = f" ({holder})" if holder else ""
                raise StoreBusyError(
                    f"{self.root}: another cclab sweep is running in this directory{who}; "
                    "wait for it to finish or stop it, then rerun (one sweep per directory at a time)"
                ) from None
            os.ftruncate(fd, 0)
            started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
            os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}, since {started}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # releases the lock

    # -- sweep files
    def init(self, sweep_text: str | None) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.runs.mkdir(exist_ok=True)
        if sweep_text is not None:
            target = self.root / SWEEP_FILE
            if not target.exists() or target.read_text() != sweep_text:
                atomic_write_text(target, sweep_text)

    def write_points(self, points: list[dict[str, Any]]) -> None:
        atomic_write_text(self.root / POINTS, json.dumps(points, indent=1, default=str))

    def read_points(self) -> list[dict[str, Any]]:
        return json.loads((self.root / POINTS).read_text())

    def write_failures(self, failures: list[dict[str, Any]]) -> None:
        atomic_write_text(self.root / FAILURES, json.dumps(failures, indent=1, default=str))

    def read_failures(self) -> list[dict[str, Any]]:
        p = self.root / FAILURES
        return json.loads(p.read_text()) if p.exists() else []

    # -- results
    def build_results(self, write: bool = True) -> pd.DataFrame:
        """One row per point whose record is complete: axes, trial, seed, metrics."""
        points = self.read_points()
        axis_names: list[str] = []
        for p in points:
            for k in p["params"]:
                if k not in axis_names:
                    axis_names.append(k)
        from cclab.record import verify

        summaries: dict[str, dict[str, Any]] = {}
        corrupt: list[str] = []
        rows = []
        for p in points:
            rid = p["run_id"]
            if rid in corrupt:
                continue
            if rid not in summaries:
                d = self.run_dir(rid)
                if not is_complete(d):
                    continue
                try:
                    if verify(d) is not None:
                        raise ValueError("corrupt")
                    summary = json.loads((d / "summary.json").read_text())
                    if not isinstance(summary, dict):
                        raise ValueError("corrupt")
                except (OSError, ValueError):
                    corrupt.append(rid)
                    continue
                summaries[rid] = flatten_summary(summary)
            row: dict[str, Any] = {"run_id": rid, "point": p["point"]}
            row.update({k: p["params"].get(k) for k in axis_names})
            row.update(trial=p["trial"], seed=p["seed"], backend=p["backend"])
            row.update(summaries[rid])
            rows.append(row)
        df = pd.DataFrame(rows)
        if df.empty:
            df = pd.DataFrame(columns=["run_id", "point", *axis_names, "trial", "seed", "backend"])
        for col in axis_names:
            df[col] = _uniform_column(df[col])
        df.attrs["axes"] = axis_names
        df.attrs["corrupt"] = corrupt  # records left out because their files do not match their manifest
        if write:
            from cclab.fsutil import atomic_file

            with atomic_file(self.root / RESULTS) as fh:
                df.to_parquet(fh, index=False)
        return df


def _uniform_column(col: pd.Series) -> pd.Series:
    """Axis values of mixed types (e.g. 1 and "2bdp") become strings for Parquet."""
    kinds = {type(v) for v in col if v is not None}
    if len(kinds) <= 1 or kinds <= {int, float}:
        if any(isinstance(v, (dict, list)) for v in col):
            return col.map(lambda v: json.dumps(v, sort_keys=True))
        return col
    return col.map(lambda v: v if isinstance(v, str) else json.dumps(v, sort_keys=True))


def flatten_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """summary.json -> flat columns.

    Aggregate metrics become `agg.<metric>`, per-algorithm ones
    `<cca>.<metric>`, per-flow ones `flow<id>.<metric>`; nested tables join
    their keys with dots; lists are left out.
    """
    out: dict[str, Any] = {}

    def put(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                put(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, (int, float, str, bool)) or value is None:
            out[prefix] = value

    for key, value in summary.items():
        if key == "aggregate":
            put("agg", value)
        elif key == "per_algorithm":
            put("", value)
        elif key == "per_flow":
            flows: Iterable[tuple[Any, Any]] = (
                value.items() if isinstance(value, dict) else ((f.get("flow_id", i), f) for i, f in enumerate(value))
            )
            for fid, f in flows:
                put(f"flow{fid}", {k: v for k, v in f.items() if k != "flow_id"})
        else:
            put(key, value)
    return out


def read_results(sweep_dir: str | Path, rebuild: bool | None = None) -> pd.DataFrame:
    """The sweep's results table.

    By default it is rebuilt from the complete records under runs/ (so a
    sweep killed before writing results.parquet, or records added since, are
    always reflected); a directory without runs/ (a results table shipped on
    its own) is read as is.
    """
    store = SweepStore(sweep_dir)
    if rebuild is None:
        rebuild = store.runs.is_dir()
    if rebuild or not (store.root / RESULTS).exists():
        return store.build_results()
    df = pd.read_parquet(store.root / RESULTS)
    df.attrs["axes"] = axis_columns(df)
    return df


META_COLUMNS = ("run_id", "point", "trial", "seed", "backend")


def axis_columns(df: pd.DataFrame) -> list[str]:
    """The swept-parameter columns of a results table (those before `trial`)."""
    if df.attrs.get("axes"):
        return list(df.attrs["axes"])
    cols = list(df.columns)
    end = cols.index("trial") if "trial" in cols else 0
    return [c for c in cols[:end] if c not in META_COLUMNS]


# ---------------------------------------------------------------- statistics over trials

# Two-sided 95 % Student-t critical values t_{0.975, df} for df = 1…30
# (standard tables, e.g. NIST/SEMATECH e-Handbook §1.3.6.7.2).
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)


def t_critical_975(df: int) -> float:
    """t_{0.975, df}: table for df ≤ 30, Cornish–Fisher expansion beyond (error < 1e-4)."""
    if df < 1:
        return float("nan")
    if df <= 30:
        return _T975[df - 1]
    z = 1.959963984540054
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


def metric_columns(df: pd.DataFrame) -> list[str]:
    """Numeric metric columns of a results table (everything but axes and bookkeeping)."""
    skip = set(axis_columns(df)) | set(META_COLUMNS)
    return [c for c in df.columns if c not in skip and pd.api.types.is_numeric_dtype(df[c]) and df[c].dtype != bool]


HEADLINE_METRICS = (
    "agg.goodput_bps", "agg.utilization", "agg.loss_rate", "agg.retrans_segs", "agg.queue_delay_ms_mean", "agg.jain",
)  # fmt: skip


def headline_metrics(columns: list[str]) -> list[str]:
    """The metrics shown by default: the main aggregates, then each algorithm's share."""
    picked = [c for c in HEADLINE_METRICS if c in columns]
    picked += [c for c in columns if c.endswith(".share") and not c.startswith("flow")]
    return picked or list(columns[:8])


def group_over_trials(df: pd.DataFrame, metrics: list[str] | None = None) -> pd.DataFrame:
    """Mean of each metric per point (grouped over trials), with a 95 % CI.

    Columns: the axes, `trials`, then `<metric>` (mean) and, where a point
    has more than one trial, `<metric>.ci95` — the half-width
    t_{0.975, n−1} · s / √n (Student's t, sample standard deviation s).
    """
    axes = axis_columns(df)
    metrics = metrics if metrics is not None else metric_columns(df)
    keyed = df.copy()
    for a in axes:  # group on a hashable, order-preserving key
        keyed[a] = keyed[a].map(lambda v: v if not isinstance(v, (dict, list)) else json.dumps(v))
    rows = []
    groups = keyed.groupby(axes, sort=False, dropna=False) if axes else [((), keyed)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(axes, key))
        row["trials"] = len(g)
        for m in metrics:
            x = pd.to_numeric(g[m], errors="coerce").dropna()
            row[m] = float(x.mean()) if len(x) else float("nan")
            if len(g) > 1:
                n = len(x)
                row[f"{m}.ci95"] = (
                    t_critical_975(n - 1) * float(x.std(ddof=1)) / n**0.5 if n > 1 else float("nan")
                )
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["axes"] = axes
    return out
