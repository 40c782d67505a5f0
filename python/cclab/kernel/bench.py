"""Benchmark of the kernel backend's link emulator (``python -m cclab.kernel.bench``).

Measures, on this machine:

1. the reference point of issue 5: one TCP flow across a 500 Mbit/s link
   with MTU 1500, RTT 50 ms, a 1-BDP drop-tail buffer — achieved rate (wire
   bytes leaving the bottleneck, and goodput) over the steady part of the
   run, and the emulator's lateness percentiles (goal: ≥ 95 % of the rate,
   lateness p99 ≤ 1 ms);
2. the highest rate it sustains at MTU 1500 and MTU 9000: every rate of
   the list is tried; a rate is *sustained* when the link carries ≥ 95 %
   of it, lateness p99 ≤ 1 ms and the TUN devices dropped nothing.

Prints one JSON document (and a human summary on stderr). Needs root.
Numbers are written to crates/cclab-link/README.md by hand, with the date.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from cclab.kernel import backend
from cclab.resolve import IR_VERSION, host_ir

GOAL_SHARE = 0.95
GOAL_LATENESS_NS = 1_000_000


def scenario_ir(rate_bps: int, mtu: int, seconds: float, cca: str = "cubic", rtt_ms: float = 50.0) -> dict[str, Any]:
    """An IR (docs/ir.md) for one bulk flow across a constant-rate link with a 1-BDP buffer."""
    header = 52
    duration = int(seconds * 1e9)
    rtt = int(rtt_ms * 1e6)
    return {
        "ir_version": IR_VERSION, "name": f"bench-{rate_bps // 1_000_000}mbps-mtu{mtu}", "duration_ns": duration, "seed": 1,
        "sample_interval_ns": 100_000_000, "measure": {"from_ns": duration // 2, "to_ns": duration},
        "mss": mtu - header, "header_bytes": header,
        "link": {"capacity": {"kind": "constant", "rate_bps": rate_bps}, "delay_ns": 0,
                 "buffer": {"bytes": int(rate_bps * rtt / 8e9), "packets": None},
                 "loss": {"kind": "bernoulli", "p": 0.0}, "schedule": [], "qdisc": {"kind": "droptail"}},
        "flows": [{"id": 0, "group": 0, "cca": cca, "cca_params": {}, "rtt_ns": rtt, "start_ns": 0,
                   "stop_ns": None, "bytes": None, "rwnd_bytes": None, "ecn": False}],
        "host": host_ir(rate_bps, rtt, int(rate_bps * rtt / 8e9)),
    }  # fmt: skip


def measure(rate_bps: int, mtu: int, seconds: float, cca: str) -> dict[str, Any]:
    ir = scenario_ir(rate_bps, mtu, seconds, cca)
    raw = backend.run(ir, enforce_rate_limit=False)
    link, flows = raw["link"], raw["flows"]
    t = np.asarray(link["time_ns"], dtype=float)
    half = t.size // 2  # steady part: the second half of the run
    egress = np.asarray(link["egress_bytes"], dtype=float)
    span = (t[-1] - t[half - 1]) / 1e9
    wire_bps = (egress[-1] - egress[half - 1]) * 8 / span
    delivered = np.asarray(flows["delivered_bytes"], dtype=float)
    goodput_bps = (delivered[-1] - delivered[half - 1]) * 8 / span
    meta = raw["meta"]
    lat = meta["emulator"]["lateness_ns"]
    tun_drops = sum(int(s.get("tx_dropped", 0)) for s in meta["kernel"]["tun"].values())
    emu = meta["emulator"]
    return {
        "rate_mbps": rate_bps / 1e6, "mtu": mtu, "cca": cca, "seconds": seconds,
        "wire_mbps": wire_bps / 1e6, "wire_share": wire_bps / rate_bps,
        "goodput_mbps": goodput_bps / 1e6, "goodput_share": goodput_bps / rate_bps,
        "lateness_us": {k: lat[k] / 1e3 for k in ("p50", "p99", "p999", "max")},
        "tun_tx_dropped": tun_drops,
        "emulator_cpu_share": emu["cpu_ns"] / max(1, emu["wall_ns"]),
        "machine_cpu_busy": meta["kernel"]["cpu_busy_fraction"],
        "host_steal": (meta["kernel"].get("steal") or {}).get("steal_fraction"),  # a VM's host taking its CPUs
        "pps": emu["counters"]["data_in"] / max(1e-9, emu["wall_ns"] / 1e9),
        "valid": meta["valid"], "invalid_reasons": meta["invalid_reasons"],
        "sustained": bool(wire_bps >= GOAL_SHARE * rate_bps and lat["p99"] <= GOAL_LATENESS_NS and tun_drops == 0),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cclab.kernel.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="traffic per measurement (default 10)")
    ap.add_argument("--cca", default="cubic")
    ap.add_argument("--reference-only", action="store_true", help="only the 500 Mbit/s MTU 1500 point")
    ap.add_argument("--rates-1500", default="750,1000,1250,1500,1750,2000", help="Mbit/s to try at MTU 1500")
    ap.add_argument("--rates-9000", default="1000,2000,3000,4000,5000,6000", help="Mbit/s to try at MTU 9000")
    args = ap.parse_args(argv)

    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "points": []}
    ref = measure(500_000_000, 1500, args.seconds, args.cca)
    out["reference"] = ref
    _show(ref)
    if not args.reference_only:
        for mtu, rates in ((1500, args.rates_1500), (9000, args.rates_9000)):
            best = ref["rate_mbps"] if mtu == 1500 and ref["sustained"] else None
            for r in (int(float(x) * 1e6) for x in rates.split(",")):
                p = measure(r, mtu, args.seconds, args.cca)
                out["points"].append(p)
                _show(p)
                if p["sustained"] and (best is None or p["rate_mbps"] > best):
                    best = p["rate_mbps"]
            out[f"max_sustained_mbps_mtu{mtu}"] = best
            print(f"MTU {mtu}: highest sustained rate tried: {best} Mbit/s", file=sys.stderr)
    print(json.dumps(out, indent=1))
    return 0


def _show(p: dict[str, Any]) -> None:
    print(
        f"{p['rate_mbps']:7.0f} Mbit/s MTU {p['mtu']:5d}: wire {p['wire_mbps']:7.1f} ({p['wire_share'] * 100:5.1f} %), "
        f"goodput {p['goodput_mbps']:7.1f}, lateness p50/p99/max {p['lateness_us']['p50']:.0f}/{p['lateness_us']['p99']:.0f}/"
        f"{p['lateness_us']['max']:.0f} µs, TUN drops {p['tun_tx_dropped']}, emulator CPU {p['emulator_cpu_share'] * 100:.0f} %, "
        f"machine busy {p['machine_cpu_busy'] * 100:.0f} %"
        + (f", host steal {p['host_steal'] * 100:.2g} %" if p.get("host_steal") else "")
        + f" → {'sustained' if p['sustained'] else 'NOT sustained'}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    sys.exit(main())
