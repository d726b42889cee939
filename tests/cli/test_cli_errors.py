"""The command line: errors a user makes get one line that says what to change.

Each case against a real server on 127.0.0.1: nothing listening, plain http, a TLS
server with a self-signed certificate, a proxy's 400 page, a demo endpoint under the
wrong path, a server slower than the limits.
"""

from __future__ import annotations

import pytest
from cli_helpers import KEY, assert_one_line_error, cli
from loopback import TLSServer, free_port

from rig_nb.demo import DemoServer
from rig_nb.testing import Response, ScriptedServer, chat_reply

ENDPOINT_COMMANDS = {
    "probe": ["probe", "--model", "m"],
    "run": ["run", "--model", "m", "--prompt", "hi"],
    "doctor": ["doctor", "--model", "m"],
    "models": ["models"],
}


@pytest.mark.parametrize("command", list(ENDPOINT_COMMANDS))
def test_nothing_listens(capsys: pytest.CaptureFixture[str], command: str) -> None:
    port = free_port()
    base, *rest = ENDPOINT_COMMANDS[command]
    ran = cli(capsys, base, "--base-url", f"http://127.0.0.1:{port}/v1", *rest)
    assert_one_line_error(ran, 1, f"nothing answers at 127.0.0.1:{port}", "check that the server")
    assert ran.stdout == ""


def test_a_host_that_does_not_resolve(capsys: pytest.CaptureFixture[str]) -> None:
    ran = cli(capsys, "probe", "--base-url", "http://no-such-host.invalid:8000/v1", "--model", "m")
    assert_one_line_error(ran, 1, "'no-such-host.invalid' does not resolve", "--base-url")


def test_https_against_plain_http(capsys: pytest.CaptureFixture[str], demo: DemoServer) -> None:
    url = f"https://127.0.0.1:{demo.port}/v1"
    for command, *rest in ENDPOINT_COMMANDS.values():
        ran = cli(capsys, command, "--base-url", url, *rest)
        assert_one_line_error(
            ran, 1, f"127.0.0.1:{demo.port} speaks plain http, not https", "use http://"
        )


def test_http_against_https(capsys: pytest.CaptureFixture[str], tls_server: TLSServer) -> None:
    url = f"http://127.0.0.1:{tls_server.port}/v1"
    for command, *rest in ENDPOINT_COMMANDS.values():
        ran = cli(capsys, command, "--base-url", url, *rest)
        assert_one_line_error(
            ran, 1, f"127.0.0.1:{tls_server.port} speaks https, not plain http", "use https://"
        )


def test_an_untrusted_certificate_is_not_called_plain_http(
    capsys: pytest.CaptureFixture[str], tls_server: TLSServer
) -> None:
    ran = cli(
        capsys, *ENDPOINT_COMMANDS["probe"], "--base-url", f"https://127.0.0.1:{tls_server.port}"
    )
    assert_one_line_error(ran, 1, "TLS handshake", "certificate is not trusted")
    assert "plain http" not in ran.stderr


NGINX_400 = (
    b"<html><head><title>400 The plain HTTP request was sent to HTTPS port</title></head>"
    b"<body><center><h1>400 Bad Request</h1></center><center>The plain HTTP request was sent "
    b"to HTTPS port</center><hr><center>nginx</center></body></html>"
)


def test_a_proxy_that_says_plain_http_was_sent_to_https(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer
) -> None:
    server.push(Response(NGINX_400, status=400, headers={"content-type": "text/html"}))
    ran = cli(capsys, *ENDPOINT_COMMANDS["probe"], "--base-url", server.base_url)
    assert_one_line_error(ran, 1, f"127.0.0.1:{server.port} speaks https", "use https://")


@pytest.mark.parametrize(
    ("path", "command", "parts"),
    [
        pytest.param(
            "/v1/chat/completions",
            "probe",
            ["--base-url ends in /chat/completions", "end it at /v1", "(e.g. http://127.0.0.1:"],
            id="chat-completions",
        ),
        pytest.param("/v1/v1", "probe", ["HTTP 404", "should end at /v1"], id="v1-v1"),
        pytest.param("/api", "run", ["HTTP 404", "should end at /v1"], id="api"),
        pytest.param("/api", "doctor", ["no chat completions route"], id="doctor"),
        pytest.param("/api", "models", ["no models route", "should end at /v1"], id="models"),
    ],
)
def test_a_base_url_that_is_not_the_api_root(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, path: str, command: str, parts: list[str]
) -> None:
    base, *rest = ENDPOINT_COMMANDS[command]
    rest = ["--model", "well-behaved", *rest[2:]] if "--model" in rest else rest
    ran = cli(capsys, base, "--base-url", demo.origin + path, *rest)
    assert_one_line_error(ran, 1, f"127.0.0.1:{demo.port}", *parts)


