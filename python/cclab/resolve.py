"""Resolution: a validated :class:`~cclab.scenario.Scenario` → the explicit IR of ``docs/ir.md``.

The IR has integer units only (ns, bytes, bit/s), no defaults and no flow
groups; both backends consume nothing else. Resolution also performs every
check that relates several fields (each field alone was checked when the
scenario was built):

* ``sample_interval`` ≤ ``duration`` and divides it (samples are taken at its multiples only, so
  any rest of the run would go unrecorded); ``measure.from`` < ``measure.to`` ≤ ``duration``, both
  multiples of ``sample_interval``, and the window holds a sample;
* schedule entries happen before the end of the run;
* the buffer holds at least one full packet (``mss`` + 52 header bytes);
* every flow (each staggered one too) starts before the end of the run;
  ``stop`` is after its start and not after the end of the run (a flow that
  would stop later should leave ``stop`` out);
* the topology: every ``path``/``ack_path`` names links of the scenario, is
  not empty, has no link twice and is connected (each link starts at the node
  the previous one goes to); an ``ack_path`` leads from the node where the
  data path ends back to the node where it starts (the sender); ``path`` is
  required when there are several links; a link no flow crosses is a
  :class:`~cclab.errors.ScenarioWarning`;
* ``rtt`` ≥ the propagation delay of the flow's links at 0 s (its path, plus
  its ACK path); without ``rtt`` (named links only) the flow's RTT is that
  round trip (twice the path's delay when ACKs return uncongested). A
  schedule may later change any link's delay by any factor;
* ``rwnd`` ≥ one segment, and no segment lost to the window scale's rounding (:func:`_check_rwnd_units`); on a trace link a packet fits one 1500-byte opportunity;
* the queue discipline's parameters that depend on the link (RED's thresholds
  default to fractions of the buffer and must be ordered), see :mod:`cclab.qdisc`;
* a policer's bucket holds at least one full packet (else it drops every packet).

BDP buffers (``"1.75bdp"``) use the link's rate at 0 s (a trace's mean
rate) and the minimum RTT of the flows that cross the link (data or ACKs; of
all flows if none does): ``bytes = ⌈X · rate · rtt / 8⌉``, computed exactly
(rationals, no floats).

Flow start offsets (``start_offset``, default one base RTT): every flow
starts a random offset after its configured start, drawn per trial from the
scenario's seed (:func:`start_offset_ns`), so that the trials of a sweep
point differ as they do on a testbed; ``start_ns`` in the IR is the explicit
start, offset included, and ``start_offset_ns`` the offset (left out when 0:
a scenario with ``start_offset = 0`` resolves to exactly the IR it did
before offsets existed).

The record's per-flow interval (``record.flows``, :func:`flows_interval_ns`):
every sample unless the run would hold more than :data:`AUTO_FLOW_ROWS`
per-flow rows, then the smallest of 2, 5, 10, 20, 50, … × ``sample_interval``
that stays below it. The IR carries ``record`` only when it differs from
"every flow at every sample, stored".

The end hosts' TCP settings (``host``) are part of the IR so that both
backends use the same: Linux's default initial buffers (``tcp_rmem`` 128 KiB,
``tcp_wmem`` 16 KiB), a maximum of max(64 MiB, 4 × BDP + buffer, (BDP +
buffer) / Linux's window-to-memory ratio) with the BDP from the highest rate and the longest
RTT (so no socket buffer ever limits a flow), and the receive memory of one
full segment on the kernel backend's TUN device (``rcv_truesize``, measured:
2304 bytes at the default MSS; :func:`rcv_truesize`).
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from decimal import Decimal
from fractions import Fraction
from collections.abc import Mapping
from typing import Any

from . import qdisc as qdiscs
from . import units
from .errors import ScenarioError, ScenarioWarning
from .scenario import DEFAULT_START_OFFSET, ONE_LINK_NODES, HEADER_BYTES, Cca, Link, LossModel, Scenario
from .traces import BYTES_PER_OPPORTUNITY, load_trace

__all__ = ["IR_VERSION", "resolve", "ir_hash", "canonical_json", "buffer_bytes_for_bdp", "host_ir", "migrate_ir",
           "start_offset_ns", "flows_interval_ns", "AUTO_FLOW_ROWS", "describe_record", "describe_start_offsets",
           "link_field"]

#: "auto" per-flow record interval: at most this many per-flow rows (flows × samples) at the sample interval;
#: above it the per-flow series are coarsened (docs/record.md "Records at scale").
AUTO_FLOW_ROWS = 2_000_000


def start_offset_ns(seed: int, flow_id: int, window_ns: int) -> int:
    """Flow ``flow_id``'s random start offset in ``[0, window_ns)`` ns for the run's ``seed``.

    Uniform, from the first 64 bits of SHA-256 of ``"cclab start offset <seed> <flow id>"``
    scaled exactly (``⌊x · window / 2^64⌋``): the same on every machine and
    Python version, independent for every flow and seed, and unaffected by the
    number of flows or by any other random stream of the run.
    """
    if window_ns <= 0:
        return 0
    digest = hashlib.sha256(f"cclab start offset {int(seed)} {int(flow_id)}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") * int(window_ns)) >> 64


def flows_interval_ns(n_flows: int, duration_ns: int, sample_ns: int, window: tuple[int, int] = (0, 0)) -> int:
    """The "auto" per-flow record interval: ``sample_ns`` unless the run would
    have more than :data:`AUTO_FLOW_ROWS` per-flow rows, else the smallest of
    2, 5, 10, 20, 50, 100, … × ``sample_ns`` that keeps them at or below it and
    divides both ends of the measure ``window`` (ns), so that the per-flow
    samples cover the window exactly (any multiple if none does)."""
    ladder = [m * 10**e for e in range(0, 19) for m in (1, 2, 5)]
    fits = [k for k in ladder if k * sample_ns <= duration_ns]
    for exact in (True, False):
        for k in fits:
            interval = k * sample_ns
            if exact and any(w % interval for w in window):
                continue
            if n_flows * (duration_ns // interval) <= AUTO_FLOW_ROWS:
                return interval
    return fits[-1] * sample_ns


#: Version of the IR produced (``ir_version``); must match ``IR_VERSION`` in crates/cclab-sim/src/scenario.rs.
#: 1 → 2: ``host``; 2 → 3: ``link.qdisc`` replaces the free string ``link.aqm``, ``flows[].ecn``;
#: within 3, optional fields absent when unused (so the IRs, their hashes and the sweeps stored
#: before keep theirs): ``flows[].start_offset_ns``, ``record``, ``link.policer``;
#: 3 → 4: topologies — ``links`` (named, with ``from``/``to`` nodes) replaces ``link``; flows get
#: ``path``, ``ack_path``, ``ack_every`` and ``sack``.
IR_VERSION = 4

#: The one-link form as IR version 4 spells it (what a v3 IR's ``link`` becomes).
_ONE_LINK = {"name": "link", "from": "left", "to": "right"}
#: What a v3 flow becomes in version 4: the one link, an uncongested return, Linux's receiver.
_V3_FLOW = {"path": ["link"], "ack_path": [], "ack_every": 2, "sack": True}


def migrate_ir(ir: dict[str, Any]) -> dict[str, Any]:
    """An IR of an earlier version (a stored record's ``resolved.json``) in
    the current form, as far as the change is mechanical.

    * v1/v2 → v3: ``link.aqm`` (which only ever allowed ``"droptail"``)
      becomes ``link.qdisc = {"kind": "droptail"}``; flows get ``ecn: false``.
      (v1 → v2 added ``host``, which depends on the scenario: a v1 IR keeps
      its version for that part and the engine refuses to run it.)
    * v3 → v4: ``link`` becomes ``links = [{"name": "link", "from": "left",
      "to": "right", …}]``; every flow gets ``path = ["link"]``, ``ack_path =
      []`` (the uncongested return), ``ack_every = 2`` and ``sack = true`` —
      the same topology and the same computation (tests/test_golden.py).

    The input is not modified; a current IR is returned unchanged.
    """
    version = ir.get("ir_version")
    if not isinstance(version, int) or version >= IR_VERSION:
        return ir
    out = json.loads(json.dumps(ir))
    if version < 3:
        link = out.get("link", {})
        if "aqm" in link:
            aqm = link.pop("aqm")
            if aqm != "droptail":
                raise ValueError(f"ir_version {version}: link.aqm {aqm!r} has no qdisc equivalent "
                                 "(only 'droptail' existed)")
            link["qdisc"] = {"kind": "droptail"}
        for flow in out.get("flows", []):
            flow.setdefault("ecn", False)
        if "host" not in out:
            return out  # v1: the host section cannot be made up; the engine refuses it
    if "link" in out:
        out["links"] = [{**_ONE_LINK, **out.pop("link")}]
    for flow in out.get("flows", []):
        for key, value in _V3_FLOW.items():
            flow.setdefault(key, json.loads(json.dumps(value)))
    out["ir_version"] = IR_VERSION
    return out


def link_field(ir: Mapping[str, Any], link: Mapping[str, Any]) -> str:
    """Where a link of the IR ``ir`` was written in the scenario: ``link`` for the one-link form,
    ``links.NAME`` for named links (the prefix of error messages about it)."""
    links = ir.get("links") or []
    if len(links) == 1 and all(link.get(k) == v for k, v in _ONE_LINK.items()):
        return "link"
    return f"links.{link.get('name')}"


def _as_v3(ir: dict[str, Any]) -> dict[str, Any] | None:
    """The version-3 form of a current IR that version 3 could express (one link named ``link`` from
    ``left`` to ``right``, every flow on it with an uncongested return and Linux's receiver), else None.
    Exactly the inverse of :func:`migrate_ir` on that set."""
    if ir.get("ir_version") != IR_VERSION:
        return None
    links = ir.get("links")
    if not isinstance(links, list) or len(links) != 1:
        return None
    link = links[0]
    if any(link.get(k) != v for k, v in _ONE_LINK.items()):
        return None
    flows = ir.get("flows", [])
    if any(any(f.get(k) != v for k, v in _V3_FLOW.items()) for f in flows):
        return None
    out = {k: v for k, v in ir.items() if k != "links"}
    out["ir_version"] = 3
    out["link"] = {k: v for k, v in link.items() if k not in _ONE_LINK}
    out["flows"] = [{k: v for k, v in f.items() if k not in _V3_FLOW} for f in flows]
    return out

#: net.ipv4.tcp_rmem / tcp_wmem min and default (Linux's defaults; the default is the initial buffer).
TCP_RMEM_MIN_DEFAULT = (4096, 131072)
TCP_WMEM_MIN_DEFAULT = (4096, 16384)
#: The socket-buffer maximum never goes below this (Linux 6.18's tcp_rmem max is 32 MiB).
SOCKET_BUFFER_FLOOR = 64 << 20
#: skb->truesize of a full 1448-byte segment received on the kernel backend's TUN device
#: (sock_diag SKMEMINFO: 11 520 bytes of receive memory for 5 held segments).
RCV_TRUESIZE = 2304
#: The MSS up to which a received segment's truesize is :data:`RCV_TRUESIZE` (:func:`rcv_truesize`).
RCV_TRUESIZE_MAX_MSS = 1612


def rcv_truesize(mss: int, header_bytes: int = 52) -> int:
    """skb->truesize of one full segment received on the kernel backend's TUN device: the measured
    :data:`RCV_TRUESIZE` up to an MSS of :data:`RCV_TRUESIZE_MAX_MSS`; above (jumbo frames), the size
    Linux allocates there: ``tun_get_user`` puts the whole packet in the skb's head (no vnet header),
    ``alloc_skb`` asks kmalloc for NET_SKB_PAD (64) + the packet, 64-byte aligned, plus the 320-byte
    ``skb_shared_info``, kmalloc rounds that up to its next size (powers of two here; the page
    allocator's above 8 KiB), and ``SKB_TRUESIZE`` adds the 256 bytes of ``struct sk_buff``. The same
    rule gives the measured 2 304 bytes at 1 448 and every MSS from 589 to 1 612; below 589 it would
    give 1 280 bytes, and cclab keeps the measured value there (the IR of those scenarios
    predates this rule)."""
    if mss <= RCV_TRUESIZE_MAX_MSS:
        return RCV_TRUESIZE
    head = -(-(64 + mss + header_bytes) // 64) * 64 + 320
    return (1 << (head - 1).bit_length()) + 256


def host_ir(max_rate_bps: float, max_rtt_ns: int, buffer_bytes: int, mss: int = 1448,
            header_bytes: int = 52) -> dict[str, Any]:
    """The IR's ``host`` section: Linux's initial socket buffers, the TUN receive truesize, and a maximum
    of max(64 MiB, 4 × BDP + buffer, (BDP + buffer) / ratio) with the BDP of the highest rate and the
    longest RTT. The last term is what the receive window needs to cover the path and a full queue at
    Linux's window-to-memory ratio (``tcp_win_from_space`` with ``scaling_ratio`` = ⌊256 · MSS /
    truesize⌋ / 256: 160/256 at 1 448 bytes); it exceeds the second only for buffers above ~4 BDP."""
    truesize = rcv_truesize(mss, header_bytes)
    bdp = int(4 * max_rate_bps * max_rtt_ns / 8e9) // 4
    ratio = (mss << 8) // truesize  # tp->scaling_ratio (tcp_measure_rcv_mss), in 1/256: 160 at 1448 / 2304
    buffer_max = max(SOCKET_BUFFER_FLOOR, int(4 * max_rate_bps * max_rtt_ns / 8e9) + int(buffer_bytes),
                     -(-(bdp + int(buffer_bytes)) * 256 // ratio))
    return {
        "tcp_rmem": [*TCP_RMEM_MIN_DEFAULT, buffer_max],
        "tcp_wmem": [*TCP_WMEM_MIN_DEFAULT, buffer_max],
        "rcv_truesize": truesize,
    }


def window_scale(rmem_max: int) -> int:
    """The receiver's window scale (RFC 7323 §2.2) for a socket-buffer maximum of ``rmem_max``:
    Linux's ``tcp_select_initial_window``, ilog2(max(tcp_rmem[2], net.core.rmem_max)) − 15 within
    [0, 14]: 11 with the 64 MiB floor (``net.core.rmem_max``, 208 KiB by default, is the smaller; a
    machine that raised it above ``tcp_rmem[2]`` scales by more)."""
    return max(0, min(14, rmem_max.bit_length() - 1 - 15))


def _check_rwnd_units(scenario: Scenario, host: dict[str, Any]) -> None:
    """A window on the wire counts in 2^(window scale) bytes (2048 with the default buffers), and the
    kernel backend's emulator writes a flow's ``rwnd`` there rounded down to that unit. Where the
    rounding would take full segments away (a sender sends whole segments: ⌊window / MSS⌋ of them,
    on both backends), the flow would run with a window the record does not state: refused, with
    the nearest values that survive it."""
    scale = window_scale(int(host["tcp_rmem"][2]))
    unit = 1 << scale
    mss = scenario.mss
    for g, group in enumerate(scenario.flows):
        if group.rwnd is None:
            continue
        rwnd = group.rwnd.bytes
        wire = max(rwnd // unit, 1) * unit  # cclab-link rwnd.rs: at least one unit
        if wire // mss == rwnd // mss:
            continue

        def segs(n: int) -> str:
            return f"{n} segment{'' if n == 1 else 's'}"

        near = [f"{x}B ({segs(x // mss)})" for x in (wire, wire + unit) if x // mss > 0]
        raise ScenarioError(f"flows[{g}].rwnd", group.rwnd,
                            f"{group.rwnd!r} ({segs(rwnd // mss)} of {mss} bytes) would lose segments on "
                            f"the wire: a window counts in {unit}-byte units there (window scale {scale}, RFC 7323 "
                            f"§2.2), and {wire} bytes hold {wire // mss}",
                            f"expected a value whose full segments survive the rounding, e.g. {' or '.join(near)}")


def canonical_json(ir: dict[str, Any]) -> str:
    """The IR as canonical JSON: sorted keys, no whitespace, no NaN/inf."""
    return json.dumps(ir, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def ir_hash(ir: dict[str, Any]) -> str:
    """SHA-256 (hex) of the IR's canonical JSON — the content address of a run's input.

    * The trace file's *path* (``capacity.path`` of a link) is left out: it is
      provenance only (the trace's content is in the IR as ``opportunities_ns``), and
      leaving it out keeps the hash identical on machines where cclab is installed
      in another directory.
    * An IR that version 3 could express (one link, an uncongested return,
      Linux's receiver — every scenario written before topologies) is hashed in
      its version-3 form, and a stored v3 IR as it is: the same scenario keeps
      the content address it had, so sweeps stored before version 4 resume
      without running anything again (a run id is this hash with the backend
      and engine version, :func:`cclab.store.run_id`).
    """
    version = ir.get("ir_version")
    if isinstance(version, int) and version < IR_VERSION:
        ir = migrate_ir(ir)
    ir = _as_v3(ir) or ir
    if "link" in ir:
        capacity = ir["link"].get("capacity", {})
        if "path" in capacity:
            ir = {**ir, "link": {**ir["link"], "capacity": {k: v for k, v in capacity.items() if k != "path"}}}
    else:
        ir = {**ir, "links": [{**link, "capacity": {k: v for k, v in link.get("capacity", {}).items() if k != "path"}}
                              for link in ir.get("links", [])]}
    return hashlib.sha256(canonical_json(ir).encode("utf-8")).hexdigest()


def buffer_bytes_for_bdp(multiple: Decimal | float | str, rate_bps: Fraction | int, rtt_ns: int) -> int:
    """⌈multiple · rate · rtt / 8⌉ bytes, exactly (rate in bit/s, rtt in ns)."""
    exact = Fraction(Decimal(str(multiple))) * Fraction(rate_bps) * rtt_ns / (8 * 10**9)
    return math.ceil(exact)


def _loss_ir(loss: Any) -> dict[str, Any]:
    """A validated ``loss`` (a float, a :class:`~cclab.units.Percent` or a :class:`LossModel`) as IR."""
    if isinstance(loss, LossModel):
        if loss.model == "bernoulli":
            return {"kind": "bernoulli", "p": float(loss.p)}
        return {
            "kind": "gilbert_elliott",
            "p": float(loss.p),
            "r": float(loss.r),
            "h": 0.0 if loss.h is None else float(loss.h),
            "k": 1.0 if loss.k is None else float(loss.k),
        }
    return {"kind": "bernoulli", "p": loss.p if isinstance(loss, units.Percent) else float(loss)}


def _cca(cca: str | Cca) -> tuple[str, dict[str, float]]:
    """The algorithm and its parameters (checked against :mod:`cclab.cca_params` when the scenario was built)."""
    if isinstance(cca, str):
        return cca, {}
    return cca.name, {key: cca.params[key] for key in sorted(cca.params)}


def _rate(value: units.Rate, field: str) -> int:
    rate = value.bps
    if rate > MAX_RATE_BPS:
        raise ScenarioError(field, value, f"{value!r} is above the simulator's highest rate",
                            "expected at most 1Tbps (the clock ticks in ns: a 1500-byte packet takes 12 ns at 1 Tbps)")
    return rate


def resolve(scenario: Scenario) -> dict[str, Any]:
    """Resolve ``scenario`` into the IR dict of docs/ir.md (raises :class:`ScenarioError`).

    Every value was parsed when the scenario was validated (typed values of
    :mod:`cclab.units`); this only relates them and fills in what is derived.
    """
    fmt_d = units.format_duration
    duration = scenario.duration.ns
    within_run = f"expected a time before the end of the run (duration = {scenario.duration!r})"

    sample = scenario.sample_interval.ns
    if sample > duration:
        raise ScenarioError("sample_interval", scenario.sample_interval,
                            f"{scenario.sample_interval!r} is longer than the run",
                            f"expected at most the duration ({scenario.duration!r})")
    if duration % sample:
        # Samples are taken at k · sample_interval only: the rest of the run would be simulated but
        # never recorded, while the summary's window (and each flow's active time) ran to the duration.
        last = duration // sample * sample
        raise ScenarioError("sample_interval", scenario.sample_interval,
                            f"{scenario.sample_interval!r} does not divide the duration ({scenario.duration!r}): "
                            f"the last sample would be at {_exact_duration(last)} and the {_exact_duration(duration - last)} "
                            "after it never recorded",
                            f"expected a sample_interval that divides the duration, or a duration that is a "
                            f"multiple of it (e.g. {_exact_duration(last)!r} or {_exact_duration(last + sample)!r})")

    measure_from = scenario.measure.from_.ns
    measure_to = duration
    if scenario.measure.to is not None:
        measure_to = scenario.measure.to.ns
        if measure_to > duration:
            raise ScenarioError("measure.to", scenario.measure.to,
                                f"{scenario.measure.to!r} is after the end of the run",
                                f"expected at most the duration ({scenario.duration!r})")
    if measure_from >= measure_to:
        shown_to = scenario.measure.to if scenario.measure.to is not None else scenario.duration
        raise ScenarioError("measure.from", scenario.measure.from_,
                            f"{scenario.measure.from_!r} is not before the end of the window ({shown_to!r})",
                            "expected measure.from < measure.to (default: the duration)")
    # Samples are taken at k · sample_interval (k = 1 … ⌊duration / sample_interval⌋); the window
    # (from, to] must hold at least one, or every summary over it would be empty (goodput 0).
    first_k, last_k = measure_from // sample + 1, min(duration // sample, measure_to // sample)
    if first_k > last_k:
        shown_to = scenario.measure.to if scenario.measure.to is not None else scenario.duration
        near = [fmt_d(k * sample) for k in (first_k - 1, first_k) if 1 <= k <= duration // sample]
        raise ScenarioError("measure", {"from": scenario.measure.from_, "to": shown_to},
                            f"the window from {scenario.measure.from_!r} to {shown_to!r} holds no sample "
                            f"(samples every {scenario.sample_interval!r}"
                            + (f", nearest at {' and '.join(near)})" if near else ")"),
                            "expected a window (measure.from, measure.to] that contains at least one sample time "
                            "k × sample_interval ≤ duration: widen the window or shorten sample_interval")
    # On the sample grid, or the summary would mix two windows: its rates and counts come from the
    # samples (each covers the interval before it), its per-packet distributions and each flow's
    # active time from the exact window.
    for name, given, ns in (("measure.from", scenario.measure.from_, measure_from),
                            ("measure.to", scenario.measure.to, measure_to)):
        if ns % sample:
            below = ns // sample * sample
            raise ScenarioError(name, given, f"{given!r} is not a multiple of sample_interval "
                                f"({scenario.sample_interval!r}): the summary's rates and counts come from samples "
                                f"at its multiples, its delay distributions and active times use {given!r} exactly",
                                f"expected a multiple of the sample interval (e.g. {_exact_duration(below)!r} or "
                                f"{_exact_duration(below + sample)!r})")  # fmt: skip

    mss = scenario.mss
    packet = mss + HEADER_BYTES
    one_link = scenario.links is None
    topology = scenario.topology
    names = list(topology)
    nodes = {name: (ONE_LINK_NODES if one_link else (link.from_, link.to))  # type: ignore[attr-defined]
             for name, link in topology.items()}
    prefix = {name: "link" if one_link else f"links.{name}" for name in names}
    resolved = {name: _link_ir(link, prefix[name], duration, within_run, mss, packet, scenario)
                for name, link in topology.items()}

    # Flows: groups expanded, ids sequential over all groups; each start moved by its random offset.
    offset_text = scenario.start_offset if scenario.start_offset is not None else DEFAULT_START_OFFSET
    offset_kind, offset_amount = units.parse_start_offset(offset_text, "start_offset")
    flows: list[dict[str, Any]] = []
    for g, group in enumerate(scenario.flows):
        where = f"flows[{g}]"
        cca, cca_params = _cca(group.cca)
        path, ack_path = _paths(group, where, names, nodes)
        fwd = sum(resolved[name].delay for name in path)
        back = sum(resolved[name].delay for name in ack_path)
        rtt = _flow_rtt(group, where, path, ack_path, fwd, back, resolved)
        start = group.start.ns
        stagger = group.stagger.ns
        stop = None if group.stop is None else group.stop.ns
        nbytes = None if group.bytes is None else group.bytes.bytes
        rwnd = None if group.rwnd is None else group.rwnd.bytes
        if rwnd is not None and rwnd < mss:
            raise ScenarioError(f"{where}.rwnd", group.rwnd, f"{group.rwnd!r} is less than one segment",
                                f"expected at least mss = {mss} bytes")
        if stop is not None and stop > duration:
            raise ScenarioError(f"{where}.stop", group.stop, f"{group.stop!r} is after the end of the run",
                                f"expected a time after start and at most the duration ({scenario.duration!r}); "
                                "leave stop out for a flow that runs to the end")
        for k in range(group.count):
            nominal = start + k * stagger
            if nominal >= duration:
                if k == 0:
                    raise ScenarioError(f"{where}.start", group.start,
                                        f"{group.start!r} is not before the end of the run", within_run)
                raise ScenarioError(f"{where}.stagger", group.stagger,
                                    f"flow {k} of this group would start at {fmt_d(nominal)}, "
                                    f"not before the end of the run ({scenario.duration!r})",
                                    "expected start + (count − 1) × stagger < duration")
            if stop is not None and stop <= nominal:
                raise ScenarioError(f"{where}.stop", group.stop,
                                    f"{group.stop!r} is not after the start of flow {k} of this group "
                                    f"({fmt_d(nominal)})",
                                    f"expected a time after start + (count − 1) × stagger and at most the duration "
                                    f"({scenario.duration!r})")
            window = math.floor(offset_amount * rtt) if offset_kind == "rtt" else int(offset_amount)
            offset = start_offset_ns(scenario.seed, len(flows), window)
            flow_start = nominal + offset
            if flow_start >= duration or (stop is not None and stop <= flow_start):
                limit = "the end of the run" if flow_start >= duration else f"its stop ({group.stop!r})"
                raise ScenarioError("start_offset", offset_text,
                                    f"flow {k} of flows[{g}] would start at {fmt_d(nominal)} + a random offset of "
                                    f"{fmt_d(offset)} = {fmt_d(flow_start)}, not before {limit}",
                                    "expected a smaller window (e.g. \"1rtt\" or \"5ms\"), 0 for none, "
                                    "or an earlier start")
            flow = {
                "id": len(flows),
                "group": g,
                "cca": cca,
                "cca_params": dict(cca_params),
                "rtt_ns": rtt,
                "start_ns": flow_start,
                "stop_ns": stop,
                "bytes": nbytes,
                "rwnd_bytes": rwnd,
                "ecn": bool(group.ecn),
                "path": list(path),
                "ack_path": list(ack_path),
                "ack_every": group.ack_every_segments,
                "sack": bool(group.sack),
            }
            if offset:
                flow["start_offset_ns"] = offset
            flows.append(flow)

    # Buffers (a BDP from the flows that cross each link) and queue disciplines.
    links_ir: list[dict[str, Any]] = []
    for name in names:
        link, r, field = topology[name], resolved[name], prefix[name]
        crossing = [f["rtt_ns"] for f in flows if name in f["path"] or name in f["ack_path"]]
        if not crossing and not one_link:
            warnings.warn(ScenarioWarning(f"{field}: no flow crosses this link (no path or ack_path names it); "
                                          "it carries nothing"), stacklevel=2)
        buffer = _buffer_ir(link, field, packet, r, min(crossing or [f["rtt_ns"] for f in flows]),
                            "min RTT of the flows crossing it" if not one_link else "min flow RTT")
        qdisc = qdiscs.qdisc_ir(
            link.qdisc_name, link.qdisc_params, field=f"{field}.qdisc", packet_bytes=packet,
            limit_bytes=buffer["bytes"] if buffer["bytes"] is not None else buffer["packets"] * packet,
            link_rate_bps=int(r.initial_rate),
        )  # fmt: skip
        policer = None  # absent when off: scenarios without a policer keep their IR and its hash
        if link.policer is not None:
            burst = link.policer.burst.bytes
            if burst < packet:
                raise ScenarioError(f"{field}.policer.burst", link.policer.burst,
                                    f"{link.policer.burst!r} is less than one packet ({burst} bytes): "
                                    "the policer would drop every packet",
                                    f"expected at least one full packet: mss + {HEADER_BYTES} = {packet} bytes")
            policer = {"rate_bps": _rate(link.policer.rate, f"{field}.policer.rate"), "burst_bytes": burst}
        links_ir.append({
            "name": name,
            "from": nodes[name][0],
            "to": nodes[name][1],
            "capacity": r.capacity,
            "delay_ns": r.delay,
            "buffer": buffer,
            "loss": _loss_ir(link.loss),
            "schedule": r.schedule,
            "qdisc": qdisc,
            **({"policer": policer} if policer else {}),
        })

    rates = {name: max([float(r.initial_rate)] + [float(c["rate_bps"]) for c in r.schedule if c.get("rate_bps")])
             for name, r in resolved.items()}
    fastest = max(names, key=lambda n: rates[n])
    max_rate = rates[fastest]
    max_rtt = max(flow["rtt_ns"] for flow in flows)
    # a buffer given in packets holds that many full-sized packets
    buffered = sum(link["buffer"]["bytes"] or (link["buffer"]["packets"] or 0) * (mss + HEADER_BYTES)
                   for link in links_ir)
    host = host_ir(max_rate, max_rtt, buffered, mss, HEADER_BYTES)
    _check_rwnd_units(scenario, host)
    if host["tcp_rmem"][2] > MAX_SOCKET_BUFFER:
        fast = topology[fastest]
        raise ScenarioError(f"{prefix[fastest]}.rate" if fast.rate is not None else f"{prefix[fastest]}.trace",
                            fast.rate or fast.trace,
                            f"the highest rate {units.format_rate(max_rate)} with the longest RTT {fmt_d(max_rtt)} "
                            f"needs socket buffers of {host['tcp_rmem'][2]:,} bytes (4 × BDP + buffer, more for a buffer "
                            "above ~4 BDP: docs/ir.md host), "
                            "more than the 2 GiB a socket buffer can be (Linux's tcp_rmem is a C int)",
                            "expected socket buffers below 2 GiB: a lower rate, a shorter RTT or less buffer "
                            "(e.g. 10 Gbps with a 300 ms RTT and a 1-BDP buffer)")
    jitter, jitter_p = scenario.host.jitter_table
    if jitter and (len(links_ir) > 1 or any(f["ack_path"] for f in flows)):
        raise ScenarioError("host.jitter", scenario.host.jitter, "host jitter is modelled on one-link topologies with "
                            "an uncongested return only", "remove [host] jitter, or use one link without ack_path")
    if jitter:  # absent when off: scenarios without jitter keep their IR and its hash
        host["jitter_ns"] = jitter
    if jitter_p:  # a histogram's edges' probabilities (absent for evenly spaced quantiles)
        host["jitter_p"] = jitter_p
    pauses = scenario.host.pauses_ir
    if pauses and (len(links_ir) > 1 or any(f["ack_path"] for f in flows)):
        raise ScenarioError("host.pauses", scenario.host.pauses, "host pauses are modelled on one-link topologies with "
                            "an uncongested return only", "remove [host] pauses, or use one link without ack_path")
    if pauses:  # absent when off, like jitter
        host["pauses"] = pauses
    read_delay, read_delay_p = scenario.host.read_delay_table
    if read_delay:  # absent when off, like jitter
        host["read_delay_ns"] = read_delay
    if read_delay_p:
        host["read_delay_p"] = read_delay_p
    record = _record_ir(scenario, len(flows), duration, sample, (measure_from, measure_to))
    ir = {
        "ir_version": IR_VERSION,
        "name": scenario.name,
        "duration_ns": duration,
        "seed": scenario.seed,
        "sample_interval_ns": sample,
        "measure": {"from_ns": measure_from, "to_ns": measure_to},
        "mss": mss,
        "header_bytes": HEADER_BYTES,
        "links": links_ir,
        "flows": flows,
        "host": host,
    }
    if record is not None:
        ir["record"] = record
    return ir


def describe_record(ir: dict[str, Any]) -> str:
    """One line for ``--dry-run``: how the run records its flows."""
    fmt_d = units.format_duration
    n = len(ir["flows"])
    sample = int(ir["sample_interval_ns"])
    rec = ir.get("record") or {}
    interval = int(rec.get("flows_interval_ns") or sample)
    rows = n * (int(ir["duration_ns"]) // interval)
    where = "per-flow series in flows.parquet" if rec.get("flows_stored", True) else \
        "per-flow series for the summary only (record.flows = \"off\": flows.parquet has no rows)"
    why = ""
    if interval != sample:
        full = n * (int(ir["duration_ns"]) // sample)
        why = (f" (coarser than sample_interval {fmt_d(sample)}: {full:,} rows would exceed the automatic "
               f"limit of {AUTO_FLOW_ROWS:,}; set record.flows to choose)") if full > AUTO_FLOW_ROWS else ""
    return f"{where} every {fmt_d(interval)}{why}: {rows:,} rows; the link every {fmt_d(sample)}"


def describe_start_offsets(ir: dict[str, Any]) -> str:
    """One line for ``--dry-run``: the flows' random start offsets of this seed."""
    offsets = [int(f.get("start_offset_ns") or 0) for f in ir["flows"]]
    if not any(offsets):
        return "none (every flow starts exactly at its start time; trials differ only where the seed drives loss or algorithms)"
    fmt_d = units.format_duration
    return (f"drawn from seed {ir['seed']}: {fmt_d(min(offsets))} … {fmt_d(max(offsets))} over {len(offsets)} flow(s) "
            "(each trial draws its own)")


def _record_ir(scenario: Scenario, n_flows: int, duration: int, sample: int,
               window: tuple[int, int]) -> dict[str, Any] | None:
    """The IR's ``record`` (None: every flow at every sample, stored — the IR leaves it out)."""
    choice = scenario.record.flows if scenario.record is not None else "auto"
    ends = ", ".join(units.format_duration(w) for w in window)
    if choice in ("auto", "off"):
        interval = flows_interval_ns(n_flows, duration, sample, window)
        if any(w % interval for w in window):
            # the summary's goodput and shares come from the per-flow cumulative counters at the
            # window's ends: on samples that miss them they would be silently wrong
            raise ScenarioError("record.flows", choice,
                                f"no per-flow interval of at most {AUTO_FLOW_ROWS:,} rows ({n_flows} flows) divides both "
                                f"ends of the measure window ({ends}), and the summary needs samples at both",
                                "expected a measure window whose ends are multiples of a longer interval (e.g. "
                                f"\"{units.format_duration(interval)}\"), or record.flows set to a duration that "
                                "divides them (more rows)")  # fmt: skip
    else:
        interval = units.parse_duration(choice, "record.flows", allow_zero=False)
        if interval % sample or interval > duration:
            raise ScenarioError("record.flows", choice,
                                f"{choice!r} is not a multiple of sample_interval ({scenario.sample_interval!r})"
                                if interval % sample else f"{choice!r} is longer than the run",
                                f"expected \"auto\", \"off\" or a multiple of sample_interval of at most the duration "
                                f"(e.g. \"{units.format_duration(sample * 100)}\")")
        if any(w % interval for w in window):
            fit = math.gcd(*window, interval)
            raise ScenarioError("record.flows", choice,
                                f"{choice!r} does not divide both ends of the measure window ({ends}); the summary's "
                                "goodput and shares need per-flow samples at both",
                                f"expected a duration that divides them (e.g. \"{units.format_duration(fit)}\"), or "
                                "\"auto\"")  # fmt: skip
    stored = choice != "off"
    if interval == sample and stored:
        return None
    return {"flows_interval_ns": interval, "flows_stored": stored}


class _Link:
    """A link's capacity, delay and schedule in IR form, before its buffer (which needs the flows)."""

    def __init__(self, capacity: dict[str, Any], initial_rate: Fraction, rate_words: str, delay: int,
                 schedule: list[dict[str, Any]]) -> None:
        self.capacity, self.initial_rate, self.rate_words = capacity, initial_rate, rate_words
        self.delay, self.schedule = delay, schedule


def _link_ir(link: Link, field: str, duration: int, within_run: str, mss: int, packet: int,
             scenario: Scenario) -> _Link:
    if link.trace is not None:
        trace = load_trace(link.trace, scenario.base_dir)
        if packet > BYTES_PER_OPPORTUNITY:
            raise ScenarioError("mss", mss, f"{mss} + {HEADER_BYTES} header bytes does not fit a trace's "
                                f"{BYTES_PER_OPPORTUNITY}-byte delivery opportunity",
                                f"expected mss ≤ {BYTES_PER_OPPORTUNITY - HEADER_BYTES} on a trace link")
        capacity: dict[str, Any] = {
            "kind": "trace",
            "path": str(trace.path),
            "opportunities_ns": trace.opportunities_ns,
            "period_ns": trace.period_ns,
            "bytes_per_opportunity": BYTES_PER_OPPORTUNITY,
        }
        initial_rate: Fraction = trace.mean_rate
        rate_words = f"the trace's mean rate {units.format_rate(float(initial_rate))}"
    else:
        assert link.rate is not None  # the Link model guarantees rate or trace
        rate_bps = _rate(link.rate, f"{field}.rate")
        capacity = {"kind": "constant", "rate_bps": rate_bps}
        initial_rate = Fraction(rate_bps)
        rate_words = f"{field}.rate {link.rate!r}"
    delay = link.delay.ns
    schedule: list[dict[str, Any]] = []
    for index, entry in enumerate(link.schedule):
        where = f"{field}.schedule[{index}]"
        at = entry.at.ns
        if at >= duration:
            raise ScenarioError(f"{where}.at", entry.at, f"{entry.at!r} is not before the end of the run", within_run)
        schedule.append({
            "at_ns": at,
            "rate_bps": None if entry.rate is None else _rate(entry.rate, f"{where}.rate"),
            "delay_ns": None if entry.delay is None else entry.delay.ns,
            "loss": None if entry.loss is None else _loss_ir(entry.loss),
        })
    return _Link(capacity, initial_rate, rate_words, delay, schedule)


def _paths(group: Any, where: str, names: list[str], nodes: dict[str, tuple[str, str]]) -> tuple[list[str], list[str]]:
    """A flow group's data path and ACK path (names), checked against the topology."""
    listing = f"the scenario's links: {', '.join(names)}"
    if group.path is None:
        if len(names) > 1:
            raise ScenarioError(f"{where}.path", None, "required field missing",
                                f"expected the links its data crosses, in order, e.g. path = {names[:2]!r}; {listing}")
        path = list(names)
    else:
        path = _link_list(group.path, f"{where}.path", names, nodes, listing)
    ack_path: list[str] = []
    if group.ack_path:  # `ack_path = []` is the default written out: an uncongested return
        ack_path = _link_list(group.ack_path, f"{where}.ack_path", names, nodes, listing)
        start, end = nodes[path[0]][0], nodes[path[-1]][1]
        first, last = ack_path[0], ack_path[-1]
        if nodes[first][0] != end:
            raise ScenarioError(f"{where}.ack_path", group.ack_path,
                                f"starts at node {nodes[first][0]!r} (link {first!r}), not at {end!r} where the data "
                                f"path ends (its receiver)", f"expected an ack_path from {end!r} back to {start!r}")
        if nodes[last][1] != start:
            raise ScenarioError(f"{where}.ack_path", group.ack_path,
                                f"does not end at the sender: it ends at node {nodes[last][1]!r} (link {last!r}), "
                                f"the sender is at {start!r} where the data path starts",
                                f"expected an ack_path from {end!r} back to {start!r}")
    return path, ack_path


def _link_list(value: list[str], field: str, names: list[str], nodes: dict[str, tuple[str, str]],
               listing: str) -> list[str]:
    if not value:
        raise ScenarioError(field, value, "[] is empty", "expected at least one link, e.g. path = " + repr(names[:1]))
    for j, name in enumerate(value):
        if name not in nodes:
            raise ScenarioError(f"{field}[{j}]", name, f"{name!r} is not a link of this scenario", listing)
        if name in value[:j]:
            raise ScenarioError(field, value, f"link {name!r} appears twice",
                                "expected each link at most once on a path")
        if j > 0 and nodes[value[j - 1]][1] != nodes[name][0]:
            prev = value[j - 1]
            raise ScenarioError(f"{field}[{j}]", name,
                                f"link {name!r} starts at node {nodes[name][0]!r}, not at {nodes[prev][1]!r} where "
                                f"{prev!r} ends", "expected consecutive links (each from the node the previous one goes to)")
    return list(value)


def _flow_rtt(group: Any, where: str, path: list[str], ack_path: list[str], fwd: int, back: int,
              resolved: dict[str, _Link]) -> int:
    """The flow's base RTT: given, or the round trip of its links (forward + ACK path; twice the forward
    delay with an uncongested return). Never below the links' own propagation delay."""
    fmt_d = units.format_duration
    if group.rtt is None:
        rtt = fwd + back if ack_path else 2 * fwd
        if rtt == 0:
            raise ScenarioError(f"{where}.rtt", None, "required field missing: the links of its path have no delay",
                                'expected e.g. rtt = "25ms"')
        return rtt
    rtt = group.rtt.ns
    if rtt < fwd + back:
        parts = f"{fmt_d(fwd)} over {', '.join(path)}"
        if ack_path:
            parts += f" + {fmt_d(back)} back over {', '.join(ack_path)}"
        raise ScenarioError(f"{where}.rtt", group.rtt,
                            f"{group.rtt!r} is less than the propagation delay of its links at 0 s ({parts})",
                            f"expected rtt ≥ {fmt_d(fwd + back)} (the RTT includes every link's delay on its paths)")
    return rtt


def _exact_duration(ns: int) -> str:
    """``ns`` written exactly, in the unit that reads shortest: ``1.8s``, ``999999us``, ``7ns``."""
    texts = [f"{format((Decimal(ns) / factor).normalize(), 'f')}{unit}"
             for factor, unit in ((10**9, "s"), (10**6, "ms"), (10**3, "us"), (1, "ns"))]
    return min(texts, key=len)


def _buffer_ir(link: Link, field: str, packet: int, r: _Link, min_rtt: int, rtt_words: str) -> dict[str, Any]:
    fmt_d = units.format_duration
    spec = link.buffer.spec
    buffer: dict[str, Any] = {"bytes": None, "packets": None}
    if spec.kind == "packets":
        buffer["packets"] = int(spec.amount)
        return buffer
    if spec.kind == "bdp":
        nbytes_buffer = buffer_bytes_for_bdp(spec.amount, r.initial_rate, min_rtt)
        how = f"{spec.amount} × {r.rate_words} × {rtt_words} {fmt_d(min_rtt)} = {nbytes_buffer} bytes"
    else:
        nbytes_buffer = int(spec.amount)
        how = f"{nbytes_buffer} bytes"
    if nbytes_buffer < packet:
        raise ScenarioError(f"{field}.buffer", link.buffer, f"{link.buffer!r} is less than one packet ({how})",
                            f"expected at least one full packet: mss + {HEADER_BYTES} = {packet} bytes")
    buffer["bytes"] = nbytes_buffer
    return buffer


#: Largest socket buffer (bytes): Linux's tcp_rmem/tcp_wmem sysctls are C ints (the kernel backend
#: could not set more; the simulator models the same host): host.tcp_rmem max < 2 GiB.
MAX_SOCKET_BUFFER = 2**31 - 1
#: Highest link rate (bit/s): the simulator's clock ticks in ns, and at 1 Tbit/s a 1500-byte
#: packet takes 12 ns; beyond it serialization times lose their precision.
MAX_RATE_BPS = 10**12
