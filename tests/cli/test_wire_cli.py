"""Choosing a wire by name: `--api NAME` on the command line (run, probe, demo), `api = NAME`
in compare's endpoint file, `Endpoint(api=NAME)` in compare and `Client.over(NAME)`
(issues 22 and 32). One test a case, run over every wire of `WIRES` it applies to; what
differs between the wires is in the tables `SEEN` and `SIDE_BY_SIDE`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cli_helpers import cli

from rig_nb import Client, RunRequest
from rig_nb.compare import Endpoint, Scenario, compare
from rig_nb.demo import DemoServer
from rig_nb.testing import ScriptedServer, chat_reply
from rig_nb.wire import WIRES


@dataclass(frozen=True)
class Seen:
    """What a wire shows on a loopback endpoint whose base URL ends in /v1."""

    path: str  # the request's path
    headers: dict[str, str] = field(default_factory=dict)  # headers only this wire sends


SEEN = {
    "chat": Seen("/v1/chat/completions"),
    "responses": Seen("/v1/responses"),
    "messages": Seen("/v1/messages", {"anthropic-version": "2023-06-01"}),
    "ollama": Seen("/api/chat"),  # Ollama's routes hang off the root
}
NAMES = list(WIRES)
OTHERS = [api for api in WIRES if api != "chat"]

# The demo persona compare sets beside chat, and the reasoning field read from it over
# chat, then over the wire.
SIDE_BY_SIDE = {
    "responses": ("reasoning-field", ("reasoning_content", "reasoning_text")),
    "messages": ("reasoning-field", ("reasoning_content", "thinking")),
    "ollama": ("ollama-reasoning", ("reasoning", "thinking")),  # Ollama's /v1 field, then its own
}


def test_every_wire_has_its_rows() -> None:
    assert list(SEEN) == NAMES
    assert list(SIDE_BY_SIDE) == OTHERS


def _endpoints_file(tmp_path: Path, base_url: str, *apis: str) -> str:
    path = tmp_path / "endpoints.toml"
    path.write_text(
        "".join(
            f'[[endpoint]]\nname = "{api}"\nbase_url = "{base_url}"\n'
            f'model = "well-behaved"\napi = "{api}"\n\n'
            for api in apis
        )
    )
    return str(path)


@pytest.mark.parametrize(
    ("flag", "api"),
    [pytest.param(("--api", api), api, id=api) for api in NAMES]
    + [pytest.param((), "chat", id="no-flag-is-chat")],
)
def test_run_goes_over_the_wire_asked_for(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer, flag: tuple[str, ...], api: str
) -> None:
    server.push(chat_reply("hello"))
    ran = cli(capsys, "run", "--base-url", server.base_url, "--model", "m", "--prompt", "hi", *flag)
    assert ran.returncode == 0, ran.stderr
    assert "hello" in ran.stdout
    assert [r.path for r in server.requests] == [SEEN[api].path]
    for name, value in SEEN[api].headers.items():
        assert server.requests[0].headers[name] == value


def test_an_unknown_api_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    ran = cli(capsys, "probe", "--base-url", "http://127.0.0.1:9", "--model", "m", "--api", "x")
    assert ran.returncode == 2 and "--api" in ran.stderr


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", NAMES)
def test_probe_finds_the_demos_tool_call(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, api: str, stream: bool
) -> None:
    args = ("probe", "--base-url", demo.base_url, "--model", "well-behaved", "--api", api)
    ran = cli(capsys, *args, *(("--stream",) if stream else ()))
    assert ran.returncode == 0, ran.stderr
    assert demo.requests[-1].path == SEEN[api].path


@pytest.mark.parametrize("api", NAMES)
def test_the_demo_runs_every_persona_over_the_wire(
    capsys: pytest.CaptureFixture[str], api: str
) -> None:
    ran = cli(capsys, "demo", "--api", api)
    assert ran.returncode == 0, ran.stderr
    assert f"runs the tool loop (the {api} wire)" in ran.stdout
    assert "well-behaved" in ran.stdout


@pytest.mark.parametrize("api", OTHERS)
def test_compare_file_names_the_wire(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, tmp_path: Path, api: str
) -> None:
    before = list(demo.requests)  # held, so that no id in `earlier` is reused
    earlier = {id(r) for r in before}
    ran = cli(capsys, "compare", _endpoints_file(tmp_path, demo.base_url, "chat", api))
    assert ran.returncode == 0, ran.stderr
    sent = {r.path for r in demo.requests if id(r) not in earlier}
    assert sent == {SEEN["chat"].path, SEEN[api].path}


def test_an_unknown_api_in_the_compare_file_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = cli(capsys, "compare", _endpoints_file(tmp_path, "http://127.0.0.1:9/v1", "grpc"))
    assert bad.returncode == 2 and "'api' must be" in bad.stderr


@pytest.mark.parametrize("api", OTHERS)
def test_compare_puts_chat_and_the_wire_side_by_side(demo: DemoServer, api: str) -> None:
    persona, fields = SIDE_BY_SIDE[api]
    endpoints = [Endpoint(a, demo.base_url, persona, api=a) for a in ("chat", api)]
    df = compare(endpoints, scenarios=[Scenario("probe", kind="probe")], progress=False)
    assert list(df["outcome"]) == ["ok", "ok"]
    traces = df.attrs["traces"]
    assert [traces[i].settings["api"] for i in df.index] == ["chat", api]
    assert tuple(traces[i].iterations[0].reasoning_field for i in df.index) == fields


@pytest.mark.parametrize("api", OTHERS)
def test_over_shares_the_endpoint_on_another_wire(server: ScriptedServer, api: str) -> None:
    server.push(chat_reply("a"), chat_reply("b"))
    with Client(server.base_url) as client:
        other = client.over(api)
        assert (client.api, other.api, other.endpoint) == ("chat", api, client.endpoint)
        assert other.run_trace(RunRequest("m", 8, prompt="x")).outcome == "ok"
        with pytest.raises(ValueError, match="api must be"):
            client.over("grpc")
    assert server.requests[0].path == SEEN[api].path
