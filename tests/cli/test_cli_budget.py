"""The request budget of compare (DESIGN, round 5): a run planned past 1,000 model requests
is refused before its first request unless `--max-requests N` allows it, and the refusal
says how many it would send, counted as compare sends them (scenarios x endpoints x load
copies x repeats x each scenario's most requests)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import assert_one_line_error, cli, endpoints_toml

from rig_nb.cli.budget import DEFAULT_MAX_REQUESTS, check_budget, most_requests
from rig_nb.cli.hints import CommandError
from rig_nb.compare import DEFAULT_SCENARIOS, EVALUATION_SCENARIOS
from rig_nb.demo import DemoServer
from rig_nb.scenarios import Scenario

# The loop's own cap when a scenario sets none (rig_nb.loop.DEFAULT_ITERATIONS).
LOOP_DEFAULT = 8


def most(scenario: Scenario) -> int:
    """One request for a probe or a judged call; the iteration cap for a run."""
    return 1 if scenario.kind != "run" else scenario.max_iterations or LOOP_DEFAULT


PER_SET = sum(most(s) for s in DEFAULT_SCENARIOS)


@pytest.fixture
def own_demo() -> Iterator[DemoServer]:
    """A demo endpoint of this test's own: every request it records is this test's."""
    with DemoServer(stream_first_delay=0, stream_interval=0) as srv:
        yield srv


def model_requests(server: DemoServer) -> int:
    return sum(1 for r in server.requests if r.method == "POST")


def test_the_count_is_each_scenarios_most_requests() -> None:
    assert [most_requests(s) for s in DEFAULT_SCENARIOS] == [most(s) for s in DEFAULT_SCENARIOS]
    assert PER_SET == 29  # probe 1, plain 8, json 8, tool round trip 4, small budget 8
    assert most_requests(Scenario("x", max_iterations=1000)) == 32  # the loop's ceiling


def test_compare_load_100000_is_refused_before_any_request(
    own_demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = endpoints_toml(tmp_path, ("e", own_demo.base_url, "well-behaved"))
    ran = cli(capsys, "compare", toml, "--load", "100000")
    planned = PER_SET * 100_000
    assert_one_line_error(ran, 2, f"up to {planned:,} model requests", "more than 1,000")
    assert f"--max-requests {planned}" in ran.stderr
    assert ran.stdout == ""
    assert own_demo.requests == []


def test_every_factor_is_counted(
    own_demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = endpoints_toml(
        tmp_path,
        ("a", own_demo.base_url, "well-behaved"),
        ("b", own_demo.base_url, "well-behaved"),
    )
    per_set = sum(most(s) for s in EVALUATION_SCENARIOS)
    ran = cli(
        capsys, "compare", toml, "--evaluation", "--repeats", "3", "--load", "1,4,16",
        "--max-requests", "5",
    )  # fmt: skip
    planned = per_set * 2 * 3 * (1 + 4 + 16)
    assert_one_line_error(ran, 2, f"up to {planned:,} model requests", "more than 5:")
    assert f"{len(EVALUATION_SCENARIOS)} scenarios" in ran.stderr
    assert "2 endpoints" in ran.stderr and "3 repeats" in ran.stderr
    assert "21 copies at load 1,4,16" in ran.stderr
    assert own_demo.requests == []


def test_just_past_the_default_is_refused(
    own_demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repeats = DEFAULT_MAX_REQUESTS // PER_SET + 1
    toml = endpoints_toml(tmp_path, ("e", own_demo.base_url, "well-behaved"))
    ran = cli(capsys, "compare", toml, "--repeats", str(repeats))
    assert_one_line_error(ran, 2, f"up to {PER_SET * repeats:,} model requests")
    assert own_demo.requests == []


def test_max_requests_allows_it_and_the_count_bounds_what_is_sent(
    own_demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = endpoints_toml(tmp_path, ("e", own_demo.base_url, "tool-spinner"))
    planned = PER_SET * (1 + 2)
    refused = cli(capsys, "compare", toml, "--load", "1,2", "--max-requests", str(planned - 1))
    assert_one_line_error(refused, 2, f"up to {planned} model requests")
    assert own_demo.requests == []
    ran = cli(capsys, "compare", toml, "--load", "1,2", "--max-requests", str(planned))
    assert ran.returncode in (0, 1), ran.stderr
    assert "max-requests" not in ran.stderr
    sent = model_requests(own_demo)
    # A persona that calls tools every turn reaches each run's cap: the count is reached.
    assert len(DEFAULT_SCENARIOS) * 3 < sent <= planned


@pytest.mark.parametrize("value", ["0", "-3", "many", "1.5"])
def test_a_bad_max_requests_is_a_usage_error(
    value: str, own_demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = endpoints_toml(tmp_path, ("e", own_demo.base_url, "well-behaved"))
    ran = cli(capsys, "compare", toml, "--max-requests", value)
    assert ran.returncode == 2
    assert "--max-requests" in ran.stderr and "Traceback" not in ran.stderr
    assert own_demo.requests == []


def test_the_rule_is_more_than_the_limit() -> None:
    check_budget("compare", DEFAULT_MAX_REQUESTS, DEFAULT_MAX_REQUESTS)
    with pytest.raises(CommandError) as refused:
        check_budget("compare", DEFAULT_MAX_REQUESTS + 1, DEFAULT_MAX_REQUESTS)
    assert refused.value.status == 2
    assert "up to 1,001 model requests" in str(refused.value)
