"""Resolution of scenarios into the IR (docs/ir.md), the examples, and Python ⇔ TOML equivalence."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from cclab.errors import ScenarioError
from cclab.resolve import buffer_bytes_for_bdp, canonical_json, ir_hash, resolve
from cclab.scenario import (Cca, FlowGroup, Link, LossModel, Measure, Scenario, ScheduleEntry, load_scenario,
                            scenario_from_dict)
from cclab.traces import BUNDLED_TRACE_DIR, bundled_traces, find_trace, load_trace

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))
S = 1_000_000_000
MS = 1_000_000


@pytest.fixture
def engine_with_bbr(monkeypatch: pytest.MonkeyPatch) -> None:
    """Examples may name algorithms that land in the engine later (bbr): add them, without parameters,
    only while they are missing — once the engine has them, this changes nothing."""
    import cclab._native as native

    real = native.algorithms()
    if "bbr" not in real:
        monkeypatch.setattr(native, "algorithms", lambda: {**real, "bbr": []})


def small(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "t",
        "duration": "30s",
        "link": {"rate": "50Mbps", "buffer": "1bdp"},
        "flows": [{"cca": "cubic", "rtt": "40ms"}],
    }
    for key, value in changes.items():
        if key in ("link", "measure"):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    return data


# --- the IR's shape is exactly docs/ir.md's ----------------------------------------------------------------

def documented_ir() -> dict[str, Any]:
    text = (REPO / "docs" / "ir.md").read_text()
    block = re.search(r"```json\n(.*?)```", text, re.S)
    assert block, "docs/ir.md has a json example"
    body = "\n".join(line for line in block.group(1).splitlines() if not line.strip().startswith("//"))
    return json.loads(body)


def rust_fields(struct_or_variant: str) -> set[str]:
    """Field names of a struct or struct-like enum variant of the IR's Rust definition
    (crates/cclab-sim/src/scenario.rs; the link's in crates/cclab-netmodel)."""
    files = [REPO / "crates" / "cclab-sim" / "src" / "scenario.rs"]
    netmodel = REPO / "crates" / "cclab-netmodel" / "src"
    files += [netmodel / "ir.rs", netmodel / "loss.rs", netmodel / "policer.rs", *sorted((netmodel / "qdisc").glob("*.rs"))]
    source = "\n".join(f.read_text() for f in files)
    match = re.search(rf"(?:struct\s+|\n\s+){struct_or_variant}\s*\{{(.*?)\}}", source, re.S)
    assert match, struct_or_variant
    body = re.sub(r"#\[[^\]]*\]", "", re.sub(r"//[^\n]*", "", match.group(1)))  # comments, attributes
    return set(re.findall(r"(?:pub\s+)?(\w+)\s*:", body))


def key_paths(value: Any, prefix: str = "") -> set[str]:
    paths = set()
    if isinstance(value, dict):
        for key, item in value.items():
            paths.add(f"{prefix}.{key}")
            paths |= key_paths(item, f"{prefix}.{key}")
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        paths |= key_paths(value[0], f"{prefix}[]")
    return paths


def test_ir_keys_match_the_documented_example() -> None:
    scenario = scenario_from_dict(small(
        measure={"from": "20s"},
        link={"schedule": [{"at": "20s", "rate": "160Mbps"}]},
        record={"flows": "1s"},  # the optional `record` of the example
    ))
    ir = resolve(scenario)
    assert key_paths(ir) == key_paths(documented_ir())


def test_trace_and_gilbert_elliott_keys_match_the_rust_definition() -> None:
    link = {"trace": "Verizon-LTE-short.down", "loss": {"model": "gilbert-elliott", "p": 0.01, "r": 0.5}}
    ir = resolve(scenario_from_dict({**small(), "link": link}))
    assert set(ir["links"][0]["capacity"]) - {"kind"} == rust_fields("Trace")
    assert set(ir["links"][0]["loss"]) - {"kind"} == rust_fields("GilbertElliott")
    assert ir["links"][0]["capacity"]["kind"] == "trace" and ir["links"][0]["loss"]["kind"] == "gilbert_elliott"
    assert set(ir["flows"][0]) == rust_fields("Flow")  # start_offset_ns too (left out when 0)
    assert set(ir) == rust_fields("Scenario") - {"record"}  # record: only when not every flow at every sample
    assert set(ir["links"][0]) | {"policer"} == rust_fields("Link")  # policer: optional (docs/ir.md)


def test_integers_are_integers() -> None:
    ir = resolve(scenario_from_dict(small(flows=[{"cca": "cubic", "rtt": "40ms", "bytes": "1MB", "stop": "20s"}])))

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}")
        elif isinstance(value, list):
            for item in value:
                walk(item, f"{path}[]")
        elif path.endswith(("_ns", "_bps", "bytes", "seed", "mss", "header_bytes", ".id", ".group", "ir_version")):
            assert value is None or (isinstance(value, int) and not isinstance(value, bool)), path

    walk(ir, "")
    json.loads(canonical_json(ir))  # plain JSON


