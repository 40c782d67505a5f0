"""Run a sweep: every point × trial, on local processes or a Dask cluster.

Local execution uses `concurrent.futures.ProcessPoolExecutor` (spawned
workers): one run is one CPU-bound call into the engine, so a process pool is
all that is needed — no scheduler service, no dashboard, no extra ports, and
per-run exceptions arrive as ordinary futures. A worker that dies outright
(a crash in native code) breaks the pool; the runs that were in flight are
then retried one by one in a fresh single-worker pool, which both finishes
the innocent ones and names the one that crashes (recorded as a failure).
`jobs=1` runs in the calling process (no pool).

`scheduler="tcp://HOST:PORT"` (or a `distributed.Client`) sends the same
runs to a Dask cluster. Workers write the records themselves, so the sweep
directory must be on a file system that every worker sees (as on Slurm
clusters). Kernel-backend runs request the worker resource
`kernel_host=1`: start each kernel-capable worker with
`--resources kernel_host=1` and Dask never places two of them on one host.

A failed run never stops the sweep: its error text goes to failures.json and
the run is retried by the next invocation.

One sweep per directory at a time (`SweepStore.lock`). Ctrl-C (SIGINT, also
sent to the workers by the terminal) stops a local sweep within a second or
two: workers ignore SIGINT and are terminated by the sweep process, queued
runs are cancelled, the workers' temporary record directories are removed,
and `KeyboardInterrupt` propagates (the CLI exits 130). Only complete records
remain; rerunning the command resumes.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import re
import signal
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cclab.store import SweepStore, run_id
from cclab.sweep import Point, Sweep, validate

#: the Dask worker resource a kernel run holds for its whole duration.
KERNEL_RESOURCE = "kernel_host"


@dataclass
class Task:
    run_id: str
    scenario: dict[str, Any]
    points: list[Point]
    allow_large: bool = False
    ir: dict[str, Any] | None = None  # the resolved IR: what a worker runs (resolved once, by `plan`)
    scenario_toml: str = ""  # the scenario as the record keeps it (scenario.toml)


@dataclass
class SweepOutcome:
    out_dir: Path
    total_points: int
    total_runs: int
    skipped: int  # runs already complete before this invocation
    done: int  # runs completed by this invocation
    failures: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    #: complete records whose files did not match their manifest: (run id, problem, where they were moved)
    corrupt: list[tuple[str, str, Path]] = field(default_factory=list)
    #: cclab's own left-overs removed before running and after (temporary record directories, also a dead worker's)
    removed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def plan(sweep: Sweep, backend: str = "sim", allow_large: bool = False) -> list[Task]:
    """Expand, validate and resolve every point; group points by run id.

    Every run's resources are estimated (:mod:`cclab.limits`); one above the
    limits is a :class:`SweepError` naming the point, unless ``allow_large``.
    """
    from cclab import limits
    from cclab.backends.sim import few_packet_warnings
    from cclab.errors import ScenarioError
    from cclab.sweep import SweepError, describe

    where = f"{sweep.source}: " if sweep.source else ""
    tasks: dict[str, Task] = {}
    for p, scenario, ir in validate(sweep):
        try:
            limits.check(ir, backend=backend, allow_large=allow_large)
        except ScenarioError as e:
            raise SweepError(f"{where}point {describe(p.params)}: {e}") from None
        if backend == "sim":
            few_packet_warnings(ir)  # here, once per message, not from every worker's run
        rid = run_id(ir, backend)
        if rid in tasks:
            tasks[rid].points.append(p)
        else:
            tasks[rid] = Task(rid, p.scenario, [p], ir=ir, scenario_toml=scenario.to_toml())
    return list(tasks.values())


def execute_run(ir: dict[str, Any], scenario_toml: str, run_dir: str, backend: str,
                allow_large: bool = False) -> dict[str, Any]:  # fmt: skip
    """Worker entry point: run the resolved IR (resolved once, by :func:`plan`) and write its record to `run_dir`.

    Returns {"ok": bool, "error": str | None, "wall_s": float}; an exception
    of the run becomes `ok=False` with its text (only Ctrl-C and exits propagate).
    """
    t0 = time.monotonic()
    try:
        from cclab.api import run_resolved
        from cclab.errors import ScenarioWarning
        from cclab.record import RecordExistsError

        if _already_done(Path(run_dir), ir):
            return {"ok": True, "error": None, "wall_s": time.monotonic() - t0}
        kwargs = {"allow_large": True} if allow_large else {}
        try:
            with warnings.catch_warnings():  # `plan` showed the scenario's warnings once already
                warnings.simplefilter("ignore", ScenarioWarning)
                run_resolved(ir, scenario_toml, Path(run_dir), backend=backend, **kwargs)
        except RecordExistsError:
            if _already_done(Path(run_dir), ir):
                pass
            elif Path(run_dir).is_symlink() or (Path(run_dir).exists() and not Path(run_dir).is_dir()):
                # not cclab's (the sweep leaves what it did not write alone): say what to do in a sweep
                raise RecordExistsError(f"{run_dir}: this run's record goes here, and a file or link that is not "
                                        "a record is in the way (left alone); move it away and rerun the sweep") from None
            else:
                raise
        return {"ok": True, "error": None, "wall_s": time.monotonic() - t0}
    except Exception as e:  # noqa: BLE001 — a run's failure is data; Ctrl-C still stops the sweep
        tb = traceback.format_exc(limit=8)
        return {"ok": False, "error": f"{type(e).__name__}: {e}\n{tb}", "wall_s": time.monotonic() - t0}


def _already_done(run_dir: Path, ir: dict[str, Any]) -> bool:
    """An intact complete record of this very IR is in `run_dir` already.

    A run is content-addressed (its directory is its run id), so running it
    again would write the same bytes. It happens on a cluster: a worker
    finishes a record and dies (or loses its connection) before the scheduler
    hears of it, and the scheduler hands the run to another worker.
    """
    from cclab.record import is_complete, read_meta, verify
    from cclab.resolve import ir_hash

    if not is_complete(run_dir) or verify(run_dir) is not None:
        return False
    try:
        return read_meta(run_dir).get("ir_hash") == ir_hash(ir)
    except Exception:  # noqa: BLE001 — an unreadable meta.json is not "done"
        return False


class DaskMissingError(RuntimeError):
    """A Dask scheduler was asked for, but Dask (the ``cclab[dask]`` extra) is not installed."""


def _require_dask() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise DaskMissingError(
            "--scheduler needs Dask, which is not installed; install it with: pip install 'cclab[dask]'"
        ) from None


#: the forms of a scheduler address (what `distributed.Client` connects to; docs/sweeps.md)
SCHEDULER_FORMS = "tcp://HOST:PORT or tls://HOST:PORT (e.g. tcp://127.0.0.1:8786)"
#: [PROTOCOL://]HOST:PORT (an IPv6 host in brackets)
_SCHEDULER = re.compile(r"^(?:(?P<scheme>[a-z][a-z0-9+.-]*)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>[0-9]{1,5})$")
#: Dask's network protocols (addresses PROTOCOL://HOST:PORT); ``inproc://`` (an in-process cluster) has no port
_SCHEDULER_PROTOCOLS = ("tcp", "tls", "ws", "wss", "ucx")


def check_scheduler(scheduler: Any) -> None:
    """Refuse (:class:`cclab.sweep.SweepError`, one line) a scheduler address that is not one Dask
    connects to: ``tcp://HOST:PORT`` or ``tls://HOST:PORT`` (a bare ``HOST:PORT`` is Dask's tcp; also
    Dask's ``ws``, ``wss``, ``ucx`` and, from Python, an in-process cluster's ``inproc://…``).
    A ``distributed.Client`` (or ``None``) passes."""
    from cclab.sweep import SweepError

    if scheduler is None or not isinstance(scheduler, str):
        return
    if scheduler.startswith("inproc://") and len(scheduler) > len("inproc://") and scheduler.isprintable():
        return
    m = _SCHEDULER.match(scheduler)
    if m is None or (m["scheme"] or "tcp") not in _SCHEDULER_PROTOCOLS or not 1 <= int(m["port"]) <= 65535:
        from cclab.errors import show_value

        raise SweepError(f"--scheduler {show_value(scheduler)}: not a Dask scheduler address; expected {SCHEDULER_FORMS}")


def check_jobs(jobs: Any) -> None:
    """Refuse (:class:`cclab.sweep.SweepError`, one line) a worker count that is not a whole number ≥ 1
    (``None`` is the default: all cores)."""
    from cclab.sweep import SweepError

    if jobs is None:
        return
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        from cclab.errors import show_value

        raise SweepError(f"--jobs {show_value(jobs)}: expected a whole number of worker processes, at least 1 "
                         "(leave it out for all cores)")


def run_sweep(
    sweep: Sweep,
    out_dir: str | Path,
    *,
    jobs: int | None = None,
    scheduler: Any = None,
    backend: str = "sim",
    progress: bool = True,
    allow_large: bool = False,
) -> SweepOutcome:
    """Run every point of `sweep` into `out_dir`, skipping intact complete records.

    `jobs`: local worker processes, at least 1 (None: all cores);
    `scheduler`: ``tcp://HOST:PORT``, ``tls://HOST:PORT`` or a ``distributed.Client``.

    Raises :class:`cclab.sweep.SweepError` for a bad `jobs` or `scheduler`,
    :class:`cclab.store.SweepDirError` if `out_dir` cannot take this sweep
    (a file, a run record or inside one, a non-empty directory that is not a
    sweep directory, or the directory of a different sweep),
    :class:`cclab.store.StoreBusyError` if another sweep runs in
    `out_dir`, :class:`DaskMissingError` for a `scheduler` without Dask
    installed (the ``cclab[dask]`` extra), and `KeyboardInterrupt` after a
    Ctrl-C has stopped the runs.
    """
    t0 = time.monotonic()
    check_jobs(jobs)
    check_scheduler(scheduler)
    if scheduler is not None:
        _require_dask()
    store = SweepStore(out_dir)
    store.check_root()
    tasks = plan(sweep, backend, allow_large=allow_large)
    for t in tasks:
        t.allow_large = allow_large
    own = _connect(scheduler) if isinstance(scheduler, str) else None  # before the sweep directory is made
    try:
        with store.lock():
            return _run_locked(sweep, store, tasks, t0, jobs=jobs, scheduler=own or scheduler, backend=backend,
                               progress=progress)  # fmt: skip
    finally:
        if own is not None:
            own.close()


def _connect(address: str) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address``; :class:`SweepError` (one line, naming the
    address) when none answers within Dask's connect timeout (``distributed.comm.timeouts.connect``)."""
    from distributed import Client

    from cclab.sweep import SweepError

    try:
        return Client(address)
    except (OSError, TimeoutError) as e:
        raise SweepError(f"--scheduler {address}: no Dask scheduler answered ({e}); expected the address of a "
                         "running scheduler (dask scheduler prints it), nothing was written") from None


