"""Single-link scenarios compute exactly what they did before topologies existed.

``fixtures/golden/`` holds resolved IRs (version 3) of six single-link
scenarios covering the engine's features (two and three algorithms, paced BBR,
link delay, finite and stopped flows, rwnd, Gilbert–Elliott loss, packet
buffers, rate/delay/loss schedules, FQ-CoDel with ECN and DCTCP, a Mahimahi
trace) and the SHA-256 of the raw engine output each gave with the engine of
commit df9d5b4 (``make_golden.py`` made them). Every later engine must give the
same bytes for every output column that existed then, for the stored IR as
read today (``migrate_ir``) and for the same scenario resolved today — except
``capacity_bps``, whose definition changed on 2026-11-29 (the mean rate over
the sample's interval, no longer the rate at its end): it is checked against
the new definition and put back as it was before the digest.

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
    """The engine's raw output, with ``capacity_bps`` checked and put back as the golden engine
    defined it. Since 2026-11-29 a sample's capacity is the mean rate over its interval; before,
    a rate link's was the rate at the sample's time, so the sample ending at a step (here 3, 6 and
    9 s) carried the new rate. Everything else must be the same bytes."""
    import numpy as np

    out = _simulate_raw(ir)
    link = (ir.get("links") or [ir.get("link")])[0]
    if link["capacity"]["kind"] == "constant":
        steps = [(0, int(link["capacity"]["rate_bps"]))] + [
            (int(c["at_ns"]), int(c["rate_bps"])) for c in link.get("schedule") or [] if c.get("rate_bps") is not None]
        t = np.asarray(out["link"]["time_ns"], dtype=np.int64)
        dt = int(ir["sample_interval_ns"])

        def rate_at(x):
            return np.array([[r for at, r in steps if at <= v][-1] for v in x], dtype=float)

        # the new definition: the time-weighted mean over (t - dt, t]
        edges = sorted({at for at, _ in steps})
        mean = np.empty(t.size)
        for i, end in enumerate(t):
            start = max(int(end) - dt, 0)
            cuts = [start] + [e for e in edges if start < e < end] + [int(end)]
            w = sum((b - a) * rate_at([a])[0] for a, b in zip(cuts, cuts[1:]))
            mean[i] = w / (int(end) - start) if end > start else rate_at([end])[0]
        np.testing.assert_allclose(np.asarray(out["link"]["capacity_bps"], dtype=float), mean, rtol=1e-12)
        out["link"]["capacity_bps"] = np.asarray(rate_at(t), dtype=np.asarray(out["link"]["capacity_bps"]).dtype)
    return out


def _simulate_raw(ir: dict) -> dict:
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
