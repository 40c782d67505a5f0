"""What the kernel backend refuses, before any namespace exists (no root needed
for most: ``check`` reads /proc and the IR only)."""

from __future__ import annotations

import os

import pytest

from cclab.errors import ScenarioError
from cclab.kernel import backend, machine

from kernel_helpers import cclab_namespaces, scenario_ir


def test_missing_algorithm_is_named_with_the_kernels_list(kernel_ready):
    ir = scenario_ir(flows=[{"cca": "cubic", "rtt": "50ms"}, {"cca": "vegas", "rtt": "50ms"}])
    if "vegas" in machine.available_ccas():
        pytest.skip("this kernel has vegas")
    before = cclab_namespaces()
    with pytest.raises(ScenarioError) as err:
        backend.run(ir)
    msg = str(err.value)
    assert "vegas" in msg and "flows[1].cca" in msg
    for cca in machine.available_ccas():
        assert cca in msg
    assert "\n" not in msg
    assert cclab_namespaces() == before, "nothing may be created before the check"


def test_rate_beyond_the_emulator_is_refused():
    ir = scenario_ir(link={"rate": "10Gbps", "delay": "0ms", "buffer": "100KB"})
    with pytest.raises(ScenarioError, match=r"link.rate: .*beyond what the kernel backend's emulator sustains"):
        backend.check(ir)


def test_a_topologys_total_rate_counts_schedule_steps():
    # two 400 Mbit/s links that a schedule raises to 1000 Mbit/s carry up to 2000 Mbit/s: refused
    # like two 700 Mbit/s links are (only the base rates were summed, and the run came out invalid)
    limit = machine.max_rate_bps(1500)
    step = int(limit * 0.8)
    links = {name: {"from": a, "to": b, "rate": "400Mbps", "delay": "5ms", "buffer": "1000pkts",
                    "schedule": [{"at": "0.5s", "rate": f"{step}bps"}]}
             for name, a, b in (("fwd", "l", "r"), ("back", "r", "l"))}
    ir = scenario_ir(link=None, links=links, flows=[{"cca": "cubic", "rtt": "20ms", "path": ["fwd"]},
                                                     {"cca": "cubic", "rtt": "20ms", "path": ["back"]}])
    with pytest.raises(ScenarioError, match=r"carry up to .* Mbit/s together"):
        backend.check(ir)


@pytest.mark.parametrize(("flow", "mss", "needle"), [
    ({"cca": "cubic", "rtt": "50ms", "ack_every": 3}, 1448, r"^flows\[0\]\.ack_every: ack_every = 3: Linux ACKs"),
    ({"cca": {"name": "bbr", "cwnd_gain": 1.5}, "rtt": "50ms"}, 1448, r"^flows\[0\]\.cca_params: cwnd_gain = 1\.5: "),
    ({"cca": "cubic", "rtt": "50ms"}, 88, r"^mss: mss = 88 makes packets of 140 bytes.*mss from 524 to 65483 bytes"),
])
def test_kernel_refusals_name_the_value(flow, mss, needle):
    ir = scenario_ir(mss=mss, flows=[flow])
    with pytest.raises(ScenarioError, match=needle):
        backend.check(ir)


def test_too_many_flows_are_refused():
    ir = scenario_ir(flows=[{"cca": "cubic", "rtt": "50ms", "count": machine.MAX_FLOWS + 1}])
    with pytest.raises(ScenarioError, match=r"^flows: .*at most"):
        backend.check(ir)


def test_missing_trace_file_is_refused():
    ir = scenario_ir()
    ir["links"][0]["capacity"] = {"kind": "trace", "path": "/nonexistent/trace.down", "opportunities_ns": [1_000_000],
                              "period_ns": 1_000_000, "bytes_per_opportunity": 1500}  # fmt: skip
    with pytest.raises(ScenarioError, match="link.trace: trace file does not exist"):
        backend.check(ir)


def test_state_inference_for_bbr_gains():
    # tcp_bbr.c: high_gain 2885/1000 (STARTUP), drain 1000/2885, PROBE_RTT gains 1/1, PROBE_BW 1.25/2
    assert backend._bbr_mode({"pacing_gain": 739 / 256, "cwnd_gain": 739 / 256}) == 0
    assert backend._bbr_mode({"pacing_gain": 88 / 256, "cwnd_gain": 739 / 256}) == 1
    assert backend._bbr_mode({"pacing_gain": 1.25, "cwnd_gain": 2.0}) == 2
    assert backend._bbr_mode({"pacing_gain": 1.0, "cwnd_gain": 1.0}) == 3
    # before the first bandwidth sample the kernel reports bw 0 and gains 1/1: STARTUP (bbr_init), not PROBE_RTT
    assert backend._bbr_mode({"bw_bytes_per_s": 0.0, "pacing_gain": 1.0, "cwnd_gain": 1.0}) == 0
    assert backend._bbr_mode({"bw_bytes_per_s": 6e6, "pacing_gain": 1.0, "cwnd_gain": 1.0}) == 3
    assert backend.BBR_MODES[0] == "STARTUP"


