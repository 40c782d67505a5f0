"""The algorithm-parameter registry (cclab.cca_params) against the engine.

Every value the registry accepts must be accepted by the engine: the ends of every range (or
a hair inside an open end), a middle value, every step and both switch positions are run
through the simulator. Before the registry, ``cubic beta = 5`` passed validation and the engine
raised a ValueError traceback in ``cclab run``.
"""

from __future__ import annotations

import json
import math

import pytest
from helpers import needs_engine
from typer.testing import CliRunner

from cclab import cca_params
from cclab.cca_params import PARAMS, Param
from cclab.errors import ScenarioError
from cclab.resolve import resolve
from cclab.scenario import known_algorithms, scenario_from_dict


def scenario(cca: dict) -> dict:
    flow = {"cca": cca, "rtt": "10ms"}
    name = cca if isinstance(cca, str) else cca.get("name")
    if name == "dctcp":  # DCTCP needs ECN-capable packets (RFC 8257)
        flow["ecn"] = True
    if name == "bbr3" and cca.get("ecn_low"):  # so does BBRv3's ECN response (bbr_can_use_ecn)
        flow["ecn"] = True
    return {"name": "p", "duration": "30ms", "link": {"rate": "10Mbps"}, "flows": [flow]}


def simulate(cca: dict) -> None:
    from cclab import _native

    _native.simulate(json.dumps(resolve(scenario_from_dict(scenario(cca)))))


