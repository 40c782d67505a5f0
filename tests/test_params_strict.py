"""Bad input is refused with one line naming the field, the value and what is allowed — never
silently overridden, rounded, clamped or cut off.

Each case below was accepted before (a fuzz campaign found them) and ran something other than
what the scenario said:

* a parameter given both beside the name and in ``params`` (``cca``, ``qdisc``): one silently won,
  also when a sweep axis set the other spelling;
* a value between two of the units the engine keeps a parameter in (1/256 for BBR, 1/1024 for
  CUBIC, ...): the engine rounded it (``bbr3 beta = 0.001`` ran as 0);
* ``true`` for a number parameter: ran as 1.0;
* an fq_codel ``memory_limit`` below one packet: every packet dropped;
* a scenario name too long for its run directory: failed late, while writing;
* a ``sample_interval`` that does not divide the duration: the end of the run went unrecorded
  while the summary's window (and each flow's active time) ran to the duration.
"""

from __future__ import annotations

import copy
import re

import pytest
from typer.testing import CliRunner

from cclab import cca_params
from cclab.cca_params import PARAMS
from cclab.errors import ScenarioError
from cclab.resolve import resolve
from cclab.scenario import MAX_SCENARIO_NAME, load_scenario, scenario_from_dict
from cclab.sweep import SweepError, sweep_from_dict, validate


def scenario(cca="cubic", qdisc="droptail", **extra) -> dict:
    flow = {"cca": cca, "rtt": "20ms"}
    return {"name": "s", "duration": "200ms", "link": {"rate": "10Mbps", "qdisc": qdisc}, "flows": [flow], **extra}


def error(data: dict) -> str:
    with pytest.raises(ScenarioError) as info:
        resolve(scenario_from_dict(data))
    message = str(info.value)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------- 1. inline and params


def test_cca_parameter_beside_the_name_and_in_params_is_refused():
    cca = {"name": "cubic", "beta": 0.75, "params": {"beta": 0.5}}
    assert error(scenario(cca)) == (
        "flows[0].cca.beta: given twice: beta = 0.75 beside the name and params.beta = 0.5; "
        "give it once, either as beta = … or in params = { beta = … }")
    # either spelling alone, and different parameters in the two places, are fine
    ir = resolve(scenario_from_dict(scenario({"name": "cubic", "c": 0.5, "params": {"beta": 0.5}})))
    assert ir["flows"][0]["cca_params"] == {"beta": 0.5, "c": 0.5}


def test_qdisc_parameter_beside_the_name_and_in_params_is_refused(tmp_path):
    f = tmp_path / "q.toml"
    f.write_text('duration = "1s"\n[link]\nrate = "10Mbps"\n'
                 'qdisc = { name = "codel", target = "7ms", params = { target = "5ms" } }\n'
                 '[[flows]]\ncca = "cubic"\nrtt = "20ms"\n')  # fmt: skip
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    assert str(info.value) == (
        f"{f}: link.qdisc.target: given twice: target = '7ms' beside the name and params.target = '5ms'; "
        "give it once, either as target = … or in params = { target = … }")
    ir = resolve(scenario_from_dict(scenario(qdisc={"name": "codel", "params": {"target": "5ms"}})))
    assert ir["links"][0]["qdisc"]["target_ns"] == 5_000_000


def sweep_params(base_cca: dict, axes: dict) -> list[dict]:
    """The algorithm parameters each point of a sweep over ``base_cca`` runs with (its resolved IR)."""
    sweep = sweep_from_dict({"base": scenario(base_cca), "axes": axes}, ".")
    return [ir["flows"][0]["cca_params"] for _point, _sc, ir in validate(sweep)]


