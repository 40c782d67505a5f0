"""``cclab bench``: simulator speed and memory on reference scenarios.

Each case is a scenario (the user-facing schema) run in a **fresh Python
process** through :func:`cclab.api.run` — the engine, the metric frames and
summary, and the record written by :mod:`cclab.record` into a temporary
directory — so what it measures is what a user's run costs. The child
reports:

* engine seconds (``meta.json``'s ``wall_time_s``: the simulator alone) and
  bottleneck packets (``departed_packets`` of the link table, summed — in a topology over its
  links too, so a packet counts once per link it crosses) per
  engine second;
* the whole ``cclab.api.run`` call's wall seconds, and of those the seconds
  spent in :func:`cclab.metrics.summary` (timed by wrapping it);
* peak RSS of the child, in MB: ``VmHWM`` from ``/proc/self/status``
  (``getrusage(RUSAGE_SELF).ru_maxrss`` elsewhere) — interpreter, pandas
  and pyarrow included. Not ``ru_maxrss`` on Linux: it is kept across
  ``execve`` and so reports the parent's RSS at fork time when larger;
* the record's size on disk (every file of the record directory).

A case the resource estimate refuses (:mod:`cclab.limits`) is listed as
skipped with the reason, not run. Add a case with one :func:`register` line;
cases whose algorithms the engine does not have are listed as skipped.
``--vs-ns3`` compares whole processes with ns-3 (:mod:`cclab.ns3bench`).
Performance is measured here, never asserted by a timed test
(docs/performance.md has the measured numbers).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cclab.backends import BackendError
from cclab.fsutil import atomic_write_text

__all__ = ["CASES", "BenchCase", "BenchError", "build_ir", "main", "register", "run_case"]

#: Context printed under the table (from the performance issue).
REFERENCE = (
    "goals (docs/performance.md): ≥ 3 M bottleneck pkts/s with 100 flows at 10 Gbit/s, ≥ 2 M with 10 000; "
    "10 000 flows × 60 s: record ≤ 1 GB, peak RSS ≤ 4 GB, summary ≤ engine time; `cclab bench --vs-ns3`: ns-3 side by side"
)
QUICK_DURATION = "5s"


class BenchError(BackendError):
    """The benchmark cannot run (no engine, unknown case); one line for users."""


@dataclass(frozen=True)
class BenchCase:
    """A reference scenario: ``flows`` are TOML-shaped flow groups."""

    name: str
    description: str
    rate: str
    flows: tuple[dict[str, Any], ...]
    duration: str = "60s"
    buffer: str = "1bdp"
    qdisc: str | dict[str, Any] = "droptail"
    extra: dict[str, Any] = field(default_factory=dict)

    def scenario(self, quick: bool = False) -> dict[str, Any]:
        duration = QUICK_DURATION if quick else self.duration
        data = {
            "name": f"bench-{self.name}",
            "duration": duration,
            "seed": 1,
            "measure": {"from": "0s"},
            "link": {"rate": self.rate, "buffer": self.buffer, "qdisc": self.qdisc},
            "flows": [dict(f) for f in self.flows],
            **self.extra,
        }
        if "links" in self.extra:  # a topology (docs/topologies.md) instead of the one link
            del data["link"]
        return data

    @property
    def algorithms(self) -> set[str]:
        return {str(f["cca"]) for f in self.flows}


CASES: dict[str, BenchCase] = {}


def register(case: BenchCase) -> BenchCase:
    CASES[case.name] = case
    return case


# The reference scenarios (docs/performance.md). All 25 ms unless
# named, 1 BDP drop-tail buffer (unless a qdisc is named), 10 ms samples,
# 60 s (5 s with --quick).
register(BenchCase("cubic-100M-25ms", "1 CUBIC, 100 Mbps, 25 ms", "100Mbps", ({"cca": "cubic", "rtt": "25ms"},)))
register(BenchCase("reno2-cubic2-100M", "2 Reno + 2 CUBIC, 100 Mbps, 25 ms", "100Mbps",
                   ({"cca": "reno", "rtt": "25ms", "count": 2}, {"cca": "cubic", "rtt": "25ms", "count": 2})))  # fmt: skip
register(BenchCase("cubic-1G-100ms", "1 CUBIC, 1 Gbps, 100 ms", "1Gbps", ({"cca": "cubic", "rtt": "100ms"},)))
# 100 CUBIC flows sharing 1 Gbps (10 Mbps each), 25 ms, starts staggered by
# 10 ms so they do not all leave slow start in the same RTT.
register(BenchCase("cubic100-1G", "100 CUBIC, 1 Gbps, 25 ms, 10 ms stagger", "1Gbps",
                   ({"cca": "cubic", "rtt": "25ms", "count": 100, "stagger": "10ms"},)))  # fmt: skip
register(BenchCase("bbr-1G-100ms", "1 BBR, 1 Gbps, 100 ms (paced)", "1Gbps", ({"cca": "bbr", "rtt": "100ms"},)))
register(BenchCase("bbr2-cubic2-100M", "2 BBR + 2 CUBIC, 100 Mbps, 25 ms", "100Mbps",
                   ({"cca": "bbr", "rtt": "25ms", "count": 2}, {"cca": "cubic", "rtt": "25ms", "count": 2})))  # fmt: skip
# A parking lot (docs/topologies.md): three 100 Mbps links in a row (5 ms
# each, 1 BDP of 25 ms), one CUBIC flow over all three and one CUBIC cross
# flow per link — every packet crosses one to three links.
register(BenchCase("parking-lot-3x100M", "parking lot: 3 × 100 Mbps links, 1 long + 3 cross CUBIC flows, 25 ms", "100Mbps",
                   ({"cca": "cubic", "rtt": "25ms", "path": ["l1", "l2", "l3"]},
                    *({"cca": "cubic", "rtt": "25ms", "path": [f"l{i}"]} for i in (1, 2, 3))),
                   extra={"links": {f"l{i}": {"from": f"r{i}", "to": f"r{i + 1}", "rate": "100Mbps", "delay": "5ms",
                                              "buffer": "1bdp"} for i in (1, 2, 3)}}))  # fmt: skip
# The cubic100-1G flows through FQ-CoDel (1024 queues, CoDel per queue;
# docs/queues.md) instead of drop-tail: the cost of a flow-queueing AQM.
register(BenchCase("cubic100-1G-fq_codel", "100 CUBIC, 1 Gbps, 25 ms, 10 ms stagger, FQ-CoDel", "1Gbps",
                   ({"cca": "cubic", "rtt": "25ms", "count": 100, "stagger": "10ms"},), qdisc="fq_codel"))  # fmt: skip
# Scale (many flows, 10 Gbit/s): every flow has started by 1 s, 25 ms, 1 BDP drop-tail.
register(BenchCase("cubic100-10G", "100 CUBIC, 10 Gbps, 25 ms, 10 ms stagger", "10Gbps",
                   ({"cca": "cubic", "rtt": "25ms", "count": 100, "stagger": "10ms"},)))  # fmt: skip
register(BenchCase("cubic1000-1G", "1 000 CUBIC, 1 Gbps, 25 ms, 1 ms stagger", "1Gbps",
                   ({"cca": "cubic", "rtt": "25ms", "count": 1000, "stagger": "1ms"},)))  # fmt: skip
register(BenchCase("cubic10k-10G", "10 000 CUBIC, 10 Gbps, 25 ms, 0.1 ms stagger", "10Gbps",
                   ({"cca": "cubic", "rtt": "25ms", "count": 10_000, "stagger": "100us"},)))  # fmt: skip


def build_ir(case: BenchCase, quick: bool = False) -> dict[str, Any]:
    """The case's IR via the scenario models and the resolver."""
    from cclab.resolve import resolve
    from cclab.scenario import scenario_from_dict

    return resolve(scenario_from_dict(case.scenario(quick)))