# --- values ----------------------------------------------------------------------------------------

def test_constant_link_values() -> None:
    ir = resolve(scenario_from_dict(small(seed=7, sample_interval="100ms", measure={"from": "10s"},
                                          link={"delay": "5ms", "loss": "0.5%"})))
    assert ir["ir_version"] == 4
    assert ir["duration_ns"] == 30 * S
    assert ir["seed"] == 7
    assert ir["sample_interval_ns"] == 100 * MS
    assert ir["measure"] == {"from_ns": 10 * S, "to_ns": 30 * S}  # to defaults to the duration
    assert ir["mss"] == 1448 and ir["header_bytes"] == 52
    assert ir["links"][0]["capacity"] == {"kind": "constant", "rate_bps": 50_000_000}
    assert ir["links"][0]["delay_ns"] == 5 * MS
    assert ir["links"][0]["loss"] == {"kind": "bernoulli", "p": pytest.approx(0.005)}
    assert ir["links"][0]["schedule"] == [] and ir["links"][0]["qdisc"] == {"kind": "droptail"}
    assert "policer" not in ir["links"][0], "absent without a policer: the IR and its hash stay as they were"
    assert ir["flows"][0]["ecn"] is False
    # the one-link form: the link "link" from "left" to "right", every flow on it, ACKs uncongested, Linux's receiver
    assert {k: ir["links"][0][k] for k in ("name", "from", "to")} == {"name": "link", "from": "left", "to": "right"}
    assert {k: ir["flows"][0][k] for k in ("path", "ack_path", "ack_every", "sack")} == {
        "path": ["link"], "ack_path": [], "ack_every": 2, "sack": True}
    # host: Linux's initial buffers; max(64 MiB, 4 × 50 Mbit/s × RTT + buffer) is the floor here
    assert ir["host"] == {"tcp_rmem": [4096, 131072, 64 << 20], "tcp_wmem": [4096, 16384, 64 << 20],
                          "rcv_truesize": 2304}


def test_defaults() -> None:
    scenario = Scenario(name="d", duration="10s", link=Link(rate="10Mbps"), flows=[FlowGroup(cca="reno", rtt="20ms")])
    assert (scenario.seed, scenario.sample_interval, scenario.mss) == (1, "10ms", 1448)
    assert (scenario.measure.from_, scenario.measure.to) == ("0s", None)
    link = scenario.link
    assert (link.delay, link.buffer, link.loss, link.qdisc, link.schedule) == ("0ms", "1bdp", 0.0, "droptail", [])
    group = scenario.flows[0]
    assert (group.count, group.start, group.stagger, group.stop, group.bytes, group.rwnd) == (1, "0s", "0s", None,
                                                                                               None, None)


def test_bdp_buffer_is_rate_times_min_rtt_rounded_up() -> None:
    # 1.75 × 80 Mbit/s × 25 ms / 8 = 1.75 × 80e6 × 0.025 / 8 = 437 500 bytes (docs/ir.md's example)
    ir = resolve(scenario_from_dict(small(link={"rate": "80Mbps", "buffer": "1.75bdp"},
                                          flows=[{"cca": "cubic", "rtt": "25ms"}, {"cca": "reno", "rtt": "60ms"}])))
    assert ir["links"][0]["buffer"] == {"bytes": 437_500, "packets": None}
    # 1.1 × 3 Mbit/s × 7 ms / 8 = 2887.5 bytes → rounded up to 2888 (never below the asked-for size)
    ir = resolve(scenario_from_dict(small(link={"rate": "3Mbps", "buffer": "1.1bdp"},
                                          flows=[{"cca": "cubic", "rtt": "7ms"}])))
    assert ir["links"][0]["buffer"]["bytes"] == 2888
    assert buffer_bytes_for_bdp("1.1", 3_000_000, 7 * MS) == 2888


