"""Sweep files: parsing, axis paths, expansion order, seeds (no engine needed)."""

from __future__ import annotations

import textwrap

import pytest

from cclab.sweep import DEFAULT_SEED, SweepError, expand, load_sweep, parse_path, set_path, sweep_from_dict, trial_seed

BASE = {
    "name": "t",
    "duration": "2s",
    "seed": 7,
    "link": {"rate": "10Mbps", "delay": "5ms", "buffer": "1bdp"},
    "flows": [{"cca": "cubic", "count": 1, "rtt": "20ms"}, {"cca": "reno", "count": 1, "rtt": "40ms"}],
}


def test_parse_path():
    assert parse_path("link.buffer") == ["link", "buffer"]
    assert parse_path("flows[1].count") == ["flows", 1, "count"]
    assert parse_path("link.schedule[0].rate") == ["link", "schedule", 0, "rate"]
    for bad in ["", "link..rate", "flows[x].cca", "1link", "flows[0]x"]:
        with pytest.raises(SweepError):
            parse_path(bad)


def test_set_path_creates_tables_and_checks_indices():
    d = {"flows": [{"cca": "reno"}]}
    set_path(d, "measure.from", "1s")
    set_path(d, "flows[0].cca", "cubic")
    assert d == {"flows": [{"cca": "cubic"}], "measure": {"from": "1s"}}
    with pytest.raises(SweepError, match=r'axis "flows\[3\].cca": index 3 out of range.*1 entry in flows'):
        set_path(d, "flows[3].cca", "bbr")
    with pytest.raises(SweepError, match="is not a table"):
        set_path(d, "flows[0].cca.x", 1)


def test_grid_order_zip_and_trials():
    sw = sweep_from_dict(
        {
            "base": BASE,
            "trials": 2,
            "axes": {"link.buffer": ["0.5bdp", "2bdp"], "flows[0].cca": ["bbr", "cubic"]},
            "zip": {"link.rate": ["10Mbps", "20Mbps"], "flows[1].rtt": ["40ms", "80ms"]},
        },
        ".",
    )
    pts = expand(sw)
    assert len(pts) == sw.n_points == 2 * 2 * 2 * 2
    # first axis slowest, zip after the crossed axes, trials innermost
    assert [p.params["link.buffer"] for p in pts[:8]] == ["0.5bdp"] * 8
    assert [p.trial for p in pts[:4]] == [0, 1, 0, 1]
    assert pts[0].params == {"link.buffer": "0.5bdp", "flows[0].cca": "bbr", "link.rate": "10Mbps", "flows[1].rtt": "40ms"}
    assert pts[2].params["link.rate"] == "20Mbps" and pts[2].params["flows[1].rtt"] == "80ms"
    # the scenario carries the values; the base is untouched
    s = pts[2].scenario
    assert s["link"]["rate"] == "20Mbps" and s["flows"][1]["rtt"] == "80ms" and s["flows"][0]["cca"] == "bbr"
    assert BASE["link"]["rate"] == "10Mbps"
    assert [p.index for p in pts] == list(range(len(pts)))


def test_seeds_are_base_seed_plus_trial():
    sw = sweep_from_dict({"base": BASE, "trials": 3, "axes": {"link.buffer": ["1bdp", "2bdp"]}}, ".")
    pts = expand(sw)
    assert [p.seed for p in pts] == [7, 8, 9, 7, 8, 9]
    assert all(p.scenario["seed"] == p.seed for p in pts)
    assert trial_seed(7, 2) == 9
    nobase = {k: v for k, v in BASE.items() if k != "seed"}
    assert [p.seed for p in expand(sweep_from_dict({"base": nobase, "trials": 2}, "."))] == [DEFAULT_SEED, DEFAULT_SEED + 1]
    # an axis over the seed itself shifts the trials' seeds
    pts = expand(sweep_from_dict({"base": BASE, "trials": 2, "axes": {"seed": [100, 200]}}, "."))
    assert [p.seed for p in pts] == [100, 101, 200, 201]


def test_whole_table_axis_then_deeper_axis():
    sw = sweep_from_dict(
        {"base": BASE, "axes": {"link.loss": [0.01], "link": [{"rate": "5Mbps", "buffer": "64pkts"}]}}, "."
    )
    (p,) = expand(sw)
    assert p.scenario["link"] == {"rate": "5Mbps", "buffer": "64pkts", "loss": 0.01}


def test_no_axes_is_one_point():
    pts = expand(sweep_from_dict({"base": BASE}, "."))
    assert len(pts) == 1 and pts[0].params == {} and pts[0].seed == 7


