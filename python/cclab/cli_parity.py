"""``cclab parity``: the simulator-vs-kernel validation matrix (registered into the main CLI by cli.py).

    cclab parity [--quick] [--out DIR] [--case PATTERN ...] [--kernel-seeds N] [--punctual] [--list]

The matrix, its metrics and tolerances: :mod:`cclab.parity`; how to read the
result: docs/validation.md ("Parity").
"""

from __future__ import annotations

import fnmatch
import time
from pathlib import Path
from typing import Optional

import typer

__all__ = ["finish", "register", "select_cases", "with_kernel_seeds"]

DEFAULT_OUT = Path("parity")


def select_cases(quick: bool, patterns: list[str] | None):
    """The cases to run: the full matrix or the quick subset, filtered by glob patterns
    (a pattern without wildcards matches as a substring of the case id)."""
    from cclab.parity.matrix import CASES

    cases = [c for c in CASES if c.quick or not quick]
    if patterns:
        globs = [p if any(ch in p for ch in "*?[") else f"*{p}*" for p in patterns]
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.id, g) for g in globs)]
    return cases


def with_kernel_seeds(cases, n: int | None):
    """``cases`` with the kernel seeds 1…``n`` instead of each case's own (``None``: unchanged). A case
    with more than one kernel seed is judged on the simulator's mean over
    :data:`~cclab.parity.matrix.SIM_SEEDS` seeds (``Case.sim_seeds``)."""
    import dataclasses

    if n is None:
        return list(cases)
    return [dataclasses.replace(c, seeds=tuple(range(1, n + 1))) for c in cases]


