"""Every class of bad scenario gives one ScenarioError line naming the field, the value and what is allowed.

Errors surface either when the scenario is built (each field on its own) or
when it is resolved (checks across fields); users meet both through
``resolve(load_scenario(path))``, which is what ``fails`` does.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from cclab.errors import ScenarioError
from cclab.resolve import resolve
from cclab.scenario import FlowGroup, Link, Scenario, load_scenario, scenario_from_dict

BASE: dict[str, Any] = {
    "name": "t",
    "duration": "30s",
    "link": {"rate": "50Mbps", "buffer": "1bdp"},
    "flows": [{"cca": "cubic", "rtt": "40ms"}],
}


def variant(changes: dict[str, Any], remove: tuple[str, ...] = ()) -> dict[str, Any]:
    """BASE with dotted-path changes, e.g. ``{"link.rate": "0Mbps", "flows[0].count": 0}``."""
    data = copy.deepcopy(BASE)
    for path, value in [*changes.items(), *[(p, KeyError) for p in remove]]:
        node: Any = data
        parts = path.replace("[", ".").replace("]", "").split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        if value is KeyError:
            node.pop(parts[-1])
        else:
            node[parts[-1]] = value
    return data


def fails(data: dict[str, Any], base_dir: Path | None = None) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        resolve(scenario_from_dict(data, base_dir))
    return info.value


def check(error: ScenarioError, field: str, value: str, allowed: str) -> str:
    """The message is one line: ``field: …value…; …allowed…``."""
    message = str(error)
    assert "\n" not in message, message
    assert error.field == field, message
    assert message.startswith(f"{field}: ") or f": {field}: " in message, message
    assert value in message, message
    assert allowed in message, message
    assert "Traceback" not in message and "pydantic" not in message, message
    return message


# --- structure -----------------------------------------------------------------------------------

def test_unknown_field_in_link_lists_the_allowed_fields() -> None:
    error = fails(variant({"link.rat": "50Mbps"}, remove=("link.rate",)))
    assert str(error) == "link.rat: unknown field; allowed: rate, trace, schedule, delay, buffer, loss, qdisc, policer"
    assert error.value == "rat"


@pytest.mark.parametrize(
    ("changes", "field", "allowed"),
    [
        ({"durations": "30s"}, "durations",
         "allowed: name, duration, seed, sample_interval, mss, measure, start_offset, record, link, links, flows"),
        ({"flows[0].ctt": "40ms"}, "flows[0].ctt", "allowed: cca, count, rtt, start, stagger, stop, bytes, rwnd"),
        ({"measure": {"form": "1s"}}, "measure.form", "allowed: from, to"),
        ({"link.schedule": [{"at": "1s", "rat": "1Mbps"}]}, "link.schedule[0].rat", "allowed: at, rate, delay, loss"),
    ],
)
def test_unknown_fields_everywhere(changes: dict[str, Any], field: str, allowed: str) -> None:
    check(fails(variant(changes)), field, "unknown field", allowed)


@pytest.mark.parametrize(("path", "hint"), [("duration", 'duration = "60s"'), ("flows[0].rtt", 'rtt = "25ms"'),
                                            ("flows[0].cca", 'cca = "cubic"')])
def test_missing_required_field(path: str, hint: str) -> None:
    check(fails(variant({}, remove=(path,))), path, "required field missing", hint)


def test_missing_fields_say_what_is_expected() -> None:
    # a link without `to`, a loss table without `model`: the error says what to write, as the others do
    data = {k: v for k, v in BASE.items() if k != "link"}
    data["links"] = {"a": {"from": "l", "rate": "10Mbps"}}
    data["flows"] = [{**BASE["flows"][0], "path": ["a"]}]
    check(fails(data), "links.a.to", "required field missing", 'to = "right"')
    message = check(fails(variant({"link.loss": {"p": 0.1}})), "link.loss.model", "required field missing",
                    'model = "bernoulli"')
    assert '"gilbert-elliott"' in message


def test_wrong_type_for_a_table() -> None:
    check(fails(variant({"link": "50Mbps"})), "link", "'50Mbps' is not a table", "rate, trace, schedule")


def test_empty_flows() -> None:
    check(fails(variant({"flows": []})), "flows", "[]", "[[flows]]")


@pytest.mark.parametrize(("field", "value"), [("seed", -1), ("seed", "1"), ("seed", 1.5), ("mss", 20), ("mss", 9001)])
def test_bad_integers(field: str, value: Any) -> None:
    check(fails(variant({field: value})), field, repr(value), "expected an integer from")


# --- algorithms -------------------------------------------------------------------------------------

def test_unknown_algorithm_lists_the_engines_algorithms() -> None:
    error = fails(variant({"flows": [{"cca": "cubic", "rtt": "40ms"}, {"cca": "bbrr", "rtt": "40ms"}]}))
    message = check(error, "flows[1].cca", "'bbrr'", "allowed: ")
    assert "cubic" in message and "reno" in message


def test_unknown_cca_parameter() -> None:
    from cclab.scenario import known_algorithms

    error = fails(variant({"flows[0].cca": {"name": "cubic", "no_such_param": 0.7}}))
    allowed = known_algorithms()["cubic"]
    expected = f"allowed: {', '.join(allowed)}" if allowed else "cubic takes no parameters"
    check(error, "flows[0].cca.no_such_param", "unknown parameter of 'cubic'", expected)
    assert error.value == 0.7


def test_algorithm_without_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    from cclab import cca_params

    monkeypatch.setitem(cca_params.PARAMS, "plain", {})  # the one registry validation reads
    check(fails(variant({"flows[0].cca": {"name": "plain", "gain": 2}})), "flows[0].cca.gain",
          "unknown parameter of 'plain'", "plain takes no parameters")


def test_cca_parameter_must_be_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    from cclab import cca_params

    monkeypatch.setitem(cca_params.PARAMS, "fake", {"gain": cca_params.Param(0, 64), "switch": cca_params.Param(switch=True)})
    check(fails(variant({"flows[0].cca": {"name": "fake", "gain": "2"}})), "flows[0].cca.gain", "'2'",
          "finite numbers")
    check(fails(variant({"flows[0].cca": {"name": "fake", "gain": float("nan")}})), "flows[0].cca.gain", "nan",
          "finite numbers")
    # …known parameters are accepted; true/false are switches, stored as 1.0/0.0.
    group = scenario_from_dict(variant({"flows[0].cca": {"name": "fake", "gain": 2, "switch": True}})).flows[0]
    assert group.cca_params == {"gain": 2.0, "switch": 1.0}


# --- units ---------------------------------------------------------------------------------------------

def test_negative_rate() -> None:
    check(fails(variant({"link.rate": "-50Mbps"})), "link.rate", "'-50Mbps' is negative", "bps, kbps, Mbps or Gbps")


def test_zero_rate() -> None:
    check(fails(variant({"link.rate": "0Mbps"})), "link.rate", "'0Mbps' must be greater than zero", "Mbps")


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("link.rate", "80Mpbs", 'e.g. "80Mbps"'),
        ("link.rate", 80, 'e.g. "80Mbps"'),
        ("flows[0].rtt", "40msec", "ns, us, ms, s, min or h"),
        ("link.delay", "5", "ns, us, ms, s, min or h"),
        ("flows[0].bytes", "10Mb", "KiB, MiB, GiB"),
        ("link.buffer", "64pkst", '"64pkts"'),
        ("measure.from", "10 seconds", "ns, us, ms, s, min or h"),
        ("sample_interval", "0ms", "ns, us, ms, s, min or h"),
    ],
)
def test_unit_typos(field: str, value: Any, allowed: str) -> None:
    error = fails(variant({field: value}))
    check(error, field, repr(value), allowed)
    assert error.value == value


# --- link ------------------------------------------------------------------------------------------------

def test_no_capacity_and_two_capacities() -> None:
    check(fails(variant({}, remove=("link.rate",))), "link", "no capacity", "exactly one of rate")
    check(fails(variant({"link.trace": "Verizon-LTE-short.down"})), "link", "both rate and trace",
          "exactly one of rate")


@pytest.mark.parametrize(
    ("buffer", "shown"),
    [("1000B", "1000 bytes"), ("0.01bdp", "0.01 × link.rate '50Mbps' × min flow RTT 40ms = 2500 bytes")],
)
def test_buffer_below_one_packet(buffer: str, shown: str) -> None:
    # one packet on the wire = mss 1448 + 52 header bytes = 1500 bytes; 0.01 × 50e6 b/s × 0.04 s / 8 = 2500 B
    # is enough, so use a smaller rate for the BDP case.
    data = variant({"link.buffer": buffer, "link.rate": "2Mbps"} if "bdp" in buffer else {"link.buffer": buffer})
    error = fails(data)
    if "bdp" in buffer:
        shown = "0.01 × link.rate '2Mbps' × min flow RTT 40ms = 100 bytes"  # 0.01 × 2e6 × 0.04 / 8 = 100
    check(error, "link.buffer", shown, "at least one full packet: mss + 52 = 1500 bytes")


@pytest.mark.parametrize(
    ("loss", "field", "shown", "allowed"),
    [
        (1.0, "link.loss", "1.0 is out of range", "[0, 1)"),
        (-0.01, "link.loss", "-0.01 is out of range", "[0, 1)"),
        ("5", "link.loss", "'5' is not a probability", '"1%"'),
        ("150%", "link.loss", "'150%' is out of range", "[0, 1)"),
        ({"model": "gilbert", "p": 0.1, "r": 0.5}, "link.loss.model", "'gilbert' is not a loss model",
         "allowed: gilbert-elliott, bernoulli"),
        ({"model": "gilbert-elliott", "p": 0.1, "r": 0.0}, "link.loss.r", "0.0 is out of range", "(0, 1]"),
        ({"model": "gilbert-elliott", "p": 0.1}, "link.loss.r", "required field missing", "(0, 1]"),
        ({"model": "gilbert-elliott", "p": 0.1, "r": 0.5, "q": 1}, "link.loss.q", "unknown field",
         "allowed: model, p, r, h, k"),
        ({"model": "bernoulli", "p": 0.1, "r": 0.5}, "link.loss.r", "not a parameter of the bernoulli model",
         "allowed: p"),
    ],
)
def test_bad_loss(loss: Any, field: str, shown: str, allowed: str) -> None:
    check(fails(variant({"link.loss": loss})), field, shown, allowed)


QDISCS = "allowed: droptail, drop_front, random_drop, red, codel, fq_codel, pie"


def test_old_aqm_field_is_migrated_or_refused_never_ignored() -> None:
    check(fails(variant({"link.aqm": "tail"})), "link.aqm", "'tail' is not a queue discipline", QDISCS)
    message = check(fails(variant({"link.aqm": "droptail", "link.qdisc": "codel"})), "link.aqm",
                    "old name of link.qdisc and both are given", "give only qdisc")
    assert "'droptail'" not in message or "link.aqm" in message


@pytest.mark.parametrize(
    ("qdisc", "field", "shown", "allowed"),
    [
        ("fq-codel", "link.qdisc", "'fq-codel' is not a queue discipline", QDISCS),
        (3, "link.qdisc", "3 is not a queue discipline", QDISCS),
        ({"name": "sfq"}, "link.qdisc.name", "'sfq' is not a queue discipline", QDISCS),
        ({"target": "5ms"}, "link.qdisc.name", "required field missing", QDISCS),
        ({"name": "codel", "target": "-5ms"}, "link.qdisc.target", "'-5ms'", "ms"),
        ({"name": "codel", "target": "0ms"}, "link.qdisc.target", "'0ms'", "ms"),
        ({"name": "codel", "quantum": "1514B"}, "link.qdisc.quantum", "unknown parameter of 'codel'",
         "allowed: target, interval, ecn"),
        ({"name": "droptail", "limit": 10}, "link.qdisc.limit", "unknown parameter of 'droptail'",
         "droptail takes no parameters"),
        ({"name": "codel", "ecn": "yes"}, "link.qdisc.ecn", "'yes' is not true or false", "expected true or false"),
        ({"name": "fq_codel", "flows": 0}, "link.qdisc.flows", "0 is out of range", "from 1 to 65536"),
        ({"name": "fq_codel", "flows": 2.5}, "link.qdisc.flows", "2.5 is not an integer", "from 1 to 65536"),
        ({"name": "fq_codel", "quantum": "100B"}, "link.qdisc.quantum", "'100B' is out of range",
         "from 256 to 2147483648 bytes"),
        ({"name": "fq_codel", "quantum": "3GiB"}, "link.qdisc.quantum", "'3GiB' is out of range",
         "from 256 to 2147483648 bytes"),
        # the upper bound is the one named (the lower, a packet, is checked against the mss: test_queues)
        ({"name": "fq_codel", "memory_limit": "3GiB"}, "link.qdisc.memory_limit", "'3GiB' is out of range",
         "at most 2147483648 bytes"),
        ({"name": "step", "k": "0pkts"}, "link.qdisc.k", "'0pkts' must be greater than zero", "not a BDP multiple"),
        ({"name": "red", "max_p": 1.5}, "link.qdisc.max_p", "1.5 is out of range", "(0, 1]"),
        ({"name": "red", "max_p": 0}, "link.qdisc.max_p", "0 is out of range", "(0, 1]"),
        ({"name": "pie", "alpha": 3}, "link.qdisc.alpha", "3 is out of range", "from 0 to 2"),
        ({"name": "pie", "beta": "1.25"}, "link.qdisc.beta", "'1.25' is not a number", "from 0 to 2"),
        ({"name": "pie", "tupdate": "15"}, "link.qdisc.tupdate", "'15'", "ms"),
    ],
)
def test_bad_qdisc(qdisc: Any, field: str, shown: str, allowed: str) -> None:
    check(fails(variant({"link.qdisc": qdisc})), field, shown, allowed)


@pytest.mark.parametrize(
    ("policer", "field", "shown", "allowed"),
    [
        ("5Mbps", "link.policer", "'5Mbps' is not a table", "expected a table with fields rate, burst"),
        ({"rate": "5Mbps"}, "link.policer.burst", "required field missing", 'burst = "30KB"'),
        ({"burst": "30KB"}, "link.policer.rate", "required field missing", 'rate = "5Mbps"'),
        ({"rate": "0Mbps", "burst": "30KB"}, "link.policer.rate", "'0Mbps' must be greater than zero", "Mbps"),
        ({"rate": "fast", "burst": "30KB"}, "link.policer.rate", "'fast'", "Mbps"),
        ({"rate": "5Mbps", "burst": "-3KB"}, "link.policer.burst", "'-3KB' is negative", "KB"),
        ({"rate": "5Mbps", "burst": "1KB"}, "link.policer.burst", "'1KB' is less than one packet",
         "at least one full packet: mss + 52 = 1500 bytes"),
        ({"rate": "5Mbps", "burst": "30KB", "peakrate": "10Mbps"}, "link.policer.peakrate", "unknown field",
         "allowed: rate, burst"),
    ],
)
def test_bad_policer(policer: Any, field: str, shown: str, allowed: str) -> None:
    check(fails(variant({"link.policer": policer})), field, shown, allowed)


def test_red_thresholds_are_checked_against_each_other_and_the_burst() -> None:
    check(fails(variant({"link.qdisc": {"name": "red", "min_th": "90KB", "max_th": "30KB"}})), "link.qdisc.min_th",
          "min_th (90000 bytes) is not below max_th (30000 bytes)", "expected min_th < max_th")
    check(fails(variant({"link.qdisc": {"name": "red", "min_th": "100KB", "max_th": "300KB", "burst": 10}})),
          "link.qdisc.burst", "a burst of 10 packets is too small", "expected burst ≥ 100")


def test_ecn_must_be_a_boolean() -> None:
    check(fails(variant({"flows[0].ecn": "on"})), "flows[0].ecn", "'on' is not true or false", "ecn = true")


@pytest.mark.parametrize(
    ("changes", "field", "shown", "allowed"),
    [
        ({"link.schedule": [{"at": "20s", "rate": "1Mbps"}, {"at": "10s", "rate": "2Mbps"}]},
         "link.schedule[1].at", "'10s' is not after the previous entry's '20s'", "strictly increasing"),
        ({"link.schedule": [{"at": "10s", "rate": "1Mbps"}, {"at": "10s", "delay": "5ms"}]},
         "link.schedule[1].at", "'10s' is not after", "strictly increasing"),
        ({"link.schedule": [{"at": "10s"}]}, "link.schedule[0]", "changes nothing",
         "at least one of rate, delay, loss"),
        ({"link.schedule": [{"at": "0s", "rate": "1Mbps"}]}, "link.schedule[0].at", "'0s' is not after 0s",
         "give the values at 0s"),
        ({"link.schedule": [{"at": "30s", "rate": "1Mbps"}]}, "link.schedule[0].at",
         "'30s' is not before the end of the run", "duration = '30s'"),
        ({"link.schedule": [{"at": "5s", "rate": "fast"}]}, "link.schedule[0].rate", "'fast' is not a rate", "Mbps"),
        ({"link.schedule": [{"at": "5s", "rate": "1Mbps"}], "link.trace": "Verizon-LTE-short.down"},
         "link.schedule", "cannot be combined with a trace", "use rate"),
        ({"link.schedule": {"at": "5s", "rate": "1Mbps"}}, "link.schedule", "is not a list", "list of tables"),
        ({"link.schedule": [{"at": "5s", "rate": "1Mbps"}], "link.rate": KeyError}, "link.rate",
         "required field missing", 'rate = "10Mbps" beside schedule'),
    ],
)
def test_bad_schedule(changes: dict[str, Any], field: str, shown: str, allowed: str) -> None:
    data = variant({k: v for k, v in changes.items() if v is not KeyError},
                   remove=tuple(k for k, v in changes.items() if v is KeyError))
    if "link.trace" in changes:
        data["link"].pop("rate")
    check(fails(data), field, shown, allowed)


def test_rtt_shorter_than_the_links_propagation_delay() -> None:
    # the RTT includes the link's delay; ACKs of [link] return uncongested, so rtt ≥ link.delay
    check(fails(variant({"link.delay": "45ms"})), "flows[0].rtt",
          "'40ms' is less than the propagation delay of its links at 0 s (45ms over link)", "rtt ≥ 45ms")
    # between one and two link delays: a return shorter than the way out (IR v4; v3 refused it)
    ir = resolve(scenario_from_dict(variant({"link.delay": "25ms"})))
    assert ir["flows"][0]["rtt_ns"] == 40_000_000 and ir["links"][0]["delay_ns"] == 25_000_000
    # a delay set later by a schedule does not count: schedules may change a path's delay by any factor
    ir = resolve(scenario_from_dict(variant({"link.schedule": [{"at": "5s", "delay": "300ms"}]})))
    assert ir["links"][0]["schedule"][0]["delay_ns"] == 300_000_000


def test_mss_too_large_for_a_trace_link() -> None:
    data = variant({"link.trace": "Verizon-LTE-short.down", "mss": 8948})
    data["link"].pop("rate")
    check(fails(data), "mss", "8948", "mss ≤ 1448 on a trace link")


# --- flows ------------------------------------------------------------------------------------------------

def test_start_after_duration() -> None:
    check(fails(variant({"flows[0].start": "30s"})), "flows[0].start", "'30s' is not before the end of the run",
          "duration = '30s'")


def test_staggered_flow_starting_after_duration() -> None:
    error = fails(variant({"flows[0].count": 4, "flows[0].stagger": "10s"}))
    check(error, "flows[0].stagger", "flow 3 of this group would start at 30s",
          "start + (count − 1) × stagger < duration")


def test_stop_before_start() -> None:
    check(fails(variant({"flows[0].start": "10s", "flows[0].stop": "5s"})), "flows[0].stop",
          "'5s' is not after the start of flow 0 of this group (10s)", "at most the duration ('30s')")
    check(fails(variant({"flows[0].start": "10s", "flows[0].stop": "10s"})), "flows[0].stop", "'10s'", "after start")


def test_stop_after_duration() -> None:
    check(fails(variant({"flows[0].stop": "31s"})), "flows[0].stop", "'31s' is after the end of the run",
          "leave stop out")


@pytest.mark.parametrize(("field", "value", "allowed"),
                         [("flows[0].count", 0, "from 1 to"), ("flows[0].count", 2.0, "from 1 to"),
                          ("flows[0].count", True, "from 1 to"), ("flows[0].bytes", "0MB", "KiB"),
                          ("flows[0].bytes", "-5MB", "KiB"), ("flows[0].rwnd", "1KB", "at least mss = 1448 bytes")])
def test_bad_flow_sizes_and_counts(field: str, value: Any, allowed: str) -> None:
    check(fails(variant({field: value})), field, repr(value), allowed)


# --- windows ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("changes", "field", "shown", "allowed"),
    [
        ({"measure": {"from": "30s"}}, "measure.from", "'30s' is not before the end of the window ('30s')",
         "measure.from < measure.to"),
        ({"measure": {"from": "10s", "to": "5s"}}, "measure.from", "'10s'", "measure.from < measure.to"),
        ({"measure": {"to": "40s"}}, "measure.to", "'40s' is after the end of the run", "at most the duration"),
        ({"sample_interval": "31s"}, "sample_interval", "'31s' is longer than the run", "at most the duration"),
    ],
)
def test_bad_windows(changes: dict[str, Any], field: str, shown: str, allowed: str) -> None:
    check(fails(variant(changes)), field, shown, allowed)


# --- files ------------------------------------------------------------------------------------------------

def trace_scenario(trace: str) -> dict[str, Any]:
    data = variant({"link.trace": trace})
    data["link"].pop("rate")
    return data


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("0\n1\nabc\n", "line 3 is not a non-negative integer number of ms (it holds characters other than digits"),
        ("0\n1\n1.5\n", "line 3: '1.5' is not a non-negative integer"),
        ("0\n5\n3\n10\n", "line 3: 3 is smaller than the previous timestamp 5"),
        ("", "the file is empty"),
        ("\n\n", "the file is empty"),
        ("0\n0\n0\n", "the last timestamp is 0"),
        ("0\n\n5\n", "line 2 is empty"),
        ("0\n-1\n", "line 2: '-1' is not a non-negative integer"),
        ("1 2\n3\n", "line 1 holds 2 values; a Mahimahi trace line is one non-negative integer"),
        ("0\n1 # a comment\n", "line 2 holds 4 values"),
    ],
)
def test_malformed_trace(tmp_path: Path, content: str, problem: str) -> None:
    (tmp_path / "bad.trace").write_text(content)
    error = fails(trace_scenario("bad.trace"), tmp_path)
    message = check(error, "link.trace", problem, "Mahimahi format")
    assert str(tmp_path / "bad.trace") in message  # names the file


def test_binary_trace(tmp_path: Path) -> None:
    (tmp_path / "bin.trace").write_bytes(b"\x00\xff\xfe")
    check(fails(trace_scenario("bin.trace"), tmp_path), "link.trace", "not a text file", "Mahimahi format")


def test_missing_trace_lists_bundled_traces(tmp_path: Path) -> None:
    error = fails(trace_scenario("traces/Verizon-LTE-shrt.down"), tmp_path)
    check(error, "link.trace", "'traces/Verizon-LTE-shrt.down' not found", "Verizon-LTE-short.down")
    assert "TMobile-LTE-short.down" in str(error)


def test_missing_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    check(info.value, str(path), "no such scenario file", "expected a path to a scenario .toml file")


def test_toml_syntax_error_gives_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\nduration = "30s"\n[link]\nrate = 80Mbps\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = check(info.value, str(path), "TOML syntax error at line 4",
                    'strings in double quotes (e.g. rate = "80Mbps")')
    assert "'rate = 80Mbps'" in message


def test_errors_in_a_file_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('duration = "30s"\n[link]\nrate = "50Mpbs"\n[[flows]]\ncca = "cubic"\nrtt = "40ms"\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: link.rate: '50Mpbs' is not a rate")
    assert info.value.field == "link.rate" and info.value.source == str(path)


# --- Python construction ----------------------------------------------------------------------------------

def test_python_construction_raises_scenario_errors_not_pydantic_ones() -> None:
    with pytest.raises(ScenarioError) as info:
        Link(rate="80Mpbs")
    assert not isinstance(info.value, ValidationError)
    assert str(info.value).startswith("link.rate: '80Mpbs' is not a rate")
    with pytest.raises(ScenarioError, match=r"^flows\[\?\]\.cca: 'bbrr' is not a known"):
        FlowGroup(cca="bbrr", rtt="25ms")
    with pytest.raises(ScenarioError, match=r"^link\.rat: unknown field"):
        Link(rat="80Mbps")


def test_nested_python_construction_reports_the_full_path() -> None:
    with pytest.raises(ScenarioError, match=r"^flows\[0\]\.rtt: '25' has no unit"):
        Scenario(name="x", duration="10s", link={"rate": "1Mbps"}, flows=[{"cca": "cubic", "rtt": "25"}])


def test_assignment_is_validated() -> None:
    scenario = scenario_from_dict(copy.deepcopy(BASE))
    with pytest.raises(ScenarioError, match=r"^link\.rate: 'fast' is not a rate"):
        scenario.link.rate = "fast"
    assert scenario.link.rate == "50Mbps"


def test_errors_survive_pickling() -> None:
    # sweeps send errors back from worker processes
    import pickle

    error = fails(variant({"link.rate": "1x"}))
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) and again.field == "link.rate" and again.value == "1x"