def test_an_unknown_model_is_not_a_base_url_mistake(
    capsys: pytest.CaptureFixture[str], demo: DemoServer
) -> None:
    ran = cli(capsys, "probe", "--base-url", demo.base_url, "--model", "gpt-nope")
    assert_one_line_error(ran, 1, "HTTP 404", "'gpt-nope' not found", "python -m rig_nb models")
    assert "/v1" not in ran.stderr.replace("/v1/models", "")


def test_a_hint_names_the_host_and_port_never_the_path_or_key(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIG_TEST_KEY", KEY)
    url = f"{demo.origin}/gateway-token-0123456789/v1/chat/completions"
    ran = cli(
        capsys, *ENDPOINT_COMMANDS["probe"], "--base-url", url, "--api-key-env", "RIG_TEST_KEY"
    )
    assert_one_line_error(ran, 1, f"(e.g. http://127.0.0.1:{demo.port}/v1)")
    assert "gateway-token" not in ran.stderr and KEY not in ran.stderr


@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        pytest.param(
            ["run", "--prompt", "hi", "--deadline", "0.3"],
            ["deadline of 0.3 s (--deadline)", "raise --deadline", "lower --max-tokens"],
            id="deadline",
        ),
        pytest.param(
            ["probe", "--timeout", "0.3"],
            ["no data from 127.0.0.1:", "for 0.3 s (--timeout)", "raise --timeout"],
            id="timeout",
        ),
    ],
)
def test_a_slow_server(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer, argv: list[str], parts: list[str]
) -> None:
    server.push(*[Response(chat_reply("late"), delay=5)] * 3)
    ran = cli(capsys, argv[0], "--base-url", server.base_url, "--model", "m", *argv[1:])
    assert_one_line_error(ran, 1, *parts)


def test_a_rejected_key(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIG_TEST_KEY", KEY)
    server.push(Response({"error": {"message": f"invalid api key {KEY}"}}, status=401))
    server.push(Response({"error": {"message": "a key is required"}}, status=401))
    args = ("probe", "--base-url", server.base_url, "--model", "m")
    ran = cli(capsys, *args, "--api-key-env", "RIG_TEST_KEY")
    assert_one_line_error(ran, 1, "HTTP 401", "check the key in --api-key-env")
    assert KEY not in ran.stderr
    assert_one_line_error(cli(capsys, *args), 1, "name it with --api-key-env")


@pytest.mark.parametrize(
    "url", ["ftp://example.com", "http://user:pw@127.0.0.1:1/v1", "http://127.0.0.1:99999/v1"]
)
def test_a_base_url_the_client_refuses(capsys: pytest.CaptureFixture[str], url: str) -> None:
    ran = cli(capsys, "probe", "--base-url", url, "--model", "m")
    assert_one_line_error(ran, 2, "--base-url")
    assert "add a scheme" not in ran.stderr


@pytest.mark.parametrize(
    ("url", "fixed"),
    [
        pytest.param("localhost:8000/v1", "http://localhost:8000/v1", id="localhost"),
        pytest.param("127.0.0.1:8080", "http://127.0.0.1:8080", id="bare-address"),
        pytest.param("gpu-box:8000/", "http://gpu-box:8000", id="host-slash"),
        pytest.param("example.com:8000/t0k3n-secret/v1", "http://example.com:8000/...", id="path"),
    ],
)
def test_a_base_url_without_a_scheme_gets_http(
    capsys: pytest.CaptureFixture[str], url: str, fixed: str
) -> None:
    for command, *rest in ENDPOINT_COMMANDS.values():
        ran = cli(capsys, command, "--base-url", url, *rest)
        assert_one_line_error(ran, 2)
        assert ran.stderr == f"rig-nb: --base-url: add a scheme: {fixed}\n"
        assert "t0k3n" not in ran.stderr
