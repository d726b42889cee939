"""Every wire runs the loop as chat does (issues 22 and 32): one table over `WIRES`.

The demo loop of every persona runs over each wire in `WIRES`, streamed and not: the run's
outcome, how each turn ended, the final text and the calls made are the same for all.
Then each wire against chat in full: every persona, every recovered text-call model,
every scripted reply of the stream-parity table and every probe give the same result and
the same trace over the wire as over `/chat/completions`, streamed or not, apart from what
the wire's row of `parity_view.CARRIES` sets aside. A wire added later is held to all of
it by its row; what only one wire does is tested in its own module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from parity_cases import PROBES, SCRIPTS, TEXT_TOOL_MODELS
from parity_view import (
    CARRIES,
    MISTRAL_ID,
    Script,
    assert_probes_same,
    assert_runs_same,
    persona_request,
    runs_over,
    scripted_request,
)
from shared import PERSONAS

from rig_nb import Client, Trace
from rig_nb.demo import DemoServer
from rig_nb.testing import ScriptedServer
from rig_nb.wire import WIRES

# Every wire but chat, each compared with chat.
OTHER_WIRES = [wire for wire in WIRES if wire != "chat"]


def _shape(trace: Trace) -> tuple[Any, ...]:
    """What every wire must agree on: outcome, endings, finish, answer, calls by name."""
    return (
        trace.outcome,
        [it.ending for it in trace.iterations],
        [it.finish_reason for it in trace.iterations],
        MISTRAL_ID.sub('"id": ""', trace.iterations[-1].text) if trace.iterations else "",
        [[c.name for c in it.tool_calls] for it in trace.iterations],
    )


@pytest.mark.parametrize("model", PERSONAS)
def test_every_persona_ends_alike_over_every_wire(demo: DemoServer, model: str) -> None:
    request = persona_request(model)
    shapes: dict[tuple[str, bool], tuple[Any, ...]] = {}
    for api in WIRES:
        with Client(demo.base_url, api=api, max_retries=0) as client:
            for stream in (False, True):
                trace = client.run_trace(dataclasses.replace(request, stream=stream))
                assert trace.settings["api"] == api
                shapes[api, stream] = _shape(trace)
    first = shapes["chat", False]
    assert first[1], "the run made no round"
    different = {key: shape for key, shape in shapes.items() if shape != first}
    assert different == {}, (model, first)


def test_the_table_covers_every_wire_and_persona(demo: DemoServer) -> None:
    # The tables here are only as good as their rows: four wires, each with a row saying
    # what it carries otherwise than chat, and the demo's personas.
    assert list(WIRES) == ["chat", "responses", "messages", "ollama"]
    assert list(CARRIES) == list(WIRES)
    assert set(PERSONAS) <= set(demo.models)


@pytest.mark.parametrize("model", PERSONAS)
@pytest.mark.parametrize("wire", OTHER_WIRES)
def test_every_persona_runs_the_same_as_over_chat(demo: DemoServer, wire: str, model: str) -> None:
    assert_runs_same(runs_over(demo.base_url, persona_request(model), wire), wire)


@pytest.mark.parametrize("model", TEXT_TOOL_MODELS)
@pytest.mark.parametrize("wire", OTHER_WIRES)
def test_recovered_text_calls_run_the_same_as_over_chat(
    demo: DemoServer, wire: str, model: str
) -> None:
    request = persona_request(model, recover_text_tool_calls=True)
    runs = runs_over(demo.base_url, request, wire)
    assert_runs_same(runs, wire)
    assert len(runs[wire, True][1].tool_calls) == 3  # the loop did run: the rows compare real work


@pytest.mark.parametrize("model", PERSONAS)
@pytest.mark.parametrize("wire", OTHER_WIRES)
def test_every_persona_probes_the_same_as_over_chat(
    demo: DemoServer, wire: str, model: str
) -> None:
    assert_probes_same(demo.base_url, model, wire)


@pytest.mark.parametrize("replies", SCRIPTS)
@pytest.mark.parametrize("wire", OTHER_WIRES)
def test_scripted_replies_run_the_same_as_over_chat(
    server: ScriptedServer, wire: str, replies: Sequence[Mapping[str, Any]]
) -> None:
    script = Script(server, replies, runs=4)
    assert_runs_same(runs_over(server.base_url, scripted_request(), wire, script.rewind), wire)
    assert {r.path for r in server.requests} == {CARRIES["chat"].path, CARRIES[wire].path}


@pytest.mark.parametrize("reply", PROBES)
@pytest.mark.parametrize("wire", OTHER_WIRES)
def test_scripted_probe_is_the_same_as_over_chat(
    server: ScriptedServer, wire: str, reply: Mapping[str, Any]
) -> None:
    server.push(*[reply] * 4)
    assert_probes_same(server.base_url, "scripted", wire)
