"""The ``sim`` backend: the Rust discrete-event simulator in ``cclab._native``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cclab.backends import BackendError

if TYPE_CHECKING:  # the thread pool is made by the first chunk: validate-scenario imports this module too
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["CHUNK_ROWS", "SimBackend", "SimStream", "engine_version"]

#: About this many per-flow rows per chunk of a streamed run (docs/record.md "Writing").
CHUNK_ROWS = 250_000


def _native() -> Any:
    from cclab import _native

    if not hasattr(_native, "simulate"):
        raise BackendError("this build of the simulator engine (cclab._native) has no simulate(); rebuild it")
    return _native


def engine_version() -> str:
    from cclab import _native

    return str(getattr(_native, "ENGINE_VERSION", "unknown"))


class SimStream:
    """A simulator run handed over in chunks of samples (iterate it), then :meth:`finish`.

    Each chunk is ``{"flows": {...}, "link": {...}}`` (the raw tables of
    docs/record.md) for a stretch of simulated time holding about
    :data:`CHUNK_ROWS` per-flow rows; chunk boundaries depend on the IR only,
    so a record written chunk by chunk is the same bytes every time.
    ``engine_s`` is the wall time spent in the engine (its own thread; see :meth:`__iter__`).
    """

    def __init__(self, ir: dict[str, Any], chunk_rows: int = CHUNK_ROWS):
        self._sim = _native().Simulation(json.dumps(ir))
        self.state_names: dict[str, list[str]] = dict(self._sim.state_names())
        self.engine_s = 0.0
        flows_interval = int((ir.get("record") or {}).get("flows_interval_ns") or ir["sample_interval_ns"])
        per_step = max(1, chunk_rows // max(1, len(ir["flows"])))
        self._step = per_step * flows_interval
        self._end = int(ir["duration_ns"])
        self._ends: list[int] = []  # the chunks' end times, made by start()
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[dict[str, Any]] | None = None
        self._closed = False

    def _advance(self, until_ns: int) -> dict[str, Any]:
        t0 = time.perf_counter()
        chunk = self._sim.advance(until_ns)
        self.engine_s += time.perf_counter() - t0
        return chunk

    def start(self) -> SimStream:
        """Set the engine to work on the first chunk in its thread (``advance`` releases the GIL), and
        return at once: what the caller does next — ``cclab run`` imports pandas and pyarrow — runs
        alongside it on a second core. Iterating starts it if this was not called; :meth:`close`
        ends it if the stream is never iterated. The chunks are the same either way."""
        if self._closed:
            raise RuntimeError("this SimStream was already iterated or closed; a run streams once")
        if self._pool is None:
            t = 0
            while t < self._end:
                t = min(self._end, t + self._step)
                self._ends.append(t)
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cclab-engine")
            if self._ends:
                self._pending = self._pool.submit(self._advance, self._ends[0])
        return self

    def close(self) -> None:
        """Wait for the chunk under way, if any (at most one chunk's engine time), and stop the thread."""
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pending = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The chunks in time order. The engine runs one chunk ahead, in a thread of its own
        (``advance`` releases the GIL): while the caller turns chunk k into frames and writes
        it, the engine computes chunk k + 1, so with a second core the two overlap (how much a run
        gains depends on the machine: docs/performance.md). The chunks are the same either way."""
        self.start()
        # Leaving early (an error or Ctrl-C in the caller) waits for the chunk under way, at
        # most one chunk's engine time, as a run without the thread would have.
        try:
            for until_ns in self._ends[1:]:
                chunk = self._pending.result()
                self._pending = self._pool.submit(self._advance, until_ns)
                yield chunk
            if self._pending is not None:
                chunk = self._pending.result()
                self._pending = None
                yield chunk
        finally:
            self.close()

    def finish(self) -> dict[str, Any]:
        """Everything but the rows: state names, counters, flow info, histograms, engine version."""
        t0 = time.perf_counter()
        tail = self._sim.finish()
        self.engine_s += time.perf_counter() - t0
        return tail


class SimBackend:
    """Runs an IR through ``cclab._native``: whole (:meth:`run`) or streamed (:meth:`stream`)."""

    name = "sim"

    def run(self, ir: dict[str, Any]) -> dict[str, Any]:
        check(ir)
        return _native().simulate(json.dumps(ir))

    def stream(self, ir: dict[str, Any], chunk_rows: int = CHUNK_ROWS) -> SimStream:
        check(ir)
        return SimStream(ir, chunk_rows)


#: A drop-tail buffer holding 2 or 3 full-size packets (fewer than this, more than one), crossed
#: by an unpaced flow on punctual hosts, gets a warning: there the simulator's exact ACK clock
#: decides the result (docs/validation.md §4, "Buffers of a few packets": with 2 packets 3–11× the
#: goodput of the same simulator with a Linux host's jitter, 4–20× the kernel's). With one packet
#: both stacks lose nearly every window and the jitter changes nothing for CUBIC.
FEW_PACKETS = 4


def check(ir: dict[str, Any]) -> None:
    """Refuse, in one line, what the simulator does not model (before it runs), and warn where its
    punctual hosts are known to mislead. Today it models every scenario the schema accepts (the
    engine's own validation still names a bad element in one line); kept as the backends' common
    hook, called by run, stream and ``cclab parity``."""
    few_packet_warnings(ir)


def few_packet_warnings(ir: dict[str, Any]) -> None:
    """A :class:`~cclab.errors.ScenarioWarning` for each drop-tail link whose buffer holds 2 to
    :data:`FEW_PACKETS` − 1 full-size packets and that an unpaced flow (not a BBR) crosses, when
    the hosts are punctual (no ``[host] jitter``) and the scenario could add that jitter (one link:
    the resolver refuses host jitter on a topology). On such a buffer every ACK arrives exactly two
    packets' transmission time after the one before, a burst fits the queue to the nanosecond, and
    the flow grows where Linux, whose hosts are never exact, loses (Floyd and Jacobson's phase
    effect): at 20 Mbit/s × 40 ms with 2 packets, 15.6 Mbit/s against 1.9 with the kernel hosts'
    measured jitter and 1.0 on the kernel."""
    import warnings

    from cclab.errors import ScenarioWarning
    from cclab.scenario import HEADER_BYTES

    links = ir.get("links") or []
    if len(links) != 1 or "jitter_ns" in (ir.get("host") or {}):
        return
    packet = int(ir["mss"]) + HEADER_BYTES
    for link in links:
        if (link.get("qdisc") or {}).get("kind") != "droptail":
            continue
        buffer = link.get("buffer") or {}
        held = buffer["packets"] if buffer.get("packets") is not None else int(buffer.get("bytes") or 0) // packet
        unpaced = sorted({f["cca"] for f in ir.get("flows", [])
                          if link.get("name") in f.get("path", []) and not str(f["cca"]).startswith("bbr")})
        if not 2 <= held < FEW_PACKETS or not unpaced:
            continue
        from cclab.resolve import link_field

        warnings.warn(ScenarioWarning(
            f"{link_field(ir, link)}.buffer: holds {held} full-size packets of {packet} B, "
            f"crossed by unpaced flows ({', '.join(unpaced)}) on punctual hosts: on a drop-tail buffer this small "
            "the result depends on the hosts' timing, which punctual hosts leave out (20 Mbit/s × 40 ms, 2 packets, "
            "CUBIC: 15.6 Mbit/s punctual, 1.9 with the jitter below, 1.0 on Linux); add [host] jitter = "
            "{ median = \"2.3us\", p99 = \"14us\" }, a Linux host's measured timing (docs/validation.md, "
            "\"Buffers of a few packets\")"),
            stacklevel=2)  # fmt: skip
