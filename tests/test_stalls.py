"""``cclab doctor --pauses``: measuring a machine's CPU stalls (cclab.kernel.stalls)
and turning them into the simulator's ``[host] pauses`` (docs/validation.md §4)."""

from __future__ import annotations

import json
import os
import tomllib

import pytest
from typer.testing import CliRunner

from cclab.cli import app
from cclab.kernel.stalls import THRESHOLD_NS, measure, summarize, toml_line
from cclab.scenario import scenario_from_dict


def _with_pauses(line: str):
    host = tomllib.loads(line)
    return scenario_from_dict({"name": "p", "duration": "1s", "link": {"rate": "10Mbps"},
                               "flows": [{"cca": "cubic", "rtt": "10ms"}], "host": host})  # fmt: skip


def test_summarize_counts_rates_deciles_and_a_line_the_schema_takes():
    # CPU 0: ten stalls of 1..10 ms; CPU 1: one of 0.5 ms; over 20 s
    per_cpu = {0: [(i * 10**9, (i + 1) * 10**6) for i in range(10)], 1: [(5 * 10**9, 500_000)]}
    s = summarize(per_cpu, 20.0)
    assert s["cpus"]["0"]["stalls"] == 10 and s["cpus"]["1"]["stalls"] == 1
    assert s["all"]["stalls"] == 11 and s["all"]["per_second"] == pytest.approx(11 / 20)
    assert s["cpus"]["0"]["stalled_fraction"] == pytest.approx(55e6 / 20e9)
    assert s["cpus"]["0"]["largest_ms"] == 10 and s["cpus"]["1"]["median_ms"] == 0.5
    p = s["host_pauses"]
    assert p["every"] == "1818ms"  # 20 s / 11 stalls
    assert p["durations"][0] == "0.5ms" and p["durations"][-1] == "10ms" and len(p["durations"]) == 11
    sc = _with_pauses(toml_line(p))
    assert sc.host.pauses_ir is not None
    assert sc.host.pauses_ir["durations_ns"][0] == 500_000 and sc.host.pauses_ir["durations_ns"][-1] == 10_000_000


def test_summarize_gives_no_line_for_too_few_or_too_long_stalls():
    assert summarize({0: [(0, 300_000)]}, 10.0)["host_pauses"] is None
    assert summarize({0: [(0, 300_000), (5, 2 * 10**9)]}, 10.0)["host_pauses"] is None  # [host] pauses takes ≤ 1 s
    assert summarize({0: [], 1: []}, 10.0)["all"]["stalls"] == 0


def test_measure_runs_one_loop_per_cpu_and_its_line_is_valid():
    s = measure(0.3)
    assert set(s["cpus"]) == {str(c) for c in os.sched_getaffinity(0)}
    assert s["all"]["stalls"] == sum(r["stalls"] for r in s["cpus"].values())
    assert s["threshold_ms"] == THRESHOLD_NS / 1e6
    for r in s["cpus"].values():
        assert 0 <= r["stalled_fraction"] < 1
    if s["host_pauses"] is not None:
        assert _with_pauses(toml_line(s["host_pauses"])).host.pauses_ir is not None


def test_doctor_pauses_cli():
    runner = CliRunner()
    bad = runner.invoke(app, ["doctor", "--pauses", "0"])
    assert bad.exit_code != 0 and "--pauses" in bad.output and "expected seconds" in bad.output
    ok = runner.invoke(app, ["doctor", "--pauses", "0.3", "--json"])
    assert ok.exit_code == 0, ok.output
    report = json.loads(ok.output)
    assert report["pauses"]["seconds"] == 0.3 and "all" in report["pauses"]