def test_bdp_of_a_schedule_uses_the_initial_rate() -> None:
    # 1 × 10 Mbit/s × 50 ms / 8 = 62 500 bytes, whatever the later rate
    ir = resolve(scenario_from_dict(small(link={"rate": "10Mbps", "schedule": [{"at": "5s", "rate": "100Mbps"}]},
                                          flows=[{"cca": "cubic", "rtt": "50ms"}])))
    assert ir["links"][0]["buffer"]["bytes"] == 62_500


@pytest.mark.parametrize(("buffer", "expected"), [("64pkts", {"bytes": None, "packets": 64}),
                                                  ("100KB", {"bytes": 100_000, "packets": None}),
                                                  ("64KiB", {"bytes": 65_536, "packets": None})])
def test_fixed_buffers(buffer: str, expected: dict[str, Any]) -> None:
    assert resolve(scenario_from_dict(small(link={"buffer": buffer})))["links"][0]["buffer"] == expected


def test_groups_expand_with_sequential_ids_and_stagger() -> None:
    ir = resolve(scenario_from_dict(small(flows=[
        {"cca": "cubic", "count": 3, "rtt": "40ms", "start": "1s", "stagger": "2s"},
        {"cca": {"name": "reno"}, "count": 2, "rtt": "80ms", "stop": "25s", "bytes": "10MB", "rwnd": "64KiB"},
    ])))
    # start_ns is the explicit start: the configured one + the flow's random offset (start_offset, default 1 RTT)
    assert all(0 < f["start_offset_ns"] < f["rtt_ns"] for f in ir["flows"])
    summary = [(f["id"], f["group"], f["cca"], f["rtt_ns"], f["start_ns"] - f["start_offset_ns"], f["stop_ns"],
                f["bytes"], f["rwnd_bytes"]) for f in ir["flows"]]
    assert summary == [
        (0, 0, "cubic", 40 * MS, 1 * S, None, None, None),
        (1, 0, "cubic", 40 * MS, 3 * S, None, None, None),  # start + 1 × stagger
        (2, 0, "cubic", 40 * MS, 5 * S, None, None, None),  # start + 2 × stagger
        (3, 1, "reno", 80 * MS, 0, 25 * S, 10_000_000, 65_536),
        (4, 1, "reno", 80 * MS, 0, 25 * S, 10_000_000, 65_536),
    ]
    assert all(f["cca_params"] == {} for f in ir["flows"])


def test_cca_parameters_reach_the_ir(monkeypatch: pytest.MonkeyPatch) -> None:
    from cclab import cca_params

    gain = cca_params.Param(1 / 256, 64, hi_open=True)
    monkeypatch.setitem(cca_params.PARAMS, "bbr_test", {"cwnd_gain": gain, "pacing_gain": gain})
    ir = resolve(scenario_from_dict(small(flows=[{"cca": {"name": "bbr_test", "cwnd_gain": 1.5}, "rtt": "40ms"}])))
    assert ir["flows"][0]["cca"] == "bbr_test"
    assert ir["flows"][0]["cca_params"] == {"cwnd_gain": 1.5}


def test_schedule_and_loss_models_in_the_ir() -> None:
    ir = resolve(scenario_from_dict(small(link={
        "rate": "10Mbps",
        "loss": {"model": "gilbert-elliott", "p": 0.01, "r": 0.25, "h": 0.1},
        "schedule": [{"at": "10s", "rate": "20Mbps"}, {"at": "15s", "delay": "10ms", "loss": 0.01},
                     {"at": "20s", "loss": {"model": "bernoulli", "p": 0.02}}],
    })))
    assert ir["links"][0]["loss"] == {"kind": "gilbert_elliott", "p": 0.01, "r": 0.25, "h": 0.1, "k": 1.0}
    assert ir["links"][0]["schedule"] == [
        {"at_ns": 10 * S, "rate_bps": 20_000_000, "delay_ns": None, "loss": None},
        {"at_ns": 15 * S, "rate_bps": None, "delay_ns": 10 * MS, "loss": {"kind": "bernoulli", "p": 0.01}},
        {"at_ns": 20 * S, "rate_bps": None, "delay_ns": None, "loss": {"kind": "bernoulli", "p": 0.02}},
    ]


# --- traces --------------------------------------------------------------------------------------------

