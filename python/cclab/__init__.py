"""cclab — a congestion-control lab.

One scenario file, two backends (the `sim` packet-level simulator and the
real Linux stacks in namespaces: `kernel`), sweeps, metrics and figures.

    import cclab
    r = cclab.run("examples/cubic-vs-reno.toml")
    print(r.summary); r.flows.head(); r.plot()

Heavy modules (pandas, pyarrow, matplotlib) load on first use.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("cclab")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"

_EXPORTS = {
    # running and loading
    "run": "cclab.api",
    "load": "cclab.api",
    "run_to_dir": "cclab.api",
    "Run": "cclab.record",
    # scenarios
    "Scenario": "cclab.scenario",
    "Link": "cclab.scenario",
    "FlowGroup": "cclab.scenario",
    "Measure": "cclab.scenario",
    "ScheduleEntry": "cclab.scenario",
    "LossModel": "cclab.scenario",
    "Cca": "cclab.scenario",
    "load_scenario": "cclab.scenario",
    "scenario_from_dict": "cclab.scenario",
    "resolve": "cclab.resolve",
    "ir_hash": "cclab.resolve",
    "ScenarioError": "cclab.errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cclab' has no attribute {name!r}")


def __dir__():
    return __all__