def test_sweep_axis_in_one_spelling_replaces_the_base_in_the_other():
    """The axis's value runs, in whichever spelling the axis and the base use (before: the base's
    inline beta = 0.75 ran at every point of a params.beta axis)."""
    values = [0.5, 0.875]
    want = [{"beta": v} for v in values]
    inline = {"name": "cubic", "beta": 0.75}
    in_params = {"name": "cubic", "params": {"beta": 0.75}}
    assert sweep_params(inline, {"flows[0].cca.params.beta": values}) == want
    assert sweep_params(in_params, {"flows[0].cca.beta": values}) == want
    assert sweep_params(in_params, {"flows[0].cca.params.beta": values}) == want  # the same spelling
    assert sweep_params(inline, {"flows[0].cca.beta": values}) == want
    assert sweep_params(inline, {"flows[0].cca.params": [{"beta": v} for v in values]}) == want
    # a queue discipline's parameters alike
    sweep = sweep_from_dict({"base": scenario(qdisc={"name": "codel", "target": "7ms"}),
                             "axes": {"link.qdisc.params.target": ["2ms", "5ms"]}}, ".")  # fmt: skip
    assert [ir["links"][0]["qdisc"]["target_ns"] for _p, _s, ir in validate(sweep)] == [2_000_000, 5_000_000]


def test_two_axes_setting_one_parameter_in_both_spellings_are_refused():
    with pytest.raises(SweepError, match=re.escape(
            'axes "flows[0].cca.beta" and "flows[0].cca.params.beta" set the same parameter, beside the name '
            "and in params; give one of them")):
        sweep_from_dict({"base": scenario({"name": "cubic"}),
                         "axes": {"flows[0].cca.beta": [0.5], "flows[0].cca.params.beta": [0.75]}}, ".")


# ---------------------------------------------------------------- 2. the engine's units

#: Read from the engine (crates/cclab-sim/src/cc): the unit each parameter is rounded to.
#: bbr/config.rs gain_param and extra_acked_gain, bbr/lt_bw.rs, bbr/variants.rs (fb_gain_min/max,
#: fb_increase): 1/256; bbr3/config.rs gain_param and fraction: 1/256, bw_probe_cwnd_gain: 1/4;
#: cubic.rs beta (BETA_SCALE) and c (cube_rtt_scale): 1/1024; min_rtt_win_s: whole ns.
_BBR1_STEPPED = ["startup_gain", "drain_gain", "cwnd_gain", "probe_bw_up_gain", "probe_bw_down_gain",
                 "full_bw_thresh", "extra_acked_gain", "lt_loss_thresh", "fb_gain_min", "fb_gain_max", "fb_increase"]
_BBR3_STEPPED = ["startup_gain", "startup_cwnd_gain", "drain_gain", "cwnd_gain", "probe_bw_up_gain",
                 "probe_bw_down_gain", "probe_rtt_cwnd_gain", "full_bw_thresh", "loss_thresh", "beta",
                 "inflight_headroom", "extra_acked_gain"]
UNITS = {
    "cubic": {"beta": 1024, "c": 1024},
    **{name: {**dict.fromkeys(_BBR1_STEPPED, 256), "min_rtt_win_s": 10**9}
       for name in ("bbr", "bbr_shallow", "bbr_cwnd_feedback", "bbr_sticky_rtprop")},
    "bbr2": {**dict.fromkeys(_BBR3_STEPPED, 256), "bw_probe_pif_gain": 256, "bw_probe_reno_gain": 256,
             "min_rtt_win_s": 10**9},
    "bbr3": {**dict.fromkeys(_BBR3_STEPPED, 256), "probe_bw_up_cwnd_gain_extra": 4, "min_rtt_win_s": 10**9,
             "ecn_alpha_gain": 256, "ecn_factor": 256, "ecn_thresh": 256, "ecn_reprobe_gain": 256},
}


