"""Typed interface of the compiled simulator engine (crates/cclab-py)."""

from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

ENGINE_VERSION: str
IR_VERSION: int

class Counters(TypedDict):
    sent_packets: int
    delivered_packets: int
    dropped_packets: int
    queued_packets: int
    in_flight_packets: int
    events: int

class FlowInfo(TypedDict):
    id: int
    cca: str
    completion_ns: int | None
    ce_segments: int  # data segments that reached the receiver marked CE

class RawOutput(TypedDict):
    flows: dict[str, npt.NDArray[Any]]
    link: dict[str, npt.NDArray[Any]]
    state_names: dict[str, list[str]]
    counters: Counters
    flow_info: list[FlowInfo]
    engine_version: str

def algorithms() -> dict[str, list[str]]:
    """Every congestion-control algorithm the engine has, with the names of the
    parameters `cca_params` may set for it."""

def algorithm_defaults(name: str) -> dict[str, float]:
    """``{parameter: default}`` of one algorithm as the engine applies it when a
    scenario leaves the parameter out (switches 1.0/0.0), in the order the
    algorithm reads them. ValueError for an unknown algorithm."""

def simulate(ir_json: str) -> RawOutput:
    """Run one resolved scenario (docs/ir.md, as JSON) and return the raw
    cumulative sampled output of docs/record.md as numpy arrays. Releases the
    GIL while running. Raises ValueError for an IR the engine rejects."""

def link_main(argv: list[str]) -> int:
    """Run the kernel backend's link emulator (crates/cclab-link) with ``argv``
    (``argv[0]`` is the program name); its exit code. Linux only;
    ``python -m cclab._link …`` calls it."""
