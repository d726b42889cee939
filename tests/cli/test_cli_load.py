"""CLI `compare --load 1,4,16` (DESIGN, Round 4 "Load"): the load summary, load and copy on
every row, and a usage error for a level that is not a positive integer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import cli, endpoints_toml

from rig_nb.compare import DEFAULT_SCENARIOS
from rig_nb.demo import DemoServer
from rig_nb.load import LOAD_SUMMARY_COLUMNS


def test_compare_load_rows_carry_load_and_copy(
    demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = endpoints_toml(tmp_path, ("e", demo.base_url, "well-behaved"))
    ran = cli(capsys, "compare", toml, "--load", "1,2", "--json")
    rows = json.loads(ran.stdout)
    n = len(DEFAULT_SCENARIOS)
    assert len(rows) == n * 3
    assert [r["load"] for r in rows] == [1] * n + [2] * 2 * n
    assert [r["copy"] for r in rows[n:]] == [0, 1] * n


def test_compare_load_prints_the_load_summary(
    demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = endpoints_toml(tmp_path, ("e", demo.base_url, "crossed-streams"))
    ran = cli(capsys, "compare", toml, "--load", "1,2")
    assert ran.returncode == 1  # copies at load 2 carried each other's nonces
    summary, _, table = ran.stdout.partition("\n\n")
    assert summary.startswith("summary per endpoint, scenario and load")
    header = summary.splitlines()[1].split()
    assert header == LOAD_SUMMARY_COLUMNS
    assert "crossed_stream" in table
    assert table.splitlines()[0].split()[:6] == [
        "endpoint",
        "model",
        "scenario",
        "repeat",
        "load",
        "copy",
    ]


@pytest.mark.parametrize("value", ["0", "-1", "1,x", "", "1,,4", "four", "2.5"])
def test_a_bad_load_is_a_usage_error(
    value: str, demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = endpoints_toml(tmp_path, ("e", demo.base_url, "well-behaved"))
    ran = cli(capsys, "compare", toml, "--load", value)
    assert ran.returncode == 2
    assert "--load" in ran.stderr and "Traceback" not in ran.stderr
