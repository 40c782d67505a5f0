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
        check(ir)
        return _native().simulate(json.dumps(ir))


def check(ir: dict[str, Any]) -> None:
    """Refuse, in one line, what the simulator does not model yet (before it runs)."""
    from cclab.errors import ScenarioError

    for f in ir.get("flows", []):
        if not f.get("sack", True):
            raise ScenarioError(f"flows[{int(f.get('group', 0))}].sack", False, "the simulator does not model a "
                                "connection without SACK yet (its sender recovers with SACK and RACK-TLP)",
                                "leave sack out, or use --backend kernel (net.ipv4.tcp_sack = 0)")  # fmt: skip