def test_bundled_traces_are_present_and_small() -> None:
    names = bundled_traces()
    assert {"Verizon-LTE-short.down", "Verizon-LTE-short.up", "TMobile-LTE-short.down"} <= set(names)
    assert sum((BUNDLED_TRACE_DIR / n).stat().st_size for n in names) < 5_000_000


def test_verizon_trace_mean_rate_and_bdp() -> None:
    trace = load_trace("traces/Verizon-LTE-short.down")
    # 58 655 opportunities × 1500 B × 8 / 140 s = 5 027 571.4 bit/s (the mean the trace is published with: 5.0 Mbps)
    assert len(trace.opportunities_ms) == 58_655 and trace.period_ms == 140_000
    assert trace.mean_rate_bps == pytest.approx(5_027_571.43, abs=0.01)
    link = {"trace": "traces/Verizon-LTE-short.down", "delay": "50ms", "buffer": "1bdp"}
    ir = resolve(scenario_from_dict({**small(flows=[{"cca": "cubic", "rtt": "100ms"}]), "link": link}))
    # 1 BDP = 5 027 571.43 bit/s × 0.1 s / 8 = 62 844.6 → 62 845 bytes
    assert ir["links"][0]["buffer"]["bytes"] == 62_845
    capacity = ir["links"][0]["capacity"]
    assert capacity["period_ns"] == 140 * S and capacity["bytes_per_opportunity"] == 1500
    assert capacity["opportunities_ns"][:4] == [0, 0, 1 * MS, 1 * MS]
    assert len(capacity["opportunities_ns"]) == 58_655


def test_small_trace_with_shared_milliseconds(tmp_path: Path) -> None:
    (tmp_path / "t.trace").write_text("0\n0\n5\n10\n")
    trace = load_trace("t.trace", tmp_path)
    # 4 opportunities × 1500 B × 8 per 10 ms = 4.8 Mbit/s
    assert trace.mean_rate_bps == pytest.approx(4_800_000)
    assert trace.opportunities_ns == [0, 0, 5 * MS, 10 * MS] and trace.period_ns == 10 * MS


def test_trace_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "scen").mkdir()
    (tmp_path / "cwd").mkdir()
    (tmp_path / "scen" / "x.trace").write_text("0\n10\n")
    (tmp_path / "cwd" / "x.trace").write_text("0\n20\n")
    (tmp_path / "cwd" / "y.trace").write_text("0\n30\n")
    monkeypatch.chdir(tmp_path / "cwd")
    assert find_trace("x.trace", tmp_path / "scen") == (tmp_path / "scen" / "x.trace").resolve()  # scenario dir first
    assert find_trace("y.trace", tmp_path / "scen") == (tmp_path / "cwd" / "y.trace").resolve()   # then the CWD
    assert find_trace(str(tmp_path / "scen" / "x.trace")) == (tmp_path / "scen" / "x.trace").resolve()  # absolute
    bundled = BUNDLED_TRACE_DIR / "Verizon-LTE-short.up"
    assert find_trace("Verizon-LTE-short.up", tmp_path / "scen") == bundled  # bundled, by name
    assert find_trace("traces/Verizon-LTE-short.up", tmp_path / "scen") == bundled  # or as traces/NAME


def test_trace_relative_to_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "my.trace").write_text("0\n1\n2\n")
    (tmp_path / "s.toml").write_text('duration = "1s"\n[link]\ntrace = "my.trace"\nbuffer = "10pkts"\n'
                                     '[[flows]]\ncca = "cubic"\nrtt = "10ms"\n')
    scenario = load_scenario(tmp_path / "s.toml")
    assert scenario.name == "s"  # defaults to the file's stem
    assert scenario.base_dir == tmp_path.resolve()
    assert resolve(scenario)["links"][0]["capacity"]["opportunities_ns"] == [0, MS, 2 * MS]


# --- hashing ----------------------------------------------------------------------------------------------

def test_ir_hash_is_stable_and_content_addressed(tmp_path: Path) -> None:
    ir = resolve(scenario_from_dict(small()))
    digest = ir_hash(ir)
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert ir_hash(json.loads(json.dumps(ir))) == digest  # key order does not matter
    assert ir_hash(resolve(scenario_from_dict(small(seed=2)))) != digest
    # the trace's location is provenance, not content
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / "t.trace").write_text("0\n5\n10\n")
    hashes = {ir_hash(resolve(scenario_from_dict({**small(), "link": {"trace": "t.trace"}}, tmp_path / d)))
              for d in ("a", "b")}
    assert len(hashes) == 1


