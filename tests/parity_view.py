"""A run over one wire held to the same run over chat: what is compared, what is set aside.

A wire's trace equals chat's once three kinds of field are set aside, and nothing else:
timing (`untimed`), what names the wire (`settings["api"]`; which field carried reasoning,
a chat field name or a Responses reasoning item's part type; whether, not in which field,
reasoning was replayed), and what the wire carries otherwise than chat: one row of
`CARRIES` a wire, so a wire added to `rig_nb.wire.WIRES` is compared once its row says
what it cannot carry the same way. Used by test_wire_parity.py (every wire against chat),
test_ollama_parity.py and test_stream_parity.py.
A module of its own, not conftest (see tests/loopback.py).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from shared import ECHO

from rig_nb import Client, RigError, RunRequest, Trace
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, demo_tools
from rig_nb.testing import RecordedRequest, ScriptedServer
from rig_nb.wire import REASONING_FIELDS

TIMING = frozenset({"latency_s", "ttft_s", "elapsed_s", "duration_s", "chunks", "streamed"})
# Call ids a Mistral persona writes in its content are made from the request, whose ids
# the loop made: they differ between wires, as any two runs' ids may.
MISTRAL_ID = re.compile(r'"id": "[0-9a-f]{9}"')
_IDS = frozenset({"id", "received_id", "tool_call_id"})
Runs = dict[tuple[str, bool], tuple[Any, Trace]]


@dataclasses.dataclass(frozen=True)
class Carries:
    """What one wire carries otherwise than chat, set aside when its trace is compared."""

    path: str  # the route its requests arrive at on a ScriptedServer
    iteration_fields: frozenset[str] = frozenset()  # fields the wire itself decides
    message_fields: frozenset[str] = frozenset()  # the same, in each message sent
    usage_unreported: frozenset[str] = frozenset()  # token counts the wire has no field for
    # Tool arguments travel as an object: the text a chat server sent is re-encoded, so
    # arguments compare as what they say (parsed JSON; none at all is `{}`).
    arguments_as_objects: bool = False
    # The wire sends no call ids: the loop makes them, so ids are compared away.
    ids_made_by_loop: bool = False


CARRIES: dict[str, Carries] = {
    "chat": Carries("/v1/chat/completions"),
    "responses": Carries("/v1/responses"),
    "messages": Carries(
        "/v1/messages",
        # A thinking block's signature; llama.cpp's own `timings` ride beside a chat
        # completion, and a Messages body has no place for them.
        iteration_fields=frozenset({"reasoning_signature", "server_timings"}),
        message_fields=frozenset({"reasoning_signature"}),
        usage_unreported=frozenset({"reasoning_tokens"}),  # Anthropic's usage has none
        arguments_as_objects=True,  # a tool_use input
    ),
    "ollama": Carries(
        "/api/chat",
        # Ollama reports its own durations; `thinking_sent` is each wire's own switch.
        iteration_fields=frozenset({"server_timings", "thinking_sent"}),
        usage_unreported=frozenset({"reasoning_tokens", "cached_tokens"}),
        arguments_as_objects=True,
        ids_made_by_loop=True,
    ),
}


def untimed(value: Any) -> Any:
    """A trace's dict with every timing field removed, at any depth."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def _arguments(text: Any) -> Any:
    if text == "":
        return {}
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _calls_as_said(holder: dict[str, Any]) -> None:
    for call in holder.get("tool_calls") or []:
        fn = call.get("function", call)
        if "arguments" in fn:
            fn["arguments"] = _arguments(fn["arguments"])


def _without_ids(value: Any) -> Any:
    if isinstance(value, str):
        return MISTRAL_ID.sub('"id": ""', value)
    if isinstance(value, dict):
        return {
            k: v if k == "arguments" else _without_ids(v) for k, v in value.items() if k not in _IDS
        }
    if isinstance(value, list | tuple):
        return [_without_ids(v) for v in value]
    return value