@pytest.mark.parametrize(
    "data, match",
    [
        ({"trials": 2}, "missing `base`"),
        ({"base": BASE, "trials": 0}, "trials = 0"),
        ({"base": BASE, "trials": "3"}, "trials = '3'"),
        ({"base": BASE, "axes": {"link.rate": []}}, 'axes "link.rate": must be a non-empty list'),
        ({"base": BASE, "axes": {"link.rate": "10Mbps"}}, "must be a non-empty list"),
        ({"base": BASE, "zip": {"link.rate": ["1Mbps"], "link.delay": ["1ms", "2ms"]}}, "equal lengths"),
        ({"base": BASE, "axes": {"link.rate": ["1Mbps"]}, "zip": {"link.rate": ["2Mbps"]}}, "both in"),
        ({"base": BASE, "axis": {}}, "unknown key"),
        ({"base": BASE, "quick": {"duration": "1s"}}, r"\[quick\] may only set"),
        ({"base": BASE, "axes": {"flows[5].cca": ["bbr"]}}, "index 5 out of range"),
        # [[figures]] are checked when the file is loaded, not when they are drawn after the runs
        ({"base": BASE, "figures": [{"kind": "pie"}]}, r"\[\[figures\]\] entry 1: unknown figure kind 'pie'"),
        ({"base": BASE, "figures": [{"kind": "line"}, {"kind": "line", "colour": "red"}]},
         r"entry 2: figure 'line': unknown parameter 'colour'; allowed: name, caption, y, x"),
        ({"base": BASE, "figures": [{"kind": "line", "logx": "no"}]}, "logx = 'no' is not true or false"),
        # a [quick.base] that breaks a valid base is named as such, not blamed on an axis
        ({"base": BASE, "axes": {"link.buffer": ["1bdp"]}, "quick": {"base": {"link.bufer": "5KB"}}},
         r"\[quick.base\]: link.bufer: unknown field"),
    ],
)
def test_bad_sweep_files(data, match):
    with pytest.raises(SweepError, match=match):
        expand(sweep_from_dict(data, "."))


def test_load_file_with_base_path_and_quick(tmp_path):
    (tmp_path / "scn.toml").write_text('name = "x"\nduration = "60s"\n[link]\nrate = "10Mbps"\n[[flows]]\ncca = "reno"\n')
    f = tmp_path / "s.toml"
    f.write_text(
        textwrap.dedent(
            """
            base = "scn.toml"
            trials = 5
            [axes]
            "link.buffer" = ["0.5bdp", "1bdp", "2bdp", "4bdp"]
            [quick]
            trials = 1
            [quick.axes]
            "link.buffer" = ["1bdp"]
            [quick.base]
            duration = "5s"
            """
        )
    )
    sw = load_sweep(f)
    assert sw.base["duration"] == "60s" and sw.base_dir == tmp_path and sw.n_points == 20
    assert sw.text == f.read_text()
    q = sw.quick_variant()
    assert q.n_points == 1 and q.base["duration"] == "5s" and sw.base["duration"] == "60s"
    with pytest.raises(SweepError, match="no such sweep file"):
        load_sweep(tmp_path / "nope.toml")
    (tmp_path / "bad.toml").write_text("base = [")
    with pytest.raises(SweepError, match="TOML syntax error"):
        load_sweep(tmp_path / "bad.toml")


SCHEMA_BASE = {
    "name": "v",
    "duration": "2s",
    "link": {"rate": "10Mbps", "delay": "5ms", "buffer": "1bdp"},
    "flows": [{"cca": "cubic", "rtt": "20ms"}],
}


def test_bad_axis_value_gets_the_schema_error_naming_the_axis(tmp_path):
    from cclab.sweep import validate

    f = tmp_path / "bad.toml"
    sw = sweep_from_dict({"base": SCHEMA_BASE, "axes": {"link.buffer": ["1bdp", "2bpd"]}}, tmp_path, source=f)
    with pytest.raises(SweepError) as e:
        validate(sw)
    msg = str(e.value)
    assert msg.startswith(f"{f}: axis \"link.buffer\" = '2bpd': ") and "'2bpd'" in msg and "bdp" in msg
    assert "\n" not in msg


def test_values_wrong_only_together_name_the_point():
    from cclab.sweep import validate

    # each alone is fine; rtt 4ms < 2 × 5 ms link delay is not
    sw = sweep_from_dict(
        {"base": SCHEMA_BASE, "axes": {"flows[0].rtt": ["20ms", "4ms"], "link.delay": ["0ms", "5ms"]}}, "."
    )
    with pytest.raises(SweepError, match=r"point flows\[0\].rtt='4ms', link.delay='5ms': "):
        validate(sw)
    validate(sweep_from_dict({"base": SCHEMA_BASE, "axes": {"link.buffer": ["0.5bdp", "64pkts", "100KB"]}}, "."))


def test_to_toml_round_trips_and_quick_text_is_the_variant(tmp_path):
    sw = sweep_from_dict(
        {"base": BASE, "trials": 3, "axes": {"link.buffer": ["1bdp", "2bdp"]}, "zip": {"link.rate": ["1Mbps"]},
         "figures": [{"kind": "line", "y": "agg.utilization"}],
         "quick": {"trials": 1, "axes": {"link.buffer": ["1bdp"]}}},
        ".",
    )
    f = tmp_path / "s.toml"
    f.write_text(sw.to_toml())
    again = load_sweep(f)
    assert [p.scenario for p in expand(again)] == [p.scenario for p in expand(sw)]
    q = sw.quick_variant()
    f.write_text(q.text)
    assert [p.scenario for p in expand(load_sweep(f))] == [p.scenario for p in expand(q)]
    assert load_sweep(f).quick == {}


def test_the_quick_variant_is_validated_without_quick():
    from cclab.sweep import validate, validate_quick

    sw = sweep_from_dict({"base": BASE, "axes": {"link.buffer": ["1bdp"]},
                          "quick": {"axes": {"link.bufer": ["1bdp"]}}}, ".")
    validate(sw)  # the full sweep alone is fine …
    with pytest.raises(SweepError, match=r'\[quick\] axis "link.bufer"'):
        validate_quick(sw)  # … but `cclab sweep` checks the whole file before running any of it
