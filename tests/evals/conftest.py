"""Fixtures of the BFCL tests: the real data folder (scripts/setup-bfcl) and a few cases."""

from __future__ import annotations

from pathlib import Path

import pytest
from bfcl_data import bfcl_data_dir


@pytest.fixture(scope="session")
def bfcl_dir() -> Path:
    """BFCL v4's data folder from the bfcl-eval wheel, installed --no-deps into the cache."""
    return bfcl_data_dir()
