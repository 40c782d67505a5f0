"""BBR in the simulator at the run level: the mechanism checks 1, 2, 3 and 5
of docs/validation.md and the shapes of the published results P1, P2, P4, P5/P6,
P9 and the thesis' `bbr_shallow` proposal (issue 3).

Every test prints what it measured (`pytest -s` shows it). Runs are short
(seconds of simulated time; the module takes ~25 s on an idle core);
the long forms live in the presets and `cclab validate`.

Conventions used below:
* "payload capacity" = link rate × mss/(mss + header) — the most goodput
  (payload bits) a link can carry; `bw_bps` (BBR's estimate) counts payload
  too (tcp_bbr.c counts delivered segments), so both are compared with it.
* BDP in packets = rate × base RTT / 1500 B (the scenario's "bdp" unit).
* Rounds are not in the record; where they are needed they are rebuilt from
  the RTT samples (`round_starts`): a round ends when a packet sent at its
  start is ACKed.

Where the model cannot match a published figure the test is kept and marked
xfail(strict=True) with the measured value and the reason.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import cclab
import cclab._native as native
from cclab.metrics import dominant_period
from cclab.metrics import in_window, share_series
from cclab.scenario import scenario_from_dict

pytestmark = pytest.mark.skipif(not hasattr(native, "simulate"), reason="the native engine is not built")

MSS, WIRE = 1448, 1500
DT = 0.01  # default sample interval (s)


def payload(rate_bps: float) -> float:
    return rate_bps * MSS / WIRE


def bdp_pkts(rate_bps: float, rtt_s: float) -> float:
    return rate_bps * rtt_s / 8 / WIRE


def run(tmp_path_factory, name: str, **scenario):
    sc = scenario_from_dict({"name": name, **scenario})
    return cclab.run(sc, out=tmp_path_factory.mktemp(name) / "run")


def one_flow(cca: str, rate: str, rtt: str, buffer: str, duration: str, **link):
    return {
        "duration": duration,
        "link": {"rate": rate, "buffer": buffer, **link},
        "flows": [{"cca": cca, "rtt": rtt}],
    }


def mode_intervals(flows, mode: str) -> list[tuple[float, float]]:
    """(first, last) sample time of each stretch of consecutive samples in `mode`."""
    t = flows["time_s"].to_numpy()
    m = (flows["state"] == mode).to_numpy()
    edges = np.diff(np.concatenate([[0], m.astype(int), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return [(float(t[a]), float(t[b])) for a, b in zip(starts, ends)]


def round_starts(flows, base_rtt_s: float) -> np.ndarray:
    """Times at which packet-timed rounds start (tcp_rate.c / bbr round_start), from the record.

    A round that starts at t0 ends when the first packet sent at or after t0 is
    ACKed: at the first sample t with t − RTT(t) ≥ t0, RTT(t) being the mean RTT
    sample of that interval (before the first sample: the base RTT). Exact to a
    sample interval (10 ms).
    """
    t = flows["time_s"].to_numpy()
    sent = t - flows["rtt_ms"].ffill().fillna(base_rtt_s * 1e3).to_numpy() / 1e3
    starts = [0.0]
    while True:
        later = np.flatnonzero(sent >= starts[-1] - 1e-9)
        if later.size == 0 or t[later[0]] <= starts[-1]:
            break
        starts.append(float(t[later[0]]))
    return np.array(starts)


# ---------------------------------------------------------------------------
# Check 1: Startup / Drain (docs/validation.md check 1; tcp_bbr.c bbr_check_full_bw_reached,
# bbr_check_drain). 50 Mbps / 40 ms, deep buffer (no loss), 3 s.
# ---------------------------------------------------------------------------

C1_RATE, C1_RTT = 50e6, 0.040


@pytest.fixture(scope="module")
def startup_run(tmp_path_factory):
    r = run(tmp_path_factory, "startup", **one_flow("bbr", "50Mbps", "40ms", "10bdp", "1.5s"))
    f = r.flows
    bdp = bdp_pkts(C1_RATE, C1_RTT)
    (s0, s1), (d0, d1) = mode_intervals(f, "STARTUP")[0], mode_intervals(f, "DRAIN")[0]
    starts = round_starts(f, C1_RTT)
    # The round in which Startup ended: rounds are numbered from 0 at the first send;
    # Startup ends at a round start (bbr_check_full_bw_reached runs there), seen in the
    # record as the first DRAIN sample.
    exit_round = int(np.searchsorted(starts, d0 - 1e-9, side="right")) - 1
    st = f[f.state == "STARTUP"]
    drain_rtt = float(f.loc[f.time_s == d0, "rtt_ms"].iloc[0]) / 1e3
    out = {
        "bdp": bdp,
        "exit_round": exit_round,
        "formula": math.log2(bdp / 10) + 3,  # IW 10
        "peak_queue_bdp": float(r.link.loc[r.link.time_s <= d1 + DT, "queue_packets"].max()) / bdp,
        "startup_cwnd_bdp": float(st["cwnd_bytes"].max()) / MSS / bdp,
        "drain_rounds": (d1 - d0 + DT) / drain_rtt,
    }
    print(
        f"\n[check 1] BDP {bdp:.0f} pkts: round starts {starts[:12].round(2).tolist()} s; Startup ended at the "
        f"start of round {exit_round} (t = {d0:.2f} s; "
        f"log2(BDP/IW)+3 = {out['formula']:.1f}); peak queue {out['peak_queue_bdp']:.2f} BDP "
        f"(Startup cwnd {out['startup_cwnd_bdp']:.2f} BDP); Drain {d1 - d0 + DT:.2f} s = "
        f"{out['drain_rounds']:.2f} rounds of {drain_rtt * 1e3:.0f} ms"
    )
    return out


def test_startup_queue_bounded_by_cwnd_gain_and_drain_takes_one_round(startup_run):
    # The Startup queue is what cwnd (2.89·BDP_est + quantization budget) leaves
    # beyond the pipe: ≤ (Startup cwnd − 1 BDP). Drain (pacing 1/2.89) empties it
    # in about one round of the queue-inflated RTT (tcp_bbr.c bbr_check_drain:
    # inflight ≤ BDP). Tolerance: one sample interval on each end of Drain (+0.2 round).
    s = startup_run
    assert s["peak_queue_bdp"] <= s["startup_cwnd_bdp"] - 1 + 0.05
    assert s["drain_rounds"] <= 1.2


# Linux 6.18 on the kernel backend, this scenario (50 Mbit/s / 40 ms / 10 BDP,
# 1.5 s), three runs on 2026-11-25, rounds rebuilt from the record as here:
# Startup ended at round 10, 10 and 8 (0.83, 0.95, 0.58 s).
KERNEL_EXIT_ROUNDS = (8, 10)


@pytest.mark.xfail(
    strict=True,
    reason="measured (50 Mbps/40 ms, 10 BDP): Startup ends at round 9 vs log2(BDP/IW)+3 = 7.1; Linux 6.18 on the "
    "kernel backend, same scenario: rounds 10, 10, 8 — Linux does not meet it either. A delivery-rate sample "
    "describes the previous round's sending (see the queue xfail below), and Linux sends the first 10 segments "
    "unpaced (tcp_update_skb_after_send): modelling that moved the simulator's exit from round 7 (0.55 s) to 9 "
    "(0.70 s), inside the kernel's range.",
)
def test_startup_round_count_matches_the_formula(startup_run):
    # docs/validation.md check 1, the rule of thumb: exit after ~log2(BDP/IW)+3 rounds (±1).
    s = startup_run
    assert abs(s["exit_round"] - s["formula"]) <= 1.0


def test_startup_round_count_is_within_the_kernels(startup_run):
    # docs/validation.md check 1: the referee for the round count is the kernel
    # (KERNEL_EXIT_ROUNDS, measured on the same scenario); `cclab parity`
    # compares the Startup exit round live on its own cases.
    lo, hi = KERNEL_EXIT_ROUNDS
    assert lo <= startup_run["exit_round"] <= hi


@pytest.mark.xfail(
    strict=True,
    reason="measured (50 Mbps/40 ms, 10 BDP): the queue peaks at 2.09 BDP vs < 1.9; Linux 6.18 on the kernel "
    "backend, same scenario: 2.13 BDP. A delivery-rate sample describes the previous round's sending, so max_bw "
    "reaches the link rate ~2 rounds after cwnd reaches the BDP; and Startup's cwnd target is 2.89·BDP_est + "
    "3·tso_segs_goal (~1 ms of data per TSO burst at the Startup pacing rate), recorded at 3.09 BDP, so the queue "
    "reaches ~1.9 BDP + that budget. The rule of thumb leaves out the sampling lag and the budget; Linux does not "
    "meet it either.",
)
def test_startup_queue_matches_the_formula(startup_run):
    # docs/validation.md check 1, the rule of thumb: Startup queue below ~1.9 BDP.
    assert startup_run["peak_queue_bdp"] < 1.9


# ---------------------------------------------------------------------------
# Checks 2 and 3: one BBRv1 flow, 10 Mbps / 40 ms, deep (8 BDP) buffer, 22 s.
# ---------------------------------------------------------------------------

C2_RATE, C2_RTT = 10e6, 0.040


@pytest.fixture(scope="module")
def deep_run(tmp_path_factory):
    return run(tmp_path_factory, "deep", **one_flow("bbr", "10Mbps", "40ms", "8bdp", "22s"))


def test_probe_rtt_dips_to_4_packets_every_10s_for_200ms_plus_a_round(deep_run):
    # docs/validation.md check 2; tcp_bbr.c: bbr_min_rtt_win_sec = 10, bbr_probe_rtt_mode_ms = 200,
    # bbr_cwnd_min_target = 4; the next ProbeRTT is timed from the end of the last
    # (min_rtt_stamp = now in bbr_check_probe_rtt_done), so entries are ~10 s + 0.24 s apart.
    # Tolerances: ±2 samples (20 ms) on the length, and 10–10.5 s between entries
    # (the first ACK after the window expires triggers it).
    f = deep_run.flows
    stretches = mode_intervals(f, "PROBE_RTT")
    lengths = [b - a + DT for a, b in stretches]
    gaps = [b[0] - a[0] for a, b in zip(stretches, stretches[1:])]
    cwnd_pkts = f.loc[f.state == "PROBE_RTT", "cwnd_bytes"] / MSS
    print(f"\n[check 2] ProbeRTT at {[a for a, _ in stretches]} s, lengths {lengths} s, gaps {gaps} s, "
          f"cwnd there {cwnd_pkts.min():.0f}–{cwnd_pkts.max():.0f} pkts (expected 200 ms + 1 RTT = 240 ms)")
    assert len(stretches) == 2
    assert 10.0 <= stretches[0][0] <= 10.5
    assert all(10.0 <= g <= 10.5 for g in gaps)
    assert all(abs(x - (0.200 + C2_RTT)) <= 0.02 for x in lengths)
    assert cwnd_pkts.min() == 4 and cwnd_pkts.max() == 4


def test_one_flow_on_a_deep_buffer_fills_the_link_with_a_small_queue(deep_run):
    # docs/validation.md check 3 (CACM 2017: BBR runs at the link rate with a near-empty
    # queue). Goodput over the whole run (Startup and both ProbeRTTs included) ≥ 97 %
    # of the payload capacity. Queue after Drain: the ProbeBW cycle adds ≤ 0.25 BDP
    # for one phase in eight, plus the 3-segment quantization budget, so mean
    # < 0.3 BDP and 95th percentile < 0.5 BDP (an 8 BDP buffer would allow 8).
    r = deep_run
    bdp = bdp_pkts(C2_RATE, C2_RTT)
    frac = r.summary["aggregate"]["goodput_bps"] / payload(C2_RATE)
    drain_end = mode_intervals(r.flows, "DRAIN")[0][1]
    q = r.link.loc[r.link.time_s > drain_end, "queue_packets"] / bdp
    print(f"\n[check 3] goodput {frac:.3f} of payload capacity; queue after Drain mean {q.mean():.2f} BDP, "
          f"p95 {q.quantile(0.95):.2f} BDP, max {q.max():.2f} BDP")
    assert frac >= 0.97
    assert q.mean() < 0.3
    assert q.quantile(0.95) < 0.5


# ---------------------------------------------------------------------------
# Check 5: BBRv3 (draft-ietf-ccwg-bbr Appendix A; google/bbr v3 tcp_bbr.c).
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("rate_mbps", [20, 50])
def test_bbr3_max_bw_at_startup_exit_and_probe_rtt_every_5s(tmp_path_factory, rate_mbps):
    # max_bw within 2 % of the payload capacity when Startup ends; ProbeRTT when
    # probe_rtt_min has not been lowered for bbr_probe_rtt_win_ms = 5 s, at
    # cwnd = max(4, 0.5·BDP), held for max(200 ms, 1 round) once inflight is down to
    # it (v3 bbr_update_min_rtt / bbr_check_probe_rtt_done; at 0.5·BDP that wait is
    # ~half a round, so 200–250 ms, ±1 sample). The first comes 5 s after the
    # handshake set probe_rtt_min (tolerance 5.0–5.6 s: the first ACK after expiry +
    # one sample); later ones never sooner than 5 s apart, and later than 5 s when a
    # lower RTT sample restarted the clock in between: v3 takes the first sample
    # after expiry (here with a TSO burst's packets ahead of it, +1–2 serialization
    # times) and any strictly lower one later (an ACK for a lone segment), as
    # bbr_update_min_rtt does.
    rate = rate_mbps * 1e6
    r = run(tmp_path_factory, f"bbr3-{rate_mbps}", **one_flow("bbr3", f"{rate_mbps}Mbps", "40ms", "4bdp", "16s"))
    f = r.flows
    st = f[f.state == "STARTUP"]
    bw_exit = float(st["bw_bps"].iloc[-1])
    stretches = mode_intervals(f, "PROBE_RTT")
    gaps = [b[0] - a[0] for a, b in zip(stretches, stretches[1:])]
    lengths = [b - a + DT for a, b in stretches]
    bdp = bdp_pkts(rate, 0.040)
    cwnd_prt = f.loc[f.state == "PROBE_RTT", "cwnd_bytes"].max() / MSS
    print(f"\n[check 5] bbr3 {rate_mbps} Mbps: max_bw at Startup exit {bw_exit / payload(rate):.4f} of payload "
          f"capacity; ProbeRTT at {[a for a, _ in stretches]} s, gaps {[round(g, 2) for g in gaps]}, lengths "
          f"{[round(x, 2) for x in lengths]}, cwnd {cwnd_prt:.0f} pkts (0.5·BDP = {0.5 * bdp:.1f})")
    assert abs(bw_exit / payload(rate) - 1) <= 0.02
    assert len(stretches) >= 2
    assert 5.0 <= stretches[0][0] <= 5.6
    assert all(g >= 5.0 for g in gaps)
    assert all(0.2 - DT - 1e-9 <= x <= 0.2 + 0.040 + DT + 1e-9 for x in lengths)  # 1e-9: float sample times
    # 0.5·BDP_est, BDP_est = bw·(RTT + serialization) (+1 for the ceil in bbr_bdp, 2 % estimate noise)
    assert cwnd_prt <= math.ceil(0.5 * bdp * 1.02) + 1


def test_bbr3_bdp_below_one_packet_still_gives_cwnd_4(tmp_path_factory):
    # Draft Appendix A / v3 bbr_cwnd_min_target = 4 (MinPipeCwnd): cwnd never goes
    # below 4 packets however small the BDP. Link: 1 Mbps × 5 ms = 625 B, 0.42 packet.
    # BBR's own estimate bw·min_rtt is larger, since min_rtt includes the 12 ms
    # serialization of a 1500 B packet (0.42 + 1 ≈ 1.4 packets: on one bottleneck it
    # cannot fall below one packet); ProbeRTT's 0.5·BDP_est ≈ 0.7 packet is below
    # one, and cwnd there must sit exactly at 4. Exact: cwnd is in whole packets.
    r = run(tmp_path_factory, "bbr3tiny", **one_flow("bbr3", "1Mbps", "5ms", "100pkts", "6s"))
    f = r.flows
    cw = f.loc[f.active.astype(bool), "cwnd_bytes"] / MSS
    by_state = (f.groupby("state")["cwnd_bytes"].agg(["min", "max"]) / MSS).to_dict("index")
    last = f.iloc[-1]
    bdp_est = last["bw_bps"] / 8 * last["bw_min_rtt_ms"] / 1e3 / MSS
    print(f"\n[check 5] bbr3, link BDP 0.42 pkt, BBR's BDP estimate {bdp_est:.2f} pkt "
          f"(min_rtt {last['bw_min_rtt_ms']:.1f} ms): cwnd by state {by_state}")
    assert 0.5 * bdp_est < 1
    assert cw.min() == 4
    assert (f.loc[f.state == "PROBE_RTT", "cwnd_bytes"] / MSS == 4).all()
    assert (f.state == "PROBE_RTT").any()


# ---------------------------------------------------------------------------
# P1: random loss, 1 flow, 100 Mbps / 100 ms (Cardwell et al., CACM 2017, loss
# tolerance figure; the CS244 reproduction). 20 s, measured over [5 s, 20 s).
# ---------------------------------------------------------------------------


def p1(tmp_path_factory, cca: str, p: float, seed: int = 1):
    r = run(tmp_path_factory, f"p1-{cca}-{p}-s{seed}", duration="20s", measure={"from": "5s"}, seed=seed,
            link={"rate": "100Mbps", "buffer": "1bdp", "loss": p}, flows=[{"cca": cca, "rtt": "100ms"}])
    frac = r.summary["aggregate"]["goodput_bps"] / payload(100e6)
    print(f"\n[P1] {cca} at {p:.1%} random loss, seed {seed}: goodput {frac:.3f} of payload capacity")
    return frac


def test_p1_cubic_collapses_by_1_percent_loss(tmp_path_factory):
    # CACM 2017: CUBIC is ~10× down by 0.1 % and stalls above 1 % (Mathis:
    # 1.22·MSS/(RTT·√p) ≈ 1.4 Mbps at 1 %). "Collapsed" here: < 5 % of the link.
    assert p1(tmp_path_factory, "cubic", 0.01) < 0.05


@pytest.mark.parametrize("p", [0.01, 0.05])
def test_p1_bbr_keeps_the_link_up_to_5_percent_loss(tmp_path_factory, p):
    # CACM 2017: BBR ≈ link·(1 − p) up to ~5 % loss. Tolerance 0.9 (the issue's):
    # ProbeRTT and the loss-recovery cwnd cuts cost a few percent. Over ten
    # seeds, not one: at 5 % a run whose Startup ends early stays lower, on
    # the kernel too (Linux 6.18 on the kernel backend, this path, seed 9:
    # 62.9 and 62.5 Mbit/s in two valid runs, against 88–90 in the valid runs of
    # seeds 1–3 and 5–8;
    # docs/validation.md §4, "Dynamic Right-Sizing measures at the first
    # segment of a read").
    fracs = [p1(tmp_path_factory, "bbr", p, seed) for seed in range(1, 11)]
    assert sum(fracs) / len(fracs) >= 0.9 * (1 - p), fracs


# ---------------------------------------------------------------------------
# P2: 10 Mbps / 40 ms; the rate doubles at 10 s and halves at 20 s (CACM 2017;
# WPI thesis §4.2; short form of the bbr-bandwidth-step preset, same 1 BDP buffer).
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def step_run(tmp_path_factory):
    r = run(tmp_path_factory, "step", duration="26s",
            link={"rate": "10Mbps", "buffer": "1bdp",
                  "schedule": [{"at": "10s", "rate": "20Mbps"}, {"at": "20s", "rate": "10Mbps"}]},
            flows=[{"cca": "bbr", "rtt": "40ms"}])
    f = r.flows.set_index("time_s")
    good = f["goodput_bps"].rolling(10, min_periods=1).mean()  # 100 ms mean: in-order delivery is bursty
    up = float(good[(good.index > 10) & (good >= 0.9 * payload(20e6))].index.min()) - 10
    down = float(f.index[(f.index > 20) & (f["bw_bps"] <= 1.05 * payload(10e6))].min()) - 20
    rtt_after = float(f.loc[(f.index > 20) & (f.index <= 20 + down), "rtt_ms"].mean())
    print(f"\n[P2] goodput reaches 90 % of the doubled capacity {up:.2f} s after the step; "
          f"after the halving the estimate is within 5 % of the new rate after {down:.2f} s "
          f"(mean RTT meanwhile {rtt_after:.0f} ms, so 10 rounds ≈ {rtt_after / 100:.2f} s); "
          f"loss {r.summary['aggregate']['loss_rate']:.4f}")
    return up, down


def test_p2_bbr_follows_a_capacity_increase_within_1_5s(step_run):
    # CACM 2017: within ~1–1.5 s. Measured faster (~0.4 s): tcp_bbr.c's 1.25 phase
    # only ends once inflight ≥ 1.25·BDP of the *current* estimate
    # (bbr_is_next_cycle_phase), which keeps rising while the link has room, so the
    # probe compounds 1.25× per round instead of once per 8-round cycle.
    assert step_run[0] <= 1.5


@pytest.mark.xfail(
    strict=True,
    reason="measured 0.74 s (1 BDP buffer, engine of 2026-11-28; 0.82 s with earlier engines, and then 1.11 s at "
    "4 BDP and 20 BDP) vs ~0.4–0.5 s. The max filter spans 10 "
    "*rounds* (tcp_bbr.c bbr_bw_rtts, minmax_running_max on rtt_cnt); after the halving BBR keeps sending at the "
    "old rate, the queue fills and each round lasts ~RTT + queue delay (~77 ms here), so 10 rounds take ~0.77 s. "
    "The ~0.4 s figure is 10 × the base 40 ms, which only holds with no queue. Linux counts rounds the same way; "
    "not a model bug. The CACM paper does not state its buffer (not found with the search tools).",
)
def test_p2_bbr_estimate_follows_a_capacity_halving_within_0_5s(step_run):
    assert step_run[1] <= 0.5


# ---------------------------------------------------------------------------
# P4 shape: 2 BBR flows, 80 Mbps / 25 ms (WPI thesis Fig 12/13; Hock et al.
# ICNP 2017). 20 s, measured over [5 s, 20 s).
# ---------------------------------------------------------------------------


def two_bbr(tmp_path_factory, buffer: str, cca: str = "bbr"):
    return run(tmp_path_factory, f"p4-{cca}-{buffer}", duration="20s", measure={"from": "5s"},
               link={"rate": "80Mbps", "buffer": buffer}, flows=[{"cca": cca, "rtt": "25ms", "count": 2}])


def test_p4_two_bbr_flows_lose_heavily_in_shallow_buffers_not_deep_ones(tmp_path_factory):
    # Together the flows keep up to cwnd_gain·(Σ bw estimates)·RTprop ≥ 2 BDP in
    # flight, i.e. ≥ 1 BDP beyond the pipe: a 0.5 BDP buffer cannot hold it (loss
    # > 1 %), a 4 BDP buffer can (loss < 0.1 %: "near zero").
    # The standing queue on the deep buffer: Hock et al. and the thesis measure
    # 1–1.5 BDP; asserted 0.5–2 BDP (mean over the window).
    shallow = two_bbr(tmp_path_factory, "0.5bdp").summary["aggregate"]
    deep = two_bbr(tmp_path_factory, "4bdp")
    bdp = bdp_pkts(80e6, 0.025)
    q = deep.link.loc[in_window(deep.link.time_s, deep.ir), "queue_packets"].mean() / bdp
    loss_deep = deep.summary["aggregate"]["loss_rate"]
    print(f"\n[P4] loss at 0.5 BDP {shallow['loss_rate']:.4f}, at 4 BDP {loss_deep:.5f}; "
          f"standing queue at 4 BDP {q:.2f} BDP; utilization {shallow['utilization']:.3f} / "
          f"{deep.summary['aggregate']['utilization']:.3f}")
    assert shallow["loss_rate"] > 0.01
    assert loss_deep < 0.001
    assert 0.5 <= q <= 2.0


def test_bbr_shallow_loses_less_than_bbr_at_1_bdp(tmp_path_factory):
    # WPI thesis §5.5.1 proposal (cwnd gain 1.5) and Fig 17: the flows together keep
    # cwnd ≈ gain × (Σ their bw estimates) × RTprop in flight; what exceeds the pipe
    # must sit in the buffer — ≥ 1 BDP at gain 2, about half that at 1.5 — so a 1 BDP
    # buffer overflows far less. Asserted: less than half of bbr's loss rate.
    a = two_bbr(tmp_path_factory, "1bdp", "bbr").summary["aggregate"]
    b = two_bbr(tmp_path_factory, "1bdp", "bbr_shallow").summary["aggregate"]
    print(f"\n[shallow] 1 BDP, 2 flows: loss bbr {a['loss_rate']:.4f}, bbr_shallow {b['loss_rate']:.4f}; "
          f"utilization {a['utilization']:.3f} / {b['utilization']:.3f}")
    assert b["loss_rate"] < 0.5 * a["loss_rate"]


# ---------------------------------------------------------------------------
# P5/P6 shape: 2 BBR + 2 CUBIC, 80 Mbps / 25 ms (WPI thesis Fig 15–18; Miyazawa et al.).
# ---------------------------------------------------------------------------


def mixed(tmp_path_factory, buffer: str, duration: str):
    return run(tmp_path_factory, f"p5-{buffer}", duration=duration, measure={"from": "10s"},
               link={"rate": "80Mbps", "buffer": buffer},
               flows=[{"cca": "bbr", "rtt": "25ms", "count": 2}, {"cca": "cubic", "rtt": "25ms", "count": 2}])


def test_p5_bbr_dominates_shallow_buffers_and_cubic_deep_ones(tmp_path_factory):
    # Thesis Fig 16: BBR's share > 60 % at 0.5 BDP; CUBIC's share grows with the
    # buffer, even split near 5 BDP, so BBR < 50 % at 8 BDP. At 8 BDP the shares
    # cycle slowly (CUBIC needs ~20 s to fill the buffer), so 60 s, measured over
    # [10 s, 60 s) (measured: 0.39 over [10, 40), 0.41 over [10, 120)).
    s_shallow = mixed(tmp_path_factory, "0.5bdp", "20s").summary["per_algorithm"]["bbr"]["share"]
    s_deep = mixed(tmp_path_factory, "8bdp", "60s").summary["per_algorithm"]["bbr"]["share"]
    print(f"\n[P5] BBR share at 0.5 BDP {s_shallow:.3f}, at 8 BDP {s_deep:.3f}")
    assert s_shallow > 0.6
    assert s_deep < 0.5


def test_p6_shares_cycle_at_1_75_bdp(tmp_path_factory):
    # Thesis Fig 15 / Miyazawa et al.: at 1.75 BDP the throughputs alternate with a
    # ~20 s period (BBR's RTprop over-estimate after a ProbeRTT that cannot drain
    # CUBIC's queue). Dominant period of BBR's share (1 s bins, SHARE_BIN_S) by the
    # significance-tested period detector (metrics.detect_period: periodogram
    # against the series' own red noise); 180 s run, window [10 s, 180 s) holds
    # eight cycles (two and a half, in 60 s, are not significant at 1 %). Asserted:
    # a significant cycle with autocorrelation ≥ 0.3 and a period of 10–30 s (a
    # factor 1.5 either side of the literature's ~20 s; the preset's 300 s run
    # gives 20 ± 2 s, tests/test_trials_metrics.py).
    r = mixed(tmp_path_factory, "1.75bdp", "180s")
    fl = r.flows.loc[in_window(r.flows.time_s, r.ir)]
    shares = share_series(fl, bin_s=1.0)["bbr"]
    period, strength, _ = dominant_period(shares.to_numpy(), 1.0, 1.0)
    pa = r.summary["per_algorithm"]["bbr"]
    print(f"\n[P6] 1.75 BDP: BBR share {pa['share']:.3f} (IQR {pa['share_iqr']:.3f}); "
          f"dominant period of the BBR share {period:.1f} s (autocorrelation {strength:.2f}); literature ~20 s")
    assert math.isfinite(period) and strength >= 0.3
    assert 10.0 <= period <= 30.0


# ---------------------------------------------------------------------------
# P9: RTT unfairness (Ma et al. 2017). Two BBR flows, 10 ms and 50 ms, 100 Mbps.
# ---------------------------------------------------------------------------


def test_p9_the_longer_rtt_flow_takes_the_larger_share(tmp_path_factory):
    # Ma et al.: with a buffer that can hold the excess, each flow's cwnd = 2·bw·RTprop
    # puts more of the long-RTT flow's data in the queue, so it takes most of the
    # link. Buffer 5 BDP of the 10 ms flow (= 1 BDP of the 50 ms flow). At 1 BDP of the
    # 10 ms flow the split measured near even (0.55 to the 50 ms flow, 10 % loss).
    r = run(tmp_path_factory, "p9", duration="20s", measure={"from": "5s"},
            link={"rate": "100Mbps", "buffer": "5bdp"},
            flows=[{"cca": "bbr", "rtt": "10ms"}, {"cca": "bbr", "rtt": "50ms"}])
    share = {int(x["rtt_ms"]): x["share"] for x in r.summary["per_flow"]}
    print(f"\n[P9] shares: 10 ms flow {share[10]:.3f}, 50 ms flow {share[50]:.3f}")
    assert share[50] > share[10]
