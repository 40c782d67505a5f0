"""Topologies on the kernel backend (root; docs/topologies.md, docs/kernel.md "Topologies"): one
namespace per host, the emulator forwarding along every flow's path with ACKs over links, compared
with the simulator on the same files."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kernel_helpers import cclab_namespaces, valid_kernel_run

from cclab.errors import ScenarioError
from cclab.kernel import backend

pytestmark = pytest.mark.usefixtures("no_leftovers")

SEC = 1_000_000_000


def two_way(buffer: str, cca: str, duration: str = "15s", reverse: bool = True) -> dict[str, Any]:
    """One 10 Mbit/s wire both ways (10 ms each way); a flow each way whose ACKs cross the other's link."""
    flows = [{"cca": cca, "path": ["fwd"], "ack_path": ["back"]}]
    if reverse:
        flows.append({"cca": cca, "path": ["back"], "ack_path": ["fwd"], "start": "50ms"})
    return {
        "name": f"two-way-{cca}-{buffer}", "duration": duration, "sample_interval": "100ms", "measure": {"from": "3s"},
        "links": {
            "fwd": {"from": "l", "to": "r", "rate": "10Mbps", "delay": "10ms", "buffer": buffer},
            "back": {"from": "r", "to": "l", "rate": "10Mbps", "delay": "10ms", "buffer": buffer},
        },
        "flows": flows,
    }  # fmt: skip


KERNEL_TRIALS = 3  # the kernel's per-flow goodput here: 8.21-9.23 Mbit/s over eight runs
SIM_TRIALS = 8  # the simulator's by up to ±6 % between seeds (phase effects, docs/topologies.md)


def _mean_goodputs(data: dict[str, Any], tmp_path, backend: str, seeds: range) -> tuple[float, list[float]]:
    """Aggregate and per-flow goodput, each averaged over one run per seed (the seed moves the start offsets)."""
    import cclab

    aggs, flows = [], []
    for seed in seeds:
        scenario, out = {**copy.deepcopy(data), "seed": seed}, tmp_path / f"{backend}-{seed}"
        run = valid_kernel_run(scenario, out) if backend == "kernel" else cclab.run(scenario, out=out, plot=False)
        assert run.meta["valid"], run.meta["invalid_reasons"]
        aggs.append(run.summary["aggregate"]["goodput_bps"])
        flows.append([f["goodput_bps"] for f in run.summary["per_flow"]])
    print(f"  {backend}: aggregate " + " ".join(f"{a / 1e6:.2f}" for a in aggs) + "; per flow "
          + " ".join("/".join(f"{g / 1e6:.2f}" for g in run) for run in flows))  # fmt: skip
    return sum(aggs) / len(aggs), [sum(col) / len(col) for col in zip(*flows)]


@pytest.mark.parametrize(("buffer", "cca"), [("50pkts", "cubic"), ("100pkts", "bbr")])
def test_two_way_traffic_kernel_and_simulator_agree_within_5_percent(buffer: str, cca: str, tmp_path) -> None:
    """Means over trials on both sides: one run of each is one draw of how the two flows' phases lock
    (measured: kernel per-flow 8.21-9.23 Mbit/s over eight runs of the CUBIC case, simulator 8.35-9.36
    over eight seeds), so a single pair of runs compares two draws, not the two models."""
    data = two_way(buffer, cca)
    kg, kf = _mean_goodputs(data, tmp_path, "kernel", range(1, KERNEL_TRIALS + 1))
    sg, sf = _mean_goodputs(data, tmp_path, "sim", range(1, SIM_TRIALS + 1))
    print(f"two-way {cca} {buffer} (means): kernel {kg / 1e6:.2f} Mbit/s, sim {sg / 1e6:.2f}; per flow "
          + ", ".join(f"{a / 1e6:.2f}/{b / 1e6:.2f}" for a, b in zip(kf, sf)))  # fmt: skip
    assert abs(sg / kg - 1) < 0.05
    for a, b in zip(kf, sf):
        assert abs(b / a - 1) < 0.05
    # both links carried both kinds of packet: data one way, the other flow's ACKs
    k = json.loads((tmp_path / "kernel-1" / "summary.json").read_text())
    assert k["per_link"]["fwd"]["flows"] == [0] and k["per_link"]["fwd"]["ack_flows"] == [1]


