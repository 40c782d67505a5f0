"""Parse once: the validated scenario carries typed values that resolution uses as they are.

A scenario's units are parsed when it is validated (cclab.units typed strings: the text as
written, with its exact value); resolution, the queue discipline's IR and a sweep's workers
never parse or resolve again.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from cclab import resolve as resolve_module
from cclab import units
from cclab.resolve import canonical_json, resolve
from cclab.scenario import scenario_from_dict

SCENARIO = {
    "name": "typed",
    "duration": "3s",
    "sample_interval": "100ms",
    "measure": {"from": "1s", "to": "2.5s"},
    "link": {
        "rate": "20Mbps",
        "delay": "2ms",
        "buffer": "1.5bdp",
        "loss": "0.5%",
        "qdisc": {"name": "red", "min_th": "20KB", "bandwidth": "20Mbps"},
        "schedule": [{"at": "1s", "rate": "10Mbps", "delay": "3ms", "loss": "1%"}],
    },
    "flows": [
        {"cca": {"name": "bbr", "cwnd_gain": 1.5}, "rtt": "20ms", "count": 2, "stagger": "100ms", "rwnd": "4MB"},
        {"cca": "cubic", "rtt": "40ms", "start": "0.5s", "stop": "2.9s", "bytes": "1MB"},
    ],
}


def test_validated_values_are_typed_and_exact():
    sc = scenario_from_dict(copy.deepcopy(SCENARIO))
    assert isinstance(sc.duration, units.Duration) and sc.duration == "3s" and sc.duration.ns == 3 * 10**9
    assert isinstance(sc.link.rate, units.Rate) and sc.link.rate.bps == 20_000_000
    assert sc.link.buffer.spec == units.BufferSpec("bdp", units.Decimal("1.5"))
    assert isinstance(sc.link.loss, units.Percent) and sc.link.loss.p == 0.005
    assert sc.link.schedule[0].at.ns == 10**9 and sc.link.schedule[0].loss.p == 0.01
    assert sc.flows[0].rwnd.bytes == 4_000_000 and sc.flows[1].bytes.bytes == 1_000_000
    assert sc.measure.from_.ns == 10**9 and sc.measure.to.ns == 2_500_000_000
    assert sc.link.delay.ns == 2_000_000 and sc.flows[1].stop.ns == 2_900_000_000
    q = sc.link.qdisc.params
    assert isinstance(q["min_th"], units.Size) and q["min_th"].bytes == 20_000 and q["bandwidth"].bps == 20_000_000
    # the text as written: printed, compared and saved as the user's string
    assert repr(sc.flows[0].rtt) == "'20ms'" and f"{sc.link.rate}" == "20Mbps"
    assert "duration = \"3s\"" in sc.to_toml()
    # defaults are typed too; assignment from Python parses (once)
    assert sc.flows[1].stagger.ns == 0
    sc.flows[1].rtt = "50ms"
    assert sc.flows[1].rtt.ns == 50_000_000


def test_typed_values_survive_copy_and_pickle():
    sc = scenario_from_dict(copy.deepcopy(SCENARIO))
    for other in (copy.deepcopy(sc), pickle.loads(pickle.dumps(sc)), sc.model_copy()):
        assert other.link.rate.bps == 20_000_000 and other.flows[0].rtt.ns == 20_000_000
        assert canonical_json(resolve(other)) == canonical_json(resolve(sc))


def test_resolution_parses_nothing(monkeypatch):
    sc = scenario_from_dict(copy.deepcopy(SCENARIO))
    expected = canonical_json(resolve(sc))

    def refuse(*_args, **_kwargs):
        raise AssertionError("resolution parsed a value again")

    for name in ("parse_rate", "parse_duration", "parse_size", "parse_buffer", "parse_probability"):
        monkeypatch.setattr(units, name, refuse)
    assert canonical_json(resolve(sc)) == expected


def test_a_zero_duration_still_fails_where_zero_is_not_allowed():
    # a typed zero duration assigned to a field that must be positive is parsed (and refused) again
    sc = scenario_from_dict(copy.deepcopy(SCENARIO))
    from cclab.errors import ScenarioError

    with pytest.raises(ScenarioError, match="must be greater than zero"):
        sc.duration = sc.flows[1].stagger


def test_a_sweep_resolves_each_point_once(monkeypatch, tmp_path):
    """`plan` resolves every point; the workers run that IR (before: each worker validated and resolved again)."""
    from cclab.runner import run_sweep
    from cclab.sweep import sweep_from_dict

    calls = []
    real = resolve_module.resolve

    def counting(scenario):
        calls.append(scenario.link.buffer)
        return real(scenario)

    monkeypatch.setattr(resolve_module, "resolve", counting)
    base = {"name": "once", "duration": "300ms", "link": {"rate": "5Mbps"}, "flows": [{"cca": "reno", "rtt": "20ms"}]}
    sw = sweep_from_dict({"base": base, "axes": {"link.buffer": ["1bdp", "2bdp"]}, "trials": 2}, tmp_path)
    out = run_sweep(sw, tmp_path / "sw", jobs=1, progress=False)
    assert (out.done, out.failures) == (4, [])
    assert sorted(calls) == ["1bdp", "1bdp", "2bdp", "2bdp"]  # one resolution per run, none in the worker