def _run_locked(sweep: Sweep, store: SweepStore, tasks: list[Task], t0: float, *, jobs: int | None, scheduler: Any,
                backend: str, progress: bool) -> SweepOutcome:  # fmt: skip
    from cclab.resolve import ir_hash

    points = [
        {"point": p.index, "run_id": t.run_id, "params": p.params, "trial": p.trial, "seed": p.seed, "backend": backend}
        for t in tasks
        for p in t.points
    ]
    store.check_root()  # again, under the lock
    hashes = {t.run_id: ir_hash(t.ir) for t in tasks if t.ir is not None}
    store.check_same_sweep(points, hashes, sweep.source)
    store.init(sweep.text if sweep.text is not None else sweep.to_toml())
    removed = store.clean_partials()
    corrupt = store.quarantine_corrupt(hashes)
    store.write_points(points)
    complete = store.complete_ids()
    todo = [t for t in tasks if t.run_id not in complete]
    outcome = SweepOutcome(
        out_dir=store.root,
        total_points=sum(len(t.points) for t in tasks),
        total_runs=len(tasks),
        skipped=len(tasks) - len(todo),
        done=0,
        corrupt=corrupt,
        removed=removed,
    )
    try:
        _run_todo(todo, sweep, store, outcome, jobs=jobs, scheduler=scheduler, backend=backend, progress=progress)
    except KeyboardInterrupt:
        store.clean_partials()  # the terminated workers' temporary directories
        store.write_failures(outcome.failures)
        store.build_results()
        raise
    store.write_failures(outcome.failures)
    # A worker that died mid-run (a Dask worker killed or lost, a crashed local worker) leaves its
    # temporary record directory; its run was redone elsewhere. No run of this sweep is in flight now.
    outcome.removed += store.clean_partials()
    store.build_results()
    outcome.wall_s = time.monotonic() - t0
    return outcome


