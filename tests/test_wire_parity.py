"""Every wire gives every persona the same outcome and the same endings (issue 32).

The demo loop of every persona runs over each wire in `WIRES`, streamed and not: the run's
outcome, how each turn ended, the final text and the calls made are the same for all. The
traces in full are compared wire by wire against chat in test_responses_wire.py,
test_messages_parity.py and test_ollama_parity.py; this is the one table over all of them,
so a wire added later is held to it without a new test.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from shared import PERSONAS

from rig_nb import Client, RunRequest, Trace
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.wire import WIRES

# Call ids a Mistral persona writes in its content are made from the request, whose ids
# the loop made: they differ between wires, as any two runs' ids may.
_MISTRAL_ID = re.compile(r'"id": "[0-9a-f]{9}"')


def _shape(trace: Trace) -> tuple[Any, ...]:
    """What every wire must agree on: outcome, endings, finish, answer, calls by name."""
    return (
        trace.outcome,
        [it.ending for it in trace.iterations],
        [it.finish_reason for it in trace.iterations],
        _MISTRAL_ID.sub('"id": ""', trace.iterations[-1].text) if trace.iterations else "",
        [[c.name for c in it.tool_calls] for it in trace.iterations],
    )


@pytest.fixture(scope="module")
def paced() -> Any:
    with DemoServer(stream_first_delay=0, stream_interval=0) as demo:
        yield demo


@pytest.mark.parametrize("model", PERSONAS)
def test_every_persona_ends_alike_over_every_wire(paced: DemoServer, model: str) -> None:
    request = RunRequest(model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools())
    shapes: dict[tuple[str, bool], tuple[Any, ...]] = {}
    for api in WIRES:
        with Client(paced.base_url, api=api, max_retries=0) as client:
            for stream in (False, True):
                trace = client.run_trace(dataclasses.replace(request, stream=stream))
                assert trace.settings["api"] == api
                shapes[api, stream] = _shape(trace)
    first = shapes["chat", False]
    assert first[1], "the run made no round"
    different = {key: shape for key, shape in shapes.items() if shape != first}
    assert different == {}, (model, first)


def test_the_table_covers_every_wire_and_persona(paced: DemoServer) -> None:
    # The table above is only as good as its rows: four wires, and the demo's personas.
    assert list(WIRES) == ["chat", "responses", "messages", "ollama"]
    assert set(PERSONAS) <= set(paced.models)
