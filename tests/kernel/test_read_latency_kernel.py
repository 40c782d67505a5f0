"""The receiver's own read-latency measurement (``cclab-link recv --read-latency``; ``cclab doctor
--read-latency``; cclab.kernel.readlat) on the real kernel (root).

The receiver peeks the oldest readable segment's receive timestamp before each read and bins the
read's return time minus it. A receiver stopped with SIGSTOP for 60 ms while data arrives must then
show a read of about that length; an unhindered receiver reads within a millisecond almost always.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from kernel_helpers import cclab_link_processes_of, scenario_ir

from cclab.kernel import backend, netns, readlat

pytestmark = pytest.mark.usefixtures("no_leftovers")


def _receiver_pid(prefix: str, deadline: float) -> int | None:
    while time.monotonic() < deadline:
        for pid in cclab_link_processes_of(prefix):
            if b"recv" in netns._cmdline(pid):
                return pid
        time.sleep(0.01)
    return None


def test_a_stopped_receiver_shows_in_its_read_latency():
    ir = scenario_ir(duration="5s", link={"rate": "50Mbps", "delay": "0ms", "buffer": "1bdp"})
    stopped: list[float] = []

    def stop_it() -> None:  # two 60 ms stops of the receiver, 2.0 and 3.0 s after it started listening
        pid = _receiver_pid(f"{netns.PREFIX}{os.getpid()}-", time.monotonic() + 10)
        if pid is None:
            return
        t = time.monotonic()
        for at in (2.0, 3.0):
            time.sleep(max(0.0, t + at - time.monotonic()))
            os.kill(pid, signal.SIGSTOP)
            time.sleep(0.060)
            os.kill(pid, signal.SIGCONT)
            stopped.append(at)

    th = threading.Thread(target=stop_it, daemon=True)
    th.start()
    raw = backend.run(ir, read_latency=True)
    th.join(timeout=5)
    assert stopped == [2.0, 3.0], "the receiver process was not found to stop"
    lat = raw["meta"]["receiver_read_latency"]
    s = readlat.summarize(lat)
    print(s)
    assert lat["bin_ns"] == 10_000 and s["reads"] > 1000
    long = sum(lat["counts"][5_000:]) + lat["over"]  # reads of 50 ms or more
    assert long >= 2, f"two 60 ms stops of the receiver, {long} reads ≥ 50 ms"
    assert s["p50_us"] is not None and s["p50_us"] <= 1000  # otherwise the receiver reads promptly


def test_measure_and_the_doctor_line_resolve(tmp_path):
    from cclab.resolve import resolve
    from cclab.scenario import scenario_from_dict

    sc = tmp_path / "s.toml"
    sc.write_text('name = "rl"\nduration = "3s"\nseed = 1\n[link]\nrate = "20Mbps"\ndelay = "0ms"\nbuffer = "1bdp"\n'
                  '[[flows]]\ncca = "cubic"\nrtt = "20ms"\n')  # fmt: skip
    r = subprocess.run([sys.executable, "-m", "cclab", "doctor", "--read-latency", str(sc)], capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    line = [x for x in r.stdout.splitlines() if x.startswith("read_delay = ")]
    assert len(line) == 1, r.stdout
    assert "reads, p50" in r.stdout
    import tomllib

    host = tomllib.loads(line[0])
    ir = resolve(scenario_from_dict({"name": "x", "duration": "1s", "link": {"rate": "20Mbps", "buffer": "1bdp"},
                                     "flows": [{"cca": "cubic", "rtt": "20ms"}], "host": host}))  # fmt: skip
    assert ir["host"]["read_delay_ns"] and ir["host"]["read_delay_p"]