def inside(p: Param) -> list[float]:
    """Values the registry accepts: both ends (nudged inside when open), a middle value; with a step, whole
    numbers of it (every one when there are few)."""
    if p.switch:
        return [0.0, 1.0]
    if p.step is not None:  # whole numbers of the engine's unit: every one when few, else the ends and the middle
        ks = p.multiples()
        return [k / p.per for k in (ks if len(ks) <= 8 else (ks[0], ks[1], ks[len(ks) // 2], ks[-2], ks[-1]))]
    lo = p.lo + (1e-9 if p.lo_open else 0.0)
    hi = p.hi - (1e-9 * max(1.0, p.hi) if p.hi_open else 0.0)
    if p.integer:
        lo, hi = math.ceil(lo), math.floor(hi)
    mid = (lo + hi) / 2 if not p.integer else (lo + hi) // 2
    return [lo, mid, hi]


def outside(p: Param) -> list[float]:
    if p.switch:
        return [2.0, -1.0, 0.5]
    vals = [p.lo if p.lo_open else p.lo - max(1e-6, abs(p.lo) * 1e-6), p.hi if p.hi_open else p.hi + max(1e-6, p.hi * 1e-6)]
    if p.integer:
        vals += [p.lo + 0.5]
    if p.step is not None:  # between two units (the engine would round it)
        ks = p.multiples()
        vals += [(ks[0] + 0.5) / p.per, (ks[len(ks) // 2] + 0.25) / p.per]
    return vals


BBR1 = ("bbr", "bbr_shallow", "bbr_cwnd_feedback", "bbr_sticky_rtprop")


def companions(algorithm: str, name: str, v: float) -> dict[str, float]:
    """Other parameters that keep the rules between parameters satisfied when ``name`` = ``v``."""
    extra: dict[str, float] = {}
    feedback = algorithm in BBR1 and bool(cca_params.DEFAULTS[algorithm]["cwnd_feedback"])
    if feedback and name == "cwnd_gain" and v < 1:
        extra["fb_gain_min"] = 1 / 256  # fb_gain_max defaults to cwnd_gain in 1/256 units: at least 1/256
    if algorithm in BBR1 and name == "fb_gain_max" and v < 1:
        extra["fb_gain_min"] = v
    if algorithm in BBR1 and name == "fb_gain_min" and v > 1.5:
        extra["fb_gain_max"] = 64
    # a feature's knobs act only with its switch on (cca_params._needs_switch)
    if algorithm in BBR1 and not feedback and (name.startswith("fb_") or "fb_gain_min" in extra):
        extra["cwnd_feedback"] = 1
    if algorithm in BBR1 and name.startswith("sticky_") and name != "sticky_rtprop" \
            and not cca_params.DEFAULTS[algorithm]["sticky_rtprop"]:
        extra["sticky_rtprop"] = 1
    if algorithm == "bbr3" and name in cca_params._BBR3_ECN_KNOBS:
        extra["ecn_low"] = 1
    if algorithm in ("bbr2", "bbr3") and name == "probe_rtt_interval_ms":
        extra["min_rtt_win_s"] = 86_400
    if algorithm in ("bbr2", "bbr3") and name == "min_rtt_win_s":
        extra["probe_rtt_interval_ms"] = 1
    if algorithm == "vegas" and name == "alpha":
        extra["beta"] = 999_999
    if algorithm == "vegas" and name == "beta":
        extra["alpha"] = 0
    return extra


@needs_engine
def test_registry_names_exactly_the_engines_parameters():
    """The one registry validation, docs and `cclab algorithms` read equals the engine's own list, in its order."""
    from cclab import _native

    engine = {str(name): [str(p) for p in params] for name, params in _native.algorithms().items()}
    assert list(engine) == list(PARAMS)
    for name, params in engine.items():
        assert params == list(PARAMS[name]), name
    assert known_algorithms() == engine  # the schema's view is the registry


@pytest.mark.parametrize("algorithm", sorted(PARAMS))
def test_registry_rejects_outside_and_accepts_inside(algorithm):
    for name, p in PARAMS[algorithm].items():
        for v in inside(p):
            given = {name: v, **companions(algorithm, name, v)}
            assert cca_params.check_params(algorithm, given, "x") == given
        for v in outside(p):
            with pytest.raises(ScenarioError) as info:
                cca_params.check_params(algorithm, {name: v}, "flows[0].cca")
            message = str(info.value)
            assert message.startswith(f"flows[0].cca.{name}: ") and "expected" in message, message


@needs_engine
@pytest.mark.parametrize("algorithm", sorted(PARAMS))
def test_engine_accepts_every_value_the_registry_accepts(algorithm):
    for name, p in PARAMS[algorithm].items():
        for v in inside(p):
            extra = companions(algorithm, name, v)
            cca = {"name": algorithm, name: v, **extra}
            scenario_from_dict(scenario(cca))  # the registry accepts it …
            try:
                simulate(cca)  # … and so must the engine
            except ValueError as e:
                pytest.fail(f"{algorithm} {name} = {v!r} ({extra}): registry accepts, engine refuses: {e}")


@needs_engine
@pytest.mark.parametrize(
    ("cca", "field"),
    [
        ({"name": "vegas", "alpha": 5}, "alpha"),
        ({"name": "vegas", "beta": 1}, "beta"),
        ({"name": "bbr_cwnd_feedback", "cwnd_gain": 0.5}, "cwnd_gain"),
        ({"name": "bbr_shallow", "cwnd_feedback": 1, "fb_gain_min": 410 / 256}, "fb_gain_min"),  # 1.6 as run
        ({"name": "bbr", "cwnd_feedback": 1, "fb_gain_min": 3, "fb_gain_max": 2.5}, "fb_gain_min"),
        ({"name": "bbr3", "probe_rtt_interval_ms": 20_000}, "probe_rtt_interval_ms"),
        ({"name": "bbr2", "min_rtt_win_s": 2}, "min_rtt_win_s"),
    ],
)
def test_rules_between_parameters_match_the_engine(cca, field):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(scenario(cca))
    assert str(info.value).startswith(f"flows[0].cca.{field}: ")
    with pytest.raises(ValueError):  # the engine refuses the same (checked through an unvalidated IR)
        from cclab import _native

        ir = resolve(scenario_from_dict(scenario("cubic")))
        ir["flows"][0]["cca"], ir["flows"][0]["cca_params"] = cca["name"], {k: float(v) for k, v in cca.items() if k != "name"}
        _native.simulate(json.dumps(ir))


@pytest.mark.parametrize(
    ("cca", "field", "switch"),
    [
        ({"name": "bbr", "fb_gain_min": 0.5, "fb_decrease": 0.1}, "fb_gain_min", "cwnd_feedback"),
        ({"name": "bbr_shallow", "fb_increase": 0.125}, "fb_increase", "cwnd_feedback"),
        ({"name": "bbr", "sticky_jump": 50}, "sticky_jump", "sticky_rtprop"),
        ({"name": "bbr_cwnd_feedback", "sticky_probes": 2}, "sticky_probes", "sticky_rtprop"),
        ({"name": "bbr", "lt_bw": 0, "lt_bw_max_rtts": 1}, "lt_bw_max_rtts", "lt_bw"),
        ({"name": "bbr3", "ecn_factor": 0.5}, "ecn_factor", "ecn_low"),
        ({"name": "bbr3", "ecn_low": 0, "full_ecn_cnt": 1}, "full_ecn_cnt", "ecn_low"),
    ],
)
def test_a_knob_whose_switch_is_off_is_refused_not_ignored(cca, field, switch):
    # The engine reads these only with their feature on: set without it they changed nothing (a run
    # with BBR's fb_* parameters and no cwnd_feedback was byte for byte plain bbr).
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(scenario(cca))
    message = str(info.value)
    assert message.startswith(f"flows[0].cca.{field}: has no effect") and f"{switch} = true" in message, message
    # with the switch on, the same knobs are taken
    scenario_from_dict(scenario({**cca, switch: 1}))


def test_bbr3_ecn_low_needs_an_ecn_flow():
    with pytest.raises(ScenarioError, match="ecn_low: has no effect without ECN.*add ecn = true"):
        scenario_from_dict({**scenario("cubic"), "flows": [{"cca": {"name": "bbr3", "ecn_low": True}, "rtt": "10ms"}]})
    scenario_from_dict({**scenario("cubic"), "flows": [{"cca": {"name": "bbr3", "ecn_low": True}, "rtt": "10ms",
                                                        "ecn": True}]})  # fmt: skip


def test_cubic_beta_5_is_refused_at_validation(tmp_path):
    from cclab.cli import app

    f = tmp_path / "beta.toml"
    f.write_text('name = "b"\nduration = "1s"\n[link]\nrate = "10Mbps"\n[[flows]]\n'
                 'cca = { name = "cubic", beta = 5 }\nrtt = "20ms"\n')  # fmt: skip
    for cmd in (["validate-scenario", str(f)], ["run", str(f), "--out", str(tmp_path / "r")]):
        result = CliRunner().invoke(app, cmd)
        assert result.exit_code == 2, result.output
        lines = [ln for ln in result.output.splitlines() if ln.strip()]
        assert lines == [f"error: {f}: flows[0].cca.beta: 5 is out of range; "
                         "expected a multiple of 1/1024 in [1/1024, 1023/1024]"]
    assert not (tmp_path / "r").exists()


def test_huge_integer_parameter_is_refused_not_rounded():
    with pytest.raises(ScenarioError, match="too large to be represented exactly"):
        scenario_from_dict(scenario({"name": "vegas", "alpha": 2**53 + 1}))


def test_describe_lists_every_parameter():
    rows = cca_params.describe("cubic")
    assert [r[0] for r in rows] == list(PARAMS["cubic"]) and rows[0][1] == "a multiple of 1/1024 in [1/1024, 1023/1024]"
    assert rows[0][3] == "717/1024 ≈ 0.7002" and rows[2][3] == "true"  # default: exact, as the engine holds it
    assert dict((r[0], r[3]) for r in cca_params.describe("bbr_shallow"))["cwnd_gain"] == "1.5"


@needs_engine
@pytest.mark.parametrize("algorithm", sorted(PARAMS))
def test_registry_defaults_are_the_engines(algorithm):
    """`cclab algorithms` and docs show the default the engine applies when a scenario leaves a parameter out."""
    from cclab import _native

    assert cca_params.DEFAULTS[algorithm] == _native.algorithm_defaults(algorithm)
    for name, p in PARAMS[algorithm].items():
        assert p.contains(cca_params.DEFAULTS[algorithm][name]), (name, "the default is outside the allowed range")
        assert p.doc and p.source, (algorithm, name, "every parameter says what it is and where it comes from")
    assert cca_params.SOURCES[algorithm]
