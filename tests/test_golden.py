"""Single-link scenarios compute exactly what they did before topologies existed.

``fixtures/golden/`` holds resolved IRs (version 3) of six single-link
scenarios covering the engine's features (two and three algorithms, paced BBR,
link delay, finite and stopped flows, rwnd, Gilbert–Elliott loss, packet
buffers, rate/delay/loss schedules, FQ-CoDel with ECN and DCTCP, a Mahimahi
trace) and the SHA-256 of the raw engine output each gave with the engine of
commit df9d5b4 (``make_golden.py`` made them). Every later engine must give the
same bytes for every output column that existed then, for the stored IR as
read today (``migrate_ir``) and for the same scenario resolved today.

A second check: a sweep stored before topologies (``fixtures/sweep-v3``, made
with the same engine) resumes without running anything again — its run ids,
content addresses of the resolved IR, are unchanged. (Its sweep file says
``start_offset = 0``: the random start offsets added since are on by default,
and only a scenario without them resolves to the IR it had before them.)
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, needs_engine

sys.path.insert(0, str(FIXTURES / "golden"))
from make_golden import CASES, digest  # noqa: E402

from cclab import tomlio  # noqa: E402
from cclab.resolve import migrate_ir, resolve  # noqa: E402
from cclab.scenario import scenario_from_dict  # noqa: E402

GOLDEN = json.loads((FIXTURES / "golden" / "golden.json").read_text())


def _simulate(ir: dict) -> dict:
    from cclab import _native

    return _native.simulate(json.dumps(ir))


@needs_engine
@pytest.mark.parametrize("case", sorted(GOLDEN["cases"]))
def test_stored_single_link_ir_gives_the_same_output(case: str) -> None:
    stored = json.loads((FIXTURES / "golden" / f"{case}.ir.json").read_text())
    assert stored["ir_version"] == 3
    expected = GOLDEN["cases"][case]
    out = _simulate(migrate_ir(stored))
    assert digest(out, expected["keys"]) == expected["sha256"]


@needs_engine
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_scenario_resolved_today_gives_the_same_output(case: str) -> None:
    # start_offset = 0: flows start when the file says (the random start offsets that came later
    # are on by default; without them a scenario resolves to the IR it always did, docs/ir.md)
    text = "\n".join(line.strip() for line in CASES[case].strip().splitlines())
    data = tomlio.loads(text, case)
    data["start_offset"] = 0
    ir = resolve(scenario_from_dict(data, FIXTURES / "golden"))
    expected = GOLDEN["cases"][case]
    assert digest(_simulate(ir), expected["keys"]) == expected["sha256"]


@needs_engine
def test_a_sweep_stored_before_topologies_resumes_without_rerunning(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from cclab.cli_sweep import register

    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "sweep-v3", store)
    before = {d.name: (d / "manifest.json").read_bytes() for d in (store / "runs").iterdir()}
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["sweep", str(store / "sweep.toml"), "--out", str(store), "--jobs", "1",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "2 already complete, 0 done now" in result.output, result.output
    after = {d.name: (d / "manifest.json").read_bytes() for d in (store / "runs").iterdir()}
    assert after == before  # the same records, none rewritten, none added
