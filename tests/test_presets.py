"""Presets: every shipped sweep file is valid and has the paper's grid; each `--quick`
variant runs end to end through `cclab reproduce` (sweep, figures, report)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import typer
from helpers import has_simulate
from typer.testing import CliRunner

from cclab import _native
from cclab.cli_sweep import register
from cclab.presets import HERE, PRESETS
from cclab.sweep import expand, validate

# full grids (docs/validation.md P1–P11): points × trials
FULL_POINTS = {
    "bbr-loss": 14 * 2 * 3,
    "bbr-loss-verizon": 9 * 2 * 3,
    "bbr-bandwidth-step": 1,
    "bbr-cubic-queue": 2,
    "buffer-sweep-bbr": 3 * 3 * 14 * 3,
    "buffer-sweep-bbr-vs-cubic": 2 * 14 * 3,
    "bbr-cubic-cycles": 3,
    "ten-and-ten": 3,
    "when-to-use-bbr": 8 * 8 * 2 * 2 * 5,
    "rtt-unfairness": 6 * 3,
    "joining-flows": 5 * 3,
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
    assert "bbr_shallow" in parts["buffer-sweep-bbr-vs-cubic"].axes["flows[0].cca"]
    assert parts["bbr-loss-verizon"].base["link"]["trace"] == "Verizon-LTE-short.down"
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