# The child: a whole cclab.api.run of the case into a temporary record
# directory, metrics.summary timed by a wrapper; reports JSON on stdout.
_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
spec = json.loads(sys.stdin.read())
from cclab import api, metrics
from cclab.errors import ScenarioError
summary_s = 0.0
_summary = metrics.summary
def _timed_summary(*args, **kwargs):
    global summary_s
    t0 = time.perf_counter()
    try:
        return _summary(*args, **kwargs)
    finally:
        summary_s += time.perf_counter() - t0
metrics.summary = _timed_summary
def peak_kb():
    # VmHWM is this process image's peak RSS; ru_maxrss survives execve on
    # Linux and would report the (larger) parent's RSS at fork time.
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = Path(spec["out"])
t0 = time.perf_counter()
try:
    run = api.run(spec["scenario"], out=out, plot=False)
except ScenarioError as e:
    json.dump({"refused": str(e)}, sys.stdout)
    sys.exit(0)
run_s = time.perf_counter() - t0
record_bytes = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
json.dump({"engine_s": float(run.meta["wall_time_s"]), "run_s": run_s, "summary_s": summary_s,
           "packets": float(run.link["departed_packets"].sum()), "rss_peak_kb": peak_kb(),
           "record_bytes": record_bytes, "engine_version": run.meta.get("engine_version")}, sys.stdout)
