"""Queue disciplines through the whole Python pipeline (docs/queues.md): the
scenario spellings, the record's drop and mark columns, the summary, and
determinism with an AQM and ECN."""

from __future__ import annotations

import hashlib
import json

import pytest

import cclab
import cclab._native as native
from cclab.scenario import load_scenario, scenario_from_dict

pytestmark = pytest.mark.skipif(not hasattr(native, "simulate"), reason="the native engine is not built")


def _scenario(qdisc, ecn=False, seed=1, duration="10s", loss=0.0005):
    return scenario_from_dict({
        "name": "queues",
        "duration": duration,
        "seed": seed,
        "measure": {"from": "3s"},
        "link": {"rate": "50Mbps", "buffer": "4bdp", "qdisc": qdisc, "loss": loss},
        "flows": [{"cca": "cubic", "rtt": "40ms", "count": 2, "ecn": ecn}, {"cca": "bbr", "rtt": "40ms"}],
    })  # fmt: skip


def test_aqm_drops_and_ce_marks_are_separate_columns_and_in_the_summary(tmp_path):
    # Long enough, and with little enough random loss, that every column has
    # events in the measure window: at 0.05 % loss over 10 s the CUBIC flows'
    # windows rarely outgrow their share, and seeds 1–8 gave 0–4 CE marks
    # after 3 s; here 9–15 (10–16 before the DRS change), with 7–18 random drops.
    run = cclab.load(cclab.run_to_dir(_scenario("fq_codel", ecn=True, duration="20s", loss=0.0002), tmp_path / "r"))
    for column in ("drops_overflow", "drops_random", "drops_aqm", "marks_ce", "queue_delay_ms"):
        assert column in run.link.columns, column
    agg = run.summary["aggregate"]
    # the two CUBIC flows are ECN-capable: marked; the BBR flow is not: dropped
    assert run.link.marks_ce.sum() > 0 and agg["marks_ce"] == pytest.approx(
        run.link.marks_ce[run.link.time_s > 3].sum())
    assert run.link.drops_aqm.sum() > 0
    assert run.link.drops_random.sum() > 0
    assert 0 < agg["mark_rate"] < 1
    assert set(agg["drops"]) == {"overflow", "random", "aqm", "policer"}
    assert agg["drops"]["policer"] == 0 and run.link.drops_policer.sum() == 0
    assert "policer" not in run.ir["links"][0]
    # the IR says what ran
    assert run.ir["links"][0]["qdisc"]["kind"] == "fq_codel" and run.ir["links"][0]["qdisc"]["ecn"] is True
    assert [f["ecn"] for f in run.ir["flows"]] == [True, True, False]


def test_a_policer_caps_the_rate_and_its_drops_are_their_own_column(tmp_path):
    # A 5 Mbit/s token bucket (30 KB) in front of a 20 Mbit/s link: what passes
    # is at most the bucket plus rate × time (wire bytes), the rest is dropped
    # as drops_policer; the queue behind it never overflows.
    sc = scenario_from_dict({
        "name": "policed", "duration": "10s", "measure": {"from": "2s"},
        "link": {"rate": "20Mbps", "buffer": "4bdp", "policer": {"rate": "5Mbps", "burst": "30KB"}},
        "flows": [{"cca": "bbr", "rtt": "40ms"}],
    })  # fmt: skip
    run = cclab.load(cclab.run_to_dir(sc, tmp_path / "p"))
    assert run.ir["links"][0]["policer"] == {"rate_bps": 5_000_000, "burst_bytes": 30_000}
    agg = run.summary["aggregate"]
    link = run.link
    egress_bits = float((link.throughput_bps * link.time_s.diff().fillna(link.time_s)).sum())
    assert egress_bits <= 5e6 * 10 + 30_000 * 8 + 1
    # BBR's long-term (policer) model paces at the policed rate: measured 99.9 % of it
    assert egress_bits >= 0.95 * 5e6 * 10
    assert link.drops_policer.sum() > 0 and link.drops_overflow.sum() == 0
    assert agg["drops"]["policer"] == pytest.approx(link.drops_policer[link.time_s > 2].sum())
    assert agg["loss_rate"] == pytest.approx(agg["drops_total"] / agg["arrival_packets"])