# --- Python ⇔ TOML ---------------------------------------------------------------------------------------

PYTHON_TOML = '''
name = "py"
duration = "60s"
seed = 3
measure = { from = "20s", to = "50s" }

[link]
rate = "80Mbps"
buffer = "1.75bdp"
loss = { model = "gilbert-elliott", p = 0.01, r = 0.5 }
schedule = [{ at = "30s", rate = "40Mbps" }]

[[flows]]
cca = "cubic"
count = 2
rtt = "25ms"
stagger = "2s"

[[flows]]
cca = { name = "reno" }
rtt = "50ms"
start = "5s"
stop = "45s"
bytes = "100MB"
rwnd = "4MB"
'''


def python_scenario() -> Scenario:
    return Scenario(
        name="py",
        duration="60s",
        seed=3,
        measure=Measure(from_="20s", to="50s"),
        link=Link(rate="80Mbps", buffer="1.75bdp", loss=LossModel(model="gilbert-elliott", p=0.01, r=0.5),
                  schedule=[ScheduleEntry(at="30s", rate="40Mbps")]),
        flows=[
            FlowGroup(cca="cubic", count=2, rtt="25ms", stagger="2s"),
            FlowGroup(cca=Cca(name="reno"), rtt="50ms", start="5s", stop="45s", bytes="100MB", rwnd="4MB"),
        ],
    )


def test_python_scenario_equals_the_equivalent_toml(tmp_path: Path) -> None:
    path = tmp_path / "py.toml"
    path.write_text(PYTHON_TOML)
    loaded = load_scenario(path)
    built = python_scenario()
    assert built == loaded  # the directory a scenario came from does not take part
    assert resolve(built) == resolve(loaded)
    assert built.link.rate == "80Mbps"  # the user's strings are kept


def test_to_toml_round_trips() -> None:
    built = python_scenario()
    text = built.to_toml()
    assert "base_dir" not in text
    again = scenario_from_dict(tomllib.loads(text))
    assert again == built
    assert tomllib.loads(text)["flows"][1]["cca"] == {"name": "reno"}


# --- examples ----------------------------------------------------------------------------------------------

def test_all_examples_are_here() -> None:
    assert {p.name for p in EXAMPLES} >= {"cubic-vs-reno.toml", "bbr-vs-cubic.toml", "verizon-trace.toml",
                                          "rate-step.toml", "finite-flows.toml"}


@pytest.mark.usefixtures("engine_with_bbr")
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_loads_resolves_and_round_trips(path: Path) -> None:
    scenario = load_scenario(path)
    ir = resolve(scenario)
    assert ir["name"] == path.stem
    assert scenario_from_dict(tomllib.loads(scenario.to_toml()), scenario.base_dir) == scenario


@pytest.mark.usefixtures("engine_with_bbr")
def test_example_values() -> None:
    ir = resolve(load_scenario(REPO / "examples" / "bbr-vs-cubic.toml"))
    assert ir["links"][0]["buffer"]["bytes"] == 437_500  # 1.75 × 80e6 × 0.025 / 8
    assert [f["cca"] for f in ir["flows"]].count("bbr") == 2
    assert ir["measure"] == {"from_ns": 20 * S, "to_ns": 60 * S}
    ir = resolve(load_scenario(REPO / "examples" / "cubic-vs-reno.toml"))
    assert ir["links"][0]["buffer"]["bytes"] == 250_000  # 50e6 × 0.040 / 8
    assert ir["duration_ns"] == 30 * S and {f["cca"] for f in ir["flows"]} == {"cubic", "reno"}
    ir = resolve(load_scenario(REPO / "examples" / "rate-step.toml"))
    assert [c["rate_bps"] for c in ir["links"][0]["schedule"]] == [20_000_000, 10_000_000]


