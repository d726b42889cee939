"""The hostile cases of test_hostile.py that apply to a body, over the Responses wire.

A reply over the cap, a gzip bomb, and secrets an endpoint echoes in its errors: the same
guarantees as on the chat wire. A drip under the read timeout is in test_wire_hostile.py.
"""

from __future__ import annotations

import tracemalloc
import urllib.parse

import pytest
from hostile_servers import KEY, SECRET_PATH, echoing, elapsed, gzip_bomb

from rig_nb import Client, ResponseTooLargeError, RunRequest, Trace
from rig_nb.testing import Response, ScriptedServer, chat_reply

REQUEST = RunRequest(model="m", max_tokens=16, prompt="hi")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_reply_over_the_cap_is_too_large(server: ScriptedServer, stream: bool) -> None:
    server.push(chat_reply("x" * 4096))
    trace = Trace()
    with Client(server.base_url, api="responses", max_response_bytes=2048) as c:
        with pytest.raises(ResponseTooLargeError):
            c.run(RunRequest("m", 16, prompt="hi", stream=stream), trace=trace)
    assert trace.outcome == "ResponseTooLargeError"
    if stream:  # what arrived before the cap is kept
        assert trace.iterations[0].raw_content.startswith("x")


def test_a_gzip_bomb_is_stopped_at_the_cap(server: ScriptedServer) -> None:
    server.push(Response(gzip_bomb(512 << 20), headers={"content-encoding": "gzip"}))
    with Client(server.base_url, api="responses", max_retries=0) as c:
        tracemalloc.start()
        try:
            with pytest.raises(ResponseTooLargeError):
                c.run(REQUEST)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 32 << 20


@pytest.mark.parametrize("status", [401, 404])
def test_secrets_echoed_in_errors_are_redacted(status: int) -> None:
    with ScriptedServer() as srv:
        base = f"{srv.origin}{SECRET_PATH}"
        quoted = urllib.parse.quote(KEY, safe="")
        srv.push(echoing(f"bad key {KEY} {quoted} at {SECRET_PATH}/responses", status=status))
        with Client(base, KEY, api="responses", max_retries=0) as c:
            _, exc = elapsed(lambda: c.run(REQUEST))
    shown = str(exc) + repr(exc)
    for secret in (KEY, quoted, "gw-0123456789abcdef", str(srv.port)):
        assert secret not in shown
    assert "[redacted]" in shown
    assert exc.__cause__ is None and exc.__context__ is None
    assert srv.requests[0].path == f"{SECRET_PATH}/responses"