def neutral(trace: Trace, wire: str) -> dict[str, Any]:
    """The trace as compared between chat and `wire` (see the module docstring)."""
    carries = CARRIES[wire]
    data: dict[str, Any] = untimed(trace.to_dict())
    data["settings"].pop("api")
    for it in data["iterations"]:
        it["reasoning_field"] = bool(it["reasoning_field"])
        it["replayed"] = bool(it["replayed"])
        for key in carries.iteration_fields:
            it.pop(key, None)
        it["usage"] = {k: v for k, v in it["usage"].items() if k not in carries.usage_unreported}
        it["messages"] = [
            {
                ("reasoning" if k in REASONING_FIELDS else k): v
                for k, v in m.items()
                if k not in carries.message_fields
            }
            for m in it["messages"]
        ]
        if carries.arguments_as_objects:
            for holder in (it, *it["messages"]):
                _calls_as_said(holder)
    if carries.ids_made_by_loop or (carries.arguments_as_objects and _unsendable(trace)):
        # Arguments that are no object go back as `{}` (issue 45): a server that makes its
        # ids from the conversation (the demo's `cmpl-` hash) makes other ids from then on.
        data = _without_ids(data)
    return data


def _unsendable(trace: Trace) -> bool:
    """Whether a call of the run had arguments that are not a JSON object."""
    return any(
        not isinstance(_arguments(call.arguments), dict)
        for it in trace.iterations
        for call in it.tool_calls
    )


def result_view(result: Any, wire: str) -> Any:
    """A run's result, (text, iterations, tool_calls) or the error's class name, as compared."""
    return _without_ids(result) if CARRIES[wire].ids_made_by_loop else result


def persona_request(model: str, **fields: Any) -> RunRequest:
    """The demo loop's request to `model`, as the notebook sends it."""
    return RunRequest(
        model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), **fields
    )


def scripted_request(**fields: Any) -> RunRequest:
    """A request that runs a script of replies: the echo tool, at most 3 requests."""
    return RunRequest(
        "scripted", 256, prompt="Echo something.", tools=(ECHO,), max_iterations=3, **fields
    )


class Script:
    """Serves the same replies, from the top, to each of `runs` runs of `scripted_request`."""

    def __init__(self, server: ScriptedServer, replies: Sequence[Mapping[str, Any]], runs: int):
        self.replies = list(replies)
        self._queue: list[Mapping[str, Any]] = []
        server.push(*[self._serve] * (runs * 3))  # at most 3 requests a run

    def _serve(self, request: RecordedRequest) -> Mapping[str, Any]:
        return self._queue.pop(0)

    def rewind(self) -> None:
        self._queue[:] = self.replies


def run_once(client: Client, request: RunRequest, stream: bool) -> tuple[Any, Trace]:
    """(result, trace); result is (text, iterations, tool_calls) or the error class name."""
    try:
        result = client.run(dataclasses.replace(request, stream=stream))
    except RigError as exc:
        assert exc.trace is not None
        return type(exc).__name__, exc.trace
    return (result.text, result.iterations, result.tool_calls), result.trace


def runs_over(
    base_url: str, request: RunRequest, wire: str, before: Callable[[], None] = lambda: None
) -> Runs:
    """The run over chat and over `wire`, each streamed and not; `before` is called before each."""
    out = {}
    for api in ("chat", wire):
        with Client(base_url, api=api, max_retries=0) as client:
            for stream in (False, True):
                before()
                out[api, stream] = run_once(client, request, stream)
    return out


def assert_runs_same(runs: Runs, wire: str) -> None:
    """Every run of `runs_over` as the unstreamed run over chat, but for what `wire` carries."""
    result, trace = runs["chat", False]
    for (api, stream), (other, other_trace) in runs.items():
        assert result_view(other, wire) == result_view(result, wire), (api, stream)
        assert other_trace.outcome == trace.outcome, (api, stream)
        endings = [it.ending for it in other_trace.iterations]
        assert endings == [it.ending for it in trace.iterations], (api, stream)
        assert neutral(other_trace, wire) == neutral(trace, wire), (api, stream)
        assert other_trace.settings["api"] == api
        assert all(it.streamed is stream for it in other_trace.iterations), (api, stream)


def assert_probes_same(base_url: str, model: str, wire: str) -> None:
    """The probe over chat and over `wire`, streamed and not, as the unstreamed one over chat."""
    traces = {}
    for api in ("chat", wire):
        with Client(base_url, api=api) as client:
            for stream in (False, True):
                traces[api, stream] = client.probe_trace(model, stream=stream)
    plain = traces["chat", False]
    for (api, stream), trace in traces.items():
        assert trace.outcome == plain.outcome, (api, stream)
        assert trace.settings["api"] == api
        assert neutral(trace, wire) == neutral(plain, wire), (api, stream)
