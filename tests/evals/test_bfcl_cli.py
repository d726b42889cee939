"""`python -m rig_nb bfcl`: the per-category table fitted to the terminal, the misses by
cause, compare's exit codes (1 when any case is not ok, 2 on a usage error)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import assert_one_line_error, cli, rig

from rig_nb.demo import DemoServer


def test_one_endpoint_all_ok_exits_0(
    demo: DemoServer, bfcl_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = cli(
        capsys,
        "bfcl",
        "--base-url",
        demo.base_url,
        "--model",
        "well-behaved",
        "--categories",
        "simple_python",
        "--limit",
        "2",
        "--data-dir",
        str(bfcl_dir),
    )
    assert ran.returncode == 0, ran.stderr
    assert ["simple_python", "2/2", "ok", "(100%)"] in [
        line.split() for line in ran.stdout.splitlines()
    ]
    assert "misses by cause" not in ran.stdout
    assert "2 cases x 1 endpoint: 2 requests" in ran.stderr


@pytest.mark.parametrize("columns", [80, 100, 160])
def test_the_table_fits_the_terminal(
    demo: DemoServer,
    bfcl_dir: Path,
    tmp_path: Path,
    columns: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    models = ["well-behaved", "hermes-text-tools", "kimi-calls-in-reasoning", "budget-think"]
    file = tmp_path / "endpoints.toml"
    file.write_text(
        "".join(
            f'[[endpoint]]\nname = "{m} on a long endpoint name\\u001b[31m"\n'
            f'base_url = "{demo.base_url}"\nmodel = "{m}"\n'
            for m in models
        )
    )
    ran = cli(
        capsys,
        "bfcl",
        "--endpoints",
        str(file),
        "--limit",
        "2",
        "--data-dir",
        str(bfcl_dir),
        columns=columns,
    )
    assert ran.returncode == 1
    lines = ran.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns
    assert "\x1b" not in ran.stdout
    for category in ("simple_python", "live_irrelevance"):
        assert any(line.startswith(category) for line in lines)
    assert "wrong_call" in ran.stdout and "text_tool_calls" in ran.stdout
    assert "tool_calls_in_reasoning" in ran.stdout
    assert ran.stderr.strip().endswith("not ok")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--categories", "multi_turn_base"], "unknown 'multi_turn_base'", id="category"
        ),
        pytest.param([], "no endpoint", id="no-endpoint"),
        pytest.param(["x.toml", "--base-url", "http://127.0.0.1:9/v1"], "once", id="two-sources"),
        pytest.param(["--limit", "0"], "--limit", id="limit"),
        pytest.param(["--data-dir", "/nonexistent/bfcl"], "does not exist", id="data-dir"),
    ],
)
def test_usage_errors_exit_2_in_one_line(
    args: list[str], message: str, demo: DemoServer, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint = [] if args[:1] in ([], ["x.toml"]) else ["--base-url", demo.base_url, "--model", "m"]
    ran = cli(capsys, "bfcl", *endpoint, *args)
    assert_one_line_error(ran, 2, message)


def test_help_names_the_command() -> None:
    done = rig("bfcl", "--help")
    assert done.returncode == 0 and "--categories" in done.stdout and "BFCL" in done.stdout


def test_a_run_past_max_requests_is_refused_before_any_request(
    bfcl_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with DemoServer(stream_first_delay=0, stream_interval=0) as own:
        endpoint = ("--base-url", own.base_url, "--model", "well-behaved")
        cases = ("--categories", "simple_python,multiple", "--limit", "3")
        data = ("--data-dir", str(bfcl_dir))
        ran = cli(capsys, "bfcl", *endpoint, *cases, *data, "--max-requests", "5")
        assert_one_line_error(ran, 2, "bfcl would send up to 6 model requests", "more than 5")
        assert "6 cases x 1 endpoint" in ran.stderr and "--max-requests 6" in ran.stderr
        assert own.requests == []
        allowed = cli(capsys, "bfcl", *endpoint, *cases, *data, "--max-requests", "6")
        assert allowed.returncode in (0, 1), allowed.stderr
        assert sum(1 for r in own.requests if r.method == "POST") == 6
