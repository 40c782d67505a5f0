"""Start-up: `cclab --version` and `cclab validate-scenario` import none of the heavy libraries.

Not a timing test (timings are measured, docs/performance.md "Start-up"): it checks *which
modules* a fresh interpreter has loaded after each command, so an eager import of pandas,
pyarrow, matplotlib, numpy, scipy or Dask on these paths fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Loaded by no command that does not need them (docs/performance.md).
HEAVY = ("pandas", "pyarrow", "matplotlib", "numpy", "scipy", "dask", "distributed")

PROBE = """
import json, sys
from cclab._entry import main
sys.argv = ["cclab", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as e:
    code = e.code
else:
    code = 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def loaded_by(*args: str) -> tuple[str, set[str]]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(args))], capture_output=True, text=True,
                          timeout=120, cwd=REPO)  # fmt: skip
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), proc.stdout + proc.stderr
    return proc.stdout, set(report["modules"])


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_version_loads_no_heavy_module():
    out, modules = loaded_by("--version")
    import cclab

    assert out.strip() == f"cclab {cclab.__version__}"
    assert heavy(modules) == []
    # nor the schema, rich or importlib.metadata (~30 ms to import): only typer and cclab's package
    assert not {"pydantic", "rich", "cclab.scenario", "importlib.metadata"} & modules


def test_validate_scenario_loads_no_heavy_module():
    out, modules = loaded_by("validate-scenario", "examples/bbr-vs-cubic.toml")
    assert out.startswith("ok examples/bbr-vs-cubic.toml: bbr-vs-cubic") and "bbr" in out and "cubic" in out
    assert heavy(modules) == []
    assert "rich" not in modules  # plain output: the tables of a run need rich, a check does not
    assert "cclab._native" not in modules  # the algorithm registry is Python (cclab.cca_params)


def test_validate_scenario_fast_path_prints_what_the_full_cli_prints(tmp_path):
    """The entry point answers a valid file without typer (cclab._entry); its output is the full
    CLI's, byte for byte — and a file with a warning or an error goes through the full CLI."""
    def both(*args: str) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
        fast = subprocess.run([sys.executable, "-m", "cclab", *args], capture_output=True, text=True, cwd=REPO, timeout=120)
        full = subprocess.run([sys.executable, "-c", "from cclab.cli import app; app(prog_name='cclab')", *args],
                              capture_output=True, text=True, cwd=REPO, timeout=120)  # fmt: skip
        return fast, full

    for example in ("examples/bbr-vs-cubic.toml", "examples/verizon-trace.toml", "examples/parking-lot.toml"):
        fast, full = both("validate-scenario", example)
        assert fast.returncode == full.returncode == 0, fast.stderr + full.stderr
        assert fast.stdout == full.stdout and fast.stdout.startswith("ok ")
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "b"\nduration = "1s"\n[link]\nrate = "80Mpbs"\n[[flows]]\ncca = "reno"\nrtt = "20ms"\n')
    fast, full = both("validate-scenario", str(bad))
    assert fast.returncode == full.returncode == 2
    assert fast.stderr == full.stderr and "link.rate" in fast.stderr and "Traceback" not in fast.stderr
    fast, full = both("--version")
    assert fast.stdout == full.stdout


def test_trace_scenario_validates_without_numpy():
    out, modules = loaded_by("validate-scenario", "examples/verizon-trace.toml")
    assert "trace" in out and heavy(modules) == []


def test_run_loads_what_it_needs_only_when_running(tmp_path):
    """A run does import pandas/pyarrow (the record) — but not matplotlib with --no-plot, nor Dask, scipy."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\nduration = "200ms"\n[link]\nrate = "5Mbps"\n[[flows]]\ncca = "reno"\nrtt = "20ms"\n')
    _out, modules = loaded_by("run", str(scenario), "--out", str(tmp_path / "r"), "--no-plot")
    assert {"pandas", "pyarrow"} <= {m.split(".")[0] for m in modules}
    assert not {"matplotlib", "dask", "distributed"} & {m.split(".")[0] for m in modules}


def test_run_starts_the_engine_before_importing_pandas(tmp_path):
    """`cclab run` checks its output directory and starts the engine (in its thread) before it imports
    pandas and pyarrow, so the import and the simulation overlap (docs/performance.md)."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\nduration = "200ms"\n[link]\nrate = "5Mbps"\n[[flows]]\ncca = "reno"\nrtt = "20ms"\n')
    probe = """
import json, sys
from cclab.backends import sim
seen = []
real_start = sim.SimStream.start
def start(self):
    seen.append(sorted(m for m in ("pandas", "pyarrow", "numpy", "cclab.record", "cclab.metrics") if m in sys.modules))
    return real_start(self)
sim.SimStream.start = start
from cclab._entry import main
sys.argv = ["cclab", "run", sys.argv[1], "--out", sys.argv[2], "--no-plot"]
try:
    main()
except SystemExit as e:
    assert e.code in (0, None), e.code
print(json.dumps(seen), file=sys.stderr)
"""
    proc = subprocess.run([sys.executable, "-c", probe, str(scenario), str(tmp_path / "r")], capture_output=True,
                          text=True, timeout=120, cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = json.loads(proc.stderr.strip().splitlines()[-1])
    assert seen and seen[0] == []  # when the engine was set to work, nothing heavy was loaded yet
    assert (tmp_path / "r" / "flows.parquet").is_file()


def test_record_dir_checks_load_no_heavy_module():
    """What `cclab run` checks before the engine starts (cclab.record_dir) needs none of the heavy libraries."""
    code = "import sys, cclab.record_dir; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO, check=True)
    assert heavy(set(out.stdout.split())) == []


def test_version_is_the_installed_package_version():
    """`cclab.__version__` comes from the extension (fast); it must equal the package metadata."""
    import importlib.metadata

    import cclab

    try:
        installed = importlib.metadata.version("cclab")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a bare source tree
        pytest.skip("cclab is not installed")
    assert cclab.__version__ == installed
