"""The sweep store: content-addressed run records and the results table.

A sweep directory:

    sweep.toml        the sweep file as given (a rerun of the same sweep may update it)
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

One sweep per directory, ever: a sweep is refused (:class:`SweepDirError`)
in a directory that is a file, a run record or inside one, a non-empty
directory that is not a sweep directory (`SweepStore.check_root`), or a
sweep directory whose points.json lists a different sweep
(`SweepStore.check_same_sweep`) — its index would otherwise be replaced and
its records vanish from the results table. Rerunning the same sweep resumes it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import os
import re
import math
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from cclab.fsutil import file_in_the_way
from cclab.sweep import SweepError

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


class SweepDirError(SweepError):
    """The sweep directory given (``--out``) cannot take this sweep: it is a file, a run record (or inside
    one), a directory of other data, or a sweep directory of a different sweep; ``str()`` is one line."""


#: what a sweep's ``--out`` may be (the end of every :class:`SweepDirError` about it)
_OUT_ALLOWED = ("give --out a new or empty directory, or this sweep's own directory to resume it "
                "(nothing in a sweep directory is replaced by another sweep)")


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

    def quarantine_corrupt(self, ir_hashes: Mapping[str, str] | None = None) -> list[tuple[str, str, Path]]:
        """Check every record directory under runs/ (sizes and checksums against its manifest, and with
        ``ir_hashes`` — run id → IR hash — that it holds the run its name says); move each one that is
        incomplete, corrupt or another run's to ``corrupt/<id>-<UTC time>`` so that it is run again.

        Only directories holding nothing but record files are touched. Returns
        ``(run id, what is wrong, where it went)`` for each.
        """
        from cclab.record import verify
        from cclab.resolve import ir_hash

        moved: list[tuple[str, str, Path]] = []
        if not self.runs.is_dir():
            return moved
        for d in sorted(self.runs.iterdir()):
            if (d.is_symlink() or not d.is_dir() or d.name.startswith(".") or _TEMP_DIR.search(d.name)
                    or not _only_record_files(d)):
                continue
            problem = verify(d)
            if problem is None and ir_hashes and d.name in ir_hashes:
                try:
                    if ir_hash(json.loads((d / "resolved.json").read_text())) != ir_hashes[d.name]:
                        problem = "it holds the record of another scenario or seed than this run id's"
                except (OSError, ValueError):
                    problem = "its resolved.json cannot be read"
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

    # -- what may become a sweep directory
    def check_root(self) -> None:
        """Refuse (:class:`SweepDirError`) a root that is not a directory, that is a run record or lies
        inside one, or that is a non-empty directory other than a sweep directory. Creates nothing."""
        from cclab.record import enclosing_record

        root = self.root
        if root.is_symlink() and not root.exists() or root.exists() and not root.is_dir():
            raise SweepDirError(f"--out {root}: exists and is not a directory; {_OUT_ALLOWED}")
        rec = enclosing_record(root)
        if rec is not None:
            where = ("is a run record" if rec == Path(os.path.normpath(root.absolute()))
                     else f"lies inside the run record {rec}")
            raise SweepDirError(f"--out {root}: {where}; a sweep never writes into a run record; {_OUT_ALLOWED}")
        blocked = file_in_the_way(root.absolute())  # an existing ancestor that is a file: say so, not a traceback
        if blocked is not None:
            raise SweepDirError(f"--out {root}: {blocked} is not a directory; {_OUT_ALLOWED}")
        if not root.is_dir():
            return
        try:
            names = {e.name for e in os.scandir(root)}
        except OSError as exc:
            raise SweepDirError(f"--out {root}: cannot be read ({exc.strerror}); {_OUT_ALLOWED}") from None
        # a sweep directory (also one whose first sweep was killed before it wrote sweep.toml: sweep.lock, runs/)
        if names <= {LOCK} or names & {SWEEP_FILE, POINTS} or (root / RUNS).is_dir():
            return
        raise SweepDirError(f"--out {root}: directory exists, is not empty and is not a sweep directory "
                            f"(no {SWEEP_FILE}, {POINTS} or {RUNS}/); {_OUT_ALLOWED}")

    def check_same_sweep(self, points: list[dict[str, Any]], ir_hashes: Mapping[str, str] | None = None,
                         source: Any = None) -> None:
        """Refuse (:class:`SweepDirError`) to index ``points`` here when the directory's points.json lists
        a different sweep: points (axis values, trials, seeds, backend) that ``points`` does not hold — the
        same sweep extended by more trials or axis values is accepted; or, for a point whose run
        id changed, a record of a different scenario (``ir_hashes``: new run id → IR hash; a changed engine
        version alone changes run ids and is a rerun of the same sweep). Resuming the same sweep passes."""
        path = self.root / POINTS
        if not path.exists():
            return  # nothing indexed yet (also: a sweep killed before it wrote points.json)
        what = f" {source} defines" if source else " this sweep defines"
        try:
            old = json.loads(path.read_text())
            if not isinstance(old, list) or not all(isinstance(p, dict) for p in old):
                raise ValueError("not a list of points")
        except (OSError, ValueError) as exc:
            raise SweepDirError(f"--out {self.root}: its {POINTS} cannot be read ({exc}); not replaced: "
                                f"{_OUT_ALLOWED}") from None
        new = json.loads(json.dumps(points, default=str))  # as written, for a like-for-like comparison

        def key(p: dict[str, Any]) -> str:  # a run of the grid, whatever its point number
            return json.dumps([p.get("params"), p.get("trial"), p.get("seed"), p.get("backend", "sim")], sort_keys=True)

        # the same sweep, or the same sweep extended (more trials, more axis values): every point
        # indexed before is still in the grid, so no record drops out of the results table
        if not {key(p) for p in old} <= {key(p) for p in new}:
            raise SweepDirError(
                f"--out {self.root}: holds a different sweep (its {POINTS} lists points — axis values, trials, seeds "
                f"or backend — that are not in the grid{what}); a sweep directory holds one sweep, or that sweep "
                f"extended — choose a new --out for this one, "
                f"or remove {self.root} yourself to replace the old one"
            )
        if ir_hashes is None:
            return
        from cclab.record import read_meta

        by_key = {key(p): p for p in new}
        for o in old:
            n = by_key.get(key(o), {})
            rid = o.get("run_id")
            if rid == n.get("run_id") or not isinstance(rid, str) or "/" in rid or rid in ("", ".", ".."):
                continue
            d = self.run_dir(rid)
            if not is_complete(d):
                continue
            try:
                meta = read_meta(d)
            except (OSError, ValueError):
                continue
            before = meta.get("ir_hash") if isinstance(meta, dict) else None
            if before and before != ir_hashes.get(n.get("run_id")):
                raise SweepDirError(
                    f"--out {self.root}: holds a different sweep (its point {o.get('point')} was run with a "
                    f"different scenario: the base scenario{' of ' + str(source) if source else ''} has changed); "
                    "a sweep directory holds one "
                    f"sweep — choose a new --out for this one, or remove {self.root} yourself to replace the old one"
                )

    # -- sweep files
    def init(self, sweep_text: str | None) -> None:
        """Create the directory and runs/, and keep the sweep file in ``sweep.toml``: written by the first
        sweep, rewritten only by a rerun of the same sweep (its points checked by
        :meth:`check_same_sweep`) whose file changed elsewhere (``[[figures]]``, ``description``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.runs.mkdir(exist_ok=True)
        if sweep_text is not None:
            target = self.root / SWEEP_FILE
            if not target.exists() or target.read_text() != sweep_text:
                atomic_write_text(target, sweep_text)

    def write_points(self, points: list[dict[str, Any]]) -> None:
        atomic_write_text(self.root / POINTS, json.dumps(points, indent=1, default=str))

    def read_points(self) -> list[dict[str, Any]]:
        """The sweep's index; :class:`SweepError` (one line naming the file) if it is missing or damaged."""
        points = self._read_json_list(POINTS, ("run_id", "point", "params", "trial", "seed"))
        if points is None:
            raise SweepError(f"{self.root / POINTS}: no such file; expected the sweep index cclab sweep writes "
                             "(is this a sweep directory?)")  # fmt: skip
        return points

    def _read_json_list(self, name: str, keys: tuple[str, ...]) -> list[dict[str, Any]] | None:
        """A JSON list of tables with ``keys`` (None if the file does not exist); :class:`SweepError` otherwise."""
        path = self.root / name
        if not path.exists() and not path.is_symlink():
            return None
        expected = (f"expected the JSON list cclab sweep writes there; move it aside and rerun the sweep (cclab sweep … "
                    f"--out {self.root}), which rewrites it and reuses every complete record (it does not replace a "
                    "file it cannot read)")
        try:
            doc = json.loads(path.read_text())
        except OSError as exc:
            raise SweepError(f"{path}: cannot be read ({exc.strerror}); {expected}") from None
        except ValueError as exc:
            raise SweepError(f"{path}: not JSON ({str(exc).splitlines()[0]}); {expected}") from None
        if not isinstance(doc, list) or not all(isinstance(p, dict) and all(k in p for k in keys) for p in doc):
            raise SweepError(f"{path}: not a list of tables with {', '.join(keys)}; {expected}")
        if name == POINTS and not all(isinstance(p["params"], dict) for p in doc):
            raise SweepError(f"{path}: a point's params is not a table; {expected}")
        return doc

    def write_failures(self, failures: list[dict[str, Any]]) -> None:
        atomic_write_text(self.root / FAILURES, json.dumps(failures, indent=1, default=str))

    def read_failures(self) -> list[dict[str, Any]]:
        return self._read_json_list(FAILURES, ("run_id", "points", "error")) or []

    # -- results
    def build_results(self, write: bool = True) -> pd.DataFrame:
        """One row per point whose record is complete: axes, trial, seed, metrics."""
        points = self.read_points()
        axis_paths: list[str] = []
        for p in points:
            for k in p["params"]:
                if k not in axis_paths:
                    axis_paths.append(k)
        axis_names = [axis_column(k) for k in axis_paths]
        from cclab.metrics import SUMMARY_VERSION
        from cclab.record import RecordError, read_run, verify

        summaries: dict[str, dict[str, Any]] = {}
        corrupt: list[str] = []
        missing: set[str] = set()
        rows = []
        for p in points:
            rid = p["run_id"]
            if rid in corrupt or rid in missing:
                continue
            if rid not in summaries:
                d = self.run_dir(rid)
                if not is_complete(d):
                    # a record cut short or whose meta.json was edited is left out with a warning,
                    # one not (yet) there is counted as missing
                    (corrupt.append(rid) if d.exists() or d.is_symlink() else missing.add(rid))
                    continue
                try:
                    if verify(d) is not None:
                        raise ValueError("corrupt")
                    meta = json.loads((d / "meta.json").read_text())
                    if p.get("seed") is not None and meta.get("seed") is not None \
                            and int(meta["seed"]) != int(p["seed"]):
                        raise ValueError("the record of another run")  # e.g. copied over this one
                    summary = json.loads((d / "summary.json").read_text())
                    if not isinstance(summary, dict):
                        raise ValueError("corrupt")
                    if summary.get("summary_version", 1) != SUMMARY_VERSION:
                        summary = read_run(d).summary  # an older record: its summary in today's definitions
                except (OSError, ValueError, RecordError):
                    corrupt.append(rid)
                    continue
                summaries[rid] = flatten_summary(summary)
            row: dict[str, Any] = {"run_id": rid, "point": p["point"]}
            row.update({axis_column(k): p["params"].get(k) for k in axis_paths})
            row.update(trial=p["trial"], seed=p["seed"], backend=p["backend"])
            row.update(summaries[rid])
            rows.append(row)
        df = pd.DataFrame(rows)
        if df.empty:
            df = pd.DataFrame(columns=["run_id", "point", *axis_names, "trial", "seed", "backend", *TRIAL_COLUMNS])
        for col in axis_names:
            df[col] = _uniform_column(df[col])
        if not df.empty:
            _mark_deterministic(df, axis_names)
        df.attrs["axes"] = axis_names
        df.attrs["corrupt"] = corrupt  # records left out: incomplete, not matching their manifest, or another run's
        df.attrs["missing"] = sorted(missing)  # runs without a record (not run yet, or removed)
        if write:
            from cclab.fsutil import atomic_file

            try:
                with atomic_file(self.root / RESULTS) as fh:
                    df.to_parquet(fh, index=False)
            except OSError as exc:  # a read-only sweep directory: the table is rebuilt from the records anyway
                df.attrs["not_written"] = (f"{self.root / RESULTS}: not updated ({exc.strerror}); the table "
                                           "is rebuilt from the records")  # fmt: skip
        return df


def _mark_deterministic(df: pd.DataFrame, axes: list[str]) -> None:
    """Add ``n_effective`` and ``deterministic`` (per point, repeated on each of its rows)."""
    metrics = [c for c in df.columns if c not in (*axes, *META_COLUMNS, *TRIAL_COLUMNS)
               and pd.api.types.is_numeric_dtype(df[c]) and df[c].dtype != bool]  # fmt: skip
    keys = df[axes].astype(str).agg("\x1f".join, axis=1) if axes else pd.Series("", index=df.index)
    n_eff = keys.map({k: _effective_trials(g, metrics) for k, g in df.groupby(keys, sort=False)})
    size = keys.map(keys.value_counts())
    df["n_effective"] = n_eff.astype(int)
    df["deterministic"] = (size > 1) & (n_eff == 1)


def _uniform_column(col: pd.Series) -> pd.Series:
    """Axis values of mixed types (e.g. 1 and "2bdp") become strings for Parquet."""
    kinds = {type(v) for v in col if v is not None}
    if len(kinds) <= 1 or kinds <= {int, float}:
        if any(isinstance(v, (dict, list)) for v in col):
            return col.map(lambda v: json.dumps(v, sort_keys=True))
        return col
    return col.map(lambda v: v if isinstance(v, str) else json.dumps(v, sort_keys=True))


#: Runs with more flows than this have no per-flow columns in the results table.
MAX_FLOW_COLUMNS = 32


def flatten_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """summary.json -> flat columns.

    Aggregate metrics become `agg.<metric>`, per-algorithm ones
    `<cca>.<metric>`, per-flow ones `flow<id>.<metric>` (for runs of at most
    :data:`MAX_FLOW_COLUMNS` flows; larger runs keep their per-flow metrics in
    each record's summary.json only); nested tables join their keys with
    dots; lists are left out.
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
            if len(value) > MAX_FLOW_COLUMNS:
                continue
            flows: Iterable[tuple[Any, Any]] = (
                value.items() if isinstance(value, dict) else ((f.get("flow_id", i), f) for i, f in enumerate(value))
            )
            for fid, f in flows:
                put(f"flow{fid}", {k: v for k, v in f.items() if k != "flow_id"})
        else:
            put(key, value)
    return out


def sweep_part(path: str | Path) -> str | None:
    """Why ``path`` is part of a sweep directory's own data (one of its files, or anything under its
    ``runs/`` or ``corrupt/``), or ``None``. ``path`` need not exist."""
    given = Path(os.path.normpath(Path(path).absolute()))
    try:
        real = Path(path).resolve()
    except (OSError, RuntimeError):
        real = given
    for p in dict.fromkeys([given, real]):
        for parent in p.parents:
            try:
                is_sweep = (parent / POINTS).is_file() or (parent / SWEEP_FILE).is_file()
            except OSError:
                is_sweep = False
            if not is_sweep:
                continue
            rel = p.relative_to(parent).parts
            if rel[0] in (RUNS, CORRUPT):
                return f"lies under {rel[0]}/ of the sweep directory {parent}"
            if len(rel) == 1 and rel[0] in (SWEEP_FILE, POINTS, RESULTS, FAILURES, LOCK):
                return f"is the sweep directory {parent}'s own {rel[0]}"
    return None


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
    try:
        df = pd.read_parquet(store.root / RESULTS)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise SweepError(f"{store.root / RESULTS}: not a readable results table ({str(exc).splitlines()[0]}); "
                         "expected the Parquet file cclab sweep writes") from None  # fmt: skip
    df.attrs["axes"] = axis_columns(df)
    return df


META_COLUMNS = ("run_id", "point", "trial", "seed", "backend")

#: The results column of an axis over ``seed``: the point's own seed *s* (its trials run with s + i,
#: which the ``seed`` column holds).
SEED_AXIS_COLUMN = "base_seed"


def axis_column(path: str) -> str:
    """The results column of the axis ``path``: the path itself, but ``seed`` → ``base_seed``, which
    would otherwise be the same column as each run's own seed."""
    return SEED_AXIS_COLUMN if path == "seed" else path


