"""``cclab bench --vs-ns3``: cclab and ns-3 on the same dumbbell, whole process against whole process.

ns-3 comes from the ``ns3`` wheel (``pip install 'cclab[bench]'``: ns-3.44's
headers and shared libraries; its Python bindings are not used). The first
``--vs-ns3`` compiles ``cclab/data/ns3/dumbbell.cc`` — cclab's own small
ns-3 program, the only ns-3 code in cclab — against the wheel with the C++
compiler (``$CXX``, else ``g++`` or ``c++``) into a cache directory
(``$XDG_CACHE_HOME/cclab/ns3``, else ``~/.cache/cclab/ns3``), keyed by the
program's source and the ns-3 version.

For each case — 1 CUBIC at 100 Mbit/s / 25 ms / 1 BDP, and 2 BBR + 2 CUBIC
on the same link, 60 s (5 s with ``--quick``) — both run as separate
processes, interleaved, ``ROUNDS`` times; the table shows the median wall
time of each and their ratio. cclab runs as the CLI does (``cclab run FILE
--out DIR --no-plot``: start-up, engine, metrics, record); ns-3 runs the
dumbbell binary (start-up, topology, simulation; it writes nothing). Both
print the packets that left the bottleneck, so a reader can see that they
simulated the same load.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cclab.bench import CASES, QUICK_DURATION, BenchError

__all__ = ["NS3_HINT", "build_dumbbell", "main", "ns3_prefix"]

NS3_HINT = "--vs-ns3 needs ns-3: pip install 'cclab[bench]' (the ns3 wheel, ns-3.44) and a C++ compiler (g++)"
SOURCE = Path(__file__).resolve().parent / "data" / "ns3" / "dumbbell.cc"
#: The cases compared (cclab bench case names) and the dumbbell's arguments for each.
COMPARED = {"cubic-100M-25ms": {"cubic": 1, "bbr": 0}, "bbr2-cubic2-100M": {"cubic": 2, "bbr": 2}}
ROUNDS = 3
#: ns-3 libraries the dumbbell links (and what they need).
LIBS = ("applications", "internet", "point-to-point", "traffic-control", "network", "core", "bridge", "stats")


def ns3_prefix() -> tuple[Path, str] | None:
    """(the ns3 wheel's ``ns3`` directory with ``include/`` and ``lib64/``, its version), or None."""
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution("ns3")
    except importlib.metadata.PackageNotFoundError:
        return None
    prefix = Path(str(dist.locate_file("ns3")))
    if not (prefix / "include" / "ns3" / "core-module.h").is_file() or not (prefix / "lib64").is_dir():
        return None
    return prefix, dist.version


def _compiler() -> str | None:
    for name in (os.environ.get("CXX"), "g++", "c++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cclab" / "ns3"


def build_dumbbell(console: Any = None) -> Path:
    """The compiled dumbbell (built once per source and ns-3 version); :class:`BenchError` with one line if it cannot be."""
    found, cxx = ns3_prefix(), _compiler()
    if found is None or cxx is None:
        raise BenchError(NS3_HINT)
    prefix, version = found
    major = ".".join(version.split(".")[:2])  # libns3.44-core.so
    key = hashlib.sha256(SOURCE.read_bytes() + f"{version}|{prefix}|{cxx}".encode()).hexdigest()[:16]
    binary = _cache_dir() / f"dumbbell-{key}"
    if binary.is_file():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    lib = prefix / "lib64"
    # the wheel's libraries are ns-3's release build with logging and asserts compiled in
    cmd = [cxx, "-O2", "-std=c++20", "-DNS3_BUILD_PROFILE_RELEASE", "-DNS3_LOG_ENABLE", "-DNS3_ASSERT_ENABLE",
           "-D__LINUX__", f"-I{prefix / 'include'}", str(SOURCE), "-o", str(binary) + ".tmp", f"-L{lib}",
           *[f"-lns{major}-{name}" for name in LIBS], f"-Wl,-rpath,{lib}"]  # fmt: skip
    if console is not None:
        console.print(f"building the ns-3 dumbbell against ns-3 {version} (once): {binary}", soft_wrap=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "error" in line] or proc.stderr.splitlines() or ["?"]
        raise BenchError(f"could not build the ns-3 dumbbell with {cxx}: {errors[0].strip()}")
    os.replace(str(binary) + ".tmp", binary)
    return binary


def _cclab_command() -> list[str]:
    exe = Path(sys.executable).parent / "cclab"
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "cclab"]


def _timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["(no output)"])[-1]
        raise BenchError(f"{Path(cmd[0]).name} failed: {last}")
    return wall, proc.stdout