def test_host_buffers_cover_the_largest_bdp() -> None:
    # docs/ir.md `host`: tcp_rmem/wmem max = max(64 MiB, 4 × highest rate × longest RTT + buffer),
    # so no socket buffer caps a flow; keys as the Rust `Host` struct.
    ir = resolve(scenario_from_dict(small(link={"rate": "1Gbps", "buffer": "10MB"},
                                          flows=[{"cca": "cubic", "rtt": "200ms"}])))
    expected_max = 4 * 10**9 * 200 * MS // (8 * S) + 10_000_000
    assert ir["host"]["tcp_rmem"] == [4096, 131072, expected_max]
    assert ir["host"]["tcp_wmem"] == [4096, 16384, expected_max]
    # jitter_ns, pauses and read_delay_ns are optional (absent without [host] jitter / pauses /
    # read_delay; docs/ir.md), and so are jitter_p / read_delay_p (present for a histogram only)
    optional = {"jitter_ns", "jitter_p", "pauses", "read_delay_ns", "read_delay_p"}
    assert set(ir["host"]) | optional == rust_fields("Host")
    hist = {"histogram": {"bin": "10us", "counts": [3, 1]}}
    both = resolve(scenario_from_dict(small(host={"jitter": hist,
                                                  "pauses": {"every": "300ms", "durations": ["1ms", "2ms"]},
                                                  "read_delay": hist})))
    assert set(both["host"]) == rust_fields("Host")
    assert set(both["host"]["pauses"]) == rust_fields("HostPauses")


def test_a_deep_buffer_in_packets_or_bytes_gets_socket_buffers_that_cover_it() -> None:
    # 1 Gbit/s × 40 ms (BDP 5 MB) with a 15-BDP queue: the receive window (socket memory × 160/256,
    # tcp_win_from_space at 1448 / 2304 bytes) must cover BDP + buffer, so the maximum is (BDP +
    # buffer) × 256/160 — not 4 × BDP + buffer, which capped the flow at ~2/3 of the queue — and a buffer
    # given in packets counts as those packets' bytes, not as nothing.
    def host(buffer: str) -> dict[str, Any]:
        return resolve(scenario_from_dict(small(link={"rate": "1Gbps", "buffer": buffer},
                                                flows=[{"cca": "reno", "rtt": "40ms"}])))["host"]

    by_packets, by_bytes = host("50000pkts"), host("75MB")
    assert by_packets == by_bytes
    assert by_bytes["tcp_rmem"][2] == (5_000_000 + 75_000_000) * 256 // 160  # scaling_ratio 160/256
    assert by_bytes["tcp_rmem"][2] * 160 // 256 >= 80_000_000
    # up to ~4 BDP of buffer 4 × BDP + buffer already covers it, and stays (IR hashes unchanged):
    # 10 Gbit/s × 40 ms, BDP 50 MB
    deep = resolve(scenario_from_dict(small(link={"rate": "10Gbps", "buffer": "4bdp"},
                                            flows=[{"cca": "reno", "rtt": "40ms"}])))["host"]
    assert deep["tcp_rmem"][2] == 4 * 50_000_000 + 4 * 50_000_000


@pytest.mark.parametrize(("mss", "truesize"), [(88, 2304), (1448, 2304), (1612, 2304), (1613, 4352),
                                               (4000, 8448), (8948, 16640)])
def test_the_receive_truesize_follows_the_mss(mss: int, truesize: int) -> None:
    # measured 2304 bytes at the default MSS (and the same by Linux's allocation rule from 589 to
    # 1612); jumbo segments: kmalloc's next size for NET_SKB_PAD + packet + skb_shared_info, plus
    # struct sk_buff (resolve.rcv_truesize). The engine needs at least one segment's worth.
    ir = resolve(scenario_from_dict(small(mss=mss)))
    assert ir["host"]["rcv_truesize"] == truesize >= mss


# --- queue disciplines (docs/queues.md) ----------------------------------------------------------------

@pytest.mark.parametrize(("name", "struct"), [("red", "RedConfig"), ("codel", "CodelConfig"),
                                              ("fq_codel", "FqCodelConfig"), ("pie", "PieConfig")])
def test_qdisc_keys_match_the_rust_definition(name: str, struct: str) -> None:
    ir = resolve(scenario_from_dict(small(link={"qdisc": name})))
    assert ir["links"][0]["qdisc"]["kind"] == name
    assert set(ir["links"][0]["qdisc"]) - {"kind"} == rust_fields(struct)


