from __future__ import annotations

import gzip
import os
import traceback
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hostile_servers import gzip_bomb
from loopback import free_port

from rig_nb import (
    BackendError,
    Client,
    NoToolCallingError,
    OutputLimitError,
    ResponseTooLargeError,
    RigError,
    RunRequest,
)
from rig_nb.testing import Response, ScriptedServer, chat_reply, tool_call

AMBIENT = {
    "OPENAI_API_KEY": "sk-ambient-key-1111",
    "OPENAI_ADMIN_KEY": "sk-ambient-admin-2222",
    "OPENAI_ORG_ID": "org-ambient-3333",
    "OPENAI_PROJECT_ID": "proj-ambient-4444",
    "OPENAI_WEBHOOK_SECRET": "whsec-ambient-5555",
    "OPENAI_BASE_URL": "http://127.0.0.9:1/ambient-base",
    "OPENAI_CUSTOM_HEADERS": "Authorization: Bearer ambient-auth-6666\nX-Ambient: ambient-7777",
}
KEY = "sk-explicit-secret-9999"


@pytest.mark.parametrize(
    ("given", "want"),
    [
        pytest.param("http://localhost:11434", "http://localhost:11434/v1", id="bare-origin"),
        pytest.param("http://localhost:11434/", "http://localhost:11434/v1", id="origin-slash"),
        pytest.param("https://h.example/v1/", "https://h.example/v1", id="v1-slash"),
        pytest.param("http://h:8000/api/openai", "http://h:8000/api/openai", id="other-path"),
    ],
)
def test_base_url_normalized(given: str, want: str) -> None:
    with Client(given) as c:
        assert c._base_url == want


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param("ftp://h/v1", id="scheme"),
        pytest.param("localhost:8000", id="no-scheme"),
        pytest.param("http://user:pw@h/v1", id="userinfo"),
        pytest.param("http://h/v1?key=1", id="query"),
        pytest.param("http://h/v1#frag", id="fragment"),
        pytest.param("http:///v1", id="no-host"),
    ],
)
def test_base_url_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        Client(bad)


@pytest.mark.parametrize("key", [pytest.param(KEY, id="key"), pytest.param("", id="no-key")])
def test_ambient_credentials_never_reach_the_wire(
    key: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, server: ScriptedServer
) -> None:
    for name, value in AMBIENT.items():
        monkeypatch.setenv(name, value)
    (tmp_path / ".netrc").write_text(
        "machine 127.0.0.1 login netrc-user password netrc-pass-8888\n"
    )
    os.chmod(tmp_path / ".netrc", 0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / ".netrc"))
    server.push(chat_reply(tool_calls=[tool_call("ping", {})]), chat_reply("done"))
    with Client(server.base_url, key) as c:
        c.probe_tool_calling("m")
        c.run(RunRequest(model="m", max_tokens=16, prompt="hi"))
    assert len(server.requests) == 2
    for req in server.requests:
        assert req.path == "/v1/chat/completions"
        wire = "\n".join(f"{k}: {v}" for k, v in req.headers.items()) + req.body.decode()
        for secret in [*AMBIENT.values(), "ambient-auth-6666", "ambient-7777", "netrc-pass-8888"]:
            assert secret not in wire
        assert "openai-organization" not in req.headers
        assert "openai-project" not in req.headers
        assert "x-ambient" not in req.headers
        if key:
            assert req.headers["authorization"] == f"Bearer {key}"
        else:
            assert "authorization" not in req.headers


def _assert_opaque(exc: BaseException, *secrets: str) -> None:
    text = "".join(traceback.format_exception(exc)) + repr(exc) + str(exc)
    for s in secrets:
        assert s not in text, s
    assert exc.__cause__ is None
    assert exc.__context__ is None


def test_body_over_cap(server: ScriptedServer) -> None:
    server.push(Response(b"x" * 2048))
    with (
        Client(server.base_url, max_response_bytes=1024) as c,
        pytest.raises(ResponseTooLargeError),
    ):
        c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))