def test_every_parameter_the_engine_rounds_has_its_step():
    for algorithm in PARAMS:
        stepped = {name: p.per for name, p in PARAMS[algorithm].items() if p.step is not None}
        assert stepped == UNITS.get(algorithm, {}), algorithm
        for name, per in stepped.items():
            p = PARAMS[algorithm][name]
            ks = p.multiples()
            k = ks[len(ks) // 2]
            assert p.contains(k / per) and not p.contains((k + 0.5) / per), (algorithm, name)
            unit = "1 ns" if per == 10**9 else f"1/{per}"
            with pytest.raises(ScenarioError, match=re.escape(f"flows[0].cca.{name}: {(k + 0.5) / per!r} is not a "
                                                              f"multiple of {unit}")):
                cca_params.check_params(algorithm, {name: (k + 0.5) / per}, "flows[0].cca")


@pytest.mark.parametrize(("cca", "message"), [
    ({"name": "cubic", "beta": 0.8},
     "flows[0].cca.beta: 0.8 is not a multiple of 1/1024 (Linux keeps it in 1/1024 units, BETA_SCALE in "
     "tcp_cubic.c); expected a multiple of 1/1024 in [1/1024, 1023/1024], nearest: 0.7998046875 (819/1024) "
     "or 0.80078125 (820/1024)"),
    ({"name": "bbr3", "beta": 0.001},
     "flows[0].cca.beta: 0.001 is not a multiple of 1/256 (Linux keeps it in 1/256 units, BBR_UNIT in "
     "tcp_bbr.c); expected a multiple of 1/256 in [0, 1], nearest: 0 or 0.00390625 (1/256)"),
    ({"name": "bbr3", "loss_thresh": 0.001}, "nearest: 0 or 0.00390625 (1/256)"),
    ({"name": "bbr3", "loss_thresh": 0.9899}, "nearest: 0.98828125 (253/256)"),  # 254/256 is above 0.99
    ({"name": "bbr", "lt_loss_thresh": 0.001},
     "flows[0].cca.lt_loss_thresh: 0.001 is not a multiple of 1/256 (Linux keeps it in 1/256 units, BBR_UNIT "
     "in tcp_bbr.c); expected a multiple of 1/256 in (0, 1], nearest: 0.00390625 (1/256)"),
    ({"name": "bbr", "cwnd_gain": 1.3}, "nearest: 1.296875 (332/256) or 1.30078125 (333/256)"),
    ({"name": "cubic", "c": 0.4}, "nearest: 0.3994140625 (409/1024) or 0.400390625 (410/1024)"),
    ({"name": "bbr_cwnd_feedback", "fb_increase": 0.05}, "0.05 is not a multiple of 1/256"),
    ({"name": "bbr3", "probe_bw_up_cwnd_gain_extra": 0.3},
     "0.3 is not a multiple of 1/4 (the v3 code keeps bw_probe_cwnd_gain in quarters); "
     "expected one of 0, 0.25, 0.5, 0.75, nearest: 0.25 (1/4) or 0.5 (2/4)"),
    ({"name": "bbr", "min_rtt_win_s": 1 / 3},
     "0.3333333333333333 is not a multiple of 1 ns (the engine keeps seconds in whole nanoseconds)"),
])  # fmt: skip
def test_a_value_the_engine_would_round_is_refused_with_the_nearest(cca, message):
    got = error(scenario(cca))
    assert message in got and got.startswith(f"flows[0].cca.{next(k for k in cca if k != 'name')}: "), got
    # the nearest values are accepted, exactly as written
    for text in re.findall(r"(?:nearest: |or )([0-9.]+)", got):
        name = next(k for k in cca if k != "name")
        ir = resolve(scenario_from_dict(scenario({**cca, name: float(text)})))
        assert ir["flows"][0]["cca_params"][name] == float(text)


def test_algorithms_command_shows_the_step():
    from cclab.cli import app

    out = CliRunner().invoke(app, ["algorithms", "cubic", "bbr3"]).output
    assert "a multiple of 1/1024 in [1/1024, 1023/1024]" in out and "a multiple of 1/256 in [0, 1]" in out


# ---------------------------------------------------------------- 3. switches


def test_true_for_a_number_parameter_is_refused(tmp_path):
    f = tmp_path / "g.toml"
    f.write_text('duration = "1s"\n[link]\nrate = "10Mbps"\n[[flows]]\ncca = { name = "bbr", cwnd_gain = true }\n'
                 'rtt = "20ms"\n')  # fmt: skip
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    assert str(info.value) == (f"{f}: flows[0].cca.cwnd_gain: true is a switch value, not a number; "
                               "expected a multiple of 1/256 in [1/256, 64)")
    assert "false is a switch value" in error(scenario({"name": "bbr3", "loss_thresh": False}))
    # switches still take true/false
    ir = resolve(scenario_from_dict(scenario({"name": "cubic", "hystart": False, "fast_convergence": True})))
    assert ir["flows"][0]["cca_params"] == {"hystart": 0.0, "fast_convergence": 1.0}


# ---------------------------------------------------------------- 4. fq_codel memory_limit


def test_fq_codel_memory_limit_below_one_packet_is_refused():
    assert error(scenario(qdisc={"name": "fq_codel", "memory_limit": "1B"})) == (
        "link.qdisc.memory_limit: '1B' is less than one packet (1 bytes): fq_codel would drop every packet; "
        "expected at least one full packet: mss + 52 = 1500 bytes")
    assert "mss + 52 = 9000 bytes" in error(scenario(qdisc={"name": "fq_codel", "memory_limit": "8999B"}, mss=8948))
    ir = resolve(scenario_from_dict(scenario(qdisc={"name": "fq_codel", "memory_limit": "1500B"})))
    assert ir["links"][0]["qdisc"]["memory_limit_bytes"] == 1500


# ---------------------------------------------------------------- 5. the scenario name


def test_a_name_too_long_for_its_run_directory_is_refused():
    from cclab.api import default_run_dir

    assert error({**scenario(), "name": "x" * 10_000}) == (
        "name: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… is 10000 characters long; expected at most 222 "
        "characters: the run directory runs/<name>-<IR hash> is one file name, at most 255 bytes")
    assert "is 223 characters long" in error({**scenario(), "name": "a" * 223})
    # the longest name: its run directory and the record's temporary sibling fit one file name
    ir = resolve(scenario_from_dict({**scenario(), "name": "a" * MAX_SCENARIO_NAME}))
    for backend in ("sim", "kernel"):
        assert len(default_run_dir(ir, backend).name + ".tmp-old-XXXXXXXX") <= 255


def test_the_longest_name_runs_and_a_longer_one_is_refused_before_anything_is_written(tmp_path):
    import cclab
    from cclab.api import default_run_dir

    data = {**scenario(), "name": "n" * MAX_SCENARIO_NAME}
    out = tmp_path / default_run_dir(resolve(scenario_from_dict(data))).name
    run = cclab.run(data, out=out, plot=False)
    assert run.path == out and run.ir["name"] == "n" * MAX_SCENARIO_NAME
    with pytest.raises(ScenarioError, match="is 223 characters long"):
        cclab.run({**scenario(), "name": "n" * 223}, out=tmp_path / "long", plot=False)
    assert not (tmp_path / "long").exists()


# ---------------------------------------------------------------- 6. sample_interval and duration


def test_a_sample_interval_that_does_not_divide_the_duration_is_refused():
    assert error(scenario(duration="2s", sample_interval="300ms")) == (
        "sample_interval: '300ms' does not divide the duration ('2s'): the last sample would be at 1.8s and "
        "the 0.2s after it never recorded; expected a sample_interval that divides the duration, or a duration "
        "that is a multiple of it (e.g. '1.8s' or '2.1s')")
    ok = resolve(scenario_from_dict(scenario(duration="2.1s", sample_interval="300ms")))
    assert ok["duration_ns"] % ok["sample_interval_ns"] == 0
    # a sweep point is checked the same way
    sweep = sweep_from_dict({"base": scenario(duration="2s"), "axes": {"sample_interval": ["250ms", "300ms"]}}, ".")
    with pytest.raises(SweepError, match=re.escape("point sample_interval='300ms': sample_interval: '300ms' does "
                                                   "not divide the duration")):
        validate(copy.deepcopy(sweep))