def test_drop_tail_has_no_aqm_drops_or_marks(tmp_path):
    run = cclab.load(cclab.run_to_dir(_scenario("droptail", ecn=True), tmp_path / "d"))
    assert run.link.drops_aqm.sum() == 0 and run.link.marks_ce.sum() == 0
    assert run.summary["aggregate"]["marks_ce"] == 0


def test_codel_keeps_the_queue_short_where_drop_tail_fills_the_buffer(tmp_path):
    codel = cclab.load(cclab.run_to_dir(_scenario({"name": "codel", "target": "5ms"}, duration="20s"), tmp_path / "c"))
    tail = cclab.load(cclab.run_to_dir(_scenario("droptail", duration="20s"), tmp_path / "t"))
    qc, qt = codel.summary["aggregate"], tail.summary["aggregate"]
    assert qc["queue_delay_ms_p50"] < 15 < qt["queue_delay_ms_p50"]
    assert qc["link_utilization"] > 0.9


def test_same_seed_gives_identical_records_with_an_aqm_and_ecn(tmp_path):
    def digest(path):
        return hashlib.sha256(path.read_bytes()).hexdigest()

    spec = {"name": "pie", "ecn": True}
    a = cclab.run_to_dir(_scenario(spec, ecn=True), tmp_path / "a")
    b = cclab.run_to_dir(_scenario(spec, ecn=True), tmp_path / "b")
    for name in ("flows.parquet", "link.parquet", "summary.json", "resolved.json"):
        assert digest(a / name) == digest(b / name), name


def test_random_loss_draws_do_not_depend_on_the_qdisc():
    # The loss stream is the seed's own: a different discipline does not
    # change which of the first packets random loss hits. With p = 1 % and
    # identical traffic until the first queue-discipline decision, the first
    # random drop happens at the same time with drop-tail and random-drop.
    import numpy as np

    from cclab.resolve import resolve

    def first_random_drop(qdisc):
        sc = scenario_from_dict({"name": "l", "duration": "2s", "link": {"rate": "50Mbps", "buffer": "4bdp",
                                 "loss": 0.01, "qdisc": qdisc}, "flows": [{"cca": "cubic", "rtt": "40ms"}]})  # fmt: skip
        raw = native.simulate(json.dumps(resolve(sc)))
        drops = np.asarray(raw["link"]["drops_random"])
        return int(np.argmax(drops > 0))

    assert first_random_drop("droptail") == first_random_drop("random_drop") == first_random_drop("codel")


def test_a_scenario_file_with_the_old_aqm_field_still_runs(tmp_path):
    path = tmp_path / "old.toml"
    path.write_text('name = "old"\nduration = "2s"\n[link]\nrate = "10Mbps"\naqm = "droptail"\n'
                    '[[flows]]\ncca = "cubic"\nrtt = "20ms"\n')  # fmt: skip
    sc = load_scenario(path)
    assert sc.link.qdisc == "droptail"
    run = cclab.load(cclab.run_to_dir(sc, tmp_path / "o"))
    assert run.ir["links"][0]["qdisc"] == {"kind": "droptail"}


def _dctcp(qdisc, ecn=True, duration="3s"):
    return scenario_from_dict({
        "name": "dctcp", "duration": duration, "seed": 1, "sample_interval": "1ms", "measure": {"from": "1s"},
        "link": {"rate": "1Gbps", "buffer": "300pkts", "qdisc": qdisc},
        "flows": [{"cca": "dctcp", "rtt": "250us", "count": 2, "ecn": ecn}],
    })  # fmt: skip


def test_step_marking_resolves_k_in_packets_or_bytes_and_needs_it():
    from cclab.errors import ScenarioError
    from cclab.resolve import resolve

    ir = resolve(_dctcp({"name": "step", "k": "20pkts"}))
    assert ir["links"][0]["qdisc"] == {"kind": "step", "k_bytes": None, "k_packets": 20, "ecn": True}
    ir = resolve(_dctcp({"name": "step", "k": "30KB", "ecn": False}))
    assert ir["links"][0]["qdisc"] == {"kind": "step", "k_bytes": 30000, "k_packets": None, "ecn": False}
    with pytest.raises(ScenarioError, match=r"link.qdisc.k: .*needs its threshold k"):
        resolve(_dctcp("step"))
    with pytest.raises(ScenarioError, match=r"k"):
        resolve(_dctcp({"name": "step", "k": "0.5bdp"}))


