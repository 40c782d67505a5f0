"""``cclab bench``: simulator speed and memory on reference scenarios.

Each case is a scenario (the user-facing schema), resolved to its IR here and
run in a **fresh subprocess** that loads only the engine extension
(``cclab/_native*.so``, not pandas/pyarrow), so its peak RSS is that case's.
The child times only the ``simulate`` call (``time.perf_counter``) and reports:

* wall seconds of ``simulate``,
* simulated seconds per wall second,
* bottleneck packets (departed from the bottleneck queue, raw
  ``link.departed_packets`` at the end; in a topology summed over its
  links, so a packet counts once per link it crosses) per wall second,
* peak RSS after the run and before it (interpreter + engine module), in MB:
  ``VmHWM`` from ``/proc/self/status`` (``getrusage(RUSAGE_SELF).ru_maxrss``
  elsewhere). Not ``ru_maxrss`` on Linux: it is kept across ``execve`` and
  so reports the parent's RSS at fork time when that is larger.

Add a case with one :func:`register` line. Cases whose algorithms the engine
does not have yet are listed as skipped. Performance is measured here, never
asserted by a timed test (docs/performance.md has the measured numbers).
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

__all__ = ["CASES", "BenchCase", "BenchError", "build_ir", "main", "register", "run_case"]

#: Context printed under the table (from the performance issue).
REFERENCE = (
    "reference: ns-3.44 simulates cubic-100M-25ms at ~70 k bottleneck pkts/s; "
    "cclab's goal is ≥ 3 M pkts/s (docs/performance.md)"
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


def build_ir(case: BenchCase, quick: bool = False) -> dict[str, Any]:
    """The case's IR via the scenario models and the resolver."""
    from cclab.resolve import resolve
    from cclab.scenario import scenario_from_dict

    return resolve(scenario_from_dict(case.scenario(quick)))


# The child: loads the extension module by file, without importing the cclab
# package (whose __init__ may pull in pandas etc.), runs, reports JSON.
_CHILD = r"""
import importlib.machinery, importlib.util, json, resource, sys, time
import numpy  # the engine returns numpy arrays: load numpy before timing, not inside it
path, ir_json = sys.argv[1], sys.stdin.read()
loader = importlib.machinery.ExtensionFileLoader("cclab._native", path)
spec = importlib.util.spec_from_file_location("cclab._native", path, loader=loader)
native = importlib.util.module_from_spec(spec)
loader.exec_module(native)
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
before = peak_kb()
t0 = time.perf_counter()
raw = native.simulate(ir_json)
wall = time.perf_counter() - t0
peak = peak_kb()
link = raw["link"]
if "departed_packets" in link and len(link["departed_packets"]):
    # one row per link per sample: the last sample's rows, summed over links
    n_links = int(link["link_id"].max()) + 1 if "link_id" in link and len(link["link_id"]) else 1
    packets = float(link["departed_packets"][-n_links:].sum())
else:
    packets = float(link["egress_bytes"][-1]) / 1500.0
json.dump({"wall_s": wall, "packets": packets, "rss_before_kb": before, "rss_peak_kb": peak,
           "engine_version": raw.get("engine_version")}, sys.stdout)
"""


def _native_path() -> str:
    from cclab import _native

    if not hasattr(_native, "simulate"):
        raise BenchError("this build of the simulator engine (cclab._native) has no simulate(); nothing to benchmark")
    return str(Path(_native.__file__).resolve())


def run_case(case: BenchCase, quick: bool = False, timeout: float | None = None) -> dict[str, Any]:
    """Run one case in a fresh Python process; returns its measurements."""
    ir = build_ir(case, quick)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, _native_path()],
        input=json.dumps(ir),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BenchError(f"case {case.name} failed in its subprocess: {last}")
    r = json.loads(proc.stdout)
    sim_s = ir["duration_ns"] / 1e9
    wall = max(r["wall_s"], 1e-9)
    return {
        "case": case.name,
        "description": case.description,
        "quick": quick,
        "flows": len(ir["flows"]),
        "simulated_s": sim_s,
        "wall_s": r["wall_s"],
        "sim_s_per_wall_s": sim_s / wall,
        "packets": r["packets"],
        "packets_per_wall_s": r["packets"] / wall,
        "peak_rss_mb": r["rss_peak_kb"] / 1024.0,
        "base_rss_mb": r["rss_before_kb"] / 1024.0,
        "engine_version": r.get("engine_version"),
    }


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
         console: Any = None) -> list[dict[str, Any]]:  # fmt: skip
    """Run the selected cases, print a table (rich), optionally write JSON; returns the results."""
    from rich.console import Console
    from rich.table import Table

    from cclab import _native

    console = console or Console()
    cases = select(only)
    _native_path()  # fail early, one line
    have = set(_native.algorithms())
    results: list[dict[str, Any]] = []
    skipped: list[str] = []
    table = Table(title=f"cclab bench{' --quick' if quick else ''} (engine {getattr(_native, 'ENGINE_VERSION', '?')})",
                  title_justify="left")  # fmt: skip
    for col in ("case", "flows", "sim s", "wall s", "sim s/wall s", "btl pkts", "pkts/wall s", "peak RSS MB"):
        table.add_column(col, justify="left" if col == "case" else "right", no_wrap=True)
    for case in cases:
        missing = case.algorithms - have
        if missing:
            skipped.append(f"{case.name} (engine lacks {', '.join(sorted(missing))})")
            continue
        with console.status(f"bench {case.name}…"):
            r = run_case(case, quick)
        results.append(r)
        table.add_row(r["case"], str(r["flows"]), f"{r['simulated_s']:g}", f"{r['wall_s']:.3f}",
                      f"{r['sim_s_per_wall_s']:.1f}", _fmt_count(r["packets"]),
                      _fmt_count(r["packets_per_wall_s"]), f"{r['peak_rss_mb']:.1f}")  # fmt: skip
    # A pipe or CI log gets 80 columns by default, too narrow for this table.
    wide = console if console.width >= 110 else Console(file=console.file, width=110, highlight=False,
                                                        force_terminal=console.is_terminal)  # fmt: skip
    wide.print(table)
    if skipped:
        console.print("skipped: " + "; ".join(skipped), soft_wrap=True)
    if results:
        console.print(f"RSS before simulate (interpreter + engine): ~{results[0]['base_rss_mb']:.0f} MB", soft_wrap=True)
    console.print("btl pkts: packets that left the bottleneck queue; sim s/wall s: simulated per wall second",
                  soft_wrap=True)  # fmt: skip
    console.print(REFERENCE, soft_wrap=True)
    if json_path is not None:
        Path(json_path).write_text(json.dumps({"quick": quick, "reference": REFERENCE, "results": results,
                                               "skipped": skipped}, indent=1) + "\n")  # fmt: skip
        console.print(f"wrote {json_path}", soft_wrap=True)
    return results
