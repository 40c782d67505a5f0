"""The emulator as the kernel backend starts it (``python -m cclab._link``, built
into the extension module): its processes are recognized in /proc, named
``cclab-link``, and removed by the cleanup of a dead run's leftovers (root)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from kernel_helpers import cclab_namespaces, scenario_ir

from cclab.kernel import backend, machine, netns

pytestmark = pytest.mark.usefixtures("no_leftovers")


def test_a_live_run_s_emulator_processes_are_found_and_named(monkeypatch):
    monkeypatch.delenv("CCLAB_LINK", raising=False)
    if machine.link_command() != [sys.executable, "-m", "cclab._link"]:
        pytest.skip("this build of cclab._native has no link emulator")
    with backend.emulated_path(scenario_ir(duration="2s")) as path:
        pid = path.emulator.pid
        assert pid in netns.cclab_link_processes()
        with open(f"/proc/{pid}/comm") as fh:
            assert fh.read().strip() == "cclab-link"
        # the run's own process is alive: a live run is not a leftover
        found = netns.leftovers()
        assert path.ns.snd not in found["namespaces"] and pid not in found["processes"]


_OWNER = """
import subprocess, sys
snd, rcv = sys.stdin.readline().split()  # the namespaces, made by the test with this process's pid in their names
p = subprocess.Popen([*sys.argv[1:], "--snd-netns", snd, "--rcv-netns", rcv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
print(p.pid, p.stdout.readline().decode().strip(), flush=True)
sys.stdin.readline()
"""


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


def test_clean_kills_an_orphaned_emulator_of_a_killed_run_and_removes_its_namespaces(tmp_path, monkeypatch):
    """A run SIGKILLed (no cleanup of its own) whose emulator did not follow it
    (here: stopped, so the SIGTERM its parent's death sends stays pending)
    leaves namespaces and a ``python -m cclab._link emulate`` orphan;
    ``cclab doctor --clean`` (netns.clean) must find it by its command line,
    kill it and remove the namespaces."""
    monkeypatch.delenv("CCLAB_LINK", raising=False)
    command = machine.link_command()
    if command != [sys.executable, "-m", "cclab._link"]:
        pytest.skip("this build of cclab._native has no link emulator")
    ir = scenario_ir(duration="2s")
    (tmp_path / "resolved.json").write_text(json.dumps(ir))
    args = [*command, "emulate", "--ir", str(tmp_path / "resolved.json"), "--dev", "cltun", "--out", str(tmp_path), "--rt-prio", "0"]
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ns = netns.RunNamespaces(run_id=f"{owner.pid}-abcdef")
    emu_pid = None
    try:
        ns.create(ir["host"]["tcp_rmem"], ir["host"]["tcp_wmem"])
        assert owner.stdin is not None and owner.stdout is not None
        owner.stdin.write(f"{ns.path(ns.snd)} {ns.path(ns.rcv)}\n")
        owner.stdin.flush()
        pid_s, line = owner.stdout.readline().split(" ", 1)
        emu_pid = int(pid_s)
        assert line.startswith("ready"), line
        assert netns.is_cclab_link(emu_pid)
        os.kill(emu_pid, signal.SIGSTOP)
        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _ppid(emu_pid) != 1:
            time.sleep(0.01)
        if _ppid(emu_pid) != 1:
            pytest.skip("orphans are not reparented to pid 1 here (a subreaper adopts them)")
        found = netns.leftovers()
        assert emu_pid in found["processes"]
        assert {ns.snd, ns.rcv} <= set(found["namespaces"])
        result = netns.clean()
        assert emu_pid in result["processes"]
        assert {ns.snd, ns.rcv} <= set(result["namespaces"])
        deadline = time.monotonic() + 10  # killed; its new parent (pid 1) reaps it in its own time
        while time.monotonic() < deadline and _state(emu_pid) not in ("gone", "Z"):
            time.sleep(0.05)
        assert _state(emu_pid) in ("gone", "Z")
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        for fh in (owner.stdin, owner.stdout):
            if fh is not None:
                fh.close()
        if emu_pid is not None and os.path.exists(f"/proc/{emu_pid}"):
            os.kill(emu_pid, signal.SIGKILL)
        ns.remove()