def test_qdisc_defaults_are_linux_and_rfc_values() -> None:
    def q(spec: Any) -> dict[str, Any]:
        return resolve(scenario_from_dict(small(link={"qdisc": spec})))["links"][0]["qdisc"]

    for plain in ("droptail", "drop_front", "random_drop"):
        assert q(plain) == {"kind": plain}
    # sch_fq_codel.c fq_codel_init / RFC 8290 §5.2; MAXPACKET = the link's packet (1448 + 52)
    assert q("fq_codel") == {"kind": "fq_codel", "target_ns": 5 * MS, "interval_ns": 100 * MS, "mtu_bytes": 1500,
                             "ecn": True, "quantum_bytes": 1514, "flows": 1024, "memory_limit_bytes": 32 << 20,
                             "drop_batch": 64}
    assert q({"name": "codel", "target": "2ms", "ecn": True}) == {
        "kind": "codel", "target_ns": 2 * MS, "interval_ns": 100 * MS, "mtu_bytes": 1500, "ecn": True}
    # include/net/pie.h pie_params_init, RFC 8033 §4.2/§4.4
    assert q("pie") == {"kind": "pie", "target_ns": 15 * MS, "tupdate_ns": 15 * MS, "alpha": 0.125, "beta": 1.25,
                        "max_burst_ns": 150 * MS, "mtu_bytes": 1500, "ecn": False, "bytemode": False}
    # tc q_red.c on a 1-BDP buffer of 50 Mbit/s × 40 ms = 250 000 B: max = limit/4 = 62 500, min = max/3 = 20 833,
    # burst = (2·min + max)/(3·1000) = 34 → tc_red_eval_ewma: Wlog 4 (w = 1/16); bandwidth = the link's rate
    assert q("red") == {"kind": "red", "min_th_bytes": 20_833, "max_th_bytes": 62_500, "max_p": 0.02,
                        "weight": 0.0625, "avpkt_bytes": 1000, "bandwidth_bps": 50_000_000, "gentle": False,
                        "ecn": False, "harddrop": False}
    red = q({"name": "red", "min_th": "30KB", "max_p": 0.1, "gentle": True, "ecn": True})
    assert (red["min_th_bytes"], red["max_th_bytes"], red["max_p"], red["gentle"]) == (30_000, 90_000, 0.1, True)


def test_qdisc_spellings_and_the_old_aqm_field() -> None:
    table = scenario_from_dict(small(link={"qdisc": {"name": "codel", "target": "3ms"}}))
    assert table.link.qdisc_name == "codel" and table.link.qdisc_params == {"target": "3ms"}
    # the TOML form round-trips (a bare name when there are no parameters)
    assert table.to_dict()["link"]["qdisc"] == {"name": "codel", "target": "3ms"}
    assert scenario_from_dict(small(link={"qdisc": {"name": "pie"}})).to_dict()["link"]["qdisc"] == "pie"
    # link.aqm, the old free string, is read as qdisc — never ignored
    old = scenario_from_dict(small(link={"aqm": "droptail"}))
    assert old.link.qdisc == "droptail" and "aqm" not in old.to_dict()["link"]
    assert resolve(old)["links"][0]["qdisc"] == {"kind": "droptail"}
    assert resolve(scenario_from_dict(small(link={"aqm": "fq_codel"})))["links"][0]["qdisc"]["kind"] == "fq_codel"
    # ecn per flow group
    ir = resolve(scenario_from_dict(small(flows=[{"cca": "cubic", "rtt": "40ms", "ecn": True, "count": 2},
                                                 {"cca": "reno", "rtt": "40ms"}])))
    assert [f["ecn"] for f in ir["flows"]] == [True, True, False]


def _v3(ir: dict[str, Any]) -> dict[str, Any]:
    """A current one-link IR written as IR version 3 wrote it (by hand, not through cclab.resolve)."""
    v3 = json.loads(json.dumps(ir))
    v3["ir_version"] = 3
    link = v3.pop("links")[0]
    v3["link"] = {k: v for k, v in link.items() if k not in ("name", "from", "to")}
    for f in v3["flows"]:
        for key in ("path", "ack_path", "ack_every", "sack"):
            del f[key]
    return v3


def test_migrate_ir_turns_v2_and_v3_irs_into_the_current_one() -> None:
    from cclab.resolve import migrate_ir

    current = resolve(scenario_from_dict(small()))
    assert current["ir_version"] == 4
    v3 = _v3(current)
    assert migrate_ir(v3) == current
    assert v3["ir_version"] == 3 and "link" in v3, "the input is not modified"
    v2 = json.loads(json.dumps(v3))
    v2["ir_version"] = 2
    v2["link"]["aqm"] = v2["link"].pop("qdisc")["kind"]
    for f in v2["flows"]:
        del f["ecn"]
    assert migrate_ir(v2) == current
    assert v2["ir_version"] == 2 and "aqm" in v2["link"], "the input is not modified"
    assert migrate_ir(current) is current
    with pytest.raises(ValueError, match="no qdisc equivalent"):
        migrate_ir({**v2, "link": {**v2["link"], "aqm": "codel"}})


