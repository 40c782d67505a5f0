"""The ``sim`` backend: the Rust discrete-event simulator in ``cclab._native``."""

from __future__ import annotations

import json
from typing import Any

from cclab.backends import BackendError

__all__ = ["SimBackend", "engine_version"]


def _native() -> Any:
    from cclab import _native

    if not hasattr(_native, "simulate"):
        raise BackendError("this build of the simulator engine (cclab._native) has no simulate(); rebuild it")
    return _native


def engine_version() -> str:
    from cclab import _native

    return str(getattr(_native, "ENGINE_VERSION", "unknown"))


class SimBackend:
    """Runs an IR through ``cclab._native.simulate(ir_json)``."""

    name = "sim"

    def run(self, ir: dict[str, Any]) -> dict[str, Any]:
        return _native().simulate(json.dumps(ir))
