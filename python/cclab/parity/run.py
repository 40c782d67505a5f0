"""Running the parity matrix: records in a sweep store, kernel runs one at a time, invalid runs rerun once.

Layout of the output directory (the sweep store's, docs/sweeps.md)::

    runs/<case>-s<seed>-<backend>-<hash>/          one complete run record each (docs/record.md)
    runs/<case>-s<seed>-kernel-<hash>-retry/       the one rerun of a kernel run its self-check flagged invalid
    runs/<case>-s<seed>-kernel-<hash>-retry2/ …    with --steal-retries: further runs, only after a rejection with host steal
    parity.json, parity.parquet, parity.html       the results (cclab.parity.output)

The hash is :func:`cclab.store.run_id` of (the resolved scenario, the backend,
the engine): for the simulator the engine version plus a hash of the engine
library, for the kernel the kernel release, the cclab-link version and a hash
of its binary. So a rerun with the same ``--out`` reuses every record whose
scenario and engine are unchanged — a rebuilt simulator is run again, the
(expensive) kernel records are kept.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import os
import re
import subprocess
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from cclab.parity.checks import Check, evaluate
from cclab.parity.lock import LOCK_PATH, kernel_lock
from cclab.parity.matrix import SIM_HOST, Case

__all__ = ["CaseResult", "ParityOutcome", "kernel_engine_key", "run_parity", "sim_engine_key"]

Log = Callable[[str], None]


@dataclass
class CaseResult:
    case: Case
    status: str  # pass, fail, invalid, error
    checks: list[Check] = field(default_factory=list)
    sim_records: list[str] = field(default_factory=list)
    kernel_records: list[str] = field(default_factory=list)
    kernel_attempts: list[dict[str, Any]] = field(default_factory=list)
    invalid_reasons: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]


@dataclass
class ParityOutcome:
    out_dir: Path
    results: list[CaseResult]
    wall_s: float = 0.0
    reused: int = 0  # records found complete
    ran: int = 0  # runs made by this invocation
    started_at: str = ""
    engines: dict[str, str] = field(default_factory=dict)
    sim_host: dict[str, Any] | None = None  # the simulator's [host] (None: punctual)

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    def kernel_steal(self) -> dict[str, Any] | None:
        """The VM host's steal time over every kernel run behind the results (``kernel.steal`` in each
        record's meta.json; records made before it was kept have none): runs, mean and largest
        fraction of the CPU time, and how many runs had more than ``machine.HOST_STEAL_LIMIT``. None
        when no run has it."""
        from cclab.kernel.machine import HOST_STEAL_LIMIT

        fr = [float(a["steal_fraction"]) for r in self.results for a in r.kernel_attempts
              if a.get("steal_fraction") is not None]  # fmt: skip
        if not fr:
            return None
        return {"runs": len(fr), "mean_fraction": sum(fr) / len(fr), "max_fraction": max(fr),
                "runs_over": sum(1 for f in fr if f > HOST_STEAL_LIMIT), "over_fraction": HOST_STEAL_LIMIT}  # fmt: skip

    @property
    def exit_code(self) -> int:
        """0 when every valid case passes (and at least one was compared), 1 otherwise."""
        valid = [r for r in self.results if r.status != "invalid"]
        if not valid:
            return 1
        return 0 if all(r.status == "pass" for r in valid) else 1


def _sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=1)
def sim_engine_key() -> str:
    """The simulator's engine version + a hash of the engine library (a rebuild is a new engine)."""
    from cclab import _native

    return f"{_native.ENGINE_VERSION}+{_sha256(_native.__file__)[:16]}"