def _fmt_wall(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s" if m else f"{seconds:.1f} s"


def parity_cmd(
    quick: bool = typer.Option(False, "--quick", help="The quick subset (~10 minutes on a 2-core machine) instead of the full matrix."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help=f"Output directory; rerun to resume (complete records are reused) [default: {DEFAULT_OUT}]."),
    case: Optional[list[str]] = typer.Option(None, "--case", "-c", metavar="PATTERN", help="Only cases whose id matches (glob, or a substring; repeatable)."),
    kernel_seeds: Optional[int] = typer.Option(None, "--kernel-seeds", metavar="N", help="Run each case on the kernel with "
                                               "seeds 1…N instead of its own (most cases have one, the chaotic ones 3–5): "
                                               "a tighter kernel mean, N times the kernel time."),
    punctual: bool = typer.Option(False, "--punctual", help="Compare the punctual simulator (no [host] jitter or read_delay) instead of "
                                  "one whose hosts have the kernel hosts' measured timing (docs/validation.md)."),
    list_only: bool = typer.Option(False, "--list", help="Print the matrix (cases, metrics, why, what is left out) and exit."),
    steal_retries: int = typer.Option(0, "--steal-retries", metavar="N", help="After the one rerun of a kernel run the "
                                      "self-check rejected, up to N more runs, each only if the run before it was "
                                      "rejected while the VM's host took more than 1 % of the CPU time (steal)."),
) -> None:
    """Run the same scenarios on the simulator and on the kernel and compare them within fixed tolerances."""
    from cclab.cli import console, err_console, fail
    from cclab.parity import matrix, output

    t0 = time.monotonic()
    if steal_retries < 0:
        fail(f"--steal-retries {steal_retries}: expected a whole number of extra runs, 0 or more")
    if kernel_seeds is not None and not 1 <= kernel_seeds <= matrix.MAX_KERNEL_SEEDS:
        fail(f"--kernel-seeds {kernel_seeds}: expected a number of kernel seeds from 1 to {matrix.MAX_KERNEL_SEEDS}")
    for pattern in case or []:  # each pattern on its own: one that matches nothing is a typo, not a filter
        if not pattern.strip():
            fail("--case '': an empty pattern would match every case; expected part of a case id, or a glob "
                 "(see cclab parity --list)")
        if not select_cases(quick, [pattern]):
            fail(f"--case {pattern}: no {'quick ' if quick else ''}case matches; see cclab parity --list")
    cases = with_kernel_seeds(select_cases(quick, case), kernel_seeds)
    if not cases:
        fail(f"--case {' '.join(case or [])}: no {'quick ' if quick else ''}case matches; see cclab parity --list")
    if list_only:
        title = f"parity matrix{' (--quick)' if quick else ''}{' matching ' + ', '.join(case) if case else ''}"
        for line in [title, *output.list_lines(cases), "", *output.list_footer(cases, matrix.CASES, matrix.quick_cases())]:
            console.print(line, soft_wrap=True, markup=False, highlight=False)
        return
    from cclab.store import SweepDirError, SweepStore

    try:  # before the preflight and any run: never into a run record or a directory of other data
        SweepStore(out or DEFAULT_OUT).check_root()
    except SweepDirError as exc:
        fail(str(exc))
    _preflight(cases, fail)
    from cclab.parity.matrix import SIM_HOST
    from cclab.parity.run import run_parity

    out_dir = out or DEFAULT_OUT
    err_console.print(f"cclab parity: {len(cases)} case(s) -> {out_dir} (estimated {matrix.estimated_wall_s(cases) / 60:.0f} min "
                      "from scratch; kernel runs one at a time)", soft_wrap=True, markup=False)  # fmt: skip
    if (note := steal_warning(steal_retries)) is not None:
        err_console.print(note, soft_wrap=True, markup=False, highlight=False)

    def log(msg: str) -> None:
        err_console.print(msg, soft_wrap=True, markup=False, highlight=False)

    try:
        outcome = run_parity(cases, out_dir, log=log, sim_host=None if punctual else SIM_HOST,
                             steal_retries=steal_retries)  # fmt: skip
    except OSError as exc:
        fail(f"{exc.filename or out_dir}: {exc.strerror or exc}")
    selection = {"quick": quick, "case": case or [], "kernel_seeds": kernel_seeds, "punctual": punctual,
                 "steal_retries": steal_retries, "cases": [c.id for c in cases]}  # fmt: skip
    raise typer.Exit(finish(outcome, selection, t0, console))


def finish(outcome, selection: dict, t0: float, console) -> int:
    """Write parity.json/parquet and parity.html, print the table, the counts and the wall time; the exit code."""
    from cclab.parity import output

    outcome.wall_s = time.monotonic() - t0
    jpath, ppath = output.write_results(outcome, selection)
    hpath = output.write_html(outcome, selection)
    outcome.wall_s = time.monotonic() - t0
    output.write_results(outcome, selection)  # again, with the final wall time
    mpath = output.write_markdown(outcome)
    if not console.is_terminal:  # a pipe or a file: do not squeeze the table into 80 columns
        console.width = max(console.width, 180)
    console.print(output.results_table(outcome))
    for line in output.problem_lines(outcome):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    console.print(output.summary_line(outcome), soft_wrap=True, markup=False, highlight=False)
    console.print(output.host_text(outcome), soft_wrap=True, markup=False, highlight=False)
    if output.steal_text(outcome):
        console.print(output.steal_text(outcome), soft_wrap=True, markup=False, highlight=False)
    console.print(f"results: {jpath}, {ppath}, {mpath}; time series of the failing cases: {hpath}", soft_wrap=True, markup=False,
                  highlight=False)  # fmt: skip
    console.print(f"wall time: {_fmt_wall(outcome.wall_s)}", markup=False, highlight=False)
    return outcome.exit_code


def _preflight(cases, fail) -> None:
    """Refuse, with one line, before anything runs: no root, no TUN/cclab-link, a scenario the kernel cannot run."""
    from cclab import api
    from cclab.errors import ScenarioError
    from cclab.kernel import backend, machine

    if not machine.is_root():
        fail("cclab parity runs every case on the kernel backend, which needs root (network namespaces and TUN devices); "
             "run it as root, or use --list to see the matrix")  # fmt: skip
    for c in cases:
        for seed in c.seeds:
            try:
                _sc, _text, ir = api.prepare(c.scenario_for(seed))
                backend.check(ir)
            except ScenarioError as exc:
                fail(f"parity case {c.id}: {exc}")


def steal_warning(steal_retries: int = 0) -> str | None:
    """One line when the VM's host has taken over 1 % of this machine's CPU time since boot (a
    busy host's stalls make kernel runs invalid, docs/validation.md §4 "Validity"); else None."""
    from cclab.kernel import machine

    fraction = machine.steal_since_boot()["steal_fraction"]
    if fraction <= machine.HOST_STEAL_LIMIT:
        return None
    policy = (f"rerun once, then up to {steal_retries} more time(s) while the host's steal explains the rejection"
              if steal_retries else "rerun once (--steal-retries N: more runs while the host's steal explains it)")
    return (f"note: this VM's host has taken {fraction * 100:.2g} % of its CPU time since boot (steal); a kernel run "
            f"during which it stalls the emulator is flagged invalid and {policy}; an idle host gives cleaner results")  # fmt: skip


def register(app: typer.Typer) -> None:
    """Add ``parity`` to the cclab CLI."""
    app.command("parity")(parity_cmd)
