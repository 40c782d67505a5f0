"""The parity matrix: every scenario `cclab parity` runs on both backends, as data.

Each :class:`Case` has a scenario (a TOML-shaped dict, exactly what
``cclab run`` would read), the metrics compared on it, the seeds it runs with
(the metric is the mean over seeds on each backend; the simulator runs more of
them where a case has several, :data:`SIM_SEEDS`), why it is in the
matrix, and whether it belongs to the ``--quick`` subset. The quick subset is
made of full-matrix cases, unchanged, so a full run in the same ``--out``
directory reuses the quick run's records.

Metric specs are ``name`` or ``name[of]`` (``of`` = an algorithm or
``flow<id>``); the names are the keys of :data:`cclab.parity.checks.METRICS`.
The tolerances are in :data:`cclab.parity.checks.TOLERANCES` (and
docs/validation.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CASES", "DROPPED", "SIM_HOST", "SIM_HOST_JITTER", "SIM_HOST_READ_DELAY", "Case", "all_cases", "estimated_wall_s", "quick_cases"]

MEASURE_FROM = "10s"
#: A shallow buffer is 0.1 BDP, or 100 KB where 0.1 BDP would be larger (high-BDP paths).
SHALLOW_CAP_BYTES = 100_000
#: From this rate up, a loss-based flow on a shallow buffer is compared as means over three kernel
#: seeds: its goodput on the kernel varies from run to run far beyond the 5 % tolerance — measured
#: on this project's machine, ``cubic-500M-50ms-100KB`` 52.6–272 Mbit/s, ``reno-500M-10ms-0.1bdp``
#: 173–257, ``cubic-100M-10ms-0.1bdp`` 54.2–65.7 — so one run is one draw, not the stack's value
#: (docs/validation.md §4, "The receiving application's read latency").
SHALLOW_SEEDED_FROM_MBPS = 100
#: Seconds a kernel run costs beyond its duration (namespaces, emulator start, t0 margin
#: of 0.3 s + 4 RTT, record writing), measured on this machine: 2–3.5 s.
KERNEL_OVERHEAD_S = 3.0
#: Seconds per simulated second, rough, for the estimate (cclab bench: 0.1–1 s per 60 s run).
SIM_S_PER_S = 0.015
#: The host timing noise the simulator side is given (``[host] jitter``, cclab.jitter): the
#: kernel backend's receiving host answers data with an ACK in p50 2.3 µs, p99 14 µs (a packet
#: capture inside its namespace on this project's 2-vCPU machine, Linux 6.18). A punctual
#: simulator locks the ACK clock and the drop-tail queue into one phase (Floyd & Jacobson,
#: "On traffic phase effects in packet-switched gateways", 1992); the hosts' own noise, far
#: below the emulator's, releases it. ``cclab parity --punctual`` compares the punctual
#: simulator instead. Why, and what it changes: docs/validation.md §4, "The simulator's hosts".
SIM_HOST_JITTER: dict[str, str] = {"median": "2.3us", "p99": "14us"}


def _read_latency() -> dict[str, Any]:
    import json
    from importlib.resources import files

    doc = json.loads(files("cclab").joinpath("data", "read_latency.json").read_text(encoding="utf-8"))
    return {"histogram": {"bin": doc["bin"], "counts": doc["counts"]}}


#: The receiving application's read latency the simulator side is given (``[host] read_delay``):
#: the kernel backend's receiver, measured in four runs on this project's 2-vCPU machine
#: (cclab/data/read_latency.json: 809 764 reads, p50 20–30 µs, p99 110–120 µs, 70 in a million
#: over 1 ms). Linux holds the ACK while data waits unread and ACKs everything after the read, so
#: the read latency makes the kernel's stretch ACKs and the bursts that answer them; on buffers far
#: below the BDP at 100–500 Mbit/s those bursts set the loss rate (docs/validation.md §4, "The
#: receiving application's read latency"). Given as the measured histogram: its rare long reads
#: decide the result, and an evenly spaced quantile table would draw them twice as often.
SIM_HOST_READ_DELAY: dict[str, Any] = _read_latency()
#: The simulator side's ``[host]`` in ``cclab parity`` (``--punctual``: none).
SIM_HOST: dict[str, Any] = {"jitter": SIM_HOST_JITTER, "read_delay": SIM_HOST_READ_DELAY}
#: Seeds of the simulator side of a case whose outcome depends on the seed (one that runs several
#: kernel seeds): 1…SIM_SEEDS. The backends' seeds do not pair up — the same seed draws other
#: packets for loss and other phases on the two stacks, and the kernel's own randomness (BBR's
#: ProbeBW phase) is not seeded at all — so each side's mean estimates that stack's expected value;
#: the simulator's runs take seconds, so its mean is taken over enough seeds that the comparison's
#: spread is the kernel's alone (docs/validation.md §4, "The metrics").
SIM_SEEDS = 20
#: The most kernel seeds ``cclab parity --kernel-seeds`` runs a case with (each is a whole kernel run).
MAX_KERNEL_SEEDS = 100


@dataclass(frozen=True)
class Case:
    id: str
    family: str
    scenario: dict[str, Any]
    metrics: tuple[str, ...]
    why: str
    seeds: tuple[int, ...] = (1,)
    quick: bool = False
    note: str = ""

    @property
    def duration_s(self) -> float:
        from cclab.units import parse_duration

        return parse_duration(self.scenario["duration"]) / 1e9

    @property
    def sim_seeds(self) -> tuple[int, ...]:
        """The simulator's seeds: the case's own, or 1…:data:`SIM_SEEDS` for a case with several."""
        return tuple(range(1, SIM_SEEDS + 1)) if len(self.seeds) > 1 else self.seeds

    def scenario_for(self, seed: int) -> dict[str, Any]:
        """The scenario dict with ``seed`` set (a fresh copy)."""
        import copy

        s = copy.deepcopy(self.scenario)
        s["seed"] = int(seed)
        return s

    def sim_scenario_for(self, seed: int, host: dict[str, Any] | None) -> dict[str, Any]:
        """The simulator's scenario: :meth:`scenario_for` with ``[host]`` = ``host`` (:data:`SIM_HOST`
        in ``cclab parity``; ``None``: punctual hosts). A case that sets its own ``[host]`` keeps it."""
        import copy

        s = self.scenario_for(seed)
        if host is not None and "host" not in s:
            s["host"] = copy.deepcopy(host)
        return s

    def describe(self) -> str:
        """One line: link, buffer, loss, schedule, flows, duration."""
        sc = self.scenario
        link = sc["link"]
        parts = [f"{link['rate']}", f"buffer {link['buffer']}"]
        if link.get("loss"):
            parts.append(f"loss {float(link['loss']) * 100:g} %")
        for ch in link.get("schedule") or []:
            parts.append(f"→ {ch['rate']} at {ch['at']}")
        qd = link.get("qdisc")
        if qd:
            parts.append(f"qdisc {qd}" if isinstance(qd, str) else f"qdisc {qd['name']}{' (ECN)' if qd.get('ecn') else ''}")
        flows = ", ".join(f"{f.get('count', 1)}×{f['cca']} {f['rtt']}{' ECN' if f.get('ecn') else ''}" for f in sc["flows"])
        text = f"{', '.join(parts)}; {flows}; {sc['duration']}, measure from {sc.get('measure', {}).get('from', '0s')}"
        if len(self.seeds) > 1:
            text += f"; kernel seeds {', '.join(map(str, self.seeds))}, simulator seeds 1–{len(self.sim_seeds)} (means)"
        return text


def _scenario(name: str, *, rate: str, buffer: str, flows: list[dict[str, Any]], duration: str = "30s",
              measure_from: str = MEASURE_FROM, loss: float | None = None,
              schedule: list[dict[str, Any]] | None = None, qdisc: str | dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    link: dict[str, Any] = {"rate": rate, "delay": "0ms", "buffer": buffer}
    if qdisc:
        link["qdisc"] = qdisc
    if loss:
        link["loss"] = loss
    if schedule:
        link["schedule"] = schedule
    return {
        "name": "parity-" + name.replace("/", "-"),
        "duration": duration,
        "seed": 1,
        "sample_interval": "10ms",
        "measure": {"from": measure_from},
        "link": link,
        "flows": flows,
    }


def _bdp_bytes(rate_mbps: float, rtt_ms: float) -> float:
    return rate_mbps * 1e6 * rtt_ms / 1e3 / 8


_BUFFER_WHY = {
    "shallow": "a buffer far below the BDP: the loss-driven regime (loss-based flows back off and leave the link partly "
    "idle; BBR keeps pacing at its bandwidth estimate and loses packets)",
    "0.5bdp": "an under-sized buffer: after a loss, a loss-based flow's backoff (CUBIC β = 0.7, Reno 0.5) drains it and "
    "idles the link; BBR's 2-BDP inflight overflows it",
    "2bdp": "a 2-BDP buffer: full utilisation with a standing queue (BBR's 2-BDP inflight cap fits in pipe + buffer)",
    "8bdp": "a deep buffer (bufferbloat): loss-based flows fill it, BBR bounds its inflight at 2 BDP",
}
_CCA_WHY = {
    "cubic": "CUBIC (tcp_cubic.c, HyStart)",
    "bbr": "BBR v1 (tcp_bbr.c)",
    "reno": "Reno (tcp_cong.c)",
}


def _single_flow_cases() -> list[Case]:
    quick = {
        ("cubic", 100, 50, "2bdp"), ("bbr", 100, 50, "0.5bdp"), ("reno", 20, 10, "2bdp"),
        ("cubic", 500, 10, "2bdp"), ("bbr", 20, 200, "8bdp"),
    }  # fmt: skip
    out = []
    for cca in ("cubic", "bbr", "reno"):
        for rate in (20, 100, 500):
            for rtt in (10, 50, 200):
                for kind in ("shallow", "0.5bdp", "2bdp", "8bdp"):
                    note = ""
                    if kind == "shallow":
                        bdp = _bdp_bytes(rate, rtt)
                        if 0.1 * bdp <= SHALLOW_CAP_BYTES:
                            buffer = "0.1bdp"
                            if 0.1 * bdp < 3000:
                                note = f"0.1 BDP = {0.1 * bdp:.0f} B: the queue holds one full-size packet"
                        else:
                            buffer = "100KB"
                            note = f"0.1 BDP would be {0.1 * bdp / 1e3:.0f} KB; capped at 100 KB ({100e3 / bdp:.3f} BDP)"
                    else:
                        buffer = kind
                    cid = f"single/{cca}-{rate}M-{rtt}ms-{buffer}"
                    metrics = ["goodput", "queue_delay_p50", "queue_delay_p95", "retrans_rate"]
                    if cca == "bbr":
                        metrics.append("state_time")
                    why = f"one {_CCA_WHY[cca]} flow alone on {rate} Mbit/s × {rtt} ms with {_BUFFER_WHY[kind]}"
                    seeds: tuple[int, ...] = (1,)
                    if kind == "shallow" and cca != "bbr" and rate >= SHALLOW_SEEDED_FROM_MBPS:
                        seeds = (1, 2, 3)
                        why += ("; the kernel's goodput here varies between runs by more than the tolerance (its "
                                "unpaced bursts after stretch ACKs overflow the buffer at moments set by the "
                                "receiving application's rare long reads), so three seeds are averaged")  # fmt: skip
                    out.append(Case(
                        id=cid, family="single",
                        scenario=_scenario(cid, rate=f"{rate}Mbps", buffer=buffer, flows=[{"cca": cca, "rtt": f"{rtt}ms"}]),
                        metrics=tuple(metrics), why=why, seeds=seeds,
                        quick=(cca, rate, rtt, kind) in quick, note=note,
                    ))  # fmt: skip
    return out


LOSS_RATES = (0.001, 0.01, 0.05, 0.10, 0.15, 0.20, 0.30, 0.50)


def _loss_cases() -> list[Case]:
    out = []
    for cca in ("bbr", "cubic"):
        for p in LOSS_RATES:
            pct = f"{p * 100:g}pct"
            cid = f"loss/{cca}-{pct}"
            seeds = (1, 2, 3) if cca == "bbr" and p in (0.15, 0.20) else (1,)
            why = (f"random loss {p * 100:g} % on 100 Mbit/s × 100 ms, 1 BDP: "
                   + ("BBR ignores random loss until the loss rate approaches its ProbeBW headroom (the CACM 2017 "
                      "loss-tolerance figure)" if cca == "bbr" else
                      "CUBIC's window follows its response function to random loss (RFC 9438)"))  # fmt: skip
            if len(seeds) > 1:
                why += "; near BBR v1's loss cliff a single seed is noisy, so three seeds are averaged"
            metrics = ("goodput", "retrans_rate", "state_time") if cca == "bbr" else ("goodput", "retrans_rate")
            out.append(Case(
                id=cid, family="loss",
                scenario=_scenario(cid, rate="100Mbps", buffer="1bdp", loss=p, flows=[{"cca": cca, "rtt": "100ms"}]),
                metrics=metrics, why=why, seeds=seeds, quick=(p == 0.01),
            ))  # fmt: skip
    return out


#: When the parity cases' capacity steps: off BBR's ProbeRTT schedule (the first ProbeRTT comes ~10 s
#: after the connection's lowest RTT sample — 9.9–10.8 s into a kernel run, 10.0 s in the simulator — and
#: a step at 10 s measured where ProbeRTT ended instead of how the algorithm follows the new rate).
STEP_AT = "15s"


def _step_cases() -> list[Case]:
    out = []
    for cca in ("bbr", "cubic"):
        for before, after, word in ((10, 20, "up"), (20, 10, "down")):
            cid = f"step/{cca}-{word}-{before}to{after}M"
            out.append(Case(
                id=cid, family="step",
                scenario=_scenario(cid, rate=f"{before}Mbps", buffer="100KB", duration="20s", measure_from=STEP_AT,
                                   schedule=[{"at": STEP_AT, "rate": f"{after}Mbps"}],
                                   flows=[{"cca": cca, "rtt": "40ms"}]),
                metrics=("time_to_90" if word == "up" else "time_to_110", "goodput"),
                why=(f"the capacity steps {word} from {before} to {after} Mbit/s at {STEP_AT[:-1]} s (40 ms, 100 KB buffer): "
                     + ("how fast BBR's max-filtered bandwidth estimate follows (1.25× probing per 8-round cycle up, "
                        "10-round window down)" if cca == "bbr" else "CUBIC's window growth (up) or its ACK clock (down) "
                        "adapts")
                     + ("; up: until the bottleneck's throughput reaches 90 % of the new rate" if word == "up" else
                        "; down: until the senders' sending rate falls to 110 % of the new rate (the bottleneck's "
                        "throughput meets the new rate at once, the queue keeping it busy)")),
                seeds=(1, 2, 3, 4, 5) if (cca, word) == ("bbr", "up") else (1,),
                quick=(cca, word) in {("bbr", "up"), ("cubic", "down")},
            ))  # fmt: skip
    return out


def _startup_cases() -> list[Case]:
    out = []
    for rate, rtt, quick in ((100, 100, True), (20, 200, False), (500, 50, False)):
        cid = f"startup/bbr-{rate}M-{rtt}ms-2bdp"
        out.append(Case(
            id=cid, family="startup",
            scenario=_scenario(cid, rate=f"{rate}Mbps", buffer="2bdp", duration="10s", measure_from="2s",
                               flows=[{"cca": "bbr", "rtt": f"{rtt}ms"}]),
            metrics=("startup_exit[flow0]", "startup_exit_rtts[flow0]", "peak_queue", "state_time"),
            why=(f"BBR's STARTUP on {rate} Mbit/s × {rtt} ms, 2 BDP: it exits after three rounds without 25 % bandwidth "
                 "growth (tcp_bbr.c bbr_check_full_bw_reached); the round of the exit and the queue its 2.89× "
                 "overshoot builds"),
            quick=quick,
        ))  # fmt: skip
    return out


def _mix_cases() -> list[Case]:
    out = []
    for buf in ("0.5bdp", "2bdp", "8bdp"):
        cid = f"mix/bbr-vs-cubic-{buf}"
        out.append(Case(
            id=cid, family="mix",
            scenario=_scenario(cid, rate="100Mbps", buffer=buf, duration="60s", measure_from="20s",
                               flows=[{"cca": "bbr", "rtt": "50ms"}, {"cca": "cubic", "rtt": "50ms"}]),
            metrics=("share[bbr]", "goodput", "queue_delay_p50", "queue_delay_p95"),
            why=(f"one BBR and one CUBIC flow on 100 Mbit/s × 50 ms with {buf.replace('bdp', ' BDP')}: BBR's share falls "
                 "as the buffer deepens (Hock et al. 2017, Ware et al. 2019); the share oscillates over several seconds, "
                 "so the run is 60 s and measured from 20 s (CUBIC's share is 100 − BBR's)"),
            quick=buf == "2bdp",
        ))  # fmt: skip
    cid = "rtt/2bbr-10ms-vs-50ms"
    out.append(Case(
        id=cid, family="rtt",
        scenario=_scenario(cid, rate="50Mbps", buffer="312500B",
                           flows=[{"cca": "bbr", "rtt": "10ms"}, {"cca": "bbr", "rtt": "50ms"}]),
        metrics=("share[flow0]", "share[flow1]", "goodput", "queue_delay_p50"),
        why=("two BBR flows with 10 ms and 50 ms RTT on 50 Mbit/s, buffer 1 BDP of the 50 ms path (312.5 KB): BBR v1's "
             "RTT unfairness, the longer RTT takes more (Ma et al. 2017)"),
        quick=True,
    ))  # fmt: skip
    cid = "mix/2bbr-2cubic-1bdp"
    out.append(Case(
        id=cid, family="mix",
        scenario=_scenario(cid, rate="100Mbps", buffer="1bdp", duration="60s", measure_from="20s",
                           flows=[{"cca": "bbr", "rtt": "50ms", "count": 2}, {"cca": "cubic", "rtt": "50ms", "count": 2}]),
        metrics=("retrans_rate[bbr]", "retrans_rate[cubic]", "retrans_rate", "share[bbr]", "goodput"),
        why=("two BBR and two CUBIC flows on 100 Mbit/s × 50 ms, 1 BDP: BBR v1 keeps sending into a full queue, so both "
             "algorithms retransmit far more than alone (the retransmission counts of Hock et al. 2017); the kernel's "
             "retransmission rate of one run spread 2.7–4.8 % (BBR) and 2.1–7.5 % (CUBIC) over five runs, so three "
             "seeds are averaged"),
        seeds=(1, 2, 3),
        quick=True,
    ))  # fmt: skip
    return out


_QDISC_WHY = {
    "codel": "CoDel (RFC 8289, sch_codel.c; target 5 ms, interval 100 ms) holds a standing queue near its 5 ms target",
    "fq_codel": "FQ-CoDel (RFC 8290, sch_fq_codel.c) gives each flow its own CoDel queue and serves them round robin",
}


def _qdisc_cases() -> list[Case]:
    """The AQMs under real TCP: the emulator runs the simulator's qdisc code (cclab-netmodel), so what
    differs is the TCP stacks' reaction to AQM drops. No ECN (the kernel's packets are not ECT)."""
    scen = (
        ("1cubic-100M-50ms-8bdp", "100Mbps", "8bdp", [{"cca": "cubic", "rtt": "50ms"}],
         "one CUBIC flow on 100 Mbit/s × 50 ms, 8 BDP: after each AQM drop CUBIC's fast convergence keeps the window "
         "near the BDP, so the queue sits below target much of the time"),
        ("bbr-cubic-100M-40ms-4bdp", "100Mbps", "4bdp", [{"cca": "bbr", "rtt": "40ms"}, {"cca": "cubic", "rtt": "40ms"}],
         "one BBR and one CUBIC flow on 100 Mbit/s × 40 ms, 4 BDP: a single AQM queue still lets BBR take most of the "
         "link; flow queueing splits it"),
        ("4cubic-20M-20ms-8bdp", "20Mbps", "8bdp", [{"cca": "cubic", "rtt": "20ms", "count": 4}],
         "four CUBIC flows on 20 Mbit/s × 20 ms, 8 BDP: several bulk flows keep a standing queue at the AQM's target"),
    )  # fmt: skip
    out = []
    for qd in ("codel", "fq_codel"):
        for name, rate, buffer, flows, why in scen:
            cid = f"qdisc/{qd}-{name}"
            two = len(flows) > 1
            metrics = ("goodput", "queue_delay_p50", "share[bbr]") if two else ("goodput", "queue_delay_p50")
            out.append(Case(
                id=cid, family="qdisc",
                scenario=_scenario(cid, rate=rate, buffer=buffer, flows=flows, qdisc=qd,
                                   duration="60s" if two else "30s", measure_from="20s" if two else MEASURE_FROM),
                metrics=metrics, why=f"{_QDISC_WHY[qd]}; {why}",
            ))  # fmt: skip
    # ECN end to end: both TCP stacks negotiate ECN (net.ipv4.tcp_ecn = 1 on the kernel backend), the AQM
    # marks instead of dropping, the senders reduce once per round trip on ECE (RFC 3168).
    for qd in ("codel", "fq_codel"):
        cid = f"qdisc/{qd}-ecn-4cubic-20M-20ms-8bdp"
        out.append(Case(
            id=cid, family="qdisc",
            scenario=_scenario(cid, rate="20Mbps", buffer="8bdp", qdisc={"name": qd, "ecn": True},
                               flows=[{"cca": "cubic", "rtt": "20ms", "count": 4, "ecn": True}]),
            metrics=("goodput", "queue_delay_p50"),
            why=(f"{_QDISC_WHY[qd]}, with ECN: four ECN-capable CUBIC flows on 20 Mbit/s × 20 ms, 8 BDP; the AQM marks "
                 "instead of dropping and the senders react to ECE (RFC 3168), so the queue is held as by drops, "
                 "without loss"),
        ))  # fmt: skip
    return out


#: Combinations left out of the matrix, with the reason (printed by --list). The
#: emulator carries every rate of the matrix (500 Mbit/s at MTU 1500 is its
#: measured sustained rate, crates/cclab-link/README.md), so none so far.
DROPPED: tuple[tuple[str, str], ...] = ()


def all_cases() -> list[Case]:
    cases = _single_flow_cases() + _loss_cases() + _step_cases() + _startup_cases() + _mix_cases() + _qdisc_cases()
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate parity case ids"
    return cases


CASES: tuple[Case, ...] = tuple(all_cases())


def quick_cases() -> list[Case]:
    return [c for c in CASES if c.quick]


def estimated_wall_s(cases: list[Case] | tuple[Case, ...]) -> float:
    """Rough wall time of running ``cases`` from scratch (kernel runs one at a time, then the sims)."""
    total = 0.0
    for c in cases:
        total += len(c.seeds) * (c.duration_s + KERNEL_OVERHEAD_S) + len(c.sim_seeds) * c.duration_s * SIM_S_PER_S
    return total