REVERSE_TRIALS = 5  # forward flow with reverse traffic, 10 s runs: 8.42-9.12 Mbit/s over 13 runs, 9.29 once in CI


def test_reverse_traffic_lowers_forward_goodput_on_the_kernel_too(tmp_path) -> None:
    """A flow alone gets 9.65 Mbit/s in every run; with the other direction saturated its ACKs queue
    and drop behind 20 packets of data and it gets less, by an amount that varies from run to run with
    the two flows' phases (-5.5 to -12.7 % over 13 runs, -3.8 % once in CI), so the claim is about the
    mean over trials, as in the two-way comparison above."""
    alone = valid_kernel_run(two_way("20pkts", "cubic", "10s", reverse=False), tmp_path / "a")
    assert alone.meta["valid"], alone.meta["invalid_reasons"]
    a = alone.summary["per_flow"][0]["goodput_bps"]
    both = []
    for seed in range(1, REVERSE_TRIALS + 1):
        run = valid_kernel_run({**two_way("20pkts", "cubic", "10s"), "seed": seed}, tmp_path / f"b{seed}")
        assert run.meta["valid"], run.meta["invalid_reasons"]
        both.append(run.summary["per_flow"][0]["goodput_bps"])
    b = sum(both) / len(both)
    print(f"kernel, 20-packet buffers: forward alone {a / 1e6:.2f} Mbit/s, with reverse traffic "
          + " ".join(f"{g / 1e6:.2f}" for g in both) + f" (mean {b / 1e6:.2f})")  # fmt: skip
    assert b < 0.96 * a


def test_a_two_link_parking_lot_runs_with_a_namespace_per_host(tmp_path) -> None:
    data = {
        "name": "parking-kernel", "duration": "25s", "sample_interval": "100ms", "measure": {"from": "5s"},
        "links": {
            "l1": {"from": "a", "to": "b", "rate": "10Mbps", "delay": "5ms", "buffer": "1bdp"},
            "l2": {"from": "b", "to": "c", "rate": "10Mbps", "delay": "5ms", "buffer": "1bdp"},
        },
        "flows": [{"cca": "reno", "path": ["l1", "l2"], "rtt": "40ms"}, {"cca": "reno", "path": ["l1"], "rtt": "40ms"},
                  {"cca": "reno", "path": ["l2"], "rtt": "40ms"}],
    }  # fmt: skip
    run = valid_kernel_run(data, tmp_path / "k")
    s = run.summary
    assert run.meta["valid"], run.meta["invalid_reasons"]
    assert len(run.meta["kernel"]["namespaces"]) == 3  # hosts a, b, c
    long, cross = s["per_flow"][0]["goodput_bps"], s["per_flow"][1]["goodput_bps"]
    print(f"kernel parking lot, reno: long {long / 1e6:.2f} Mbit/s, cross {cross / 1e6:.2f}")
    # less than its max-min share, and less than a cross flow (Reno's shares over 20 s vary from run
    # to run on the kernel: 3.1 and 4.6 Mbit/s measured for the long flow)
    assert long < 10e6 / 2 * 1448 / 1500 and long < cross
    assert {k: v["flows"] for k, v in s["per_link"].items()} == {"l1": [0, 1], "l2": [0, 2]}
    for name in ("l1", "l2"):
        assert s["per_link"][name]["utilization"] > 0.9
    assert set(run.link["link"].astype(str)) == {"l1", "l2"}


def test_a_flow_that_ends_where_it_starts_is_refused_before_any_namespace() -> None:
    from cclab.resolve import resolve
    from cclab.scenario import scenario_from_dict

    data = two_way("20pkts", "cubic")
    data["flows"] = [{"cca": "cubic", "path": ["fwd", "back"]}]
    ir = resolve(scenario_from_dict(data))
    before = cclab_namespaces()
    with pytest.raises(ScenarioError, match=r"^flows\[0\]\.path: starts and ends at node 'l'"):
        backend.run(ir)
    assert cclab_namespaces() == before