def _run_todo(todo: list[Task], sweep: Sweep, store: SweepStore, outcome: SweepOutcome, *, jobs: int | None,
              scheduler: Any, backend: str, progress: bool) -> None:  # fmt: skip
    if todo:
        with _Progress(len(todo), outcome.skipped, enabled=progress) as bar:

            def finished(task: Task, result: dict[str, Any]) -> None:
                if result["ok"]:
                    outcome.done += 1
                else:
                    outcome.failures.append(
                        {
                            "run_id": task.run_id,
                            "points": [
                                {"params": p.params, "trial": p.trial, "seed": p.seed} for p in task.points
                            ],
                            "error": result["error"],
                        }
                    )
                    store.write_failures(outcome.failures)
                bar.advance(ok=result["ok"])

            if scheduler is not None:
                _run_dask(todo, sweep, store, backend, scheduler, finished)
            else:
                if backend == "kernel":
                    jobs = 1  # kernel runs own the machine's network stack
                _run_local(todo, sweep, store, backend, jobs, finished)


def _args(task: Task, sweep: Sweep, store: SweepStore, backend: str) -> tuple:
    return (task.ir, task.scenario_toml, str(store.run_dir(task.run_id)), backend, task.allow_large)


def _die_with_parent() -> None:
    """Worker initializer: a worker exits when the sweep process is killed (Linux), and ignores SIGINT.

    Without the first, `kill -9` of `cclab sweep` leaves workers finishing
    their runs while a resumed sweep starts the same runs again. SIGINT (a
    terminal's Ctrl-C reaches the whole process group) is the sweep process's
    to handle: it terminates the workers itself (see `_stop_pool`).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _stop_pool(pool: cf.ProcessPoolExecutor) -> None:
    """Cancel a pool's queued runs and end its workers now (SIGTERM, then SIGKILL after 2 s).

    A worker may be deep in a native engine call that no Python-level signal
    handler interrupts, so it is terminated rather than asked; its temporary
    record directory is removed by the caller (`SweepStore.clean_partials`).
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 2.0
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(1.0)