def test_gzip_bomb_stopped_at_cap(server: ScriptedServer) -> None:
    server.push(Response(gzip_bomb(512 << 20), headers={"content-encoding": "gzip"}))
    with Client(server.base_url, max_retries=0) as c:
        tracemalloc.start()
        try:
            with pytest.raises(ResponseTooLargeError) as info:
                c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 32 << 20
    assert info.value.trace is not None
    assert info.value.trace.outcome == "ResponseTooLargeError"


def test_gzip_body_within_cap_is_decoded(server: ScriptedServer) -> None:
    import json

    body = gzip.compress(json.dumps(chat_reply("compressed ok")).encode())
    server.push(Response(body, headers={"content-encoding": "gzip"}))
    with Client(server.base_url) as c:
        assert c.run(RunRequest(model="m", max_tokens=8, prompt="hi")).text == "compressed ok"


def test_endless_chunked_body(server: ScriptedServer) -> None:
    def endless() -> Iterator[bytes]:
        while True:
            yield b"{" * 65536

    server.push(Response(endless()))
    with Client(server.base_url, max_retries=0) as c, pytest.raises(ResponseTooLargeError):
        c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))


def test_502_html_page(server: ScriptedServer) -> None:
    page = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    server.push(Response(page, status=502, headers={"content-type": "text/html"}))
    with Client(server.base_url, KEY, max_retries=0) as c, pytest.raises(BackendError) as info:
        c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))
    assert info.value.status_code == 502
    assert info.value.message.startswith("ai backend: HTTP 502")
    assert "Bad Gateway" in info.value.message
    _assert_opaque(info.value, KEY, f"127.0.0.1:{server.port}")


def test_401_echoing_key_and_path_is_redacted() -> None:
    with ScriptedServer() as srv:
        base = f"{srv.origin}/gw-token-abc123/v1"
        echo = f"invalid key {KEY} for {base}/chat/completions at 127.0.0.1 /gw-token-abc123/v1"
        srv.push(Response({"error": {"message": echo, "type": "auth"}}, status=401))
        with Client(base, KEY, max_retries=0) as c, pytest.raises(BackendError) as info:
            c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))
    exc = info.value
    assert exc.status_code == 401
    assert "invalid key" in exc.message
    _assert_opaque(exc, KEY, "gw-token-abc123", f"127.0.0.1:{srv.port}", "127.0.0.1")


def test_refused_connection() -> None:
    port = free_port()
    with Client(f"http://127.0.0.1:{port}/secret-path/v1", KEY, max_retries=0) as c:
        with pytest.raises(BackendError) as info:
            c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))
    assert "connection failed" in info.value.message
    _assert_opaque(info.value, KEY, "secret-path", str(port))


def test_redirect_is_not_followed(server: ScriptedServer) -> None:
    with ScriptedServer([chat_reply("elsewhere")]) as other:
        location = f"{other.base_url}/chat/completions"
        server.push(Response(b"", status=307, headers={"location": location}))
        with Client(server.base_url, KEY, max_retries=0) as c, pytest.raises(BackendError) as info:
            c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))
        assert other.requests == []
    assert info.value.status_code == 307
    _assert_opaque(info.value, KEY, str(other.port), str(server.port))


def test_timeout(server: ScriptedServer) -> None:
    server.push(Response(chat_reply("late"), delay=1.0))
    with Client(server.base_url, timeout=0.2, max_retries=0) as c, pytest.raises(BackendError) as i:
        c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))
    assert "timed out" in i.value.message


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"not json at all", id="text"),
        pytest.param(b"[" * 200_000, id="deep-nesting"),
        pytest.param(b'["a list"]', id="not-object"),
        pytest.param(b'{"choices": []}', id="no-choices"),
        pytest.param(b'{"id": "x"}', id="choices-missing"),
        pytest.param(b'{"error": {"message": "think value not supported"}}', id="error-object"),
    ],
)
def test_malformed_200(server: ScriptedServer, body: bytes) -> None:
    server.push(Response(body, headers={"content-type": "application/json"}), Response(body))
    with Client(server.base_url) as c:
        with pytest.raises(BackendError):
            c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))
        with pytest.raises(BackendError):
            c.probe_tool_calling("m")


