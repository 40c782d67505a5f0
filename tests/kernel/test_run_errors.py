"""A failed kernel run is one ``error:`` line on the CLI, never a traceback (root).

Failures are provoked three ways: no cclab-link binary (refused by ``check``
before anything exists), an emulator that dies at start (a stand-in binary
through ``$CCLAB_LINK``), and a set-up that overruns its margin (the margin
made negative in the child process). Each time: exit code 2, one line on
stderr, no traceback, no leaked socket, nothing of the run left behind.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from kernel_helpers import cclab_link_processes_of, cclab_namespaces

from cclab.kernel import netns

pytestmark = pytest.mark.usefixtures("no_leftovers")

SCENARIO = """
name = "kernel-error"
duration = "2s"
seed = 1
[link]
rate = "20Mbps"
buffer = "1bdp"
[[flows]]
cca = "cubic"
rtt = "20ms"
"""


def _cli(tmp_path, env=None, prelude=""):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO)
    args = ["run", str(f), "--backend", "kernel", "--out", str(tmp_path / "rec"), "--no-plot"]
    code = f"{prelude}\nfrom cclab.cli import app\napp({args!r}, prog_name='cclab')\n"
    child = subprocess.Popen([sys.executable, "-W", "always::ResourceWarning", "-c", code],
                             env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    out, err = child.communicate(timeout=60)
    mine = f"{netns.PREFIX}{child.pid}-"
    assert not [n for n in cclab_namespaces() if n.startswith(mine)], "the failed run left its namespaces"
    assert cclab_link_processes_of(mine) == []
    return child.returncode, out, err


def _one_error_line(rc, err):
    assert rc == 2, err
    assert "Traceback" not in err and "ResourceWarning" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_missing_binary_is_one_line(tmp_path, kernel_ready):
    rc, _out, err = _cli(tmp_path, env={"CCLAB_LINK": str(tmp_path / "no-such-cclab-link")})
    line = _one_error_line(rc, err)
    assert "cclab-link emulator binary was not found" in line


def test_emulator_dying_at_start_is_one_line(tmp_path, kernel_ready):
    fake = tmp_path / "cclab-link"
    fake.write_text("#!/bin/sh\necho 'cclab-link: provoked failure' >&2\nexit 3\n")
    fake.chmod(0o755)
    rc, _out, err = _cli(tmp_path, env={"CCLAB_LINK": str(fake)})
    line = _one_error_line(rc, err)
    assert "kernel run failed: cclab-link emulator failed to start: cclab-link: provoked failure" in line
    assert not (tmp_path / "rec").exists()


def test_setup_overrunning_its_margin_is_one_line(tmp_path, kernel_ready):
    # t0 five seconds in the past: the set-up cannot be done in time
    rc, _out, err = _cli(tmp_path, prelude="import cclab.kernel.backend as b\nb.SETUP_MARGIN_NS = -5_000_000_000")
    line = _one_error_line(rc, err)
    assert "kernel run failed: set-up" in line and "took longer than its margin" in line
    assert not (tmp_path / "rec").exists()
