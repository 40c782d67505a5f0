"""``cclab doctor --pauses``: measuring a machine's CPU stalls (cclab.kernel.stalls)
and turning them into the simulator's ``[host] pauses`` (docs/validation.md §4)."""

from __future__ import annotations

import json
import os
import tomllib

import pytest
from typer.testing import CliRunner

from cclab.cli import app
from cclab.kernel import stalls as stalls_mod
from cclab.kernel.stalls import THRESHOLD_NS, attribute, measure, parse_switches, summarize, toml_line
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


# A tracefs ``trace`` file as Linux 6.x prints it with trace_clock "mono".
TRACE = """# tracer: nop
#
          <idle>-0       [000] d..2.   100.000050: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=x next_pid=9 next_prio=120
     cclab-stall-4242    [001] d..2.   100.000500: sched_switch: prev_comm=cclab-stall prev_pid=4242 prev_prio=120 prev_state=R+ ==> next_comm=kdamond.0 next_pid=77 next_prio=120
     cclab-stall-4241    [000] d..2.   101.250000: sched_switch: prev_comm=cclab-stall prev_pid=4241 prev_prio=120 prev_state=R+ ==> next_comm=tokio rt worker next_pid=68 next_prio=120
"""


def test_parse_switches_reads_cpu_time_and_next_task():
    sw = parse_switches(TRACE)
    assert sw[1] == (1, 100_000_500_000, "kdamond.0", 77)
    assert sw[2] == (0, 101_250_000_000, "tokio rt worker", 68)  # a name with spaces
    assert len(sw) == 3


def test_attribute_names_the_task_that_ran_and_counts_the_rest_as_unseen():
    per_cpu = {
        0: [(101_249_999_000, 1_500_000), (102_000_000_000, 800_000)],  # tokio (switch 1 us after the last read); nothing
        1: [(100_000_400_000, 900_000), (100_000_000_000, 300_000)],  # kdamond; ends before kdamond's switch: nothing
    }
    a = attribute(per_cpu, parse_switches(TRACE))
    assert a["available"]
    by = {r["task"]: r for r in a["tasks"]}
    assert set(by) == {"kdamond.0", "tokio rt worker"}
    assert by["kdamond.0"]["stalls"] == 1 and by["kdamond.0"]["median_ms"] == 0.9
    assert by["tokio rt worker"]["stalled_ms"] == 1.5
    assert a["no_switch"]["stalls"] == 2 and a["no_switch"]["stalled_ms"] == pytest.approx(1.1)
    mine = attribute(per_cpu, parse_switches(TRACE), own={68})
    assert {r["task"]: r["process"] for r in mine["tasks"]}["tokio rt worker"] == "this command"


@pytest.fixture
def tracefs():
    """tracefs at its standard place, mounted for the test if it was not (and unmounted after)."""
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("needs root (tracefs)")
    root = stalls_mod.TRACEFS
    mounted = False
    if not os.path.isdir(os.path.join(root, "instances")):
        r = subprocess.run(["mount", "-t", "tracefs", "nodev", root], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount tracefs: {r.stderr.strip()}")
        mounted = True
    before = set(os.listdir(os.path.join(root, "instances")))
    yield root
    assert set(os.listdir(os.path.join(root, "instances"))) == before, "the tracefs instance was left behind"
    if mounted:
        subprocess.run(["umount", root], check=False)


def test_measure_attributes_a_stall_to_the_process_that_took_the_cpu(tracefs):
    """A process that needs CPU 0 for itself (same priority, pinned there) while the
    loop spins there is what the loop's stalls are attributed to."""
    import subprocess
    import sys

    cpu = min(os.sched_getaffinity(0))
    hog = subprocess.Popen([sys.executable, "-c",
                            "import os,time\nos.sched_setaffinity(0,{%d})\nopen('/proc/self/comm','w').write('cclab-hog')\n"
                            "t=time.monotonic()\nwhile time.monotonic()-t<3: pass" % cpu])  # fmt: skip
    try:
        s = measure(1.0)
    finally:
        hog.kill()
        hog.wait()
    ran = s["ran_instead"]
    assert ran["available"], ran
    hog_rows = [r for r in ran["tasks"] if r["task"] == "cclab-hog"]
    assert hog_rows and hog_rows[0]["stalls"] >= 5, ran  # CFS shares the CPU between the two in slices of ms
    assert hog_rows[0]["process"] == f"{hog.pid}: cclab-hog"


def test_measure_says_why_without_tracefs(monkeypatch):
    monkeypatch.setattr(stalls_mod, "TRACEFS", "/nonexistent-tracefs")
    s = measure(0.2)
    assert s["ran_instead"]["available"] is False
    assert "tracefs" in s["ran_instead"]["why"] or "root" in s["ran_instead"]["why"]
