"""Packaging: the emulator built into the extension (``python -m cclab._link``),
how cleanup recognizes its processes, Dask as an extra, LICENSE and
CITATION.cff. (Installing the wheel into a fresh venv: test_wheel.py.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cclab import _native
from cclab.cli import app

REPO = Path(__file__).resolve().parents[1]
needs_link = pytest.mark.skipif(not hasattr(_native, "link_main"), reason="this build of cclab._native has no link emulator (not Linux)")


@needs_link
def test_the_kernel_backend_starts_the_emulator_built_into_the_extension(monkeypatch):
    from cclab.kernel import machine

    monkeypatch.delenv("CCLAB_LINK", raising=False)
    cmd = machine.link_command()
    assert cmd == [sys.executable, "-m", "cclab._link"]
    assert machine.link_file(cmd) == _native.__file__
    out = subprocess.run([*cmd, "version"], capture_output=True, text=True, timeout=30)
    # "cclab-link VERSION source HASH": the hash of the emulator's own sources (parity keys kernel records by it)
    assert out.returncode == 0 and re.fullmatch(rf"cclab-link {re.escape(_native.ENGINE_VERSION)} source [0-9a-f]{{16}}",
                                                out.stdout.strip()), out
    bad = subprocess.run([*cmd, "nonsense"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == ["cclab-link nonsense: usage: cclab-link emulate|emulate-topo|send|recv|version [--key value …]"]


def test_cclab_link_overrides_the_built_in_emulator(monkeypatch, tmp_path):
    from cclab.kernel import machine

    fake = tmp_path / "cclab-link"
    fake.write_text("#!/bin/sh\necho cclab-link fake\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CCLAB_LINK", str(fake))
    assert machine.link_command() == [str(fake)]
    monkeypatch.setenv("CCLAB_LINK", str(tmp_path / "missing"))
    assert machine.link_command() is None
    assert "CCLAB_LINK" in machine.build_hint()


@needs_link
def test_cleanup_recognizes_python_m_cclab_link_processes_by_their_command_line():
    """The emulator's processes are Python interpreters now (/proc/PID/exe is python):
    cleanup matches ``… -m cclab._link …`` in the command line, and nothing else that
    merely runs Python. (The real emulator in namespaces: tests/kernel/test_link_process.py.)"""
    from cclab.kernel import netns

    # `python -m cclab._link version` exits at once; to hold a process with the same
    # command line, run the module's code path with a sleep in front of it
    code = "import time; time.sleep(60)"
    link_like = subprocess.Popen([sys.executable, "-c", code, "-m", "cclab._link", "recv"])
    other = subprocess.Popen([sys.executable, "-c", code, "cclab._link"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not Path(f"/proc/{link_like.pid}/cmdline").read_bytes():
            time.sleep(0.01)
        assert netns.is_cclab_link(link_like.pid)
        assert not netns.is_cclab_link(other.pid)
        assert not netns.is_cclab_link(os.getpid())
        procs = netns.cclab_link_processes()
        assert link_like.pid in procs and other.pid not in procs
        assert netns._kill_cclab_link([other.pid, link_like.pid]) == [link_like.pid]
        assert link_like.wait(timeout=5) == -9
        assert other.poll() is None
    finally:
        for p in (link_like, other):
            p.kill()
            p.wait()


def test_sweep_with_a_scheduler_but_without_dask_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` raises ImportError
    sweep = REPO / "tests" / "fixtures" / "sweep" / "grid" / "sweep.toml"
    result = CliRunner().invoke(app, ["sweep", str(sweep), "--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:1", "--no-progress"])
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert lines == ["error: --scheduler needs Dask, which is not installed; install it with: pip install 'cclab[dask]'"]
    assert not (tmp_path / "o").exists()


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_dask_is_an_extra_that_the_test_extra_pulls_in():
    project = _pyproject()["project"]
    assert not any(d.startswith(("dask", "distributed")) for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert any(d.startswith("dask[distributed]") for d in extras["dask"])
    assert any(d.startswith("dask-jobqueue") for d in extras["dask"])
    assert "cclab[dask]" in extras["test"]


def test_every_runtime_dependency_is_imported():
    names = {"pydantic": "pydantic", "typer": "typer", "rich": "rich", "numpy": "numpy", "pandas": "pandas",
             "pyarrow": "pyarrow", "matplotlib": "matplotlib", "tomli-w": "tomli_w", "pyroute2": "pyroute2",
             "scipy": "scipy"}  # fmt: skip
    source = "\n".join(p.read_text() for p in (REPO / "python" / "cclab").rglob("*.py"))
    for dep in _pyproject()["project"]["dependencies"]:
        dist = dep.split(">")[0].split("[")[0].split("=")[0].strip()
        module = names[dist]
        assert f"import {module}" in source or f"from {module}" in source, dist


def test_license_is_the_workspace_license_in_full():
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())
    assert cargo["workspace"]["package"]["license"] == "MIT"
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "THE SOFTWARE IS PROVIDED \"AS IS\"" in text
    assert _pyproject()["project"]["license"] == {"text": "MIT"}


def test_citation_cff_is_cff_1_2_0_with_the_package_version():
    lines = (REPO / "CITATION.cff").read_text().splitlines()
    top = dict(ln.split(":", 1) for ln in lines if ln and not ln.startswith((" ", "#")) and ":" in ln)
    top = {k: v.strip().strip('"') for k, v in top.items()}
    for key in ("cff-version", "message", "title", "authors", "version", "license"):
        assert key in top, key
    assert top["cff-version"] == "1.2.0"
    assert top["license"] == "MIT"
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())
    assert top["version"] == cargo["workspace"]["package"]["version"] == _native.ENGINE_VERSION
    assert '  - name: "cclab developers"' in lines
