"""Topologies in the schema and the IR (docs/topologies.md): named links, paths, ACK paths,
the RTT rule, BDP buffers per link, and one line for every bad topology."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest

from cclab.errors import ScenarioError, ScenarioWarning
from cclab.resolve import resolve
from cclab.scenario import load_scenario, scenario_from_dict

MS = 1_000_000


def line(**flow: Any) -> dict[str, Any]:
    """Two links in a row, a → b → c, and one flow over both."""
    return {
        "name": "line",
        "duration": "10s",
        "links": {
            "ab": {"from": "a", "to": "b", "rate": "100Mbps", "delay": "10ms", "buffer": "1bdp"},
            "bc": {"from": "b", "to": "c", "rate": "10Mbps", "delay": "5ms", "buffer": "100pkts"},
        },
        "flows": [{"cca": "cubic", "path": ["ab", "bc"], **flow}],
    }


def duplex() -> dict[str, Any]:
    """One wire both ways (fwd: l → r, back: r → l) and a flow each way whose ACKs share the other's link."""
    return {
        "name": "duplex",
        "duration": "10s",
        "links": {
            "fwd": {"from": "l", "to": "r", "rate": "10Mbps", "delay": "10ms", "buffer": "1bdp"},
            "back": {"from": "r", "to": "l", "rate": "10Mbps", "delay": "10ms", "buffer": "2bdp"},
        },
        "flows": [
            {"cca": "cubic", "path": ["fwd"], "ack_path": ["back"]},
            {"cca": "reno", "path": ["back"], "ack_path": ["fwd"], "rtt": "60ms"},
        ],
    }


def fails(data: dict[str, Any]) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        resolve(scenario_from_dict(data))
    message = str(info.value)
    assert "\n" not in message and len(message) <= 500
    return info.value


# --- what a topology resolves to ---------------------------------------------------------------

def test_named_links_and_a_path_resolve_into_the_ir() -> None:
    ir = resolve(scenario_from_dict(line(rtt="50ms")))
    assert [(link["name"], link["from"], link["to"]) for link in ir["links"]] == [("ab", "a", "b"), ("bc", "b", "c")]
    assert ir["links"][1]["delay_ns"] == 5 * MS and ir["links"][1]["buffer"] == {"bytes": None, "packets": 100}
    flow = ir["flows"][0]
    assert flow["path"] == ["ab", "bc"] and flow["ack_path"] == [] and flow["rtt_ns"] == 50 * MS
    assert flow["ack_every"] == 2 and flow["sack"] is True
    # BDP of "ab": its rate × the min RTT of the flows crossing it
    assert ir["links"][0]["buffer"]["bytes"] == 100_000_000 * 50 * MS // 8 // 10**9


def test_rtt_defaults_to_the_round_trip_of_the_links() -> None:
    # uncongested return: twice the forward delay
    assert resolve(scenario_from_dict(line()))["flows"][0]["rtt_ns"] == 30 * MS
    # ACKs over links: the forward delay plus the ACK path's
    ir = resolve(scenario_from_dict(duplex()))
    assert [f["rtt_ns"] for f in ir["flows"]] == [20 * MS, 60 * MS]
    assert ir["flows"][0]["ack_path"] == ["back"] and ir["flows"][1]["ack_path"] == ["fwd"]


def test_bdp_buffer_uses_the_flows_that_cross_the_link_with_data_or_acks() -> None:
    data = duplex()
    data["flows"].append({"cca": "cubic", "path": ["fwd"], "rtt": "200ms"})
    ir = resolve(scenario_from_dict(data))
    # both cross "fwd" (the first with data, the second with its ACKs): min RTT 20 ms
    assert ir["links"][0]["buffer"]["bytes"] == 10_000_000 * 20 * MS // 8 // 10**9
    assert ir["links"][1]["buffer"]["bytes"] == 2 * 10_000_000 * 20 * MS // 8 // 10**9


