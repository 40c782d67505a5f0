#!/usr/bin/env python3
"""Measure a whole run at scale: engine time, summary time, record size, peak memory.

    python scripts/record-scale.py                       # 10 000 CUBIC flows × 60 s, 1 Gbit/s, defaults
    python scripts/record-scale.py --flows 2000 --rate 10Gbps --duration 10s
    python scripts/record-scale.py --record-flows 10ms   # every flow at every sample (the old default)

Each measurement runs ``cclab.run`` (the simulator, the record written as the
engine goes, the summary) in a fresh Python process and reports, from that
process: the engine's wall time (``meta.json`` ``timing.engine_s``), the
summary's (``timing.summary_s``: ``cclab.metrics.summary``), the whole
``cclab.run`` call, the peak resident memory of the process (``VmHWM`` from
``/proc/self/status``) and the size of every file of the record. Not a test:
the numbers go into docs/record.md ("Records at scale"); targets for
10 000 flows × 60 s at the default settings: record ≤ 1 GB, peak RSS ≤ 4 GB,
summary ≤ engine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
from pathlib import Path
import cclab

scenario, out = json.loads(sys.argv[1]), sys.argv[2]
t0 = time.perf_counter()
run = cclab.run(scenario, out=out, plot=False, allow_large=True)
total = time.perf_counter() - t0
hwm = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
files = {p.name: p.stat().st_size for p in Path(out).iterdir()}
meta = run.meta
print(json.dumps({"timing": meta.get("timing", {}), "run_s": total, "peak_rss_bytes": hwm, "files": files,
                  "record": run.ir.get("record"),
                  "packets": meta.get("counters", {}).get("delivered_packets")}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", type=int, default=10_000)
    ap.add_argument("--duration", default="60s")
    ap.add_argument("--rate", default="1Gbps")
    ap.add_argument("--rtt", default="25ms")
    ap.add_argument("--cca", default="cubic")
    ap.add_argument("--record-flows", default=None, help='record.flows ("auto" when not given: the default)')
    args = ap.parse_args(argv)
    scenario = {
        "name": f"scale-{args.flows}x{args.duration}",
        "duration": args.duration,
        "link": {"rate": args.rate, "buffer": "1bdp"},
        "flows": [{"cca": args.cca, "rtt": args.rtt, "count": args.flows}],
    }
    if args.record_flows:
        scenario["record"] = {"flows": args.record_flows}
    with tempfile.TemporaryDirectory(prefix="cclab-scale-") as tmp:
        proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(scenario), str(Path(tmp) / "run")],
                              capture_output=True, text=True)  # fmt: skip
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        r = json.loads(proc.stdout.strip().splitlines()[-1])
    t = r["timing"]
    size = sum(r["files"].values())
    interval = (r["record"] or {}).get("flows_interval_ns")
    print(f"{scenario['name']}: {args.flows} {args.cca} flows, {args.rate}, {args.rtt}, {args.duration}; "
          f"per-flow interval {interval / 1e6 if interval else 10:g} ms"
          + ("" if (r['record'] or {}).get('flows_stored', True) else " (not stored)"))
    print(f"  engine      {t.get('engine_s', float('nan')):8.2f} s")
    print(f"  summary     {t.get('summary_s', float('nan')):8.2f} s   ({'≤' if t.get('summary_s', 0) <= t.get('engine_s', 0) else '>'} engine)")
    print(f"  cclab.run   {r['run_s']:8.2f} s   (engine + frames + writing + summary + reading the IR)")
    print(f"  peak RSS    {r['peak_rss_bytes'] / 1e9:8.2f} GB")
    print(f"  record      {size / 1e9:8.3f} GB   " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(r["files"].items())
                                                     if v > 1e5))
    print(json.dumps({"scenario": scenario, **r}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