def test_ir_hash_of_a_one_link_scenario_is_its_v3_hash_and_topologies_differ() -> None:
    """The content address of a scenario written before topologies is unchanged (a stored sweep
    resumes: tests/test_golden.py), and nothing that version 3 could not express shares it."""
    ir = resolve(scenario_from_dict(small()))
    v3 = _v3(ir)
    assert ir_hash(ir) == ir_hash(v3) == hashlib.sha256(canonical_json(v3).encode()).hexdigest()
    for change in ({"ack_every": 1}, {"sack": False}, {"path": ["x"]}):
        other = json.loads(json.dumps(ir))
        other["flows"][0].update(change)
        assert ir_hash(other) != ir_hash(ir), change
    renamed = json.loads(json.dumps(ir))
    renamed["links"][0]["name"] = "core"
    renamed["flows"][0]["path"] = ["core"]
    assert ir_hash(renamed) != ir_hash(ir)


def test_policer_resolves_and_rejects_a_bucket_below_one_packet() -> None:
    ir = resolve(scenario_from_dict(small(link={"policer": {"rate": "5Mbps", "burst": "30KB"}})))
    assert ir["links"][0]["policer"] == {"rate_bps": 5_000_000, "burst_bytes": 30_000}
    assert set(ir["links"][0]["policer"]) == rust_fields("PolicerConfig")
    assert set(ir["links"][0]) == rust_fields("Link")
    with pytest.raises(ScenarioError, match=r"^link\.policer\.burst: '1KB' is less than one packet .*1500 bytes"):
        resolve(scenario_from_dict(small(link={"policer": {"rate": "5Mbps", "burst": "1KB"}})))
    with pytest.raises(ScenarioError, match=r"^link\.policer\.rate: '2Tbps' is above the simulator's highest rate"):
        resolve(scenario_from_dict(small(link={"policer": {"rate": "2Tbps", "burst": "30KB"}})))


def test_socket_buffers_beyond_what_linux_can_set_are_refused() -> None:
    # Linux's tcp_rmem/tcp_wmem are C ints: 1 Gbit/s × 1 s with a 20-BDP buffer needs 4.2 GB, which
    # the resolver used to accept (below 4 GiB) and the kernel backend then failed on with EINVAL
    with pytest.raises(ScenarioError, match=r"needs socket buffers of 4,200,000,000 bytes .*more than the 2 GiB"):
        resolve(scenario_from_dict(small(link={"rate": "1Gbps", "buffer": "20bdp"},
                                         flows=[{"cca": "cubic", "rtt": "1s"}])))
    ok = resolve(scenario_from_dict(small(link={"rate": "10Gbps", "buffer": "1bdp"},
                                          flows=[{"cca": "cubic", "rtt": "300ms"}])))  # the example the error gives
    assert ok["host"]["tcp_rmem"][2] < 2**31


@pytest.mark.parametrize(("rwnd", "ok"), [("3000B", False), ("64KB", False), ("10KB", False), ("1448B", True),
                                          ("2048B", True), ("64KiB", True), ("4MB", True), ("3MiB", True)])
def test_an_rwnd_that_would_lose_segments_to_the_window_scale_is_refused(rwnd: str, ok: bool) -> None:
    # a window on the wire counts in 2048-byte units here (window scale 11 for the 64 MiB floor), and
    # the kernel backend's emulator writes rwnd rounded down to them (at least one): 3000 B held 2
    # segments and ran as 2048 B, 1; 4 MB rounds by 256 bytes and keeps its 2762 segments
    data = small(link={"rate": "20Mbps", "buffer": "1bdp"}, flows=[{"cca": "cubic", "rtt": "40ms", "rwnd": rwnd}])
    if ok:
        assert resolve(scenario_from_dict(data))["flows"][0]["rwnd_bytes"] > 0
    else:
        with pytest.raises(ScenarioError, match=r"^flows\[0\]\.rwnd: .* would lose segments on the wire: a window "
                                                r"counts in 2048-byte units .*expected a value whose full segments"):
            resolve(scenario_from_dict(data))
