"""cclab — a congestion-control lab.

One scenario file, two backends (the `sim` packet-level simulator and the
real Linux stacks in namespaces: `kernel`), sweeps, metrics and figures.

    import cclab
    r = cclab.run("examples/cubic-vs-reno.toml")
    print(r.summary); r.flows.head(); r.plot()

Heavy modules (pandas, pyarrow, matplotlib, the engine) load on first use, as does ``__version__``.
"""

from importlib import import_module

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


def _package_version() -> str:
    """This installation's version: the extension's, which maturin builds with the package's
    version (the workspace's in Cargo.toml; tests/test_startup.py checks they agree), else the
    package metadata. (importlib.metadata alone takes ~30 ms to import: start-up time.)"""
    try:
        from cclab import _native

        return str(_native.ENGINE_VERSION)
    except ImportError:  # pragma: no cover - a source tree without the built extension
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("cclab")
        except PackageNotFoundError:
            return "0.0.0+unknown"


def __getattr__(name: str):
    if name == "__version__":
        globals()["__version__"] = value = _package_version()
        return value
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cclab' has no attribute {name!r}")


def __dir__():
    return __all__