def axis_columns(df: pd.DataFrame) -> list[str]:
    """The swept-parameter columns of a results table (those before `trial`)."""
    if df.attrs.get("axes"):
        return list(df.attrs["axes"])
    cols = list(df.columns)
    end = cols.index("trial") if "trial" in cols else 0
    return [c for c in cols[:end] if c not in META_COLUMNS]


# ---------------------------------------------------------------- statistics over trials

# Two-sided 95 % Student-t critical values t_{0.975, df} for df = 1…30
# (standard tables, e.g. NIST/SEMATECH e-Handbook §1.3.6.7.2); kept for
# callers of t_critical_975 — the tables use scipy.stats.t.
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)


def t_critical_975(df: int) -> float:
    """t_{0.975, df} (scipy.stats.t.ppf); NaN for df < 1."""
    if df < 1:
        return float("nan")
    from scipy import stats

    return float(stats.t.ppf(0.975, df))


def metric_columns(df: pd.DataFrame) -> list[str]:
    """Numeric metric columns of a results table (everything but axes and bookkeeping)."""
    skip = set(axis_columns(df)) | set(META_COLUMNS) | set(TRIAL_COLUMNS)
    return [c for c in df.columns if c not in skip and pd.api.types.is_numeric_dtype(df[c]) and df[c].dtype != bool]