def _run_local(todo, sweep, store, backend, jobs, finished) -> None:
    jobs = multiprocessing.cpu_count() if jobs is None else jobs  # check_jobs refused anything below 1
    if jobs == 1:  # in this process: no spawn cost, easy to debug
        for t in todo:
            finished(t, execute_run(*_args(t, sweep, store, backend)))
        return
    ctx = multiprocessing.get_context("spawn")
    crashed: list[Task] = []
    pool = cf.ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx, initializer=_die_with_parent)
    try:
        futures = {pool.submit(execute_run, *_args(t, sweep, store, backend)): t for t in todo}
        for fut in cf.as_completed(futures):
            task = futures[fut]
            try:
                finished(task, fut.result())
            except cf.process.BrokenProcessPool:
                crashed.append(task)
    except BaseException:  # Ctrl-C (or anything else): stop now, do not wait for the queued runs
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    # A worker died (native crash, OOM kill): isolate each affected run.
    for task in crashed:
        pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=_die_with_parent)
        try:
            result = pool.submit(execute_run, *_args(task, sweep, store, backend)).result()
        except cf.process.BrokenProcessPool:
            result = {"ok": False, "error": "worker process died while running this scenario", "wall_s": 0.0}
        except BaseException:
            _stop_pool(pool)
            raise
        pool.shutdown(wait=True)
        finished(task, result)


def dask_submit_options(task: Task, backend: str) -> dict[str, Any]:
    """Keyword arguments for `Client.submit` of one run."""
    opts: dict[str, Any] = {"key": f"cclab-run-{task.run_id}", "pure": False}
    if backend == "kernel":
        opts["resources"] = {KERNEL_RESOURCE: 1}
    return opts


def _run_dask(todo, sweep, store, backend, scheduler, finished) -> None:
    from distributed import Client, as_completed

    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futures = {}
        for t in todo:
            futures[client.submit(execute_run, *_args(t, sweep, store, backend), **dask_submit_options(t, backend))] = t
        for fut in as_completed(futures):
            task = futures[fut]
            try:
                result = fut.result()
            except Exception as e:  # noqa: BLE001 — worker lost, cancelled, …
                result = {"ok": False, "error": f"dask: {type(e).__name__}: {e}", "wall_s": 0.0}
            finished(task, result)
    finally:
        if own:
            client.close()


class _Progress:
    """A rich progress bar (done/total, failures, elapsed, ETA) on stderr."""

    def __init__(self, total: int, skipped: int, enabled: bool):
        self.total, self.failed, self.enabled = total, 0, enabled
        self._bar = None
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[red]{task.fields[failed]} failed"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            desc = "runs" if not skipped else f"runs ({skipped} already done)"
            self._task = self._bar.add_task(desc, total=total, failed=0)

    def __enter__(self):
        if self._bar:
            self._bar.start()
        return self

    def advance(self, ok: bool) -> None:
        if not ok:
            self.failed += 1
        if self._bar:
            self._bar.update(self._task, advance=1, failed=self.failed)

    def __exit__(self, *exc):
        if self._bar:
            self._bar.stop()


__all__ = ["run_sweep", "plan", "check_jobs", "check_scheduler", "execute_run", "dask_submit_options", "SweepOutcome", "KERNEL_RESOURCE"]
