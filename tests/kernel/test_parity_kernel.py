"""`cclab parity` end to end on the real kernel: two tiny cases (5 s each) produce the table, the HTML page
and the results files. Needs root (skips with the reason otherwise); wrap the run in
`flock /tmp/cclab-kernel.lock` like every kernel test — the runner takes the same lock around each kernel run.
"""

from __future__ import annotations

import io
import json
import math
import time

import pandas as pd
import pytest
from rich.console import Console

import cclab._native as native
from cclab import record
from cclab.parity import checks
from cclab.parity.matrix import Case

needs_sim = pytest.mark.skipif(not hasattr(native, "simulate"), reason="the simulator (cclab._native.simulate) is not built yet")


def _case(cid: str, link: dict, flows: list, metrics: tuple[str, ...]) -> Case:
    sc = {"name": "parity-k-" + cid.replace("/", "-"), "duration": "5s", "seed": 1, "sample_interval": "10ms",
          "measure": {"from": "2s"}, "link": {"delay": "0ms", **link}, "flows": flows}  # fmt: skip
    return Case(id=cid, family="k", scenario=sc, metrics=metrics, why="end-to-end test of cclab parity")


CASES = [
    _case("k/cubic-20M-20ms-1bdp", {"rate": "20Mbps", "buffer": "1bdp"}, [{"cca": "cubic", "rtt": "20ms"}],
          ("goodput", "queue_delay_p50", "retrans_rate")),
    _case("k/bbr-startup-50M-40ms-2bdp", {"rate": "50Mbps", "buffer": "2bdp"}, [{"cca": "bbr", "rtt": "40ms"}],
          ("startup_exit[flow0]", "peak_queue", "state_time")),
]  # fmt: skip


@needs_sim
def test_parity_end_to_end_on_the_kernel(tmp_path, kernel_ready, no_leftovers):
    from cclab.cli_parity import finish
    from cclab.parity.run import run_parity

    t0 = time.monotonic()
    logs: list[str] = []
    outcome = run_parity(CASES, tmp_path / "parity", log=logs.append)
    print("\n".join(logs))
    by_id = {r.case.id: r for r in outcome.results}
    assert set(by_id) == {c.id for c in CASES}
    for r in outcome.results:
        assert r.status in ("pass", "fail", "invalid"), (r.case.id, r.status, r.error)
        attempts = r.kernel_attempts
        # rerun once, and only when the first run was invalid
        assert len(attempts) == (1 if attempts[0]["valid"] else 2), attempts
        if r.status == "invalid":
            assert r.checks == [] and r.invalid_reasons
        else:
            assert attempts[-1]["valid"] and {c.kind for c in r.checks} == {checks.parse_spec(m)[0] for m in r.case.metrics}
        # the kernel record is a real run, whatever its verdict
        k = record.read_run(r.kernel_records[0])
        assert k.meta["backend"] == "kernel" and "emulator" in k.meta
    cubic = record.read_run(by_id["k/cubic-20M-20ms-1bdp"].kernel_records[0])
    good = checks.extract("goodput", cubic)["goodput"]
    assert 15.0 < good < 19.4, good  # a 20 Mbit/s link carries at most 96.5 % payload
    bbr = record.read_run(by_id["k/bbr-startup-50M-40ms-2bdp"].kernel_records[0])
    exit_rounds = checks.extract("startup_exit[flow0]", bbr)["startup exit flow0"]
    assert 3.0 <= exit_rounds <= 40.0, exit_rounds  # BBR needs at least 3 rounds without growth to leave STARTUP
    assert checks.extract("peak_queue", bbr)["peak queue"] > 0

    console = Console(record=True, width=200, file=io.StringIO())
    code = finish(outcome, {"case": ["k/*"]}, t0, console)
    text = console.export_text()
    print(text)
    valid = [r for r in outcome.results if r.status != "invalid"]
    assert code == (0 if valid and all(r.status == "pass" for r in valid) else 1)
    for word in ("k/cubic-20M-20ms-1bdp", "k/bbr-startup-50M-40ms-2bdp", "difference", "tolerance", "wall time:"):
        assert word in text
    out = tmp_path / "parity"
    doc = json.loads((out / "parity.json").read_text())
    assert [c["id"] for c in doc["cases"]] == [c.id for c in CASES]
    assert doc["engines"]["kernel"].startswith("kernel ")
    df = pd.read_parquet(out / "parity.parquet")
    assert set(df["case"]) == set(by_id)
    page = (out / "parity.html").read_text()
    assert page.count("data:image/png;base64,") == outcome.count("fail")
    for r in outcome.results:
        assert r.case.id in page
    # every check row carries numbers from both backends
    for r in valid:
        for c in r.checks:
            assert not (math.isnan(c.sim) or math.isnan(c.kernel)), c
