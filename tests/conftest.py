"""Fixtures over tests/helpers.py (import helpers from there, not from here)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from helpers import FIXTURES, synthetic_ir, synthetic_raw


@pytest.fixture(autouse=True, scope="session")
def _temporary_files_under_pytest(tmp_path_factory):
    """``cclab.run()`` without ``out`` keeps its record in a new temporary directory (by design,
    the user may look at it); in the tests that directory — and any other temporary file, also of
    the CLI in a subprocess — is under pytest's base directory, which pytest prunes, not /tmp."""
    base = str(tmp_path_factory.mktemp("tmp"))
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir, os.environ["TMPDIR"] = base, base
    yield
    tempfile.tempdir = saved[0]
    if saved[1] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved[1]


@pytest.fixture
def raw_ir():
    """A fresh ``(synthetic_raw(), synthetic_ir())``."""
    return synthetic_raw(), synthetic_ir()


@pytest.fixture
def make_raw():
    """The :func:`synthetic_raw` factory."""
    return synthetic_raw


@pytest.fixture
def make_ir():
    """The :func:`synthetic_ir` factory."""
    return synthetic_ir


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def run_record(tmp_path) -> Path:
    """A complete run record to damage or refuse to write into: a copy of ``fixtures/run-bbr-cubic``."""
    from cclab import record

    d = tmp_path / "A"
    shutil.copytree(FIXTURES / "run-bbr-cubic", d)
    assert record.verify(d) is None
    return d


@pytest.fixture
def record_parts(raw_ir):
    """The keyword arguments of ``cclab.record.write_run`` for the synthetic output."""
    from cclab import metrics

    raw, ir = raw_ir
    flows, link = metrics.flows_frame(raw, ir), metrics.link_frame(raw, ir)
    return dict(scenario_toml='name = "synthetic"\n', ir=ir, meta={"backend": "sim", "seed": 1}, flows=flows,
                link=link, summary=metrics.summary(flows, link, ir))  # fmt: skip