@lru_cache(maxsize=1)
def kernel_engine_key() -> str:
    """Kernel release + the emulator's version and source hash (``cclab-link version``: a hash of its own
    sources, compiler and profile, so a simulator-only rebuild keeps the key); an emulator that reports no
    source hash is keyed by a hash of the file it runs from (binary or extension module)."""
    from cclab.kernel import machine

    command = machine.link_command()
    if command is None:
        return f"kernel {os.uname().release} + cclab-link (not built)"
    try:
        version = subprocess.run([*command, "version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        version = "?"
    return _kernel_key(os.uname().release, version, lambda: _sha256(machine.link_file(command))[:16])


def _kernel_key(release: str, version: str, file_hash: Callable[[], str]) -> str:
    if re.fullmatch(r"cclab-link \S+ source [0-9a-f]{16}", version):
        return f"kernel {release} + {version}"
    return f"kernel {release} + {version or 'cclab-link ?'} {file_hash()}"


def _slug(case_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", case_id)


def record_id(case: Case, seed: int, backend: str, ir: dict[str, Any], engine: str) -> str:
    from cclab.store import run_id

    return f"{_slug(case.id)}-s{seed}-{backend}-{run_id(ir, backend, engine)[:12]}"


def _first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


def run_parity(
    cases: Sequence[Case],
    out_dir: str | Path,
    *,
    log: Log | None = None,
    lock_path: str = LOCK_PATH,
    sim_host: dict[str, Any] | None = SIM_HOST,
    steal_retries: int = 0,
) -> ParityOutcome:
    """Run ``cases`` on the simulator and the kernel into ``out_dir`` and compare them.

    The simulator's hosts get ``sim_host`` (its ``[host]``; default
    :data:`~cclab.parity.matrix.SIM_HOST`: the kernel hosts' measured
    turnaround as jitter and their receiving application's measured read
    latency; ``None``: punctual); the kernel's scenario never has it.

    A kernel run the self-check rejects is rerun once. ``steal_retries``
    (default 0) allows up to that many further runs, each only when the run
    before it was rejected while the VM's host took more than
    :data:`~cclab.kernel.machine.HOST_STEAL_LIMIT` of the CPU time (a
    rejection the host explains, which a later run may escape); a run
    rejected without such steal is reported invalid at once.

    Every simulator run first (seconds each), then the kernel runs case by
    case, each inside :func:`~cclab.parity.lock.kernel_lock` — never two at
    once, and never while a simulator run of ours is busy (the kernel
    self-check would see a CPU-saturated machine).
    """
    from cclab import api
    from cclab.record import is_complete, read_run
    from cclab.store import SweepStore

    log = log or (lambda _msg: None)
    t_start = time.monotonic()
    store = SweepStore(out_dir)
    store.check_root()  # SweepDirError: a file, a run record, a directory of other data
    store.init(None)
    store.clean_partials()
    engines = {"sim": sim_engine_key(), "kernel": kernel_engine_key()}
    outcome = ParityOutcome(out_dir=store.root, results=[], engines=engines,
                            started_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                            sim_host=dict(sim_host) if sim_host else None)  # fmt: skip

    # plan: record directories of every (case, seed, backend); the simulator's seeds are the
    # case's own or, for a case with several, more of them (Case.sim_seeds)
    plan: list[tuple[Case, list[tuple[int, dict[str, Any], Path]], list[tuple[int, dict[str, Any], Path]]]] = []
    for case in cases:
        sim_seeds, kernel_seeds = [], []
        for seed in case.sim_seeds:
            sim_scenario = case.sim_scenario_for(seed, sim_host)
            _sc, _text, sim_ir = api.prepare(sim_scenario)
            sim_seeds.append((seed, sim_scenario, store.run_dir(record_id(case, seed, "sim", sim_ir, engines["sim"]))))
        for seed in case.seeds:
            scenario = case.scenario_for(seed)
            _sc, _text, ir = api.prepare(scenario)
            kernel_seeds.append((seed, scenario, store.run_dir(record_id(case, seed, "kernel", ir, engines["kernel"]))))
        plan.append((case, sim_seeds, kernel_seeds))

    # 1. the simulator, everything at once (cheap)
    sim_errors: dict[str, str] = {}
    todo = [(case, seed, sim_sc, sdir) for case, sims, _k in plan for seed, sim_sc, sdir in sims if not is_complete(sdir)]
    outcome.reused += sum(len(s) for _c, s, _k in plan) - len(todo)
    if todo:
        log(f"simulator: {len(todo)} run(s)")
    for case, seed, scenario, sdir in todo:
        try:
            api.run_to_dir(scenario, sdir, backend="sim")
            outcome.ran += 1
        except Exception as exc:  # noqa: BLE001 — a failed run is reported with its case
            sim_errors.setdefault(case.id, f"sim seed {seed}: {_first_line(exc)}")
            log(f"  sim {case.id} seed {seed} failed: {_first_line(exc)}")

    # 2. the kernel, one run at a time, case by case
    n = len(plan)
    for i, (case, sim_seeds, kernel_seeds) in enumerate(plan, 1):
        res = CaseResult(case=case, status="pass")
        if case.id in sim_errors:
            res.status, res.error = "error", sim_errors[case.id]
        res.sim_records = [str(sdir) for _seed, _sc, sdir in sim_seeds]
        kernel_paths: list[Path] = []
        for seed, scenario, kdir in kernel_seeds:
            if res.status == "error":
                continue
            try:
                path, attempts = _kernel_record(scenario, kdir, case, seed, outcome, log, lock_path, steal_retries)
            except Exception as exc:  # noqa: BLE001
                res.status, res.error = "error", f"kernel seed {seed}: {_first_line(exc)}"
                res.kernel_attempts.append({"seed": seed, "error": traceback.format_exc(limit=6)})
                log(f"  kernel {case.id} seed {seed} failed: {_first_line(exc)}")
                continue
            res.kernel_attempts += attempts
            kernel_paths.append(path)
            res.kernel_records.append(str(path))
            last = attempts[-1]
            if not last["valid"]:
                res.invalid_reasons += [f"seed {seed}: {r}" for r in last["reasons"]] or [f"seed {seed}: marked invalid"]
        if res.status != "error" and res.invalid_reasons:
            res.status = "invalid"
        if res.status == "pass":
            try:
                sims = [read_run(s) for _seed, _sc, s in sim_seeds]
                kernels = [read_run(k) for k in kernel_paths]
                res.checks = evaluate(case.id, case.metrics, sims, kernels)
                res.status = "fail" if res.failed_checks else "pass"
            except Exception as exc:  # noqa: BLE001
                res.status, res.error = "error", f"comparison: {_first_line(exc)}"
        outcome.results.append(res)
        log(f"[{i}/{n}] {case.id}: {_status_line(res)}")
    outcome.wall_s = time.monotonic() - t_start
    return outcome


def _status_line(res: CaseResult) -> str:
    if res.status == "error":
        return f"ERROR ({res.error})"
    if res.status == "invalid":
        return "INVALID (" + "; ".join(res.invalid_reasons) + ")"
    if res.status == "fail":
        return "FAIL (" + ", ".join(f"{c.metric} sim {_fmt(c.sim)} vs kernel {_fmt(c.kernel)} {c.unit}" for c in res.failed_checks) + ")"
    return "pass"


def _fmt(x: float) -> str:
    if isinstance(x, float) and math.isinf(x):
        return "never"
    if isinstance(x, float) and math.isnan(x):
        return "–"
    return f"{x:.3g}"


def _kernel_record(scenario: dict[str, Any], kdir: Path, case: Case, seed: int, outcome: ParityOutcome, log: Log,
                   lock_path: str, steal_retries: int = 0) -> tuple[Path, list[dict[str, Any]]]:  # fmt: skip
    """The kernel record to compare for one seed: the first valid one of the first run, its one
    rerun and (``steal_retries``) further runs each made only after a rejection with host steal."""
    from cclab import api
    from cclab.kernel.machine import HOST_STEAL_LIMIT
    from cclab.record import is_complete, read_meta

    attempts: list[dict[str, Any]] = []
    paths = [kdir, kdir.with_name(kdir.name + "-retry")]
    paths += [kdir.with_name(f"{kdir.name}-retry{k}") for k in range(2, 2 + steal_retries)]
    for attempt, path in enumerate(paths):
        if attempt >= 2 and (attempts[-1]["steal_fraction"] or 0.0) < HOST_STEAL_LIMIT:
            break  # rejected without the host's steal: the machine's answer, not a draw to retry
        if is_complete(path):
            outcome.reused += 1
        else:
            last = attempts[-1] if attempts else None
            if attempt == 1:
                log(f"  {case.id} seed {seed}: kernel run invalid ({'; '.join(last['reasons'])}); rerunning once")
            elif last is not None:
                log(f"  {case.id} seed {seed}: kernel run invalid again with {last['steal_fraction'] * 100:.1f} % host "
                    f"steal; run {attempt + 1} of at most {len(paths)} (--steal-retries)")  # fmt: skip

            def waiting() -> None:
                log(f"  waiting for {lock_path}: another kernel run holds it")

            t0 = time.monotonic()
            with kernel_lock(lock_path, on_wait=waiting):
                api.run_to_dir(scenario, path, backend="kernel")
            outcome.ran += 1
            log(f"  kernel {case.id} seed {seed}{' (rerun)' if attempt == 1 else f' (run {attempt + 1})' if attempt else ''}: "
                f"{time.monotonic() - t0:.1f} s")
        meta = read_meta(path)
        valid = bool(meta.get("valid", True))
        steal = (meta.get("kernel") or {}).get("steal") or {}
        attempts.append({"seed": seed, "record": str(path), "valid": valid,
                         "reasons": list(meta.get("invalid_reasons") or []),
                         "steal_fraction": steal.get("steal_fraction")})  # fmt: skip
        if valid:
            break
    return Path(attempts[-1]["record"]), attempts