def test_the_one_link_form_is_the_link_named_link() -> None:
    data = {"name": "one", "duration": "5s", "link": {"rate": "10Mbps", "delay": "5ms"},
            "flows": [{"cca": "cubic", "rtt": "40ms", "path": ["link"]}]}
    ir = resolve(scenario_from_dict(data))
    assert ir["links"][0]["name"] == "link" and ir["flows"][0]["path"] == ["link"]
    del data["flows"][0]["path"]
    assert resolve(scenario_from_dict(data)) == ir


def test_endpoint_options_resolve() -> None:
    ir = resolve(scenario_from_dict(line(delayed_ack=False, sack=False)))
    assert ir["flows"][0]["ack_every"] == 1 and ir["flows"][0]["sack"] is False
    assert resolve(scenario_from_dict(line(ack_every=4)))["flows"][0]["ack_every"] == 4
    error = fails(line(ack_every=3, delayed_ack=False))
    assert error.field == "flows[0].ack_every" and "contradicts delayed_ack = false" in str(error)


def test_a_topology_round_trips_through_toml(tmp_path) -> None:
    scenario = scenario_from_dict(duplex())
    path = tmp_path / "duplex.toml"
    path.write_text(scenario.to_toml())
    again = load_scenario(path)
    assert again == scenario
    assert resolve(again) == resolve(scenario)
    assert "[links.fwd]" in scenario.to_toml()


# --- bad topologies: one line each -------------------------------------------------------------

def test_unknown_link_in_a_path() -> None:
    error = fails(line(path=["ab", "cb"]))
    assert str(error) == "flows[0].path[1]: 'cb' is not a link of this scenario; the scenario's links: ab, bc"


def test_empty_path() -> None:
    error = fails(line(path=[]))
    assert error.field == "flows[0].path" and "[] is empty" in str(error)


def test_an_empty_ack_path_is_the_documented_default() -> None:
    # docs/topologies.md: ack_path defaults to [] — an uncongested return; written out, it is the same scenario
    data = {"name": "a", "duration": "2s", "link": {"rate": "10Mbps", "buffer": "1bdp"},
            "flows": [{"cca": "cubic", "rtt": "20ms"}]}  # fmt: skip
    written = copy.deepcopy(data)
    written["flows"][0]["ack_path"] = []
    assert resolve(scenario_from_dict(written)) == resolve(scenario_from_dict(data))
    assert resolve(scenario_from_dict(line(ack_path=[])))["flows"][0]["ack_path"] == []


def test_a_path_that_repeats_a_link() -> None:
    data = line(path=["ab", "bc", "ab"])
    data["links"]["bc"]["to"] = "a"  # a ring, so only the repetition is wrong
    error = fails(data)
    assert str(error) == ("flows[0].path: link 'ab' appears twice; expected each link at most once on a path")


def test_a_path_that_is_not_connected() -> None:
    data = line(path=["bc", "ab"])
    error = fails(data)
    assert error.field == "flows[0].path[1]"
    assert "link 'ab' starts at node 'a', not at 'c' where 'bc' ends" in str(error)


def test_an_ack_path_that_does_not_end_at_the_sender() -> None:
    data = duplex()
    data["links"]["side"] = {"from": "r", "to": "x", "rate": "10Mbps"}
    data["flows"][0]["ack_path"] = ["side"]
    error = fails(data)
    assert str(error).startswith("flows[0].ack_path: does not end at the sender: it ends at node 'x' (link 'side'), "
                                 "the sender is at 'l' where the data path starts")
    data["flows"][0]["ack_path"] = ["fwd"]  # starts at l, where the data path starts, not where it ends
    assert "starts at node 'l' (link 'fwd'), not at 'r' where the data path ends" in str(fails(data))
    data["flows"][0]["ack_path"] = []  # the default written out (an uncongested return), not an error
    del data["links"]["side"]
    assert resolve(scenario_from_dict(data))["flows"][0]["ack_path"] == []


def test_several_links_need_a_path() -> None:
    data = line()
    del data["flows"][0]["path"]
    error = fails(data)
    assert error.field == "flows[0].path" and "required field missing" in str(error)


