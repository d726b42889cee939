"""`--api responses` on the command line, `api` in compare's endpoint file, and
`Endpoint(api=...)` in compare (issue 22)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import cli

from rig_nb import Client, RunRequest
from rig_nb.compare import Endpoint, Scenario, compare
from rig_nb.demo import DemoServer
from rig_nb.testing import ScriptedServer, chat_reply


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_run_goes_over_the_wire_asked_for(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer, api: str
) -> None:
    server.push(chat_reply("hello"))
    args = ("run", "--base-url", server.base_url, "--model", "m", "--prompt", "hi")
    ran = cli(capsys, *args, *(("--api", api) if api == "responses" else ()))
    assert ran.returncode == 0, ran.stderr
    path = "/v1/responses" if api == "responses" else "/v1/chat/completions"
    assert [r.path for r in server.requests] == [path]


def test_an_unknown_api_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    ran = cli(capsys, "probe", "--base-url", "http://127.0.0.1:9", "--model", "m", "--api", "x")
    assert ran.returncode == 2 and "--api" in ran.stderr


def test_compare_file_names_the_wire(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, tmp_path: Path
) -> None:
    endpoints = tmp_path / "endpoints.toml"
    endpoints.write_text(
        "".join(
            f'[[endpoint]]\nname = "{api}"\nbase_url = "{demo.base_url}"\n'
            f'model = "well-behaved"\napi = "{api}"\n\n'
            for api in ("chat", "responses")
        )
    )
    ran = cli(capsys, "compare", str(endpoints))
    assert ran.returncode == 0, ran.stderr
    endpoints.write_text(endpoints.read_text().replace('"responses"\n', '"grpc"\n'))
    bad = cli(capsys, "compare", str(endpoints))
    assert bad.returncode == 2 and "'api' must be" in bad.stderr


def test_compare_puts_both_wires_side_by_side(demo: DemoServer) -> None:
    endpoints = [
        Endpoint(api, demo.base_url, "reasoning-field", api=api) for api in ("chat", "responses")
    ]
    df = compare(endpoints, scenarios=[Scenario("probe", kind="probe")], progress=False)
    assert list(df["outcome"]) == ["ok", "ok"]
    traces = df.attrs["traces"]
    assert [traces[i].settings["api"] for i in df.index] == ["chat", "responses"]


def test_over_shares_the_endpoint_on_another_wire(server: ScriptedServer) -> None:
    server.push(chat_reply("a"), chat_reply("b"))
    with Client(server.base_url) as client:
        other = client.over("responses")
        assert (client.api, other.api, other.endpoint) == ("chat", "responses", client.endpoint)
        assert other.run_trace(RunRequest("m", 8, prompt="x")).outcome == "ok"
        with pytest.raises(ValueError, match="api must be"):
            client.over("grpc")
    assert server.requests[0].path == "/v1/responses"