def test_minimal_reply_accepted(server: ScriptedServer) -> None:
    server.push({"choices": [{"message": {"content": "just this"}}]})
    with Client(server.base_url) as c:
        result = c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))
    assert result.text == "just this"
    assert result.trace.iterations[0].usage == {}


def test_probe_tool_call(server: ScriptedServer) -> None:
    server.push(chat_reply(tool_calls=[tool_call("ping", {"message": "hello"})]))
    with Client(server.base_url) as c:
        assert c.probe_tool_calling("m") is None
    body = server.requests[0].json
    assert body["max_tokens"] == 256
    assert body["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in body["tools"]] == ["ping"]


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        pytest.param(chat_reply("ZEBRA-7 I cannot call tools"), NoToolCallingError, id="text"),
        pytest.param(
            chat_reply("ZEBRA-7 <think>thinking", finish_reason="length"),
            OutputLimitError,
            id="length",
        ),
        pytest.param(
            chat_reply("ZEBRA-7", tool_calls=[{"id": "1", "type": "function", "function": {}}]),
            NoToolCallingError,
            id="nameless-call",
        ),
        pytest.param(
            Response({"error": {"message": "ZEBRA-7 overloaded"}}, status=500),
            BackendError,
            id="http-500",
        ),
        pytest.param(
            Response({"error": {"message": "ZEBRA-7 bad tool_choice"}}, status=400),
            BackendError,
            id="http-400",
        ),
    ],
)
def test_probe_errors(server: ScriptedServer, reply: object, error: type[RigError]) -> None:
    server.push(reply, reply, reply)  # type: ignore[arg-type]
    with Client(server.base_url, max_retries=2) as c, pytest.raises(error) as info:
        c.probe_tool_calling("m")
    assert len(server.requests) == 1
    if error is not BackendError:
        assert "ZEBRA" not in str(info.value)
        assert "ZEBRA" not in repr(info.value)
    assert info.value.trace is not None
    assert info.value.trace.outcome == error.__name__


@pytest.mark.parametrize(
    ("model", "key"),
    [
        pytest.param("o1", "max_completion_tokens", id="o1"),
        pytest.param("o3-mini", "max_completion_tokens", id="o3-mini"),
        pytest.param("o4-mini-2025-04-16", "max_completion_tokens", id="o4-mini-dated"),
        pytest.param("gpt-5", "max_completion_tokens", id="gpt-5"),
        pytest.param("gpt-5-mini", "max_completion_tokens", id="gpt-5-mini"),
        pytest.param("openai/o3", "max_completion_tokens", id="litellm-prefix"),
        pytest.param("gpt-4o", "max_tokens", id="gpt-4o"),
        pytest.param("qwen3:32b", "max_tokens", id="qwen3"),
        pytest.param("olmo-2", "max_tokens", id="olmo"),
        pytest.param("gpt-50x", "max_tokens", id="gpt-50x"),
    ],
)
def test_token_budget_key(server: ScriptedServer, model: str, key: str) -> None:
    server.push(chat_reply("ok"))
    with Client(server.base_url) as c:
        c.run(RunRequest(model=model, max_tokens=77, prompt="hi"))
    body = server.requests[0].json
    assert body[key] == 77
    other = {"max_tokens", "max_completion_tokens"} - {key}
    assert not other & set(body)


def test_caller_http_client_is_still_guarded(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-ambient-3333")
    server.push(chat_reply("ok"), Response(b"y" * 4096))
    with httpx.Client(headers={"X-Caller": "kept-out"}) as hc:
        with Client(server.base_url, KEY, http_client=hc, max_response_bytes=1024) as c:
            assert c.run(RunRequest(model="m", max_tokens=8, prompt="hi")).text == "ok"
            with pytest.raises(ResponseTooLargeError):
                c.run(RunRequest(model="m", max_tokens=8, prompt="hi"))
        assert not hc.is_closed
    assert "openai-organization" not in server.requests[0].headers
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_repr_holds_no_key(server: ScriptedServer) -> None:
    with Client(server.base_url, KEY) as c:
        assert KEY not in repr(c)
