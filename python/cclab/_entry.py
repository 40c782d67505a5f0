"""The ``cclab`` command's entry point (and ``python -m cclab``).

Two answers are expected at once — ``cclab --version`` and ``cclab validate-scenario FILE`` — so
they are given here without importing the CLI framework (typer, click and what they pull in cost
more than the answer; docs/performance.md "Start-up"). Everything else, and anything about these
two that is not a plain success (an error, a warning, a help request, an option), goes through
the full CLI in :mod:`cclab.cli`, which prints it its usual way: the output of the fast path is
the full CLI's, byte for byte (tests/test_startup.py).
"""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if args in (["--version"], ["-V"]):
        from cclab import __version__

        print(f"cclab {__version__}")
        return
    if len(args) == 2 and args[0] == "validate-scenario" and not args[1].startswith("-") and _validate(args[1]):
        return
    from cclab.cli import app

    app(prog_name="cclab")


def _validate(file: str) -> bool:
    """``validate-scenario FILE`` when the file is valid and resolves without a warning; False
    (nothing printed) leaves it to the full CLI."""
    import warnings
    from pathlib import Path

    from cclab.backends.sim import few_packet_warnings
    from cclab.describe import describe_ir
    from cclab.resolve import resolve
    from cclab.scenario import load_scenario

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning is the CLI's to print
            ir = resolve(load_scenario(Path(file)))
            few_packet_warnings(ir)  # what `cclab run` (the simulator, the default backend) would warn
            lines = describe_ir(ir, file)
    except Exception:  # noqa: BLE001 - the full CLI reports it (one line) or raises it (a bug)
        return False
    ok = "\x1b[32mok\x1b[0m" if sys.stdout.isatty() else "ok"  # typer.style(fg="green"), stripped off a terminal
    try:
        print(ok + " " + "\n".join(lines), flush=True)
    except BrokenPipeError:
        # the reader went away (`| head`, `| true`): quiet, exit 1, as the full CLI (click) does
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        sys.exit(1)
    return True