HEADLINE_METRICS = (
    "agg.goodput_bps", "agg.utilization", "agg.loss_rate", "agg.retrans_rate", "agg.queue_delay_ms_p50",
    "agg.queue_delay_ms_p99", "agg.jain", "agg.jain_1s_mean",
)  # fmt: skip


def headline_metrics(columns: list[str]) -> list[str]:
    """The metrics shown by default: the main aggregates, then each algorithm's share."""
    picked = [c for c in HEADLINE_METRICS if c in columns]
    picked += [c for c in columns if c.endswith(".share") and not c.startswith("flow")]
    return picked or list(columns[:8])


#: Bookkeeping columns build_results adds per point (not metrics).
TRIAL_COLUMNS = ("n_effective", "deterministic")

#: Metrics that are order statistics (percentiles, medians, extremes): over
#: trials they are summarised by their median with a bootstrap interval; all
#: others by their mean with a Student-t interval.
_ORDER_STAT = re.compile(r"(_p\d+|_min|_max|_iqr)$|(^|\.)(share_p\d+)$")

#: Bootstrap resamples for the intervals of medians (fixed seed: the table is the same every time).
BOOTSTRAP_RESAMPLES = 2000
_BOOTSTRAP_SEED = 20240101


def is_order_statistic(metric: str) -> bool:
    """True for percentile/median/extreme metrics (``…_p99``, ``…_min``, ``share_p25`` …)."""
    return _ORDER_STAT.search(metric) is not None