"""


def _native_path() -> str:
    from cclab import _native

    if not hasattr(_native, "simulate"):
        raise BenchError("this build of the simulator engine (cclab._native) has no simulate(); nothing to benchmark")
    return str(Path(_native.__file__).resolve())


def run_case(case: BenchCase, quick: bool = False, timeout: float | None = None) -> dict[str, Any]:
    """Run one case in a fresh Python process; returns its measurements (``skipped``: why it was not run)."""
    import tempfile

    ir = build_ir(case, quick)
    with tempfile.TemporaryDirectory(prefix="cclab-bench-") as tmp:
        spec = {"scenario": case.scenario(quick), "out": str(Path(tmp) / "record")}
        proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(spec), capture_output=True, text=True,
                              timeout=timeout, check=False)  # fmt: skip
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BenchError(f"case {case.name} failed in its subprocess: {last}")
    r = json.loads(proc.stdout)
    base = {"case": case.name, "description": case.description, "quick": quick, "flows": len(ir["flows"]),
            "simulated_s": ir["duration_ns"] / 1e9}  # fmt: skip
    if "refused" in r:
        return {**base, "skipped": r["refused"]}
    engine = max(r["engine_s"], 1e-9)
    return {
        **base,
        "wall_s": r["engine_s"],
        "sim_s_per_wall_s": base["simulated_s"] / engine,
        "packets": r["packets"],
        "packets_per_wall_s": r["packets"] / engine,
        "run_s": r["run_s"],
        "summary_s": r["summary_s"],
        "peak_rss_mb": r["rss_peak_kb"] / 1024.0,
        "record_mb": r["record_bytes"] / 1e6,
        "engine_version": r.get("engine_version"),
    }


#: keys of a JSON file ``cclab bench --json`` (or ``--vs-ns3 --json``) wrote: such a file may be replaced
_BENCH_JSON_KEYS = ({"results", "reference"}, {"vs_ns3"})


def check_json_target(path: Path) -> None:
    """Refuse (:class:`BenchError`), before any case runs, a ``--json`` target the results could not
    be written to or must not replace: a directory, a path under a missing directory or a file, a path
    inside a run record, an existing file that is not a cclab bench JSON file."""
    from cclab.record import enclosing_record

    allowed = "expected a new file, or a JSON file an earlier cclab bench --json wrote"
    if path.is_dir():
        raise BenchError(f"--json {path}: is a directory; {allowed}")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise BenchError(f"--json {path}: {parent} is not a directory; {allowed}")
    rec = enclosing_record(path)
    if rec is not None:
        raise BenchError(f"--json {path}: lies inside the run record {rec}; cclab writes nothing into a run record; "
                         f"{allowed}")  # fmt: skip
    if path.exists() or path.is_symlink():
        try:
            doc = json.loads(path.read_text())
            ours = isinstance(doc, dict) and any(keys <= doc.keys() for keys in _BENCH_JSON_KEYS)
        except (OSError, ValueError):
            ours = False
        if not ours:
            raise BenchError(f"--json {path}: exists and is not a cclab bench JSON file (not replaced); {allowed}")


def select(only: Iterable[str] | None) -> list[BenchCase]:
    if not only:
        return list(CASES.values())
    unknown = [n for n in only if n not in CASES]
    if unknown:
        raise BenchError(f"unknown bench case {unknown[0]!r}; expected one of: {', '.join(CASES)}")
    return [CASES[n] for n in only]


def _fmt_count(x: float) -> str:
    for div, unit in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if x >= div:
            return f"{x / div:.2f}{unit}"
    return f"{x:.0f}"


def main(*, quick: bool = False, only: Iterable[str] | None = None, json_path: Path | None = None,
         console: Any = None, vs_ns3: bool = False) -> list[dict[str, Any]]:  # fmt: skip
    """Run the selected cases, print a table (rich), optionally write JSON; returns the results.

    ``vs_ns3``: instead, run the ns-3 comparison (:func:`cclab.ns3bench.main`).
    """
    import os
    import platform

    from rich.console import Console
    from rich.table import Table

    from cclab import _native

    console = console or Console()
    if json_path is not None:
        check_json_target(Path(json_path))
    if vs_ns3:
        if only:
            raise BenchError(f"--only {' '.join(only)}: not used by --vs-ns3, which compares its own dumbbell cases; "
                             "expected --vs-ns3 alone, or --only without it")  # fmt: skip
        from cclab import ns3bench

        return ns3bench.main(quick=quick, json_path=json_path, console=console)
    cases = select(only)
    _native_path()  # fail early, one line
    have = set(_native.algorithms())
    results: list[dict[str, Any]] = []
    skipped: list[str] = []
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    table = Table(title=f"cclab bench{' --quick' if quick else ''} (engine {getattr(_native, 'ENGINE_VERSION', '?')}, "
                        f"{os.cpu_count()} CPUs, load {load:.1f} at start)", title_justify="left")  # fmt: skip
    for col in ("case", "flows", "sim s", "engine s", "btl pkts", "pkts/engine s", "run s", "summary s",
                "peak RSS MB", "record MB"):  # fmt: skip
        table.add_column(col, justify="left" if col == "case" else "right", no_wrap=True)
    for case in cases:
        missing = case.algorithms - have
        if missing:
            skipped.append(f"{case.name} (engine lacks {', '.join(sorted(missing))})")
            continue
        with console.status(f"bench {case.name}…"):
            r = run_case(case, quick)
        if "skipped" in r:
            skipped.append(f"{case.name} ({r['skipped']})")
            continue
        results.append(r)
        table.add_row(r["case"], str(r["flows"]), f"{r['simulated_s']:g}", f"{r['wall_s']:.3f}",
                      _fmt_count(r["packets"]), _fmt_count(r["packets_per_wall_s"]), f"{r['run_s']:.2f}",
                      f"{r['summary_s']:.2f}", f"{r['peak_rss_mb']:.0f}", f"{r['record_mb']:.1f}")  # fmt: skip
    # A pipe or CI log gets 80 columns by default, too narrow for this table.
    wide = console if console.width >= 140 else Console(file=console.file, width=140, highlight=False,
                                                        force_terminal=console.is_terminal)  # fmt: skip
    wide.print(table)
    if skipped:
        console.print("skipped: " + "; ".join(skipped), soft_wrap=True)
    console.print("btl pkts: packets that left the bottleneck queue; engine s: the simulator alone; run s: the whole "
                  "cclab.api.run (engine, frames, summary, record); peak RSS: the run's process", soft_wrap=True)  # fmt: skip
    console.print(REFERENCE, soft_wrap=True)
    if json_path is not None:
        atomic_write_text(json_path, json.dumps({"quick": quick, "reference": REFERENCE, "results": results,
                                                 "skipped": skipped, "load_average": load, "cpus": os.cpu_count(),
                                                 "machine": platform.platform()}, indent=1) + "\n")  # fmt: skip
        console.print(f"wrote {json_path}", soft_wrap=True)
    return results