def _link(queue, egress, busy, cap=12e6, dt=10_000_000):
    import numpy as np

    n = len(queue)
    return {"time_ns": np.arange(1, n + 1) * dt, "queue_packets": np.asarray(queue, float), "queue_bytes": np.asarray(queue, float) * 1500,
            "egress_bytes": np.asarray(egress, float), "capacity_bps": np.full(n, cap), "departed_packets": np.zeros(n),
            "sojourn_sum_ns": np.zeros(n), "arrival_bytes": np.zeros(n), "drops_overflow": np.zeros(n), "drops_random": np.zeros(n),
            "drops_aqm": np.zeros(n), "delay_ns": np.zeros(n)}, np.asarray(busy, float)  # fmt: skip


def test_capacity_check_judges_only_intervals_in_which_the_link_never_idled():
    # 12 Mbit/s, 10 ms intervals: 15 000 bytes (10 packets) per interval when busy
    ir = scenario_ir()
    n = 30
    # a queue at both ends of every interval, but the link idled 4 ms in each
    # (a queue that empties inside the interval): nothing is judged, nothing flagged
    link, busy = _link([3] * n, [9000 * (k + 1) for k in range(n)], [6_000_000 * (k + 1) for k in range(n)])
    stats = backend.capacity_stats(ir, link, busy)
    assert stats["intervals_judged"] == 0 and backend._capacity_check(stats) == []
    # never idle and the full rate: judged and passed
    link, busy = _link([3] * n, [15000 * (k + 1) for k in range(n)], [10_000_000 * (k + 1) for k in range(n)])
    stats = backend.capacity_stats(ir, link, busy)
    assert stats["intervals_judged"] == n - 1 and stats["runs"] == 1 and stats["achieved"] == pytest.approx(1.0)
    assert backend._capacity_check(stats) == []
    # never idle but 10 % short: flagged
    link, busy = _link([3] * n, [13500 * (k + 1) for k in range(n)], [10_000_000 * (k + 1) for k in range(n)])
    stats = backend.capacity_stats(ir, link, busy)
    assert stats["achieved"] == pytest.approx(0.9)
    (reason,) = backend._capacity_check(stats)
    assert "achieved capacity 90.0 %" in reason and "never idled" in reason


def test_cpu_saturation_is_the_emulators_own_wakeup_delay():
    emu = {"lateness_ns": {"p99": 100_000}, "counters": {"write_errors": 0},
           "wakeup_lateness_ns": {"count": 5000, "p50": 8_000, "p99": 60_000, "max": 6_000_000}}  # fmt: skip
    assert backend._self_check(emu, {}, None) == []
    emu["wakeup_lateness_ns"]["p99"] = 205_000_000
    (reason,) = backend._self_check(emu, {}, None)
    assert reason.startswith("emulator CPU-starved: its timed wake-ups were 205.00 ms late at p99")


def test_a_timing_failure_names_the_hosts_steal_time():
    emu = {"lateness_ns": {"p99": 5_710_000}, "counters": {"write_errors": 0},
           "wakeup_lateness_ns": {"count": 5000, "p50": 8_000, "p99": 60_000, "max": 6_000_000}}  # fmt: skip
    (reason,) = backend._self_check(emu, {}, None)
    assert reason == "emulator lateness p99 5.71 ms > 1 ms (it fell behind)"
    (reason,) = backend._self_check(emu, {}, None, steal={"steal_s": 2.3, "steal_fraction": 0.0348})
    assert reason == ("emulator lateness p99 5.71 ms > 1 ms (it fell behind; the VM's host took 3.5 % of its CPU "
                      "time during the run (steal))")  # fmt: skip
    # no steal (bare metal, or a quiet host): nothing added
    assert backend._self_check(emu, {}, None, steal={"steal_s": 0.0, "steal_fraction": 0.0}) == [
        "emulator lateness p99 5.71 ms > 1 ms (it fell behind)"]  # fmt: skip


def test_steal_is_read_from_proc_stat_between_two_readings():
    a, b = machine.cpu_times(), machine.cpu_times()
    assert len(a) == 3 and b[0] >= a[0] and b[2] >= a[2] >= 0
    hz = os.sysconf("SC_CLK_TCK")
    s = machine.steal_between((1000, 400, 50), (1400, 500, 70))  # 400 ticks of all CPUs, 20 of them stolen
    assert s == {"steal_s": 20 / hz, "steal_fraction": 0.05}