def trial_interval(values: Any, statistic: str = "mean", confidence: float = 0.95) -> dict[str, Any]:
    """A point estimate over trials with its confidence interval and ``n``.

    ``statistic="mean"``: the mean with Student's t interval
    (``scipy.stats.t.interval`` with the standard error s/√n);
    ``"median"``: the median with a percentile bootstrap interval
    (``scipy.stats.bootstrap``, :data:`BOOTSTRAP_RESAMPLES` resamples, fixed
    seed). NaNs are dropped; ``n`` is how many values remain. The interval
    is NaN for n < 2 (mean) or n < 3 (median), and ``deterministic`` is true
    when n ≥ 2 values are all identical — one sample repeated, not a
    measurement of spread ("n=1 effective"), so no interval is given.
    Returns ``{"value", "lo", "hi", "n", "statistic", "deterministic"}``.
    """
    x = pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(dtype=float)
    n = int(x.size)
    out: dict[str, Any] = {"value": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": n,
                           "statistic": statistic, "deterministic": False}  # fmt: skip
    if n == 0:
        return out
    out["value"] = float(np.median(x)) if statistic == "median" else float(np.mean(x))
    if n >= 2 and float(np.ptp(x)) <= 1e-9 * max(1.0, float(np.max(np.abs(x)))):
        # the same value in every trial (to rounding): no spread was observed
        out["deterministic"] = True
        out["lo"] = out["hi"] = out["value"]
        return out
    from scipy import stats

    if statistic == "median":
        if n >= 3:
            res = stats.bootstrap((x,), np.median, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
                                  method="percentile", random_state=np.random.default_rng(_BOOTSTRAP_SEED))  # fmt: skip
            out["lo"], out["hi"] = float(res.confidence_interval.low), float(res.confidence_interval.high)
    elif n >= 2:
        lo, hi = stats.t.interval(confidence, n - 1, loc=float(np.mean(x)), scale=float(stats.sem(x)))
        out["lo"], out["hi"] = float(lo), float(hi)
    return out


