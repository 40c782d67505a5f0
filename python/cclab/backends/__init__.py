"""Backends: what turns an IR (docs/ir.md) into raw engine output (docs/record.md).

A backend is any object with

* ``name: str``
* ``run(ir: dict) -> dict`` — the raw output of docs/record.md (``flows``,
  ``link``, ``state_names``, ``counters``, ``engine_version``). It may add a
  ``"meta"`` dict whose entries are merged into the record's meta.json (e.g.
  ``valid``, ``invalid_reasons``, kernel release, sysctls, emulator settings),
  and may add ``histograms`` (per-packet distributions) and ``flow_info``
  (per-flow facts: ``completion_ns``, ``end_ns``).
* optionally ``stream(ir)`` — the same output in chunks of samples, so that
  the record is written while the run goes on (:class:`cclab.backends.sim.SimStream`).

``sim`` is the Rust simulator (:mod:`cclab.backends.sim`). ``kernel`` is
provided by :mod:`cclab.kernel.backend` when installed; it is found lazily,
as that module's ``get_backend()``, ``KernelBackend()``, ``BACKEND`` or the
module itself (if it has ``run``), in that order.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable

__all__ = ["BACKENDS", "Backend", "BackendError", "get_backend"]

BACKENDS = ("sim", "kernel")


class BackendError(RuntimeError):
    """A backend is unknown or unavailable; ``str()`` is one line for users."""


@runtime_checkable
class Backend(Protocol):
    name: str

    def run(self, ir: dict[str, Any]) -> dict[str, Any]: ...


def check_name(name: str) -> None:
    """:class:`BackendError` unless ``name`` is a backend's name (without loading the backend)."""
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; expected one of: {', '.join(BACKENDS)}")


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (``sim`` or ``kernel``); :class:`BackendError` otherwise."""
    check_name(name)
    if name == "sim":
        from cclab.backends.sim import SimBackend

        return SimBackend()
    if name == "kernel":
        return _kernel_backend()
    raise BackendError(f"unknown backend {name!r}; expected one of: {', '.join(BACKENDS)}")


def _kernel_backend() -> Backend:
    try:
        module = importlib.import_module("cclab.kernel.backend")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("cclab.kernel"):
            raise BackendError("the kernel backend is not available in this installation (no cclab.kernel.backend)") from None
        raise
    for attr in ("get_backend", "KernelBackend"):
        factory = getattr(module, attr, None)
        if callable(factory):
            return factory()
    backend = getattr(module, "BACKEND", None)
    if backend is not None:
        return backend
    if callable(getattr(module, "run", None)):
        return module  # type: ignore[return-value]
    raise BackendError("cclab.kernel.backend provides no backend (expected get_backend(), KernelBackend or run())")