def test_doctor_reports_the_hosts_steal_time_since_boot():
    import json
    import subprocess
    import sys

    caps = machine.capabilities(probe_qdiscs=False)
    st = caps["host_steal_since_boot"]
    assert set(st) == {"steal_s", "steal_fraction"} and 0.0 <= st["steal_fraction"] < 1.0
    r = subprocess.run([sys.executable, "-m", "cclab", "doctor", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "steal_fraction" in json.loads(r.stdout)["host_steal_since_boot"]
    r = subprocess.run([sys.executable, "-m", "cclab", "doctor"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert "VM host steal" in r.stdout


def test_the_kernel_tests_rerun_policy():
    """kernel_helpers._until_valid: one rerun whatever the reason; a third run only after a rerun
    rejected with the host's steal; skipped (named, with the figures) when all three had it."""
    from kernel_helpers import MACHINE_SPOILED, _until_valid

    def runs(*metas):
        it = iter(metas)
        calls = []
        return calls, lambda attempt: (calls.append(attempt), next(it))[1]

    bad = lambda steal: {"valid": False, "invalid_reasons": ["late"], "kernel": {"steal": {"steal_fraction": steal}}}  # noqa: E731
    good = {"valid": True, "invalid_reasons": []}
    calls, once = runs(bad(0.0), good)
    assert _until_valid("s", once, lambda m: m) is good and calls == [0, 1]  # rerun once, even without steal
    calls, once = runs(bad(0.05), bad(0.002), good)
    assert _until_valid("s", once, lambda m: m)["valid"] is False and calls == [0, 1]  # no steal: the test fails
    calls, once = runs(bad(0.002), bad(0.05), bad(0.05))
    assert _until_valid("s", once, lambda m: m)["valid"] is False and calls == [0, 1, 2]  # not all stolen: fails
    calls, once = runs(bad(0.03), bad(0.05), bad(0.2))
    with pytest.raises(pytest.skip.Exception, match=r"scenario 's': .* all 3 runs \(steal 3\.0 %, 5\.0 %, 20\.0 %"):
        _until_valid("s", once, lambda m: m)
    # a judge's mark that the machine spoiled a run without steal (late timer wake-ups) counts as steal
    machine_spoiled = {**bad(0.002), MACHINE_SPOILED: True}
    calls, once = runs(machine_spoiled, machine_spoiled, machine_spoiled)
    with pytest.raises(pytest.skip.Exception, match=r"the machine, not the emulator, spoiled all 3 runs \(steal 0\.2 %"):
        _until_valid("s", once, lambda m: m)
    calls, once = runs(machine_spoiled, bad(0.002))
    assert _until_valid("s", once, lambda m: m)["valid"] is False and calls == [0, 1]  # the rerun's own lateness: fails


def test_a_late_release_under_steal_or_late_wakeups_is_the_machines_doing():
    """kernel_helpers.late_under_steal: a valid run whose release lateness p50 is over the limit
    counts as invalid (rerun, then skipped) only when the host's steal was above the limit or the
    emulator's timed wake-ups came later than its spin window at p50."""
    from kernel_helpers import MACHINE_SPOILED, late_under_steal

    def raw(p50_ns, steal, valid=True, wake_p50=22_000):
        return {"meta": {"valid": valid, "invalid_reasons": [] if valid else ["capacity"],
                         "emulator": {"lateness_ns_data": {"p50": p50_ns}, "settings": {"spin_ns": 50_000},
                                      "wakeup_lateness_ns": {"p50": wake_p50}},
                         "kernel": {"steal": {"steal_fraction": steal}}}}  # fmt: skip

    judge = late_under_steal(10_000)
    spoiled = judge(raw(17_000, 0.05))
    assert spoiled["valid"] is False
    assert spoiled["invalid_reasons"] == ["release lateness p50 17.0 µs while the VM's host took 5.0 % of the CPU time"]
    assert judge(raw(17_000, 0.002))["valid"] is True  # no steal, wake-ups in the window: the emulator's own lateness
    late_timer = judge(raw(15_000, 0.004, wake_p50=66_000))
    assert late_timer["valid"] is False and late_timer[MACHINE_SPOILED] is True
    assert late_timer["invalid_reasons"] == ["release lateness p50 15.0 µs while the emulator's timed wake-ups came "
                                             "66.0 µs late at p50, after its 50 µs spin window (steal 0.40 %)"]
    assert judge(raw(17_000, 0.002, wake_p50=50_000))["valid"] is True  # a wake-up at the window's edge is in it
    assert judge(raw(2_000, 0.3, wake_p50=90_000))["valid"] is True  # on time in spite of steal and late wake-ups
    no_window = raw(17_000, 0.002, wake_p50=66_000)
    no_window["meta"]["emulator"]["settings"]["spin_ns"] = 0
    assert judge(no_window)["valid"] is True  # without a spin window a late wake-up is no excuse
    assert judge(raw(17_000, 0.05, valid=False))["invalid_reasons"] == ["capacity"]  # the self-check's reason kept
