"""The wheel, as a user gets it: built by maturin (once per session, into a
temporary directory; the cargo target directory is reused), installed NOT
editable into a fresh venv (``python -m venv`` + ``pip install <wheel>``, the
dependencies from PyPI), then one simulator run and — as root — one short
kernel run from that venv, outside the source tree. The kernel run checks
that the emulator comes out of the wheel (``<venv python> -m cclab._link``).

Slow (a wheel build and a venv): marked ``wheel``; ``pytest -m 'not wheel'``
leaves it out. ``CCLAB_TEST_WHEEL=/path/to/cclab-….whl`` tests that wheel
instead of building one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cclab

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.wheel

KERNEL_SCENARIO = """\
name = "wheel-kernel"
duration = "3s"
seed = 1
sample_interval = "10ms"
[link]
rate = "10Mbps"
buffer = "1bdp"
[[flows]]
cca = "cubic"
rtt = "20ms"
"""


def _clean_env() -> dict[str, str]:
    """The environment of a user's shell: nothing pointing into the source tree or at another emulator."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CCLAB_LINK", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _build_wheel(out: Path) -> Path:
    env = _clean_env()
    maturin = shutil.which("maturin") or (shutil.which("maturin", path=str(Path(sys.executable).parent)))
    if maturin:
        cmd = [maturin, "build", "--release", "--locked", "--out", str(out)]
    else:  # the standard route: pip fetches maturin into an isolated build environment
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out), str(REPO)]
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    wheels = sorted(out.glob("cclab-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="session")
def wheel_venv(tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed (not editable); returns the venv directory."""
    t0 = time.monotonic()
    given = os.environ.get("CCLAB_TEST_WHEEL")
    wheel = Path(given) if given else _build_wheel(tmp_path_factory.mktemp("wheel"))
    t1 = time.monotonic()
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    env = _clean_env()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=300)
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], env=env,
                       capture_output=True, text=True, timeout=1800)  # fmt: skip
    assert r.returncode == 0, f"pip install {wheel.name} failed:\n{r.stderr[-3000:]}"
    t2 = time.monotonic()
    print(f"\n[wheel] {wheel.name}: build {t1 - t0:.1f} s, venv + pip install {t2 - t1:.1f} s")
    return venv


def _run(venv: Path, args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    r = subprocess.run([str(venv / "bin" / "cclab"), *args], cwd=cwd, env=_clean_env(), capture_output=True, text=True,
                       timeout=timeout)  # fmt: skip
    assert r.returncode == 0, f"cclab {' '.join(args)} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return r


def test_the_installed_wheel_is_not_the_source_tree(wheel_venv, tmp_path):
    code = "import cclab, cclab._native as n; print(cclab.__file__); print(n.__file__); print(hasattr(n, 'link_main'))"
    r = subprocess.run([str(wheel_venv / "bin" / "python"), "-c", code], cwd=tmp_path, env=_clean_env(),
                       capture_output=True, text=True, check=True)  # fmt: skip
    pkg, native, has_link = r.stdout.split()
    assert Path(pkg).is_relative_to(wheel_venv) and Path(native).is_relative_to(wheel_venv), r.stdout
    assert has_link == "True"
    r = subprocess.run([str(wheel_venv / "bin" / "python"), "-m", "cclab._link", "version"], cwd=tmp_path, env=_clean_env(),
                       capture_output=True, text=True, check=True)  # fmt: skip
    assert r.stdout.strip().startswith("cclab-link ")


def test_the_wheel_runs_a_simulator_scenario(wheel_venv, tmp_path):
    out = tmp_path / "sim"
    _run(wheel_venv, ["run", str(REPO / "examples" / "cubic-vs-reno.toml"), "--out", str(out)], cwd=tmp_path)
    r = cclab.load(out)
    assert r.meta["status"] == "complete" and r.meta["backend"] == "sim"
    assert set(r.flows["flow_id"]) == {0, 1}
    assert r.summary["aggregate"]["utilization"] > 0.9
    assert (out / "timeseries.png").stat().st_size > 0


def test_the_wheel_runs_a_kernel_scenario_with_its_own_emulator(wheel_venv, tmp_path):
    from cclab.kernel import machine

    if not machine.is_root():
        pytest.skip("the kernel backend needs root (network namespaces, TUN devices)")
    if not machine.tun_available():
        pytest.skip("the kernel backend needs /dev/net/tun")
    scenario = tmp_path / "kernel.toml"
    scenario.write_text(KERNEL_SCENARIO)
    out = tmp_path / "kernel"
    _run(wheel_venv, ["run", str(scenario), "--backend", "kernel", "--out", str(out), "--no-plot"], cwd=tmp_path)
    r = cclab.load(out)
    assert r.meta["status"] == "complete" and r.meta["backend"] == "kernel"
    emulator = r.meta["emulator"]["binary"]
    interpreter, rest = emulator.split(" ", 1)
    assert Path(interpreter).is_relative_to(wheel_venv) and rest == "-m cclab._link", emulator
    assert len(r.link) == 300
    assert 0.8 < r.summary["aggregate"]["utilization"] <= 1.01, r.summary["aggregate"]
