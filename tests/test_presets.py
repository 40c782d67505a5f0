"""Presets: every shipped sweep file is valid and has the paper's grid; each `--quick`
variant runs end to end through `cclab reproduce` (sweep, figures, report)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import typer
from helpers import has_simulate
from typer.testing import CliRunner

from cclab import _native
from cclab.cli_sweep import register
from cclab.presets import HERE, PRESETS, published
from cclab.sweep import expand, validate

# full grids (docs/validation.md P1–P11): points × trials
FULL_POINTS = {
    "bbr-loss": 13 * 2 * 3,
    "bbr-loss-verizon": 13 * 2 * 3,
    "bbr-loss-1bdp": 14 * 2 * 3,
    "bbr-bandwidth-step": 1,
    "bbr-cubic-queue": 2,
    "buffer-sweep-bbr": 3 * 3 * 14 * 3,
    "buffer-sweep-bbr-vs-cubic": 2 * 14 * 3,
    "bbr-cubic-cycles": 3,
    "ten-and-ten": 3,
    "ten-and-ten-paths": 5 * 7 * 2,
    "when-to-use-bbr": 8 * 8 * 2 * 3 * 5,  # BBR, CUBIC and the IMC 2023 extension's BBRv2
    "when-to-use-bbr-stock-rwnd": 8 * 8 * 2 * 2 * 5,
    "rtt-unfairness": 6 * 3,
    "joining-flows": 5 * 3,
    "aqm-bbr-vs-cubic": 5 * 3 * 3,
    # topologies (docs/topologies.md)
    "ns3-line": 3,
    "ns3-modified-line": 4,
    "ns3-dumbbell-2x2": 4,
    "ns3-vertical-2x2": 4,
    "ns3-dumbbell-3x3": 4,
    "ns3-line-new-flow": 5 * 3,
    "ns3-line-two-new-flows": 3,
    "parking-lot": 3 * 3,
    "bbr-rtprop-step": 2,
}


def missing_algorithms(preset) -> set[str]:
    return preset.algorithms() - set(_native.algorithms())


def app() -> typer.Typer:
    a = typer.Typer()
    register(a)
    return a


def test_every_file_is_listed_and_the_grids_match_the_papers():
    listed = {f for p in PRESETS.values() for f in p.files}
    assert listed == {p.name for p in HERE.glob("*.toml")}
    parts = {part: sw for p in PRESETS.values() for part, sw in p.sweeps()}
    assert {k: sw.n_points for k, sw in parts.items()} == FULL_POINTS
    p8 = parts["when-to-use-bbr"]
    assert p8.axes["flows[0].rtt"] == ["5ms", "10ms", "25ms", "50ms", "75ms", "100ms", "150ms", "200ms"]
    assert p8.axes["link.rate"] == ["10Mbps", "20Mbps", "50Mbps", "100Mbps", "250Mbps", "500Mbps", "750Mbps", "1000Mbps"]
    assert p8.axes["link.buffer"] == ["100KB", "10MB"] and p8.trials == 5
    assert p8.axes["flows[0].cca"] == ["bbr", "cubic", "bbr2"]
    assert {f["name"] for f in p8.figures} >= {"goodput-gain", "goodput-gain-bbr2", "utilization", "retransmissions"}
    assert "bbr_shallow" in parts["buffer-sweep-bbr-vs-cubic"].axes["flows[0].cca"]
    # P1/P11: the CS244 reproduction's setup (unlimited buffer, 6.25 MB windows, its loss grid;
    # the data crossed the Verizon trace's uplink file)
    cs244_grid = [p / 100 for p in (0.001, 0.01, 0.1, 1, 2, 5, 10, 15, 20, 25, 30, 40, 50)]
    for part in ("bbr-loss", "bbr-loss-verizon"):
        sw = parts[part]
        assert sw.axes["link.loss"] == pytest.approx(cs244_grid), part
        assert sw.base["flows"][0]["rwnd"] == "6553600B" and sw.base["link"]["buffer"] == "1GB", part
        assert "measure" not in sw.base, part  # throughput over the whole run, as the study
    assert parts["bbr-loss-verizon"].base["link"]["trace"] == "Verizon-LTE-short.up"
    assert parts["bbr-loss-1bdp"].base["link"]["buffer"] == "1bdp"
    assert parts["when-to-use-bbr-stock-rwnd"].base["flows"][0]["rwnd"] == "3MiB"
    assert "rwnd" not in parts["when-to-use-bbr"].base["flows"][0]
    for part, sw in parts.items():
        assert sw.quick and sw.quick_variant().n_points <= 16, part
        assert sw.figures, part


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_validates_against_the_schema(name):
    preset = PRESETS[name]
    missing = missing_algorithms(preset)
    if missing:
        pytest.skip(f"the engine does not have {', '.join(sorted(missing))} yet")
    for _, sw in preset.sweeps() + preset.sweeps(quick=True):
        validate(sw)
        assert len({json.dumps(p.scenario, sort_keys=True) for p in expand(sw)}) == sw.n_points


def test_reproduce_list():
    r = CliRunner().invoke(app(), ["reproduce", "--list"])
    assert r.exit_code == 0, r.output
    for name, p in PRESETS.items():
        assert name in r.output and p.ref in r.output
    r = CliRunner().invoke(app(), ["reproduce", "nope"])
    assert r.exit_code == 2 and "no preset 'nope'" in r.output


@pytest.mark.skipif(not has_simulate(), reason="cclab._native has no simulate() yet (engine not landed)")
@pytest.mark.parametrize("name", list(PRESETS))
@pytest.mark.timeout(300)
def test_reproduce_quick(name, tmp_path):
    preset = PRESETS[name]
    missing = missing_algorithms(preset)
    if missing:
        pytest.skip(f"the engine does not have {', '.join(sorted(missing))} yet")
    out = tmp_path / name
    r = CliRunner().invoke(app(), ["reproduce", name, "--quick", "--out", str(out), "--jobs", "2", "--no-progress"])
    assert r.exit_code == 0, r.output
    for part, sw in preset.sweeps(quick=True):
        d = out / part if len(preset.files) > 1 else out
        df = pd.read_parquet(d / "results.parquet")
        assert len(df) == sw.n_points
        assert json.loads((d / "failures.json").read_text()) == []
        page = (d / "report.html").read_text()
        assert "not drawn" not in page, page[page.find("not drawn") - 200 : page.find("not drawn") + 300]
        for spec in sw.figures:
            if "name" in spec:
                assert (d / "figures" / f"{spec['name']}.svg").exists(), spec
                assert f'id="{spec["name"]}"' in page
    # the published values are printed beside the measured ones; every entry whose point the
    # quick grid covers gets a measured value
    rows = published.compare(preset, out, quick=True)
    if rows:
        assert "published vs measured" in r.output
    for row in rows:
        assert row.entry.quantity in " ".join(r.output.split()) or row.entry.quantity[:20] in r.output, row.entry.quantity
        if row.entry.metric is None:
            continue
        part = dict(preset.sweeps(quick=True))[row.part]
        d = out / row.part if len(preset.files) > 1 else out
        covered = not published._rows(pd.read_parquet(d / "results.parquet"), part.base, row.entry.point).empty
        if row.entry.gain:
            g = row.entry.gain
            df = pd.read_parquet(d / "results.parquet")
            covered = all(
                not published._rows(df, part.base, {**row.entry.point, g["over"]: v}).empty for v in (g["a"], g["b"])
            )
        assert (row.measured is not None) == covered, (row.entry.quantity, row.measured)


def test_reproduce_prints_published_beside_measured_bbr_loss_quick(tmp_path):
    # P1 quick: 10 s runs at 0.01 %, 1 %, 5 % and 20 % loss. The table carries the CS244 value and
    # cclab's measurement for BBR at 1 % loss; points outside the quick grid say so.
    out = tmp_path / "p1"
    r = CliRunner().invoke(app(), ["reproduce", "bbr-loss", "--quick", "--out", str(out), "--jobs", "2", "--no-progress"])
    assert r.exit_code == 0, r.output
    rows = {(x.part, x.entry.quantity): x for x in published.compare(PRESETS["bbr-loss"], out, quick=True)}
    bbr1 = rows[("bbr-loss", "BBR at 1 % loss")]
    assert "85.4" in bbr1.entry.published_text() and bbr1.entry.source in " ".join(r.output.split())
    df = pd.read_parquet(out / "bbr-loss" / "results.parquet")
    want = df[(df["link.loss"] == 0.01) & (df["flows[0].cca"] == "bbr")]["agg.goodput_bps"].mean() / 1e6
    assert bbr1.measured == pytest.approx(want)
    assert f"{bbr1.measured:.1f} Mbit/s" in r.output
    assert rows[("bbr-loss", "BBR at 15 % loss")].measured is None
    assert "no run at this point" in r.output and "[quick] variant" in r.output


def test_published_entries_are_well_formed():
    # every entry of every preset: required fields, and each point key is a sweep axis or a path
    # of the base scenario (a typo would otherwise show "no run at this point" forever)
    for p in PRESETS.values():
        for (part, sw), f in zip(p.sweeps(), p.files):
            axes = {*sw.axes, *sw.zip}
            for e in published.load(HERE / f):
                for key in e.point:
                    assert key in axes or published._base_value(sw.base, key) is not None, (part, e.quantity, key)
                if e.gain:
                    assert e.gain["over"] in axes, (part, e.quantity)
                if e.metric and e.metric.startswith("period."):
                    assert e.metric.split(".", 1)[1] in p.algorithms(), (part, e.quantity)


def test_published_errors_name_the_file_entry_and_field(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('[[published]]\nquantity = "q"\npublished = 1\nsource = "s"\nwhen = 3\n')
    with pytest.raises(published.PublishedError, match=r"x.toml: published\[0\]: unknown key\(s\) when"):
        published.load(f)
    f.write_text('[[published]]\nquantity = "q"\npublished = 1\n')
    with pytest.raises(published.PublishedError, match=r"published\[0\]: 'source' is required"):
        published.load(f)
    f.write_text('[[published]]\nquantity = "q"\npublished = 1\nsource = "s"\ngain = { over = "x" }\n')
    with pytest.raises(published.PublishedError, match=r"published\[0\].gain"):
        published.load(f)


def test_measure_means_over_trials_and_computes_the_gain(tmp_path):
    # a results table shipped on its own (no runs/): column metrics only
    d = tmp_path / "sweep"
    d.mkdir()
    pd.DataFrame(
        {
            "run_id": ["a", "b", "c", "d"], "point": [0, 0, 1, 1], "flows[0].cca": ["bbr", "bbr", "cubic", "cubic"],
            "trial": [0, 1, 0, 1], "seed": [1, 2, 1, 2], "backend": ["sim"] * 4,
            "agg.goodput_bps": [9e6, 11e6, 8e6, 8e6],
        }
    ).to_parquet(d / "results.parquet")
    e = published.Published("q", 1, "s", point={"flows[0].cca": "bbr"}, metric="agg.goodput_bps", scale=1e-6)
    assert published.measure(e, d, {}) == pytest.approx(10.0)
    g = published.Published("q", 1, "s", metric="agg.goodput_bps", gain={"over": "flows[0].cca", "a": "bbr", "b": "cubic"})
    assert published.measure(g, d, {}) == pytest.approx(25.0)
    # a key that is not an axis is compared with the base scenario
    e2 = published.Published("q", 1, "s", point={"link.rate": "10Mbps"}, metric="agg.goodput_bps")
    assert published.measure(e2, d, {"link": {"rate": "20Mbps"}}) is None
    assert published.measure(e2, d, {"link": {"rate": "10Mbps"}}) == pytest.approx(9e6)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_has_published_values_to_print(name):
    """`cclab reproduce NAME` prints published values beside measured ones for every preset: each
    has entries with a metric, and its [quick] variant covers at least one (aqm-bbr-vs-cubic had none)."""
    p = PRESETS[name]
    entries = [(part, e) for (part, _sw), f in zip(p.sweeps(), p.files) for e in published.load(HERE / f)]
    assert any(e.metric for _part, e in entries), name
    quick = dict(p.sweeps(quick=True))
    covered = []
    for part, e in entries:
        if not e.metric or e.metric.startswith(("period.", "step.")):
            continue
        sw = quick[part]
        axes = {**sw.axes, **sw.zip}
        covered.append(all(any(published._same(v, k_v) for k_v in axes[k]) if k in axes
                           else published._same(published._base_value(sw.base, k), v) for k, v in e.point.items()))
    assert not covered or any(covered), name


def test_minrtt_follow_counts_from_the_delay_change_to_min_rtt_near_the_new_base_rtt():
    """bbr-rtprop-step's metric: seconds from the first delay change until flow 0's min_rtt is
    within 10 % of the flow's rtt with the link's old delay replaced by the new one."""
    from types import SimpleNamespace

    ir = {"links": [{"delay_ns": 20_000_000, "schedule": [{"at_ns": 12_000_000_000, "delay_ns": 100_000_000}]}],
          "flows": [{"rtt_ns": 40_000_000}]}
    t = [10.0, 12.0, 15.0, 20.0, 20.3, 25.0]
    flows = pd.DataFrame({"time_s": t * 2, "flow_id": [0] * 6 + [1] * 6,
                          "bw_min_rtt_ms": [40, 40, 40, 40, 125, 120] + [130] * 6})
    run = SimpleNamespace(ir=ir, flows=flows)
    assert published.run_metric(run, "minrtt.follow_s") == pytest.approx(8.3)  # flow 1 is ignored
    ir["links"][0]["schedule"] = [{"at_ns": 12_000_000_000, "rate_bps": 1e6}]
    assert math.isnan(published.run_metric(run, "minrtt.follow_s"))