def _effective_trials(block: pd.DataFrame, metrics: list[str]) -> int:
    """How many of a point's trials differ in any metric (1 when all are the same run repeated)."""
    if block.empty or not metrics:
        return len(block)
    vals = block[metrics].apply(pd.to_numeric, errors="coerce").round(12)
    return int(len(vals.astype(str).drop_duplicates()))


def group_over_trials(df: pd.DataFrame, metrics: list[str] | None = None) -> pd.DataFrame:
    """Each point's metrics over its trials, with 95 % confidence intervals and n.

    Columns: the axes; ``trials`` (runs of the point); ``n_effective`` (how
    many of them differ in any metric of the table); ``deterministic`` (more
    than one trial and all identical: the seed changed nothing — "n=1
    effective", and no interval is shown instead of a misleading ± 0); then
    per metric ``<metric>`` (mean, or median for percentiles — see
    :func:`trial_interval`), ``<metric>.lo``/``.hi`` (the interval),
    ``<metric>.ci95`` (its half-width, (hi − lo)/2), ``<metric>.n`` and
    ``<metric>.stat`` (``mean``/``median``). A deterministic point has no
    interval (NaN): its n is one effective sample, whatever the trials.
    """
    axes = axis_columns(df)
    metrics = metrics if metrics is not None else metric_columns(df)
    all_metrics = metric_columns(df)
    keyed = df.copy()
    for a in axes:  # group on a hashable, order-preserving key
        keyed[a] = keyed[a].map(lambda v: v if not isinstance(v, (dict, list)) else json.dumps(v))
    rows = []
    groups = keyed.groupby(axes, sort=False, dropna=False) if axes else [((), keyed)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(axes, key))
        row["trials"] = len(g)
        n_eff = _effective_trials(g, all_metrics)
        row["n_effective"] = n_eff
        row["deterministic"] = bool(len(g) > 1 and n_eff == 1)
        for m in metrics:
            stat = "median" if is_order_statistic(m) else "mean"
            r = trial_interval(g[m], stat)
            if row["deterministic"]:
                r["lo"] = r["hi"] = float("nan")
            row[m] = r["value"]
            row[f"{m}.lo"], row[f"{m}.hi"] = r["lo"], r["hi"]
            row[f"{m}.ci95"] = (r["hi"] - r["lo"]) / 2
            row[f"{m}.n"] = r["n"]
            row[f"{m}.stat"] = stat
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["axes"] = axes
    return out


