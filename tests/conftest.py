"""Fixtures over tests/helpers.py (import helpers from there, not from here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import FIXTURES, synthetic_ir, synthetic_raw


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