def test_rtt_below_the_propagation_delay_of_the_path_and_ack_path() -> None:
    error = fails(line(rtt="14ms"))
    assert str(error) == ("flows[0].rtt: '14ms' is less than the propagation delay of its links at 0 s "
                          "(15ms over ab, bc); expected rtt ≥ 15ms (the RTT includes every link's delay on its paths)")
    data = duplex()
    data["flows"][0]["rtt"] = "19ms"
    assert "(10ms over fwd + 10ms back over back)" in str(fails(data))


def test_a_link_no_flow_crosses_is_a_warning() -> None:
    data = line()
    data["links"]["spare"] = {"from": "c", "to": "d", "rate": "1Mbps"}
    with pytest.warns(ScenarioWarning, match=r"^links.spare: no flow crosses this link"):
        resolve(scenario_from_dict(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resolve(scenario_from_dict(line()))  # every link used: no warning


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ({"link": {"rate": "1Mbps"}}, "links", "both [link] and [links.NAME] are given"),
        ({"links": {}}, "links", "is not a table of named links"),
        ({"links.ab.from": "b"}, "links.ab.to", "'b' is also the link's from node"),
        ({"links.ab.to": "b c"}, "links.ab.to", "is not a usable node name"),
        ({"links.ab.from": None}, "links.ab.from", "required field missing"),
        ({"links.ab.rat": "1Mbps"}, "links.ab.rat", "unknown field"),
        ({"links.ab.rate": "1Mpbs"}, "links.ab.rate", "is not a rate"),
        ({"flows[0].path": "ab"}, "flows[0].path", "is not a list of link names"),
        ({"flows[0].path": ["ab", 3]}, "flows[0].path[1]", "is not a link name"),
        ({"flows[0].sack": "no"}, "flows[0].sack", "is not true or false"),
        ({"flows[0].ack_every": 0}, "flows[0].ack_every", "out of range"),
    ],
)
def test_schema_errors_name_the_field(change: dict[str, Any], field: str, problem: str) -> None:
    data = copy.deepcopy(line())
    for key, value in change.items():
        if key in ("link", "links"):
            data[key] = value
            continue
        *parents, last = key.replace("[0]", ".0").split(".")
        target: Any = data
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is None:
            del target[last]
        else:
            target[last] = value
    error = fails(data)
    assert error.field == field and problem in str(error), str(error)


def test_link_names_must_be_usable() -> None:
    data = line()
    data["links"]["a.b"] = data["links"].pop("ab")
    error = fails(data)
    assert error.field == "links.a.b" and "is not a usable link name" in str(error)


def test_the_simulator_runs_ack_every() -> None:
    import json

    from cclab import _native

    data = line(delayed_ack=False)
    data["duration"] = "2s"
    out = _native.simulate(json.dumps(resolve(scenario_from_dict(data))))
    assert out["flows"]["delivered_bytes"][-1] > 0


def test_the_simulator_runs_sack_off_as_newreno_recovery() -> None:
    """sack = false: the receiver sends plain duplicate ACKs, the sender recovers one hole per
    round trip (NewReno, RFC 6582). On a shallow buffer with several drops per loss episode it
    recovers more slowly than with SACK, retransmits, and still fills most of the link."""
    import cclab

    def run(sack: bool) -> dict:
        data = {"name": f"sack-{sack}", "duration": "20s", "seed": 1, "measure": {"from": "5s"},
                "link": {"rate": "20Mbps", "delay": "0ms", "buffer": "0.5bdp"},
                "flows": [{"cca": "cubic", "rtt": "20ms", "count": 2, "sack": sack}]}  # fmt: skip
        return cclab.run(data, plot=False).summary["aggregate"]

    with_sack, without = run(True), run(False)
    print(f"2 CUBIC, 20 Mbit/s, 20 ms, 0.5 BDP: SACK {with_sack['goodput_bps'] / 1e6:.2f} Mbit/s "
          f"({with_sack['retrans_rate']:.3%} retransmitted), no SACK {without['goodput_bps'] / 1e6:.2f} "
          f"({without['retrans_rate']:.3%})")
    assert without["retrans_rate"] > 0
    assert 0.8 * 20e6 < without["goodput_bps"] <= 20e6
    assert without != with_sack
