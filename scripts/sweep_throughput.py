"""Sweep throughput (runs per minute) with 1 and 2 worker processes: local pool and Dask.

    python scripts/sweep_throughput.py [--runs 16] [--repeat 3] [--json FILE]

Runs the same sweep (2 CUBIC + 2 BBR flows at 100 Mbit/s, 25 ms, 60 s simulated, 10 ms
samples, one point per buffer size; one run ≈ 0.3 s of engine time plus its summary and
record, about half a second) into a fresh directory with each executor:

* ``local`` — ``cclab sweep --jobs N`` (a spawned process pool; the sweep process plans and
  collects, N workers run);
* ``dask`` — a ``distributed.LocalCluster(processes=True)`` of N one-thread worker processes,
  sent the runs through ``--scheduler ADDRESS`` as a remote cluster would be.

Each measurement is the wall time of ``run_sweep`` (planning, every run, the results table),
repeated; the median is reported. Worker start-up is outside the Dask timing (the cluster is
up before the sweep starts, as on a real cluster) and inside the local one (the pool spawns
its workers per sweep). docs/performance.md ("Sweeps") has the numbers of this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from cclab.runner import run_sweep
from cclab.sweep import sweep_from_dict

BASE = {
    "name": "throughput",
    "duration": "60s",
    "sample_interval": "10ms",
    "link": {"rate": "100Mbps", "buffer": "1bdp"},
    "flows": [{"cca": "cubic", "rtt": "25ms", "count": 2}, {"cca": "bbr", "rtt": "25ms", "count": 2}],
}


def make_sweep(runs: int):
    buffers = [f"{0.25 * (i + 1):g}bdp" for i in range(runs)]
    return sweep_from_dict({"base": BASE, "axes": {"link.buffer": buffers}}, ".")


def timed(sweep, **options) -> float:
    with tempfile.TemporaryDirectory(prefix="cclab-throughput-") as d:
        t0 = time.perf_counter()
        outcome = run_sweep(sweep, Path(d) / "sw", progress=False, **options)
        wall = time.perf_counter() - t0
    assert outcome.done == outcome.total_runs and not outcome.failures, outcome
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sweep = make_sweep(args.runs)
    results = []
    for workers in (1, 2):
        walls = [timed(sweep, jobs=workers) for _ in range(args.repeat)]
        results.append({"executor": "local", "workers": workers, "walls_s": walls})
    import distributed

    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:  # fmt: skip
            timed(make_sweep(2), scheduler=cluster.scheduler_address)  # warm the workers (imports)
            walls = [timed(sweep, scheduler=cluster.scheduler_address) for _ in range(args.repeat)]
        results.append({"executor": "dask", "workers": workers, "walls_s": walls})
    load = os.getloadavg()
    print(f"{args.runs} runs per sweep, median of {args.repeat}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"{os.cpu_count()} CPUs")
    for r in results:
        med = statistics.median(r["walls_s"])
        r["runs_per_min"] = 60 * args.runs / med
        print(f"  {r['executor']:5} {r['workers']} worker(s): {med:6.2f} s  -> {r['runs_per_min']:6.1f} runs/min  "
              f"(walls {', '.join(f'{w:.2f}' for w in r['walls_s'])})")
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "load": load, "results": results}, indent=1))


if __name__ == "__main__":
    main()