def describe_interval(row: Mapping[str, Any], metric: str, fmt: Callable[[float], str] = lambda v: f"{v:.4g}",
                      scale: float = 1.0) -> str:
    """One cell of a grouped results table: ``"48.2 ± 0.31 (n=5)"``, ``"48.2 [47.9, 48.6] (median, n=5)"``,
    ``"48.2 (n=1)"``, ``"48.2 ± 0 (n=5, all equal)"`` (this metric the same in trials that differ in
    others), or for a point whose trials are all identical just ``"48.2"`` (the row says
    "deterministic, n=1 effective": :func:`describe_trials`)."""
    v = row.get(metric)
    try:
        value = float(v) * scale
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(value):
        return "–"
    n = int(row.get(f"{metric}.n", row.get("trials", 1)) or 0)
    if row.get("deterministic"):
        return fmt(value)
    lo, hi = row.get(f"{metric}.lo"), row.get(f"{metric}.hi")
    if lo is None or hi is None or not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
        return f"{fmt(value)} (n={n})"
    if float(lo) == float(hi):
        return f"{fmt(value)} ± 0 (n={n}, all equal)"
    if row.get(f"{metric}.stat") == "median":
        return f"{fmt(value)} [{fmt(float(lo) * scale)}, {fmt(float(hi) * scale)}] (median, n={n})"
    return f"{fmt(value)} ± {fmt((float(hi) - float(lo)) / 2 * scale)} (n={n})"


def describe_trials(row: Mapping[str, Any]) -> str:
    """The trials cell of a grouped results table: ``"5"``, or ``"5: deterministic, n=1 effective"``
    when all of the point's trials gave the same result."""
    trials = int(row.get("trials", 1))
    if row.get("deterministic"):
        return f"{trials}: deterministic, n=1 effective"
    n_eff = int(row.get("n_effective", trials))
    return str(trials) if n_eff == trials else f"{trials} ({n_eff} distinct)"