def test_dctcp_requires_ecn():
    from cclab.errors import ScenarioError

    with pytest.raises(ScenarioError, match=r"flows\[0\]\.ecn: cca 'dctcp' requires ECN-capable packets"):
        _dctcp({"name": "step", "k": "20pkts"}, ecn=False)


def test_dctcp_holds_the_step_queue_near_k_through_the_python_pipeline(tmp_path):
    # RFC 8257 §3: the queue oscillates around K = 20 packets (30 000 bytes)
    # at full link utilization, and every mark is of an ECT packet.
    run = cclab.load(cclab.run_to_dir(_dctcp({"name": "step", "k": "20pkts"}), tmp_path / "d"))
    agg = run.summary["aggregate"]
    assert agg["link_utilization"] >= 0.99
    assert 10 * 1500 <= agg["queue_bytes_mean"] <= 40 * 1500
    assert agg["marks_ce"] > 0 and agg.get("drops_aqm", 0) == 0


def test_red_on_a_tiny_buffer_blames_the_buffer_not_a_burst_nobody_wrote():
    from cclab.errors import ScenarioError
    from cclab.resolve import resolve

    data = {"name": "r", "duration": "1s", "link": {"rate": "10Mbps", "buffer": "2pkts", "qdisc": "red"},
            "flows": [{"cca": "cubic", "rtt": "40ms"}]}
    with pytest.raises(ScenarioError, match=r"^link\.buffer: a buffer of 3000 bytes is too small for RED's default "
                                            r"thresholds .*expected a larger buffer, or min_th, max_th and burst"):
        resolve(scenario_from_dict(data))
    # a burst the user did write is still what the error names
    data["link"]["qdisc"] = {"name": "red", "burst": 1, "min_th": "30KB", "max_th": "90KB"}
    data["link"]["buffer"] = "400KB"
    with pytest.raises(ScenarioError, match=r"^link\.qdisc\.burst: a burst of 1 packets is too small"):
        resolve(scenario_from_dict(data))
    # an average packet the user wrote, with the buffer's default thresholds, is named, with one that works
    data["link"] = {"rate": "10Mbps", "buffer": "100KB", "qdisc": {"name": "red", "avpkt": "7000B"}}
    with pytest.raises(ScenarioError, match=r"^link\.qdisc\.avpkt: an average packet of 7000 bytes makes the "
                                            r"default burst .* here e.g\. 6944B, the largest below 7000B that works"):
        resolve(scenario_from_dict(data))
    data["link"]["qdisc"]["avpkt"] = "6944B"
    assert resolve(scenario_from_dict(data))["links"][0]["qdisc"]["avpkt_bytes"] == 6944


@pytest.mark.parametrize("qdisc", ["codel", "fq_codel"])
def test_a_packet_held_for_a_trace_opportunity_counts_as_queued(tmp_path, qdisc):
    # CoDel on a trace link with 1052-byte packets: a packet that does not fit what is left of an
    # opportunity waits, dequeued, for the next. It was counted nowhere: a sample's arrivals came out
    # −1, the run's 5 005 against 5 006 sent (helper-found).
    sc = {"name": "held", "duration": "8s", "sample_interval": "20ms", "mss": 1000,
          "link": {"trace": "traces/Verizon-LTE-short.down", "buffer": "200pkts", "qdisc": qdisc},
          "flows": [{"cca": "reno", "rtt": "5ms"}]}  # fmt: skip
    r = cclab.run(sc, out=tmp_path / "r", plot=False)
    link = r.link
    assert (link["arrival_packets"] >= 0).all()
    assert link["arrival_packets"].sum() == r.meta["counters"]["sent_packets"]
    assert link["queue_packets"].iloc[-1] == r.meta["counters"]["queued_packets"]
    per_interval = (link["arrival_bps"] * 0.02 / 8 / 1052).round()
    assert (per_interval == link["arrival_packets"]).all()