def compare(case_name: str, binary: Path, quick: bool, rounds: int, workdir: Path) -> dict[str, Any]:
    """Median whole-process wall times of cclab and ns-3 for one case, interleaved."""
    import tomli_w

    from cclab import record

    case = CASES[case_name]
    scenario = case.scenario(quick)
    toml = workdir / f"{case_name}.toml"
    toml.write_text(tomli_w.dumps(scenario))
    seconds = float((QUICK_DURATION if quick else case.duration).rstrip("s"))
    ns3_cmd = [str(binary), f"--rate={case.rate}", "--rtt=25", f"--duration={seconds:g}",
               *[f"--{k}={v}" for k, v in COMPARED[case_name].items()]]  # fmt: skip
    cclab_s, ns3_s = [], []
    cclab_pkts = ns3_pkts = 0.0
    for k in range(rounds):
        out = workdir / f"{case_name}-{k}"
        wall, _ = _timed([*_cclab_command(), "run", str(toml), "--out", str(out), "--no-plot"])
        cclab_s.append(wall)
        cclab_pkts = float(record.read_run(out).link["departed_packets"].sum())
        shutil.rmtree(out, ignore_errors=True)
        wall, stdout = _timed(ns3_cmd)
        ns3_s.append(wall)
        ns3_pkts = float(json.loads(stdout.strip().splitlines()[-1])["departed_packets"])
    c, n = statistics.median(cclab_s), statistics.median(ns3_s)
    return {"case": case_name, "description": case.description, "simulated_s": seconds, "rounds": rounds,
            "cclab_s": c, "ns3_s": n, "ratio": n / c, "cclab_runs_s": cclab_s, "ns3_runs_s": ns3_s,
            "cclab_packets": cclab_pkts, "ns3_packets": ns3_pkts}  # fmt: skip


def main(*, quick: bool = False, json_path: Path | None = None, console: Any = None,
         rounds: int | None = None) -> list[dict[str, Any]]:  # fmt: skip
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    binary = build_dumbbell(console)
    rounds = rounds or (1 if quick else ROUNDS)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    results = []
    with tempfile.TemporaryDirectory(prefix="cclab-vs-ns3-") as tmp:
        for name in COMPARED:
            with console.status(f"cclab vs ns-3: {name}…"):
                results.append(compare(name, binary, quick, rounds, Path(tmp)))
    version = (ns3_prefix() or (None, "?"))[1]
    table = Table(title=f"cclab vs ns-3 {version}, whole processes (median of {rounds}, interleaved; load {load:.1f} at start)",
                  title_justify="left")  # fmt: skip
    for col in ("case", "sim s", "cclab s", "ns-3 s", "ns-3 / cclab", "btl pkts cclab", "btl pkts ns-3"):
        table.add_column(col, justify="left" if col == "case" else "right", no_wrap=True)
    for r in results:
        table.add_row(r["case"], f"{r['simulated_s']:g}", f"{r['cclab_s']:.2f}", f"{r['ns3_s']:.2f}",
                      f"{r['ratio']:.1f}×", f"{r['cclab_packets']:,.0f}", f"{r['ns3_packets']:,.0f}")  # fmt: skip
    wide = console if console.width >= 110 else Console(file=console.file, width=110, highlight=False,
                                                        force_terminal=console.is_terminal)  # fmt: skip
    wide.print(table)
    console.print("cclab: `cclab run FILE --out DIR --no-plot` (start-up, engine, metrics, record); ns-3: cclab's "
                  "dumbbell program against the ns3 wheel (start-up, simulation, no output files)", soft_wrap=True)  # fmt: skip
    if json_path is not None:
        from cclab.fsutil import atomic_write_text

        atomic_write_text(json_path, json.dumps({"vs_ns3": results, "ns3_version": version, "load_average": load},
                                                indent=1) + "\n")  # fmt: skip
        console.print(f"wrote {json_path}", soft_wrap=True)
    return results
